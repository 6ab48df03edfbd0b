// The MoE layer's GPU tests' shared pieces (moe_layer_test.cpp, moe_layer_inputs_test.cpp): the
// exact-mode fixture edit, the fixture's layer and tokens on the device, a run through
// moe_forward on either backend, the verdicts (bit for bit, or within 2^-6 of a row's largest
// output), and each preset's routing function on the fixture's small experts.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "check/buffers.hpp"
#include "cpu/moe_fixture.hpp"
#include "cuda_test_support.hpp"
#include "format/bf16.hpp"

namespace metrale::cuda_test {

using check::DeviceBuffer;
using test::MoeFixture;
using test::MoeProjection;

// Keeps one e2m1 code per output row (at a column that differs per row and expert), so that
// every down output is a single product: exact whatever the summation order.
inline void keep_one_code_per_row(MoeProjection& p) {
  const int bytes_per_row = p.k / 2;
  for (std::size_t e = 0; e < p.packed.size(); ++e)
    for (int row = 0; row < p.n; ++row) {
      std::uint8_t* r = p.packed[e].data() + static_cast<std::size_t>(row) * bytes_per_row;
      const int keep = (row * 7 + static_cast<int>(e) * 3) % bytes_per_row;
      const std::uint8_t code = static_cast<std::uint8_t>((r[keep] & 0x0F) | 0x02);  // nonzero
      std::memset(r, 0, static_cast<std::size_t>(bytes_per_row));
      r[keep] = code;
    }
}

inline DeviceBuffer upload(const void* host, std::size_t bytes, const std::string& name) {
  DeviceBuffer d(bytes, name);
  d.upload(host, bytes);
  return d;
}

// One projection on the device: per-expert buffers and the host tables of their addresses.
struct DeviceProjection {
  std::vector<DeviceBuffer> packed, scale;
  std::vector<std::uint64_t> packed_ptrs, scale_ptrs;
  const float* scale2;

  DeviceProjection(const MoeProjection& p, ScaleLayout layout) : scale2(p.scale2.data()) {
    for (std::size_t e = 0; e < p.packed.size(); ++e) {
      packed.push_back(check::upload_new(p.packed[e], "packed"));
      scale.push_back(
          check::upload_new(layout == ScaleLayout::sfb ? p.sfb[e] : p.scale[e], "scale"));
      packed_ptrs.push_back(reinterpret_cast<std::uint64_t>(packed.back().data()));
      scale_ptrs.push_back(reinterpret_cast<std::uint64_t>(scale.back().data()));
    }
  }
  ExpertWeights weights() const { return {packed_ptrs.data(), scale_ptrs.data(), scale2}; }
};

// The fixture's layer with every pointer on the device.
struct DeviceLayer {
  DeviceProjection gate, up, down;
  std::vector<DeviceBuffer> bias[3];
  std::vector<std::uint64_t> bias_ptrs[3];
  DeviceBuffer correction;
  MoeLayer layer;

  explicit DeviceLayer(const MoeFixture& f)
      : gate(f.gate, f.layer.scale_layout),
        up(f.up, f.layer.scale_layout),
        down(f.down, f.layer.scale_layout),
        layer(f.layer) {
    layer.gate = gate.weights();
    layer.up = up.weights();
    layer.down = down.weights();
    const std::uint64_t** tables[3] = {&layer.gate_bias_ptrs, &layer.up_bias_ptrs,
                                       &layer.down_bias_ptrs};
    for (int p = 0; p < 3; ++p) {
      if (f.bias[p].empty()) continue;
      for (const auto& b : f.bias[p]) {
        bias[p].push_back(check::upload_new(b, "bias"));
        bias_ptrs[p].push_back(reinterpret_cast<std::uint64_t>(bias[p].back().data()));
      }
      *tables[p] = bias_ptrs[p].data();
    }
    if (f.layer.correction_bias) {
      correction = upload(f.layer.correction_bias,
                          sizeof(float) * static_cast<std::size_t>(f.experts), "correction_bias");
      layer.correction_bias = correction.as<float>();
    }
  }
};

struct Outcome {
  std::vector<bf16_bits> out;
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
};

inline std::size_t slots(const MoeFixture& f) {
  return static_cast<std::size_t>(f.tokens) * static_cast<std::size_t>(f.top_k);
}

inline Outcome run_cpu(const MoeFixture& f, MoeTokens t) {
  Outcome o{f.poisoned_out(), std::vector<std::int32_t>(slots(f)), std::vector<float>(slots(f))};
  t.out = o.out.data();
  t.topk_ids_out = o.ids.data();
  t.topk_weights_out = o.weights.data();
  const Result r = moe_forward(f.layer, t, Exec{Backend::cpu});
  EXPECT_TRUE(r.ok()) << r.message;
  return o;
}

// The tokens' buffers on the device, mirroring a host MoeTokens.
struct DeviceTokens {
  DeviceBuffer hidden, logits, ids, weights, residual, out, ids_out, weights_out;
  MoeTokens tokens;

  DeviceTokens(const MoeFixture& f, const MoeTokens& host) : tokens(host) {
    const std::size_t T = static_cast<std::size_t>(f.tokens),
                      E = static_cast<std::size_t>(f.experts);
    const std::size_t H = MoeFixture::kHidden;
    hidden = upload(host.hidden, T * H * 2, "hidden");
    tokens.hidden = hidden.as<bf16_bits>();
    if (host.router_logits) {
      logits =
          upload(host.router_logits, T * E * (host.logits_dtype == DType::f32 ? 4 : 2), "logits");
      tokens.router_logits = logits.data();
    }
    if (host.topk_ids) {
      ids = upload(host.topk_ids, slots(f) * 4, "topk_ids");
      weights = upload(host.topk_weights, slots(f) * 4, "topk_weights");
      tokens.topk_ids = ids.as<std::int32_t>();
      tokens.topk_weights = weights.as<float>();
    }
    out = DeviceBuffer(T * H * 2, "out");
    out.poison_bf16(0x7FC1);
    tokens.out = out.as<bf16_bits>();
    if (host.residual) {
      residual = upload(host.residual, T * H * 2, "residual");
      tokens.residual = residual.as<bf16_bits>();
    }
    ids_out = DeviceBuffer(slots(f) * 4, "topk_ids_out");
    weights_out = DeviceBuffer(slots(f) * 4, "topk_weights_out");
    tokens.topk_ids_out = ids_out.as<std::int32_t>();
    tokens.topk_weights_out = weights_out.as<float>();
  }

  Outcome download() const {
    check::device_synchronize("moe_forward");
    for (const DeviceBuffer* b : {&out, &ids_out, &weights_out})
      EXPECT_EQ(b->check_guards(), "") << b->name();
    return {out.download<bf16_bits>(), ids_out.download<std::int32_t>(),
            weights_out.download<float>()};
  }
};

inline Outcome run_gpu(const MoeFixture& f, const MoeTokens& host, const Exec& exec = kCuda) {
  const DeviceLayer layer(f);
  DeviceTokens d(f, host);
  const Result r = moe_forward(layer.layer, d.tokens, exec);
  EXPECT_TRUE(r.ok()) << r.message;
  return d.download();
}

inline void expect_exact(const Outcome& gpu, const Outcome& cpu) {
  EXPECT_EQ(gpu.ids, cpu.ids);
  EXPECT_EQ(gpu.weights, cpu.weights);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < cpu.out.size(); ++i) differ += gpu.out[i] != cpu.out[i];
  EXPECT_EQ(differ, 0u) << "of " << cpu.out.size() << " outputs";
}

// Within 2^-6 of each token row's largest output (the oracle's), ids and weights exact.
inline void expect_close(const Outcome& gpu, const Outcome& cpu, int hidden) {
  EXPECT_EQ(gpu.ids, cpu.ids);
  EXPECT_EQ(gpu.weights, cpu.weights);
  std::size_t bad = 0;
  for (std::size_t row = 0; row < cpu.out.size() / hidden; ++row) {
    float largest = 0;
    for (int c = 0; c < hidden; ++c)
      largest = std::max(largest, std::fabs(format::bf16_to_float(cpu.out[row * hidden + c])));
    for (int c = 0; c < hidden; ++c) {
      const float want = format::bf16_to_float(cpu.out[row * hidden + c]);
      const float got = format::bf16_to_float(gpu.out[row * hidden + c]);
      if (!(std::fabs(got - want) <= largest / 64 + 1e-6f)) ++bad;
    }
  }
  EXPECT_EQ(bad, 0u);
}

// A preset's routing function on the fixture's small experts.
struct RoutingPreset {
  const char* name;
  int experts, top_k;
  MoeRouting routing;
  int n_group = 1, topk_group = 1;
  float scaling = 1.0f;
  bool clamped_with_bias = false;
};

inline const RoutingPreset kPresets[] = {
    {"Qwen3-30B-A3B", 128, 8, MoeRouting::softmax_topk},
    {"DeepSeek-V3", 256, 8, MoeRouting::sigmoid_grouped_topk, 8, 4, 2.5f},
    {"gpt-oss-120b", 128, 4, MoeRouting::softmax_topk, 1, 1, 1.0f, true},
    {"Mixtral-8x7B", 8, 2, MoeRouting::softmax_topk},
    {"Qwen3-Next-80B-A3B", 512, 10, MoeRouting::softmax_topk},
};

struct PresetLayer {
  MoeFixture f;
  std::vector<float> correction;

  PresetLayer(const RoutingPreset& p, int tokens, bool exact, ScaleLayout layout)
      : f(p.experts, p.top_k, tokens, p.clamped_with_bias ? 1.0f / 8 : 1.0f / 64) {
    if (exact) keep_one_code_per_row(f.down);
    f.set_layout(layout);
    f.layer.routing = p.routing;
    f.layer.n_group = p.n_group;
    f.layer.topk_group = p.topk_group;
    f.layer.routed_scaling_factor = p.scaling;
    if (p.routing == MoeRouting::sigmoid_grouped_topk) {
      for (int e = 0; e < p.experts; ++e) correction.push_back(0.01f * static_cast<float>(e % 5));
      f.layer.correction_bias = correction.data();
    }
    if (p.clamped_with_bias) {
      f.layer.activation = MoeActivation::swiglu_clamped;
      f.add_biases();
    }
  }
};

}  // namespace metrale::cuda_test
