// Lazily quantized, rotated expert weights (expert_pool.hpp).
#include "bench/cuda/expert_pool.hpp"

#include "bench/bench_runners.hpp"
#include "bench/cuda/bench_kernels.hpp"
#include "bench/random.hpp"
#include "core/error.hpp"
#include "format/layouts.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"

namespace metrale::bench {

ExpertPool::ExpertPool(int experts, int projections, int n, int k, std::uint64_t seed,
                       DeviceArena& arena, cudaStream_t stream)
    : experts_(experts),
      projections_(projections),
      n_(n),
      k_(k),
      seed_(seed),
      arena_(arena),
      stream_(stream) {
  for (auto& s : scale2_) s.assign(experts, 1.0f);
  const std::size_t elements = static_cast<std::size_t>(n) * k;
  scratch_weight_ = arena_.allocate_n<bf16_bits>(elements);
  scratch_scale_ = arena_.allocate_n<std::uint8_t>(elements / 16);
  scratch_scale2_ = arena_.allocate_n<float>(static_cast<std::size_t>(experts) * projections);
}

std::size_t ExpertPool::nvfp4_slot_bytes() const {
  const std::size_t nk = static_cast<std::size_t>(n_) * k_;
  return projections_ * (DeviceArena::footprint(nk / 2) +
                         DeviceArena::footprint(format::sfb_bytes(n_, k_)));
}

std::size_t ExpertPool::bf16_slot_bytes() const {
  return projections_ *
         DeviceArena::footprint(static_cast<std::size_t>(n_) * k_ * sizeof(bf16_bits));
}

int ExpertPool::missing_nvfp4(const std::vector<std::int32_t>& experts, int copies) const {
  int missing = 0;
  for (int c = 0; c < copies; ++c) {
    for (int e : experts) missing += nvfp4_.count({c, e}) == 0;
  }
  return missing;
}

int ExpertPool::missing_bf16(const std::vector<std::int32_t>& experts, int copies) const {
  int missing = 0;
  for (int c = 0; c < copies; ++c) {
    for (int e : experts) missing += bf16_.count({c, e}) == 0;
  }
  return missing;
}

void ExpertPool::quantize_new(const std::vector<std::int32_t>& experts) {
  std::vector<std::int32_t> fresh;
  for (int e : experts) {
    if (nvfp4_.count({0, e}) == 0) fresh.push_back(e);
  }
  if (fresh.empty()) return;
  const Exec exec{Backend::cuda, nullptr, 0, stream_};
  const std::size_t nk = static_cast<std::size_t>(n_) * k_;
  for (int e : fresh) {
    Nvfp4Slot slot;
    for (int p = 0; p < projections_; ++p) {
      slot.packed[p] = arena_.allocate_n<std::uint8_t>(nk / 2);
      slot.sfb[p] = arena_.allocate_n<std::uint8_t>(format::sfb_bytes(n_, k_));
      fill_normal_bf16(scratch_weight_, nk, derive_seed(seed_, p, e), kWeightStddev, stream_);
      check(pack_bf16_weight_to_nvfp4_t(
          PackNvfp4{scratch_weight_, slot.packed[p], scratch_scale_,
                    scratch_scale2_ + static_cast<std::size_t>(e) * projections_ + p, n_, k_},
          exec));
      check(pack_weight_sfb(SwizzleScales{scratch_scale_, slot.sfb[p], n_, k_, true}, exec));
    }
    if (layout_ != WeightLayout::packed) convert(slot, layout_);
    nvfp4_[{0, e}] = slot;
  }
  std::vector<float> host(static_cast<std::size_t>(experts_) * projections_);
  METRALE_CUDA_CHECK(cudaMemcpyAsync(host.data(), scratch_scale2_, host.size() * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_));
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (int e : fresh) {
    for (int p = 0; p < projections_; ++p) {
      const float s = host[static_cast<std::size_t>(e) * projections_ + p];
      if (!(s > 0.0f) || s > 3.0e38f) {
        fail(Status::internal,
             "bench: the packer returned scale_2 = {} for expert {} (projection "
             "{}); expected a finite positive value",
             s, e, p);
      }
      scale2_[p][e] = s;
    }
  }
}

void ExpertPool::ensure_nvfp4(const std::vector<std::int32_t>& experts, int copies) {
  quantize_new(experts);
  const std::size_t nk = static_cast<std::size_t>(n_) * k_;
  for (int c = 1; c < copies; ++c) {
    for (int e : experts) {
      if (nvfp4_.count({c, e})) continue;
      const Nvfp4Slot& source = nvfp4_.at({0, e});
      Nvfp4Slot slot;
      for (int p = 0; p < projections_; ++p) {
        slot.packed[p] = arena_.allocate_n<std::uint8_t>(nk / 2);
        slot.sfb[p] = arena_.allocate_n<std::uint8_t>(format::sfb_bytes(n_, k_));
        METRALE_CUDA_CHECK(cudaMemcpyAsync(slot.packed[p], source.packed[p], nk / 2,
                                           cudaMemcpyDeviceToDevice, stream_));
        METRALE_CUDA_CHECK(cudaMemcpyAsync(slot.sfb[p], source.sfb[p], format::sfb_bytes(n_, k_),
                                           cudaMemcpyDeviceToDevice, stream_));
      }
      nvfp4_[{c, e}] = slot;
    }
  }
  refresh_api_arrays(copies);
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void ExpertPool::convert(const Nvfp4Slot& slot, WeightLayout to) const {
  const Exec exec{Backend::cuda, nullptr, 0, stream_};
  const PrepackDir dir =
      to == WeightLayout::prepacked ? PrepackDir::to_prepacked : PrepackDir::to_packed;
  for (int p = 0; p < projections_; ++p)
    check(prepack_nvfp4(PrepackNvfp4{slot.packed[p], slot.packed[p], n_, k_, dir}, exec));
}

void ExpertPool::set_layout(WeightLayout layout) {
  if (layout == layout_) return;
  for (const auto& [key, slot] : nvfp4_) convert(slot, layout);
  layout_ = layout;
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void ExpertPool::ensure_bf16(const std::vector<std::int32_t>& experts, int copies) {
  if (layout_ != WeightLayout::packed)
    fail(Status::internal, "bench: the bf16 weights are dequantized from packed weights");
  const std::size_t nk = static_cast<std::size_t>(n_) * k_;
  for (int c = 0; c < copies; ++c) {
    for (int e : experts) {
      if (bf16_.count({c, e})) continue;
      const Nvfp4Slot& source = nvfp4_.at({0, e});  // ensure_nvfp4 made it
      std::array<bf16_bits*, 2> slot{};
      for (int p = 0; p < projections_; ++p) {
        slot[p] = arena_.allocate_n<bf16_bits>(nk);
        if (c == 0) {
          reference::cublaslt::dequantize_nvfp4(source.packed[p], source.sfb[p], ScaleLayout::sfb,
                                                scale2_[p][e], slot[p], n_, k_, stream_);
        } else {
          METRALE_CUDA_CHECK(cudaMemcpyAsync(slot[p], bf16_.at({0, e})[p], nk * sizeof(bf16_bits),
                                             cudaMemcpyDeviceToDevice, stream_));
        }
      }
      bf16_[{c, e}] = slot;
    }
  }
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void ExpertPool::refresh_api_arrays(int copies) {
  if (static_cast<int>(packed_ptrs_.size()) < copies) {
    packed_ptrs_.resize(copies);
    sfb_ptrs_.resize(copies);
  }
  for (std::size_t c = 0; c < packed_ptrs_.size(); ++c) {
    for (int p = 0; p < projections_; ++p) {
      packed_ptrs_[c][p].assign(experts_, 0);
      sfb_ptrs_[c][p].assign(experts_, 0);
    }
  }
  for (const auto& [key, slot] : nvfp4_) {
    const auto [c, e] = key;
    if (c >= static_cast<int>(packed_ptrs_.size())) continue;
    for (int p = 0; p < projections_; ++p) {
      packed_ptrs_[c][p][e] = reinterpret_cast<std::uintptr_t>(slot.packed[p]);
      sfb_ptrs_[c][p][e] = reinterpret_cast<std::uintptr_t>(slot.sfb[p]);
    }
  }
}

ExpertWeights ExpertPool::api_weights(int copy, int proj) const {
  return ExpertWeights{packed_ptrs_.at(copy)[proj].data(), sfb_ptrs_.at(copy)[proj].data(),
                       scale2_[proj].data()};
}

GroupedNvfp4 ExpertPool::grouped_call(int copy, const bf16_bits* a, int a_rows,
                                      const std::int32_t* token_ids,
                                      const std::array<bf16_bits*, 2>& out,
                                      const ExpertGroups& groups) const {
  GroupedNvfp4 args{};
  args.a = a;
  args.a_rows = a_rows;
  args.token_ids = token_ids;
  for (int p = 0; p < projections_; ++p) {
    args.proj[p] = api_weights(copy, p);
    args.out[p] = out[p];
  }
  args.proj_count = projections_;
  args.scale_layout = ScaleLayout::sfb;
  args.groups = groups;
  args.n = n_;
  args.k = k_;
  args.weight_layout = layout_;
  return args;
}

const bf16_bits* ExpertPool::bf16(int copy, int proj, int expert) const {
  return bf16_.at({copy, expert})[proj];
}

}  // namespace metrale::bench
