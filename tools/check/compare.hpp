// Comparison of a backend's output with the CPU oracle's.
//   bitwise    bf16 values (a NaN equals only the same NaN bits) or raw bytes
//   tolerance  realistic mode, per element (docs/testing.md derives it):
//                |got - ref| <= 2^-7·|ref| + (K + 8)·2^-24·S + dq·2^-8·S + 2^-133
//              S = Σ_k |a_k|·|w_k|·scale_2 from the oracle run on |a| and |w| (bf16-rounded, so
//              taken ×(1 + 2^-7)); dq = 1 for arms that dequantize the weights to bf16 first
//              (cuBLASLt, CUTLASS), 0 for ours (exact e2m1 × e4m3, scale_2 in the fp32 epilogue).
// Rows may be a sample: `rows` maps compared row r to its row in the full output (for messages).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "metrale/metrale.hpp"

namespace metrale::check {

struct Comparison {
  std::int64_t compared = 0;
  std::int64_t mismatches = 0;
  std::int64_t first_mismatch = -1;  // flat index in the compared data
  double max_abs = 0.0;
  double max_rel = 0.0;
  std::string first_detail;  // "c_gate[3, 17]: got ..., want ..."
  std::string output;        // name of the output of the first mismatch
  void merge(const Comparison& other);
};

struct Tolerance {
  std::int64_t k = 0;
  bool dequantized_weights = false;
};

Comparison compare_bf16_bits(std::span<const bf16_bits> got, std::span<const bf16_bits> want,
                             std::int64_t cols, std::span<const std::int64_t> rows,
                             std::string_view name);

Comparison compare_bf16_tolerance(std::span<const bf16_bits> got, std::span<const bf16_bits> want,
                                  std::span<const bf16_bits> bound, std::int64_t cols,
                                  std::span<const std::int64_t> rows, const Tolerance& tol,
                                  std::string_view name);

Comparison compare_bytes(std::span<const std::uint8_t> got, std::span<const std::uint8_t> want,
                         std::string_view name);

// int32 values, and fp32 values bit for bit (a NaN equals only the same NaN bits): the routing a
// MoE layer reports (topk_ids_out, topk_weights_out).
Comparison compare_i32(std::span<const std::int32_t> got, std::span<const std::int32_t> want,
                       std::int64_t cols, std::span<const std::int64_t> rows,
                       std::string_view name);
Comparison compare_f32_bits(std::span<const float> got, std::span<const float> want,
                            std::int64_t cols, std::span<const std::int64_t> rows,
                            std::string_view name);

// The realistic rule of the MoE layer. No per-element bound survives its bf16 intermediates (one
// ulp of a gate value moves every down output it feeds; docs/testing.md), so the backend is held
// to the error of a same-precision implementation, flash-attention's rule:
//   max |got − ideal| <= limit = 2·max |same − ideal| + 2^-8·max |ideal|
// with `ideal` the layer in fp64 without intermediate roundings (moe_reference.hpp) and `same`
// the CPU backend's output; every element past the limit is a mismatch.
struct IdealRule {
  double limit = 0, same_error = 0, ideal_max = 0;
};
IdealRule ideal_rule(std::span<const bf16_bits> same, std::span<const double> ideal);
Comparison compare_to_ideal(std::span<const bf16_bits> got, std::span<const double> ideal,
                            const IdealRule& rule, std::int64_t cols,
                            std::span<const std::int64_t> rows, std::string_view name);

// Number of bf16 values still holding the poison pattern (outputs never written).
std::int64_t count_poison(std::span<const bf16_bits> values);

inline constexpr bf16_bits kPoisonBf16 = 0x7FC0;  // a quiet NaN
inline constexpr std::uint8_t kPoisonByte = 0xFF;

}  // namespace metrale::check
