// Validation helpers (see validate.hpp). The messages here are the ones users read: keep them
// in the form "who: argument = value, expectation".
#include "core/validate.hpp"

#include <cmath>

#include "core/error.hpp"

namespace metrale::core {

void ensure_group_arrays(std::string_view who, std::int64_t num_experts,
                         std::span<const ArrayLength> per_expert,
                         std::span<const std::int32_t> offsets) {
  METRALE_REQUIRE(num_experts >= 0, "{}: num_experts = {}, expected num_experts >= 0", who,
                  num_experts);
  const auto want_offsets = static_cast<std::size_t>(num_experts) + 1;
  METRALE_REQUIRE(offsets.size() == want_offsets,
                  "{}: expert_offsets has length {}, expected num_experts + 1 = {}", who,
                  offsets.size(), want_offsets);
  for (const ArrayLength& array : per_expert) {
    METRALE_REQUIRE(array.length == num_experts, "{}: {} has length {}, expected num_experts = {}",
                    who, array.name, array.length, num_experts);
  }
  METRALE_REQUIRE(offsets[0] >= 0, "{}: expert_offsets[0] = {} is negative, expected >= 0", who,
                  offsets[0]);
  for (std::size_t e = 1; e < offsets.size(); ++e) {
    METRALE_REQUIRE(offsets[e] >= offsets[e - 1],
                    "{}: expert_offsets[{}] = {} < expert_offsets[{}] = {}, expected "
                    "non-decreasing offsets (expert {} would have a negative row count)",
                    who, e, offsets[e], e - 1, offsets[e - 1], e - 1);
  }
}

void require_offsets_within(std::string_view who, std::span<const std::int32_t> offsets,
                            std::int64_t m_total) {
  const std::size_t last = offsets.size() - 1;
  METRALE_REQUIRE(offsets[last] <= m_total, "{}: expert_offsets[{}] = {} > M_total = {}", who, last,
                  offsets[last], m_total);
}

void require_not_null(std::string_view who, std::string_view name, const void* ptr) {
  METRALE_REQUIRE(ptr != nullptr, "{}: {} is null, expected a valid pointer", who, name);
}

void require_aligned(std::string_view who, std::string_view name, const void* ptr,
                     std::size_t alignment, std::string_view what) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  METRALE_REQUIRE(address % alignment == 0, "{}: {} = {} is not {}-byte aligned, expected {}", who,
                  name, ptr, alignment, what);
}

void require_positive(std::string_view who, std::string_view name, std::int64_t value) {
  METRALE_REQUIRE(value > 0, "{}: {} = {}, expected {} > 0", who, name, value, name);
}

void require_non_negative(std::string_view who, std::string_view name, std::int64_t value) {
  METRALE_REQUIRE(value >= 0, "{}: {} = {}, expected {} >= 0", who, name, value, name);
}

void require_multiple_of(std::string_view who, std::string_view name, std::int64_t value,
                         std::int64_t divisor) {
  METRALE_REQUIRE(value % divisor == 0, "{}: {} = {} is not a multiple of {}", who, name, value,
                  divisor);
}

void require_scale2(std::string_view who, std::string_view name, float value) {
  METRALE_REQUIRE(std::isfinite(value) && value > 0.0f, "{}: {} = {} is not finite and > 0", who,
                  name, value);
}

void require_scale2_each(std::string_view who, std::string_view name, const float* values,
                         std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    METRALE_REQUIRE(std::isfinite(values[i]) && values[i] > 0.0f,
                    "{}: {}[{}] = {} is not finite and > 0", who, name, i, values[i]);
  }
}

}  // namespace metrale::core
