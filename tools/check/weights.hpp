// NVFP4 weights for the GEMM checks, really packed (through the public API on Backend::cpu, the
// oracle's own quantizer), never random bytes:
//   exact mode      grid_weight_bf16 packed with scale_2 = 1 (codes and power-of-two scales come
//                   back exactly); the GEMM then runs with a power-of-two scale_2 of our choice
//   realistic mode  normal bf16 packed by the ModelOpt recipe (scale_2 = amax / 2688)
// Also the bound tensors of the tolerance: |w| (every code's sign bit cleared) and |a|.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "check/check.hpp"
#include "metrale/metrale.hpp"

namespace metrale::check {

struct PackedWeight {
  std::int32_t n = 0, k = 0;
  std::vector<std::uint8_t> packed;  // [N, K/2], even k in the low nibble, or prepacked
  std::vector<std::uint8_t> scale;   // [K/16, N]
  std::vector<std::uint8_t> sfb;     // SFB layout (empty unless asked for)
  float scale_2 = 1.0f;              // what the packer chose (1 in the seeds' form)
  WeightLayout weight_layout = WeightLayout::packed;  // of `packed`
  const std::uint8_t* scales(ScaleLayout layout) const {
    return layout == ScaleLayout::sfb ? sfb.data() : scale.data();
  }
};

// A pointer (host or device) as the uint64 address the API's per-expert tables hold.
inline std::uint64_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

// A failure of the harness itself (a CPU oracle call refused, a CUDA call failed): the case
// fails with this message.
class HarnessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws HarnessError("<what>: <status>: <message>") unless r is ok.
void require_ok(const Result& r, const std::string& what);

// How the harness calls its oracle: the public API on Backend::cpu (host memory, no workspace).
inline constexpr Exec kCpuOracle{Backend::cpu, nullptr, 0, nullptr};

PackedWeight pack_weight_cpu(const std::vector<bf16_bits>& weight, std::int32_t n, std::int32_t k,
                             bool recipe_scale_2, bool with_sfb);

// The weight of a GEMM check in `mode` (seed-derived), packed; with_sfb adds the SFB scales.
PackedWeight make_nvfp4_weight(Mode mode, std::int32_t n, std::int32_t k, std::uint64_t seed,
                               bool with_sfb);

// |w|: the same scales, each code's sign bit cleared (e2m1 is sign-magnitude): exact.
PackedWeight abs_weight(const PackedWeight& w);

// w in the prepacked layout (prepack_nvfp4 on the CPU backend), and back in the packed one.
PackedWeight prepacked_weight(const PackedWeight& w);
PackedWeight packed_weight(const PackedWeight& w);

// Activations of a GEMM check: integers in [-2, 2] (exact) or normal (realistic).
std::vector<bf16_bits> make_activations(Mode mode, std::size_t count, std::uint64_t seed);

// The exact-mode scale_2 of expert (or tensor) `index`: 2^-(3 + index % 6), so that experts differ
// and every product stays exact.
float exact_scale_2(std::int64_t index);

}  // namespace metrale::check
