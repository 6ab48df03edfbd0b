// Validation helpers (see validate.hpp). The messages here are the ones users read: keep them
// in the form "who: argument = value, expectation".
#include "core/validate.hpp"

#include <cmath>

#include "core/error.hpp"

namespace metrale::core {

void ensure_group_arrays(std::string_view who, std::int64_t num_experts,
                         std::span<const ArrayLength> per_expert,
                         std::span<const std::int32_t> offsets, const OffsetNames& names) {
  METRALE_REQUIRE(num_experts >= 0, "{}: {} = {}, expected {} >= 0", who, names.num_experts,
                  num_experts, names.num_experts);
  const auto want_offsets = static_cast<std::size_t>(num_experts) + 1;
  METRALE_REQUIRE(offsets.size() == want_offsets, "{}: {} has length {}, expected {} + 1 = {}",
                  who, names.offsets, offsets.size(), names.num_experts, want_offsets);
  for (const ArrayLength& array : per_expert) {
    METRALE_REQUIRE(array.length == num_experts, "{}: {} has length {}, expected {} = {}", who,
                    array.name, array.length, names.num_experts, num_experts);
  }
  METRALE_REQUIRE(offsets[0] >= 0, "{}: {}[0] = {} is negative, expected >= 0", who, names.offsets,
                  offsets[0]);
  for (std::size_t e = 1; e < offsets.size(); ++e) {
    METRALE_REQUIRE(offsets[e] >= offsets[e - 1],
                    "{}: {}[{}] = {} < {}[{}] = {}, expected non-decreasing offsets (expert {} "
                    "would have a negative row count)",
                    who, names.offsets, e, offsets[e], names.offsets, e - 1, offsets[e - 1], e - 1);
  }
}

void require_offsets_within(std::string_view who, std::span<const std::int32_t> offsets,
                            std::int64_t m_total, const OffsetNames& names) {
  const std::size_t last = offsets.size() - 1;
  METRALE_REQUIRE(offsets[last] <= m_total, "{}: {}[{}] = {} > {} = {}", who, names.offsets, last,
                  offsets[last], names.m_total, m_total);
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

void fail_non_finite_weight(std::string_view who, std::string_view name, std::size_t index,
                            float value, std::int64_t k) {
  const auto columns = static_cast<std::size_t>(k);
  fail(Status::invalid_argument,
       "{}: {}[{}] = {} (row {}, column {}) is not finite, expected finite weights (NVFP4 has no "
       "NaN or Inf)",
       who, name, index, value, index / columns, index % columns);
}

void require_scale2(std::string_view who, std::string_view name, float value) {
  METRALE_REQUIRE(std::isfinite(value) && value > 0.0f, "{}: {} = {} is not finite and > 0", who,
                  name, value);
}

void require_scale2(std::string_view who, std::string_view name, std::int64_t index,
                    float value) {
  METRALE_REQUIRE(std::isfinite(value) && value > 0.0f, "{}: {}[{}] = {} is not finite and > 0",
                  who, name, index, value);
}

void require_scale2_each(std::string_view who, std::string_view name, const float* values,
                         std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) require_scale2(who, name, i, values[i]);
}

}  // namespace metrale::core
