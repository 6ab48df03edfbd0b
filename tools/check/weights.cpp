// Packed NVFP4 weights and activations of the GEMM checks (weights.hpp), through the public API's
// CPU backend.
#include "check/weights.hpp"

#include <cmath>

#include <fmt/format.h>

#include "check/inputs.hpp"
#include "format/layouts.hpp"

namespace metrale::check {
namespace {

enum Tag : std::uint64_t { kWeight = 101, kAct };

}  // namespace

void require_ok(const Result& r, const std::string& what) {
  if (!r.ok()) {
    throw HarnessError(
        fmt::format("{}: status {}: {}", what, static_cast<int>(r.status), r.message));
  }
}

PackedWeight pack_weight_cpu(const std::vector<bf16_bits>& weight, std::int32_t n, std::int32_t k,
                             bool recipe_scale_2, bool with_sfb) {
  PackedWeight w;
  w.n = n;
  w.k = k;
  const std::size_t N = static_cast<std::size_t>(n), K = static_cast<std::size_t>(k);
  w.packed.resize(N * K / 2);
  w.scale.resize(N * K / 16);
  PackNvfp4 args{
      weight.data(), w.packed.data(), w.scale.data(), recipe_scale_2 ? &w.scale_2 : nullptr, n, k};
  require_ok(pack_bf16_weight_to_nvfp4_t(args, kCpuOracle),
             "CPU oracle pack_bf16_weight_to_nvfp4_t");
  if (with_sfb) {
    w.sfb.resize(format::sfb_bytes(N, K));
    SwizzleScales sw{w.scale.data(), w.sfb.data(), n, k, true};
    require_ok(pack_weight_sfb(sw, kCpuOracle), "CPU oracle pack_weight_sfb");
  }
  return w;
}

PackedWeight make_nvfp4_weight(Mode mode, std::int32_t n, std::int32_t k, std::uint64_t seed,
                               bool with_sfb) {
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
  const std::uint64_t s = derive_seed(seed, kWeight);
  if (mode == Mode::exact) return pack_weight_cpu(grid_weight_bf16(n, k, s), n, k, false, with_sfb);
  return pack_weight_cpu(normal_bf16(count, s), n, k, true, with_sfb);
}

PackedWeight abs_weight(const PackedWeight& w) {
  PackedWeight out = w;
  if (w.weight_layout == WeightLayout::prepacked) {
    // Prepacked, the four signs of a 16-bit half are its top four bits (format/prepack.hpp).
    for (std::size_t i = 1; i < out.packed.size(); i += 2) out.packed[i] &= 0x0Fu;
  } else {
    for (auto& byte : out.packed) byte &= 0x77u;  // clear the sign bit of both nibbles
  }
  return out;
}

namespace {

PackedWeight in_layout(const PackedWeight& w, WeightLayout layout) {
  if (w.weight_layout == layout) return w;
  PackedWeight out = w;
  out.weight_layout = layout;
  const PrepackDir dir =
      layout == WeightLayout::prepacked ? PrepackDir::to_prepacked : PrepackDir::to_packed;
  const PrepackNvfp4 args{w.packed.data(), out.packed.data(), w.n, w.k, dir};
  require_ok(prepack_nvfp4(args, kCpuOracle), "CPU oracle prepack_nvfp4");
  return out;
}

}  // namespace

PackedWeight prepacked_weight(const PackedWeight& w) {
  return in_layout(w, WeightLayout::prepacked);
}

PackedWeight packed_weight(const PackedWeight& w) {
  return in_layout(w, WeightLayout::packed);
}

std::vector<bf16_bits> make_activations(Mode mode, std::size_t count, std::uint64_t seed) {
  const std::uint64_t s = derive_seed(seed, kAct);
  return mode == Mode::exact ? small_int_bf16(count, s, 2) : normal_bf16(count, s);
}

float exact_scale_2(std::int64_t index) {
  return std::ldexp(1.0f, -3 - static_cast<int>(index % 6));
}

}  // namespace metrale::check
