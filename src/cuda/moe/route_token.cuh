// One token's routing for the MoE layer's routing kernel (moe_route.cu): each routing warp loads
// the token's logits (or scores) into its shared scratch, picks its top k (DeepSeek-V3's group
// limit first), and computes their weights, operation for operation as docs/api.md, "Routing",
// states it, with format::exp_f32: the CPU oracle's bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/moe/moe_params.hpp"
#include "cuda/moe/moe_route.hpp"
#include "format/bf16.hpp"
#include "format/moe_math.hpp"

namespace metrale::cuda::moe {

inline constexpr unsigned kFullWarp = 0xFFFFFFFFu;
inline constexpr float kSigmoidEpsilon = 1e-20f;  // DeepSeek-V3's renormalisation guard

__device__ inline bool is_finite(float v) {
  return (format::float_to_bits(v) & 0x7F800000u) != 0x7F800000u;
}

// One warp's scratch for its token (shared memory; layout in route_shared_bytes).
struct TokenScratch {
  float* value;               // [E] what is ranked: the logits (softmax) or choice scores (sigmoid)
  float* extra;               // [E] softmax: e^(l - max); sigmoid: the scores without the bias
  float* group_score;         // [n_group]
  std::int32_t* chosen;       // [k] the token's experts, best first
  float* weight;              // [k] their weights
  std::uint8_t* state;        // [E] 0: may be chosen; 1: taken or in a group not kept
  std::uint8_t* group_state;  // [n_group] 0: free; 1: kept
};

__device__ inline TokenScratch scratch_of(const RouteArgs& a, std::uint8_t* shared, int warp) {
  std::uint8_t* base =
      shared + static_cast<std::size_t>(warp) * route_warp_bytes(a.experts, a.n_group, a.top_k);
  TokenScratch s;
  s.value = reinterpret_cast<float*>(base);
  s.extra = s.value + a.experts;
  s.group_score = s.extra + a.experts;
  s.chosen = reinterpret_cast<std::int32_t*>(s.group_score + a.n_group);
  s.weight = reinterpret_cast<float*>(s.chosen + a.top_k);
  s.state = reinterpret_cast<std::uint8_t*>(s.weight + a.top_k);
  s.group_state = s.state + a.experts;
  return s;
}

// A float's rank as an unsigned key: a larger value has a larger key, -0 and +0 share one, and
// no finite or infinite value maps to 0 (0 means "no entry"). Routing never ranks a NaN.
__device__ inline std::uint32_t order_key(float v) {
  const std::uint32_t bits = format::float_to_bits(v == 0.0f ? 0.0f : v);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// A lane's two best free entries among the ones it owns (lane, lane + 32, ...), best first:
// strict > in ascending order keeps the lower index ahead on ties. key2 == 0 says "not known"
// (none, or not looked for since the best was taken).
struct LaneBest {
  std::uint32_t key1 = 0, key2 = 0;
  int id1 = -1, id2 = -1;
};

__device__ inline LaneBest lane_best(const float* value, const std::uint8_t* state, int n) {
  LaneBest best;
  for (int i = threadIdx.x & 31; i < n; i += 32) {
    const std::uint32_t key = state[i] == 0 ? order_key(value[i]) : 0;
    if (key > best.key1) {
      best.key2 = best.key1, best.id2 = best.id1;
      best.key1 = key, best.id1 = i;
    } else if (key > best.key2) {
      best.key2 = key, best.id2 = i;
    }
  }
  return best;
}

// Takes the `picks` free entries of value[0, n) with the largest values, best first, the lower
// index on ties: marks them taken (state 1) and, when `ids` is given, lane 0 writes them there.
// Each lane keeps its two best entries; a pick is a warp max of the lanes' best keys and a warp
// min of the tied lanes' indices (two redux instructions), and the winning lane moves its second
// up, rescanning its entries only when it has none. A rescan per pick made this most of the
// routing warp's instructions at E = 512 (docs/perf.md, 2026-12-02, second session).
__device__ inline void take_best(const float* value, std::uint8_t* state, int n, int picks,
                                 std::int32_t* ids) {
  LaneBest mine = lane_best(value, state, n);
  for (int j = 0; j < picks; ++j) {
    const std::uint32_t top = __reduce_max_sync(kFullWarp, mine.key1);
    if (top == 0) break;  // fewer free entries than picks (validated away for real layers)
    const int id = static_cast<int>(
        __reduce_min_sync(kFullWarp, mine.key1 == top ? static_cast<unsigned>(mine.id1) : ~0u));
    if (ids && (threadIdx.x & 31) == 0) ids[j] = id;
    if (mine.id1 == id) {
      state[id] = 1;
      if (mine.key2 != 0) {
        mine = LaneBest{mine.key2, 0, mine.id2, -1};
      } else {
        mine = lane_best(value, state, n);
      }
    }
  }
  __syncwarp();
}

// DeepSeek-V3's group limit: each group scores the sum of its two best choice scores; the
// topk_group best groups stay free, every expert of the others is excluded.
__device__ inline void keep_best_groups(const RouteArgs& a, const TokenScratch& s) {
  const int lane = threadIdx.x & 31;
  const int size = a.experts / a.n_group;
  for (int g = lane; g < a.n_group; g += 32) {
    int first = -1, second = -1;
    float v0 = 0.0f, v1 = 0.0f;
    for (int e = g * size; e < (g + 1) * size; ++e) {
      const float v = s.value[e];
      if (first < 0 || v > v0) {
        second = first, v1 = v0;
        first = e, v0 = v;
      } else if (second < 0 || v > v1) {
        second = e, v1 = v;
      }
    }
    s.group_score[g] = second < 0 ? v0 : format::add_rn(v0, v1);
    s.group_state[g] = 0;
  }
  __syncwarp();
  take_best(s.group_score, s.group_state, a.n_group, a.topk_group, nullptr);  // 1: kept
  for (int e = lane; e < a.experts; e += 32) s.state[e] = s.group_state[e / size] ? 0 : 1;
  __syncwarp();
}

__device__ inline float logit_at(const RouteArgs& a, std::size_t i) {
  return a.logits_bf16 ? format::bf16_to_float(static_cast<const std::uint16_t*>(a.logits)[i])
                       : static_cast<const float*>(a.logits)[i];
}

// Loads the token's row into s (and the free states); false when a logit or the correction bias
// is not finite. A lane issues all its loads (up to kInFlight logits, and as many biases) before
// it uses any: in batches of four, each batch behind the last one's, E = 512 took four L2 round
// trips a token (one: the routing kernel 1.0 µs shorter at Qwen3-Next T = 1, docs/perf.md,
// thirty-third session). kSigmoid: DeepSeek-V3's scores (a.kind == sigmoid_grouped_topk), computed
// in a second pass from shared memory, four a lane at a time (sigmoid_f32 has no branch, so they
// interleave), else the logits as they are.
template <bool kSigmoid>
__device__ inline bool load_scores(const RouteArgs& a, const TokenScratch& s, int token) {
  constexpr int kInFlight = 16, kBatch = 4;
  const int lane = threadIdx.x & 31;
  const std::size_t row = static_cast<std::size_t>(token) * a.experts;
  const bool biased = kSigmoid && a.correction_bias;
  bool finite = true;
  for (int e0 = lane; e0 < a.experts; e0 += 32 * kInFlight) {
    float logit[kInFlight], bias[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      const int e = e0 + 32 * j;
      logit[j] = e < a.experts ? logit_at(a, row + e) : 0.0f;
      bias[j] = biased && e < a.experts ? a.correction_bias[e] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      const int e = e0 + 32 * j;
      if (e >= a.experts) break;
      finite = finite && is_finite(logit[j]) && is_finite(bias[j]);
      s.value[e] = logit[j];
      if constexpr (kSigmoid) s.extra[e] = bias[j];
      s.state[e] = 0;
    }
  }
  if constexpr (kSigmoid)
    for (int e0 = lane; e0 < a.experts; e0 += 32 * kBatch) {
      float logit[kBatch], bias[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int e = e0 + 32 * j;
        logit[j] = e < a.experts ? s.value[e] : 0.0f;
        bias[j] = e < a.experts ? s.extra[e] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int e = e0 + 32 * j;
        if (e >= a.experts) break;
        const float score = format::sigmoid_f32(logit[j]);
        s.value[e] = biased ? format::add_rn(score, bias[j]) : score;
        s.extra[e] = score;
      }
    }
  __syncwarp();
  return __all_sync(kFullWarp, finite);
}

// w[0, k) /= (their sum in slot order + epsilon): lane 0 sums, one add at a time (the oracle's
// order), and each lane divides its own weights. The whole warp calls it.
__device__ inline void renormalize(float* w, int k, float epsilon) {
  const int lane = threadIdx.x & 31;
  float sum = 0.0f;
  if (lane == 0) {
    for (int j = 0; j < k; ++j) sum = format::add_rn(sum, w[j]);
    sum = format::add_rn(sum, epsilon);
  }
  sum = __shfl_sync(kFullWarp, sum, 0);
  for (int j = lane; j < k; j += 32) w[j] = format::div_rn(w[j], sum);
  __syncwarp();
}

// e^(l - max) of every expert into s.extra, and their sum in docs/api.md's order, on every lane:
// lane i's partial is format::kSoftmaxPartials' partial i (its experts i, i + 32, ... in
// ascending id, the order it computes them in), then a butterfly halves the partials in the fixed
// tree (a lane and its partner add the same two values, x + y == y + x, so every lane ends with
// partial 0's bits). Summed on lane 0 one add at a time, in ascending id, this was the routing's
// longest chain (docs/perf.md, thirty-fourth session). The exps four a lane at a time: exp_f32
// has no branch, so they interleave (one after another, each a ~25-instruction chain, they were a
// seventh of the token's chain).
__device__ inline float softmax_sum(const RouteArgs& a, const TokenScratch& s, float max) {
  static_assert(format::kSoftmaxPartials == 32, "a lane a partial");
  constexpr int kBatch = 4;
  const int lane = threadIdx.x & 31;
  float sum = 0.0f;
  for (int e0 = lane; e0 < a.experts; e0 += 32 * kBatch) {
    float p[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + 32 * j;
      p[j] = e < a.experts ? format::exp_f32(s.value[e] - max) : 0.0f;
      if (e < a.experts) s.extra[e] = p[j];
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
      if (e0 + 32 * j < a.experts) sum = format::add_rn(sum, p[j]);
  }
#pragma unroll
  for (int half = 16; half > 0; half /= 2)
    sum = format::add_rn(sum, __shfl_xor_sync(kFullWarp, sum, half));
  __syncwarp();  // s.extra, read by the other lanes' divisions
  return sum;
}

// Routing from logits: s.chosen[0, k) and s.weight[0, k) of one token, in the warp's shared
// scratch (each step reads what the last one wrote: no round trip through global memory).
template <bool kSigmoid>
__device__ inline void route_from_logits(const RouteArgs& a, const TokenScratch& s) {
  const int lane = threadIdx.x & 31, k = a.top_k;
  std::int32_t* ids = s.chosen;
  float* w = s.weight;
  if constexpr (kSigmoid)
    if (a.topk_group < a.n_group) keep_best_groups(a, s);
  take_best(s.value, s.state, a.experts, k, ids);
  // The weights: each lane its own slots' (the divisions). On one lane, the 2k divisions of a
  // token were a long dependent chain (docs/perf.md).
  if constexpr (kSigmoid) {
    for (int j = lane; j < k; j += 32) w[j] = s.extra[ids[j]];
    __syncwarp();
    if (a.renormalize) renormalize(w, k, kSigmoidEpsilon);
  } else {
    const float sum = softmax_sum(a, s, s.value[ids[0]]);
    for (int j = lane; j < k; j += 32) w[j] = format::div_rn(s.extra[ids[j]], sum);
    __syncwarp();
    if (a.renormalize) renormalize(w, k, 0.0f);
  }
  for (int j = lane; j < k; j += 32) w[j] = format::mul_rn(w[j], a.scaling);
}

}  // namespace metrale::cuda::moe
