// An independent reference of the MoE layer for the oracle's tests: plain loops, one token at a
// time, no grouping, written from docs/api.md's formulas ("The MoE layer"), not from src/cpu.
// Routing picks by repeated argmax (strictly greater, so the lower id wins a tie) where the
// backend sorts; the GEMMs are dot products in double over weights decoded here from the
// [K/16, N] layout. The rounding points are the documented ones, so the oracle must match bit
// for bit.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/cpu_test_util.hpp"
#include "format/bf16.hpp"
#include "format/moe_math.hpp"

namespace metrale::test {

// One local expert: weights decoded to e2m1 · e4m3 ([N, K] row-major), scale_2, biases (empty:
// none) as floats.
struct RefExpert {
  std::vector<float> gate, up, down;  // [I, H], [I, H], [H, I]
  float s2_gate = 1, s2_up = 1, s2_down = 1;
  std::vector<float> gate_bias, up_bias, down_bias;
};

struct RefLayer {
  int experts = 0, hidden = 0, inter = 0, top_k = 0;
  std::vector<RefExpert> local;
  std::vector<std::int32_t> map;  // empty: identity
  bool clamped = false;
  float alpha = 1.702f, limit = 7.0f;
};

// docs/api.md's expf: metrale's exp_f32 (e^x in double, rounded once), the one function both
// backends share; everything around it here is written from the formulas.
inline float ref_exp(float x) { return format::exp_f32(x); }

inline float ref_bf16(float x) {
  return format::bf16_to_float(format::float_to_bf16(x));
}

// bf16(float(Σ_k double(x_k) · double(w_k)) · s2), k ascending.
inline float ref_dot(const std::vector<float>& x, const std::vector<float>& w, int row, int k,
                     float s2) {
  double sum = 0;
  for (int i = 0; i < k; ++i)
    sum += static_cast<double>(x[static_cast<std::size_t>(i)]) *
           static_cast<double>(w[static_cast<std::size_t>(row) * k + i]);
  return ref_bf16(static_cast<float>(sum) * s2);
}

// The first index of the largest allowed score (strictly greater wins: ties to the lower index).
inline int ref_argmax(const std::vector<float>& score, const std::vector<bool>& allowed) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(score.size()); ++i) {
    if (!allowed[static_cast<std::size_t>(i)]) continue;
    if (best < 0 || score[static_cast<std::size_t>(i)] > score[static_cast<std::size_t>(best)])
      best = i;
  }
  return best;
}

struct RefRoute {
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
};

inline RefRoute ref_softmax_topk(const std::vector<float>& logits, int k, bool renorm,
                                 float scaling) {
  std::vector<bool> allowed(logits.size(), true);
  RefRoute r;
  float max = logits[0];
  for (float l : logits) max = l > max ? l : max;
  // The sum as docs/api.md takes it, computed the way a warp does: 32 lanes' strided sums, then
  // a butterfly in which every lane adds its partner's value (x + y == y + x, so all agree).
  std::array<float, 32> lane{};
  for (std::size_t e = 0; e < logits.size(); ++e) lane[e % 32] += ref_exp(logits[e] - max);
  for (std::size_t d = 16; d > 0; d /= 2) {
    std::array<float, 32> next{};
    for (std::size_t i = 0; i < 32; ++i) next[i] = lane[i] + lane[i ^ d];
    lane = next;
  }
  const float sum = lane[0];
  for (int j = 0; j < k; ++j) {
    const int e = ref_argmax(logits, allowed);
    allowed[static_cast<std::size_t>(e)] = false;
    r.ids.push_back(e);
    r.weights.push_back(ref_exp(logits[static_cast<std::size_t>(e)] - max) / sum);
  }
  float total = 0;
  for (float w : r.weights) total += w;
  for (float& w : r.weights) w = (renorm ? w / total : w) * scaling;
  return r;
}

inline RefRoute ref_sigmoid_grouped(const std::vector<float>& logits, const float* bias, int k,
                                    int n_group, int topk_group, bool renorm, float scaling) {
  const int E = static_cast<int>(logits.size()), size = E / n_group;
  std::vector<float> s(logits.size()), c(logits.size());
  for (int e = 0; e < E; ++e) {
    s[e] = 1.0f / (1.0f + ref_exp(-logits[e]));
    c[e] = bias ? s[e] + bias[e] : s[e];
  }
  std::vector<float> group_score(static_cast<std::size_t>(n_group));
  for (int g = 0; g < n_group; ++g) {
    std::vector<bool> in_group(logits.size(), false);
    for (int e = g * size; e < (g + 1) * size; ++e) in_group[e] = true;
    const int first = ref_argmax(c, in_group);
    in_group[first] = false;
    group_score[g] = c[first];
    if (size > 1) group_score[g] += c[ref_argmax(c, in_group)];
  }
  std::vector<bool> group_left(static_cast<std::size_t>(n_group), true);
  std::vector<bool> allowed(logits.size(), topk_group == n_group);
  for (int i = 0; i < topk_group && topk_group < n_group; ++i) {
    const int g = ref_argmax(group_score, group_left);
    group_left[g] = false;
    for (int e = g * size; e < (g + 1) * size; ++e) allowed[e] = true;
  }
  RefRoute r;
  for (int j = 0; j < k; ++j) {
    const int e = ref_argmax(c, allowed);
    allowed[e] = false;
    r.ids.push_back(e);
    r.weights.push_back(s[e]);
  }
  float total = 0;
  for (float w : r.weights) total += w;
  for (float& w : r.weights) w = (renorm ? w / (total + 1e-20f) : w) * scaling;
  return r;
}

inline float ref_activation(const RefLayer& layer, float g, float u) {
  if (!layer.clamped) return g / (1.0f + ref_exp(-g)) * u;
  const float gc = g > layer.limit ? layer.limit : g;
  const float uc = u > layer.limit ? layer.limit : (u < -layer.limit ? -layer.limit : u);
  return gc * (1.0f / (1.0f + ref_exp(-(layer.alpha * gc)))) * (uc + 1.0f);
}

// y = bf16(y + bias) when the expert has that bias.
inline void ref_add_bias(std::vector<float>& y, const std::vector<float>& bias) {
  for (std::size_t i = 0; i < bias.size(); ++i) y[i] = ref_bf16(y[i] + bias[i]);
}

// down(act(gate · x, up · x)) of one expert for one token, as bf16 values.
inline std::vector<float> ref_expert(const RefLayer& layer, const RefExpert& ex,
                                     const std::vector<float>& x) {
  std::vector<float> g(static_cast<std::size_t>(layer.inter)), u(g.size()), a(g.size());
  for (int n = 0; n < layer.inter; ++n) {
    g[n] = ref_dot(x, ex.gate, n, layer.hidden, ex.s2_gate);
    u[n] = ref_dot(x, ex.up, n, layer.hidden, ex.s2_up);
  }
  ref_add_bias(g, ex.gate_bias);
  ref_add_bias(u, ex.up_bias);
  for (std::size_t n = 0; n < a.size(); ++n) a[n] = ref_bf16(ref_activation(layer, g[n], u[n]));
  std::vector<float> d(static_cast<std::size_t>(layer.hidden));
  for (int h = 0; h < layer.hidden; ++h) d[h] = ref_dot(a, ex.down, h, layer.inter, ex.s2_down);
  ref_add_bias(d, ex.down_bias);
  return d;
}

// out[t] = bf16(Σ_j w_j · d_j (+ residual[t])), fp32, slots in order; remote slots add nothing.
inline std::vector<bf16_bits> ref_moe(const RefLayer& layer, const std::vector<bf16_bits>& hidden,
                                      const RefRoute& route,
                                      const std::vector<bf16_bits>& residual) {
  const std::size_t H = static_cast<std::size_t>(layer.hidden), T = hidden.size() / H;
  std::vector<bf16_bits> out(T * H);
  for (std::size_t t = 0; t < T; ++t) {
    std::vector<float> x(H), acc(H, 0.0f);
    for (std::size_t h = 0; h < H; ++h) x[h] = format::bf16_to_float(hidden[t * H + h]);
    for (int j = 0; j < layer.top_k; ++j) {
      const std::size_t slot = t * static_cast<std::size_t>(layer.top_k) + j;
      const int e = route.ids[slot];
      const int l = layer.map.empty() ? e : layer.map[static_cast<std::size_t>(e)];
      if (l < 0) continue;
      const std::vector<float> d = ref_expert(layer, layer.local[static_cast<std::size_t>(l)], x);
      for (std::size_t h = 0; h < H; ++h) acc[h] += route.weights[slot] * d[h];
    }
    for (std::size_t h = 0; h < H; ++h) {
      const float r = residual.empty() ? 0.0f : format::bf16_to_float(residual[t * H + h]);
      out[t * H + h] = format::float_to_bf16(residual.empty() ? acc[h] : acc[h] + r);
    }
  }
  return out;
}

}  // namespace metrale::test
