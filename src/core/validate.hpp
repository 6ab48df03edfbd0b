// Validation helpers shared by every entry point. Each throws metrale::Error(invalid_argument)
// with a message naming the function (`who`), the argument, its value and what was expected:
// "nvfp4_grouped_down: expert_offsets[3] = 90 > M_total = 64".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace metrale::core {

// The length of one per-expert host array, by name (the seed's (name, len) pairs).
struct ArrayLength {
  std::string_view name;
  std::int64_t length;
};

// The seed's check of the host arrays a grouped call reads as bare pointers: every per-expert
// array holds num_experts entries, expert_offsets num_experts + 1, offsets[0] >= 0 and the
// offsets never decrease (equal neighbours are an expert with no rows, which is fine). The upper
// bound offsets[E] <= M_total is require_offsets_within's, for callers that know M_total.
// The caller's names for the offsets, the expert count and M_total, which messages use ("the
// seed's": expert_offsets, num_experts, M_total; metrale_nvfp4_grouped_ex's: groups->offsets ...).
struct OffsetNames {
  std::string_view offsets = "expert_offsets";
  std::string_view num_experts = "num_experts";
  std::string_view m_total = "M_total";
};

void ensure_group_arrays(std::string_view who, std::int64_t num_experts,
                         std::span<const ArrayLength> per_expert,
                         std::span<const std::int32_t> offsets, const OffsetNames& names = {});

// offsets.back() <= m_total (offsets already passed ensure_group_arrays).
void require_offsets_within(std::string_view who, std::span<const std::int32_t> offsets,
                            std::int64_t m_total, const OffsetNames& names = {});

void require_not_null(std::string_view who, std::string_view name, const void* ptr);
// `ptr` % alignment == 0 (null passes: nullness is require_not_null's).
void require_aligned(std::string_view who, std::string_view name, const void* ptr,
                     std::size_t alignment, std::string_view what);
void require_positive(std::string_view who, std::string_view name, std::int64_t value);
void require_non_negative(std::string_view who, std::string_view name, std::int64_t value);
void require_multiple_of(std::string_view who, std::string_view name, std::int64_t value,
                         std::int64_t divisor);
// The quantizer's refusal of a NaN or ±Inf weight, one message for every backend (the CPU scan
// in api/validate_gemm.cpp; a device scan reports its first bad index the same way):
// "who: name[i] = nan (row r, column c) is not finite, expected finite weights ...".
[[noreturn]] void fail_non_finite_weight(std::string_view who, std::string_view name,
                                         std::size_t index, float value, std::int64_t k);
// A decode scale_2 must be finite and > 0 (a NaN or 0 would silently zero or poison the output).
void require_scale2(std::string_view who, std::string_view name, float value);
// The same for entry `index` of a host array, named "name[3]" only when it fails.
void require_scale2(std::string_view who, std::string_view name, std::int64_t index, float value);
// The same for each entry of a per-expert host array, naming the index: "name[3] = nan ...".
void require_scale2_each(std::string_view who, std::string_view name, const float* values,
                         std::int64_t count);

}  // namespace metrale::core
