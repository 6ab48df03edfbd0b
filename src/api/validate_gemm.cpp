// Validation of the single-matrix operations: dense and NVFP4 GEMM, the quantizer, the SFB
// swizzle, the packed transposes and the prepacked layout's conversion. Null pointers are refused
// only when the call has work (M = 0 reads and writes nothing); bf16 buffers must be 2-byte
// aligned, fp32 ones 4-byte.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "api/validate.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "format/bf16.hpp"
#include "format/layouts.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::api {

using core::require_aligned;
using core::require_multiple_of;
using core::require_non_negative;
using core::require_not_null;
using core::require_positive;

namespace {

void require_bf16(std::string_view who, std::string_view name, const void* ptr) {
  require_not_null(who, name, ptr);
  require_aligned(who, name, ptr, alignof(bf16_bits), "bf16 data");
}

void require_bytes(std::string_view who, std::string_view name, const void* ptr) {
  require_not_null(who, name, ptr);
}

// The byte sizes of an [N, K] weight's packed codes and of its [K/16, N] block scales.
std::size_t packed_bytes(std::int32_t n, std::int32_t k) {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(k / 2);
}
std::size_t scale_bytes(std::int32_t n, std::int32_t k) {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(k / format::kBlockSize);
}

// The caller's names for prepack_nvfp4's buffers: the C ABI's parameters (packed and prepacked,
// in the direction's order), or the C++ struct's fields.
std::pair<std::string_view, std::string_view> prepack_names(std::string_view who, PrepackDir dir) {
  if (!who.starts_with("metrale_")) return {"src", "dst"};
  if (dir == PrepackDir::to_prepacked) return {"packed", "prepacked"};
  return {"prepacked", "packed"};
}

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y ? y - x < a_bytes : x - y < b_bytes;
}

struct Span {
  std::string_view name;
  const void* ptr;
  std::size_t bytes;
};

// An operation that reads one buffer while it writes another (or several) needs them apart: the
// writes would otherwise change what is still to be read (the swizzle even zeroes its output
// first), and its CUDA kernels' CTAs run in no order.
void require_disjoint(std::string_view who, const Span& a, const Span& b) {
  METRALE_REQUIRE(!overlap(a.ptr, a.bytes, b.ptr, b.bytes),
                  "{}: {} ({} bytes at {}) and {} ({} bytes at {}) overlap, expected disjoint "
                  "buffers",
                  who, a.name, a.bytes, a.ptr, b.name, b.bytes, b.ptr);
}

// In place (the same buffer) or disjoint: each half is read before it is written, so only a
// partial overlap would read bytes another half has already rewritten.
void require_same_or_disjoint(std::string_view who, const PrepackNvfp4& args,
                              std::pair<std::string_view, std::string_view> names) {
  const auto src = reinterpret_cast<std::uintptr_t>(args.src);
  const auto dst = reinterpret_cast<std::uintptr_t>(args.dst);
  const std::uintptr_t bytes = packed_bytes(args.n, args.k);
  const std::uintptr_t distance = src > dst ? src - dst : dst - src;
  METRALE_REQUIRE(src == dst || distance >= bytes,
                  "{}: {} and {} overlap ({} bytes apart, {} bytes each), expected the same "
                  "buffer (in place) or disjoint ones",
                  who, names.first, names.second, distance, bytes);
}

}  // namespace

void require_nvfp4_shape(std::string_view who, std::int32_t n, std::int32_t k) {
  require_positive(who, "N", n);
  require_positive(who, "K", k);
  require_multiple_of(who, "K", k, format::kBlockSize);
}

void require_scale_layout(std::string_view who, ScaleLayout layout, std::string_view name) {
  METRALE_REQUIRE(layout == ScaleLayout::k16_by_n || layout == ScaleLayout::sfb,
                  "{}: {} = {}, expected 0 ([K/16, N]) or 1 (SFB)", who, name,
                  static_cast<int>(layout));
}

void require_weight_layout(std::string_view who, WeightLayout layout, std::string_view name) {
  METRALE_REQUIRE(layout == WeightLayout::packed || layout == WeightLayout::prepacked,
                  "{}: {} = {}, expected 0 (packed) or 1 (prepacked)", who, name,
                  static_cast<int>(layout));
}

void validate(std::string_view who, const DenseGemm& args) {
  require_non_negative(who, "M", args.m);
  require_positive(who, "N", args.n);
  require_positive(who, "K", args.k);
  if (args.m == 0) return;
  require_bf16(who, "act", args.act);
  require_bf16(who, "weight", args.weight);
  require_bf16(who, "out", args.out);
}

void validate(std::string_view who, const Nvfp4Gemm& args) {
  require_non_negative(who, "M", args.m);
  require_nvfp4_shape(who, args.n, args.k);
  require_scale_layout(who, args.scale_layout);
  core::require_scale2(who, "weight_scale_2", args.scale_2);
  if (args.m == 0) return;
  require_bf16(who, "act", args.act);
  require_bytes(who, "weight_packed_t", args.packed);
  require_bytes(who, "weight_scale_t", args.scale);
  require_bf16(who, "out", args.out);
}

void validate(std::string_view who, const PackNvfp4& args) {
  require_nvfp4_shape(who, args.n, args.k);
  require_bf16(who, "weight_bf16", args.weight);
  require_bytes(who, "packed_t", args.packed);
  require_bytes(who, "scale_t", args.scale);
  require_aligned(who, "scale_2_out", args.scale_2_out, alignof(float), "fp32 data");
}

void require_disjoint_buffers(std::string_view who, const PackNvfp4& args) {
  const Span weight{"weight_bf16", args.weight,
                    2 * static_cast<std::size_t>(args.n) * static_cast<std::size_t>(args.k)};
  const Span packed{"packed_t", args.packed, packed_bytes(args.n, args.k)};
  const Span scale{"scale_t", args.scale, scale_bytes(args.n, args.k)};
  require_disjoint(who, weight, packed);
  require_disjoint(who, weight, scale);
  require_disjoint(who, packed, scale);
  if (args.scale_2_out) {
    const Span scale_2{"scale_2_out", args.scale_2_out, sizeof(float)};
    for (const Span& other : {weight, packed, scale}) require_disjoint(who, other, scale_2);
  }
}

void require_finite_weights_on_host(std::string_view who, const PackNvfp4& args) {
  const std::size_t count = static_cast<std::size_t>(args.n) * static_cast<std::size_t>(args.k);
  for (std::size_t i = 0; i < count; ++i) {
    if (!format::bf16_is_finite(args.weight[i]))
      core::fail_non_finite_weight(who, "weight_bf16", i, format::bf16_to_float(args.weight[i]),
                                   args.k);
  }
}

void validate(std::string_view who, const SwizzleScales& args) {
  require_nvfp4_shape(who, args.n, args.k);
  require_bytes(who, "scale_in", args.scale_in);
  require_bytes(who, "scale_out", args.scale_out);
}

void require_disjoint_buffers(std::string_view who, const SwizzleScales& args) {
  require_disjoint(who, {"scale_in", args.scale_in, scale_bytes(args.n, args.k)},
                   {"scale_out", args.scale_out, format::sfb_bytes(args.n, args.k)});
}

void validate(std::string_view who, const TransposePacked& args) {
  METRALE_REQUIRE(args.dir == TransposeDir::k_to_n || args.dir == TransposeDir::n_to_k,
                  "{}: dir = {}, expected 0 (k_to_n) or 1 (n_to_k)", who,
                  static_cast<int>(args.dir));
  require_nvfp4_shape(who, args.n, args.k);
  const bool k_to_n = args.dir == TransposeDir::k_to_n;
  require_bytes(who, k_to_n ? "src_packed_t" : "src_packed", args.src);
  require_bytes(who, k_to_n ? "dst_packed" : "dst_packed_t", args.dst);
}

void require_disjoint_buffers(std::string_view who, const TransposePacked& args) {
  const bool k_to_n = args.dir == TransposeDir::k_to_n;
  const std::size_t bytes = packed_bytes(args.n, args.k);
  require_disjoint(who, {k_to_n ? "src_packed_t" : "src_packed", args.src, bytes},
                   {k_to_n ? "dst_packed" : "dst_packed_t", args.dst, bytes});
}

void validate(std::string_view who, const PrepackNvfp4& args) {
  METRALE_REQUIRE(args.dir == PrepackDir::to_prepacked || args.dir == PrepackDir::to_packed,
                  "{}: dir = {}, expected 0 (to_prepacked) or 1 (to_packed)", who,
                  static_cast<int>(args.dir));
  require_nvfp4_shape(who, args.n, args.k);
  const auto names = prepack_names(who, args.dir);
  require_bytes(who, names.first, args.src);
  require_bytes(who, names.second, args.dst);
  require_same_or_disjoint(who, args, names);
}

}  // namespace metrale::api
