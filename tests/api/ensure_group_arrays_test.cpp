// The seed's ensure_group_arrays cases, ported: per-expert arrays short or long, expert_offsets
// short or long, a negative base, decreasing offsets; an empty expert and zero experts accepted.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/validate.hpp"

namespace metrale {
namespace {

using core::ArrayLength;

// The message of the error ensure_group_arrays throws, or "" when it accepts.
std::string check(std::int64_t num_experts, std::vector<ArrayLength> per_expert,
                  std::vector<std::int32_t> offsets) {
  try {
    core::ensure_group_arrays("t", num_experts, per_expert, offsets);
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    return e.what();
  }
}

TEST(EnsureGroupArrays, RejectsAnyShortPerExpertArray) {
  const std::vector<std::int32_t> offsets = {0, 4, 9};
  EXPECT_EQ(check(2, {{"a", 2}, {"b", 2}}, offsets), "");
  // Each array one entry short is refused, and the message names that array.
  EXPECT_EQ(check(2, {{"a", 1}, {"b", 2}}, offsets), "t: a has length 1, expected num_experts = 2");
  EXPECT_EQ(check(2, {{"a", 2}, {"b", 1}}, offsets), "t: b has length 1, expected num_experts = 2");
  // Too long is refused too: the caller disagrees with num_experts.
  EXPECT_EQ(check(2, {{"a", 3}, {"b", 2}}, offsets), "t: a has length 3, expected num_experts = 2");
}

TEST(EnsureGroupArrays, RejectsBadExpertOffsets) {
  EXPECT_EQ(check(2, {}, {0, 4}), "t: expert_offsets has length 2, expected num_experts + 1 = 3")
      << "short";
  EXPECT_EQ(check(2, {}, {0, 4, 9, 12}),
            "t: expert_offsets has length 4, expected num_experts + 1 = 3")
      << "long";
  EXPECT_EQ(check(2, {}, {-1, 4, 9}), "t: expert_offsets[0] = -1 is negative, expected >= 0")
      << "negative base";
  EXPECT_EQ(check(2, {}, {0, 9, 4}),
            "t: expert_offsets[2] = 4 < expert_offsets[1] = 9, expected non-decreasing offsets "
            "(expert 1 would have a negative row count)")
      << "decreasing: a negative group row count";
  // Equal neighbours are an expert with no rows: accepted.
  EXPECT_EQ(check(2, {}, {0, 4, 4}), "");
}

TEST(EnsureGroupArrays, ZeroExpertsIsNotAnError) {
  EXPECT_EQ(check(0, {}, {0}), "");
}

TEST(EnsureGroupArrays, RejectsNegativeExpertCount) {
  EXPECT_EQ(check(-1, {}, {0}), "t: num_experts = -1, expected num_experts >= 0");
}

TEST(EnsureGroupArrays, OffsetsWithinMTotal) {
  const std::vector<std::int32_t> offsets = {0, 30, 60, 64, 90};
  try {
    core::require_offsets_within("nvfp4_grouped_down", offsets, 64);
    ADD_FAILURE() << "offsets[4] = 90 > 64 accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "nvfp4_grouped_down: expert_offsets[4] = 90 > M_total = 64");
  }
  EXPECT_NO_THROW(core::require_offsets_within("t", offsets, 90));
}

}  // namespace
}  // namespace metrale
