// The expert weights of one grouped operation of one model (gate_up: gate and up, down: one
// projection), made lazily for the experts a token count activates, in rotated copies.
//
// Per (copy, expert, projection):
//   packed  [N, K/2]  e2m1 pairs, made by our CUDA packer from random normal bf16 (stddev 0.02),
//                     in the pool's weight layout (packed, or prepacked in place for our rows)
//   sfb     SFB-swizzled e4m3 scales (pack_weight_sfb of the packer's [K/16, N] output)
//   bf16    [N, K]    optional: the NVFP4 weight dequantized once (cuBLAS opponents read it)
// Every copy of an expert holds the same bytes at another address, so all implementations and all
// copies compute the same result while each timed pass streams cold memory. Device memory comes
// from the caller's arena and is released with it.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "bench/cuda/device_memory.hpp"
#include "metrale/metrale.hpp"

namespace metrale::bench {

class ExpertPool {
 public:
  ExpertPool(int experts, int projections, int n, int k, std::uint64_t seed, DeviceArena& arena,
             cudaStream_t stream);

  // Makes copies [0, copies) of each listed expert (quantizing an expert the first time).
  void ensure_nvfp4(const std::vector<std::int32_t>& experts, int copies);
  // Same for the bf16 dequantization; needs the NVFP4 weights of those experts, packed.
  void ensure_bf16(const std::vector<std::int32_t>& experts, int copies);
  // Every NVFP4 weight made so far, and every one made later, in `layout` (prepack_nvfp4 in
  // place on the stream; the reference arms read packed weights, metrale either).
  void set_layout(WeightLayout layout);
  WeightLayout layout() const { return layout_; }

  // Bytes a new slot takes, over all projections.
  std::size_t nvfp4_slot_bytes() const;
  std::size_t bf16_slot_bytes() const;
  // Slots (copy, expert) not made yet among those listed.
  int missing_nvfp4(const std::vector<std::int32_t>& experts, int copies) const;
  int missing_bf16(const std::vector<std::int32_t>& experts, int copies) const;

  // API view of copy `copy`: num_experts entries, null for experts never made (the API accepts
  // null weights for experts without rows). Valid until the next ensure_* call.
  ExpertWeights api_weights(int copy, int proj) const;
  // The grouped call over copy `copy` (SFB scales): every projection, rows grouped by `groups`,
  // gathered through `token_ids` when it is not null. Valid as long as api_weights is.
  GroupedNvfp4 grouped_call(int copy, const bf16_bits* a, int a_rows, const std::int32_t* token_ids,
                            const std::array<bf16_bits*, 2>& out, const ExpertGroups& groups) const;
  const bf16_bits* bf16(int copy, int proj, int expert) const;
  float scale_2(int proj, int expert) const { return scale2_[proj][expert]; }

 private:
  struct Nvfp4Slot {
    std::array<std::uint8_t*, 2> packed{}, sfb{};
  };
  using Key = std::pair<int, int>;  // (copy, expert)

  void quantize_new(const std::vector<std::int32_t>& experts);
  void convert(const Nvfp4Slot& slot, WeightLayout to) const;
  void refresh_api_arrays(int copies);

  int experts_, projections_, n_, k_;
  WeightLayout layout_ = WeightLayout::packed;
  std::uint64_t seed_;
  DeviceArena& arena_;
  cudaStream_t stream_;
  std::map<Key, Nvfp4Slot> nvfp4_;
  std::map<Key, std::array<bf16_bits*, 2>> bf16_;
  std::array<std::vector<float>, 2> scale2_;
  // Per copy and projection: the pointer arrays handed to the API.
  std::vector<std::array<std::vector<std::uint64_t>, 2>> packed_ptrs_, sfb_ptrs_;
  // Scratch of the packer: one bf16 weight, its [K/16, N] scales, the scale_2 outputs.
  bf16_bits* scratch_weight_ = nullptr;
  std::uint8_t* scratch_scale_ = nullptr;
  float* scratch_scale2_ = nullptr;
};

}  // namespace metrale::bench
