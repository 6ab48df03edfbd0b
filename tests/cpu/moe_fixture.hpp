// A small MoE layer for the oracle's tests: random NVFP4 experts (random codes, e4m3 scales in
// [0.5, 2], a power-of-two scale_2 per expert and projection) in both scale layouts, optional
// bf16 biases, an optional expert map, small-integer hidden states, random logits; and the same
// layer decoded for the independent reference (moe_reference.hpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/cpu_test_util.hpp"
#include "cpu/moe_reference.hpp"
#include "format/layouts.hpp"
#include "metrale/metrale.hpp"

namespace metrale::test {

// One projection of every local expert: [N, K/2] packed, [K/16, N] and SFB scales, scale_2.
struct MoeProjection {
  int n = 0, k = 0;
  std::vector<std::vector<std::uint8_t>> packed, scale, sfb;
  std::vector<std::uint64_t> packed_ptrs, scale_ptrs, sfb_ptrs;
  std::vector<float> scale2;

  MoeProjection(int experts, int n_in, int k_in, std::uint32_t seed, float s2) : n(n_in), k(k_in) {
    for (int e = 0; e < experts; ++e) {
      const std::uint32_t s = seed + 7u * static_cast<std::uint32_t>(e);
      packed.push_back(random_bytes(static_cast<std::size_t>(n) * k / 2, s));
      scale.push_back(random_scales(static_cast<std::size_t>(n) * k / 16, s + 1));
      sfb.emplace_back(format::sfb_bytes(n, k), std::uint8_t{0});
      for (int b = 0; b < k / 16; ++b)
        for (int row = 0; row < n; ++row)
          sfb.back()[format::sfb_offset(row, b, k)] = scale.back()[b * n + row];
      scale2.push_back(s2 * static_cast<float>(1 << (e % 3)));
    }
    for (int e = 0; e < experts; ++e) {
      packed_ptrs.push_back(ptr_bits(packed[e].data()));
      scale_ptrs.push_back(ptr_bits(scale[e].data()));
      sfb_ptrs.push_back(ptr_bits(sfb[e].data()));
    }
  }

  ExpertWeights weights(ScaleLayout layout) const {
    return {packed_ptrs.data(), layout == ScaleLayout::sfb ? sfb_ptrs.data() : scale_ptrs.data(),
            scale2.data()};
  }

  std::vector<float> decoded(int e) const {
    std::vector<float> w;
    for (bf16_bits b : naive_dequant_bf16(packed[e], scale[e], n, k))
      w.push_back(format::bf16_to_float(b));
    return w;
  }
};

struct MoeFixture {
  static constexpr int kHidden = 64, kInter = 32;
  int experts, local_experts, top_k, tokens;
  MoeProjection gate, up, down;
  std::vector<std::vector<bf16_bits>> bias[3];  // gate, up, down per local expert
  std::vector<std::uint64_t> bias_ptrs[3];
  std::vector<std::int32_t> map;
  std::vector<bf16_bits> hidden;
  std::vector<float> logits;
  MoeLayer layer;

  // gate_s2 scales gate and up: 1/64 keeps them small, 1/8 reaches gpt-oss's clamp at 7.
  MoeFixture(int experts_in, int top_k_in, int tokens_in, float gate_s2 = 1.0f / 64, int local = -1,
             std::uint32_t seed = 1)
      : experts(experts_in),
        local_experts(local < 0 ? experts_in : local),
        top_k(top_k_in),
        tokens(tokens_in),
        gate(local_experts, kInter, kHidden, seed * 100, gate_s2),
        up(local_experts, kInter, kHidden, seed * 100 + 31, gate_s2),
        down(local_experts, kHidden, kInter, seed * 100 + 62, 1.0f / 32),
        hidden(random_bf16(static_cast<std::size_t>(tokens) * kHidden, seed + 5, -3, 3)) {
    std::mt19937 rng(seed + 9);
    std::normal_distribution<float> dist(0.0f, 2.0f);
    for (int i = 0; i < tokens * experts; ++i) logits.push_back(dist(rng));
    layer.num_experts = experts;
    layer.num_local_experts = local_experts;
    layer.hidden_size = kHidden;
    layer.intermediate_size = kInter;
    layer.top_k = top_k;
    set_layout(ScaleLayout::k16_by_n);
  }

  void set_layout(ScaleLayout layout) {
    layer.scale_layout = layout;
    layer.gate = gate.weights(layout);
    layer.up = up.weights(layout);
    layer.down = down.weights(layout);
  }

  // Random bf16 biases in [-4, 4] for all three projections.
  void add_biases() {
    const int sizes[3] = {kInter, kInter, kHidden};
    for (int p = 0; p < 3; ++p)
      for (int e = 0; e < local_experts; ++e) {
        bias[p].push_back(random_bf16(static_cast<std::size_t>(sizes[p]), 40u + 3u * e + p, -4, 4));
        bias_ptrs[p].push_back(ptr_bits(bias[p].back().data()));
      }
    layer.gate_bias_ptrs = bias_ptrs[0].data();
    layer.up_bias_ptrs = bias_ptrs[1].data();
    layer.down_bias_ptrs = bias_ptrs[2].data();
  }

  void set_map(std::vector<std::int32_t> global_to_local) {
    map = std::move(global_to_local);
    layer.expert_map = map.data();
  }

  // The tokens with fp32 logits; the caller sets out.
  MoeTokens with_logits() const {
    MoeTokens t;
    t.num_tokens = tokens;
    t.hidden = hidden.data();
    t.router_logits = logits.data();
    return t;
  }

  std::vector<float> logits_row(int t) const {
    return {logits.begin() + static_cast<std::ptrdiff_t>(t) * experts,
            logits.begin() + static_cast<std::ptrdiff_t>(t + 1) * experts};
  }

  std::vector<bf16_bits> poisoned_out() const {
    return std::vector<bf16_bits>(static_cast<std::size_t>(tokens) * kHidden, 0x7FC1);
  }

  RefLayer reference() const {
    RefLayer r;
    r.experts = experts;
    r.hidden = kHidden;
    r.inter = kInter;
    r.top_k = top_k;
    r.map = map;
    r.clamped = layer.activation == MoeActivation::swiglu_clamped;
    r.alpha = layer.swiglu_alpha;
    r.limit = layer.swiglu_limit;
    for (int e = 0; e < local_experts; ++e) {
      RefExpert x{gate.decoded(e),
                  up.decoded(e),
                  down.decoded(e),
                  gate.scale2[e],
                  up.scale2[e],
                  down.scale2[e],
                  {},
                  {},
                  {}};
      std::vector<float>* dst[3] = {&x.gate_bias, &x.up_bias, &x.down_bias};
      for (int p = 0; p < 3; ++p)
        if (!bias[p].empty())
          for (bf16_bits b : bias[p][e]) dst[p]->push_back(format::bf16_to_float(b));
      r.local.push_back(std::move(x));
    }
    return r;
  }
};

}  // namespace metrale::test
