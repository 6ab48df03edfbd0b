// The MoE layer on the CUDA backend against the CPU oracle, both through moe_forward.
//
// Exact mode: the fixture's gate/up products are exact in fp32 (small-integer hidden states,
// e2m1 codes, e4m3 scales: 17 bits at most), and down keeps one code per row, so each down
// output is one exact product; everything else (routing with format::exp_f32, the activation,
// the combine in slot order without FMA) is the same fp32 sequence on both sides. So the output,
// the chosen ids and their weights must be equal bit for bit, whatever the kernels' summation
// order. Realistic mode: full random down weights, where the fp32 summation order may move a
// bf16 rounding: within 2^-6 of the row's largest output.
//
// Covered: each routing function with its preset's E, k and settings (Qwen3, DeepSeek-V3's
// grouped sigmoid with correction bias and scaling, Mixtral, Qwen3-Next, gpt-oss's clamped
// activation and biases) at T in {1, 3, 64, 4096}; precomputed ids naming an expert twice;
// every token on one expert; experts with no tokens; an expert map with half the experts
// remote; a residual, in place too; a second run bitwise identical; a captured graph replayed on
// new logits; a NaN logit or an id out of range (only the device sees them: that token's row is
// NaN, the others exact); output guard bands; refusals on the host.
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "api/api_test_util.hpp"
#include "check/buffers.hpp"
#include "cpu/moe_fixture.hpp"
#include "cuda/moe/moe_route.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

using check::DeviceBuffer;
using test::MoeFixture;
using test::MoeProjection;

// Keeps one e2m1 code per output row (at a column that differs per row and expert), so that
// every down output is a single product: exact whatever the summation order.
void keep_one_code_per_row(MoeProjection& p) {
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

DeviceBuffer upload(const void* host, std::size_t bytes, const std::string& name) {
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

std::size_t slots(const MoeFixture& f) {
  return static_cast<std::size_t>(f.tokens) * static_cast<std::size_t>(f.top_k);
}

Outcome run_cpu(const MoeFixture& f, MoeTokens t) {
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

Outcome run_gpu(const MoeFixture& f, const MoeTokens& host, const Exec& exec = kCuda) {
  const DeviceLayer layer(f);
  DeviceTokens d(f, host);
  const Result r = moe_forward(layer.layer, d.tokens, exec);
  EXPECT_TRUE(r.ok()) << r.message;
  return d.download();
}

void expect_exact(const Outcome& gpu, const Outcome& cpu) {
  EXPECT_EQ(gpu.ids, cpu.ids);
  EXPECT_EQ(gpu.weights, cpu.weights);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < cpu.out.size(); ++i) differ += gpu.out[i] != cpu.out[i];
  EXPECT_EQ(differ, 0u) << "of " << cpu.out.size() << " outputs";
}

// Within 2^-6 of each token row's largest output (the oracle's), ids and weights exact.
void expect_close(const Outcome& gpu, const Outcome& cpu, int hidden) {
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

const RoutingPreset kPresets[] = {
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

TEST(CudaMoe, EveryPresetRoutingIsExactAgainstTheOracle) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const RoutingPreset& p : kPresets)
    for (int tokens : {1, 3, 8, 64, 4096}) {  // T = 8: 64 slots of top-8, the most counted
      if (tokens == 4096 && p.experts != 128 && p.experts != 256) continue;  // time: two presets
      SCOPED_TRACE(testing::Message() << p.name << " T=" << tokens);
      PresetLayer l(p, tokens, true, tokens % 2 ? ScaleLayout::k16_by_n : ScaleLayout::sfb);
      expect_exact(run_gpu(l.f, l.f.with_logits()), run_cpu(l.f, l.f.with_logits()));
    }
}

// Past 2048 slots a placing launch places them, each block summing the rows of the routing
// blocks before it from the last block's sums per chunk of 16 blocks: token counts whose blocks
// end in a partial chunk (300 tokens: 38 blocks; 1000: 125), and a block count on a chunk edge
// (256 tokens of top-10: 32 blocks).
TEST(CudaMoe, PlacingLaunchAcrossChunkEdgesIsExact) {
  METRALE_SKIP_WITHOUT_GPU();
  const std::pair<const RoutingPreset*, int> cases[] = {
      {&kPresets[0], 300}, {&kPresets[4], 1000}, {&kPresets[4], 256}};
  for (const auto& [p, tokens] : cases) {
    SCOPED_TRACE(testing::Message() << p->name << " T=" << tokens);
    const cuda::moe::RouteShape shape =
        cuda::moe::route_shape(tokens, p->experts, p->n_group, p->top_k, p->experts);
    ASSERT_FALSE(shape.last_block_places);
    ASSERT_GT(shape.blocks, cuda::moe::kPlaceChunk);
    PresetLayer l(*p, tokens, true, ScaleLayout::sfb);
    expect_exact(run_gpu(l.f, l.f.with_logits()), run_cpu(l.f, l.f.with_logits()));
  }
}

TEST(CudaMoe, RealisticWeightsStayCloseToTheOracle) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const RoutingPreset& p : kPresets) {
    SCOPED_TRACE(p.name);
    PresetLayer l(p, 64, false, ScaleLayout::sfb);
    expect_close(run_gpu(l.f, l.f.with_logits()), run_cpu(l.f, l.f.with_logits()),
                 MoeFixture::kHidden);
  }
}

TEST(CudaMoe, Bf16LogitsAreExact) {
  METRALE_SKIP_WITHOUT_GPU();
  PresetLayer l(kPresets[1], 64, true, ScaleLayout::sfb);
  std::vector<bf16_bits> logits16;
  for (float v : l.f.logits) logits16.push_back(format::float_to_bf16(v));
  MoeTokens t = l.f.with_logits();
  t.router_logits = logits16.data();
  t.logits_dtype = DType::bf16;
  expect_exact(run_gpu(l.f, t), run_cpu(l.f, t));
}

// Precomputed routing: power-of-two weights, ids repeated within a token, experts with no rows,
// and every token on one expert (rows past the decode family's limit: the tiled family too); at
// 5 tokens (15 slots) the routing kernel's few-slot grouping (group_few_slots) counts them.
TEST(CudaMoe, PrecomputedRoutingIsExact) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int tokens : {64, 5})
    for (bool one_expert : {false, true}) {
      MoeFixture f(16, 3, tokens);
      keep_one_code_per_row(f.down);
      f.set_layout(ScaleLayout::sfb);
      f.layer.routing = MoeRouting::precomputed;
      std::vector<std::int32_t> ids;
      std::vector<float> weights;
      for (int t = 0; t < f.tokens; ++t)
        for (int j = 0; j < 3; ++j) {
          ids.push_back(one_expert ? 5 : (t * 3 + j * (t % 2 + 1)) % 7);  // experts 7..15: no rows
          weights.push_back(std::ldexp(1.0f, -(t + j) % 4) * (j == 1 ? -1.0f : 1.0f));
        }
      MoeTokens t = f.with_logits();
      t.router_logits = nullptr;
      t.topk_ids = ids.data();
      t.topk_weights = weights.data();
      SCOPED_TRACE(testing::Message()
                   << (one_expert ? "every token on one expert" : "repeats and empty experts")
                   << ", T = " << tokens);
      expect_exact(run_gpu(f, t), run_cpu(f, t));
    }
}

// 64 tokens, and 6 (24 slots: the few-slot grouping, remote slots counted past the local ones).
TEST(CudaMoe, ExpertMapWithHalfTheExpertsRemote) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int tokens : {64, 6}) {
    SCOPED_TRACE(testing::Message() << "T = " << tokens);
    MoeFixture f(16, 4, tokens, 1.0f / 64, 8);
    keep_one_code_per_row(f.down);
    f.set_layout(ScaleLayout::sfb);
    std::vector<std::int32_t> map;
    for (int e = 0; e < 16; ++e) map.push_back(e % 2 ? -1 : (e / 2 + 3) % 8);
    f.set_map(map);
    expect_exact(run_gpu(f, f.with_logits()), run_cpu(f, f.with_logits()));
  }
}

// More experts than a routing block has threads (1100 on 1024): the few-slot grouping writes the
// offsets past the block's threads in a second pass. T = 1 and 2 (4 and 8 slots). Also more local
// experts than the bias tables hold, on a layer without biases: filling their null entries once ran
// past the table, over the combine's arguments (a division by zero on the host).
TEST(CudaMoe, MoreExpertsThanRoutingThreadsAreExact) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int tokens : {1, 2}) {
    SCOPED_TRACE(testing::Message() << "T = " << tokens);
    MoeFixture f(1100, 4, tokens);
    keep_one_code_per_row(f.down);
    f.set_layout(ScaleLayout::sfb);
    expect_exact(run_gpu(f, f.with_logits()), run_cpu(f, f.with_logits()));
  }
}

TEST(CudaMoe, ResidualAddedAndInPlace) {
  METRALE_SKIP_WITHOUT_GPU();
  PresetLayer l(kPresets[0], 3, true, ScaleLayout::sfb);
  const std::vector<bf16_bits> residual =
      test::random_bf16(static_cast<std::size_t>(3) * MoeFixture::kHidden, 77, -8, 8);
  MoeTokens t = l.f.with_logits();
  t.residual = residual.data();
  const Outcome cpu = run_cpu(l.f, t);
  expect_exact(run_gpu(l.f, t), cpu);
  // In place: out is the residual buffer.
  const DeviceLayer layer(l.f);
  DeviceTokens d(l.f, t);
  d.tokens.out = const_cast<bf16_bits*>(d.tokens.residual);
  ASSERT_TRUE(moe_forward(layer.layer, d.tokens, kCuda).ok());
  check::device_synchronize("moe_forward in place");
  EXPECT_EQ(d.residual.download<bf16_bits>(), cpu.out);
}

TEST(CudaMoe, SecondRunIsBitwiseIdentical) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int tokens : {3, 4096}) {
    PresetLayer l(kPresets[4], tokens, false, ScaleLayout::sfb);
    const DeviceLayer layer(l.f);
    DeviceTokens d(l.f, l.f.with_logits());
    ASSERT_TRUE(moe_forward(layer.layer, d.tokens, kCuda).ok());
    const Outcome first = d.download();
    d.out.poison_bf16(0x7FC1);
    ASSERT_TRUE(moe_forward(layer.layer, d.tokens, kCuda).ok());
    const Outcome second = d.download();
    EXPECT_EQ(first.out, second.out) << "T=" << tokens;
    EXPECT_EQ(first.ids, second.ids);
  }
}

// Captured once, replayed after new logits were written into the same buffer: the replay routes
// the new logits (nothing was baked in on the host).
TEST(CudaMoe, GraphReplayRoutesNewLogits) {
  METRALE_SKIP_WITHOUT_GPU();
  PresetLayer a(kPresets[1], 64, true, ScaleLayout::sfb);
  MoeFixture& f = a.f;
  const DeviceLayer layer(f);
  DeviceTokens d(f, f.with_logits());
  std::size_t bytes = 0;
  ASSERT_TRUE(moe_workspace_size(Backend::cuda, layer.layer, f.tokens, &bytes).ok());
  DeviceBuffer ws(bytes, "workspace");
  cudaStream_t stream = nullptr;
  check::cuda_require(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const Exec exec{Backend::cuda, ws.data(), bytes, stream};
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t instance = nullptr;
  check::cuda_require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  const Result r = moe_forward(layer.layer, d.tokens, exec);
  check::cuda_require(cudaStreamEndCapture(stream, &graph), "end capture");
  ASSERT_TRUE(r.ok()) << r.message;
  check::cuda_require(cudaGraphInstantiate(&instance, graph, 0), "instantiate");
  for (std::uint32_t round = 0; round < 2; ++round) {
    std::vector<float> logits = f.logits;
    for (float& v : logits) v = -v * (1.0f + static_cast<float>(round));  // a different routing
    f.logits = logits;
    d.logits.upload(logits);
    d.out.poison_bf16(0x7FC1);
    check::cuda_require(cudaGraphLaunch(instance, stream), "replay");
    check::cuda_require(cudaStreamSynchronize(stream), "replay sync");
    expect_exact(d.download(), run_cpu(f, f.with_logits()));
  }
  cudaGraphExecDestroy(instance);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// The device sees these, not the host: the token's row is NaN, every other token is exact.
TEST(CudaMoe, BadTokenDataPoisonsOnlyItsRow) {
  METRALE_SKIP_WITHOUT_GPU();
  constexpr int kBad = 1, H = MoeFixture::kHidden;
  for (bool precomputed : {false, true}) {
    MoeFixture f(16, 2, 3);
    keep_one_code_per_row(f.down);
    f.set_layout(ScaleLayout::sfb);
    MoeTokens t = f.with_logits();
    std::vector<std::int32_t> ids{1, 2, 3, 4, 5, 6};
    std::vector<float> weights{0.5f, 0.25f, 1.0f, 2.0f, 0.5f, 0.5f};
    if (precomputed) {
      f.layer.routing = MoeRouting::precomputed;
      t.router_logits = nullptr;
      t.topk_ids = ids.data();
      t.topk_weights = weights.data();
    }
    const Outcome cpu = run_cpu(f, t);  // on the good data
    std::vector<float> bad_logits = f.logits;
    bad_logits[kBad * 16 + 7] = NAN;
    ids[kBad * 2 + 1] = 16;  // outside [0, E)
    if (precomputed)
      t.topk_ids = ids.data();
    else
      t.router_logits = bad_logits.data();
    const Outcome gpu = run_gpu(f, t);
    for (int token = 0; token < 3; ++token)
      for (int c = 0; c < H; ++c) {
        const bf16_bits got = gpu.out[static_cast<std::size_t>(token) * H + c];
        if (token == kBad) {
          EXPECT_TRUE(std::isnan(format::bf16_to_float(got))) << "column " << c;
        } else {
          EXPECT_EQ(got, cpu.out[static_cast<std::size_t>(token) * H + c]) << token << ", " << c;
        }
      }
  }
}

// METRALE_MOE_CHECK_INPUTS=1: the token data comes to the host first, and bad data is refused
// with the CPU backend's message, nothing written; a capturing stream is refused.
TEST(CudaMoe, CheckInputsRefusesBadTokenDataByName) {
  METRALE_SKIP_WITHOUT_GPU();
  const test::ScopedEnv check("METRALE_MOE_CHECK_INPUTS", "1");
  MoeFixture f(16, 2, 3);
  f.set_layout(ScaleLayout::sfb);
  const DeviceLayer layer(f);
  std::vector<float> logits = f.logits;
  logits[1 * 16 + 7] = NAN;
  MoeTokens t = f.with_logits();
  t.router_logits = logits.data();
  DeviceTokens d(f, t);
  EXPECT_TRUE(test::fails_with(moe_forward(layer.layer, d.tokens, kCuda), Status::invalid_argument,
                               "moe_forward: tokens.router_logits[1][7] = nan is not finite"));
  std::vector<std::int32_t> ids{1, 2, 3, 16, 5, 6};
  std::vector<float> weights(6, 0.5f);
  MoeFixture p(16, 2, 3);
  p.set_layout(ScaleLayout::sfb);
  p.layer.routing = MoeRouting::precomputed;
  MoeTokens tp = p.with_logits();
  tp.router_logits = nullptr;
  tp.topk_ids = ids.data();
  tp.topk_weights = weights.data();
  const DeviceLayer player(p);
  DeviceTokens dp(p, tp);
  EXPECT_TRUE(test::fails_with(moe_forward(player.layer, dp.tokens, kCuda),
                               Status::invalid_argument,
                               "moe_forward: tokens.topk_ids[1][1] = 16 is outside [0, "
                               "layer.num_experts = 16)"));
  check::device_synchronize("refusals");
  EXPECT_EQ(d.out.download<bf16_bits>(), f.poisoned_out());
  EXPECT_EQ(dp.out.download<bf16_bits>(), p.poisoned_out());
  // Valid data passes the check and runs as usual.
  MoeTokens good = f.with_logits();
  DeviceTokens dg(f, good);
  ASSERT_TRUE(moe_forward(layer.layer, dg.tokens, kCuda).ok());
  // A capturing stream cannot wait for the host.
  cudaStream_t stream = nullptr;
  check::cuda_require(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  std::size_t bytes = 0;
  ASSERT_TRUE(moe_workspace_size(Backend::cuda, layer.layer, f.tokens, &bytes).ok());
  DeviceBuffer ws(bytes, "workspace");
  const Exec exec{Backend::cuda, ws.data(), bytes, stream};
  cudaGraph_t graph = nullptr;
  check::cuda_require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  const Result r = moe_forward(layer.layer, dg.tokens, exec);
  check::cuda_require(cudaStreamEndCapture(stream, &graph), "end capture");
  EXPECT_TRUE(test::fails_with(r, Status::unsupported,
                               "moe_forward: cannot be captured in a CUDA graph "
                               "(METRALE_MOE_CHECK_INPUTS = 1 reads the token data on the host)"));
  if (graph) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(CudaMoe, HostSideRefusalsNameTheValue) {
  METRALE_SKIP_WITHOUT_GPU();
  MoeFixture f(8, 2, 3);
  const DeviceLayer layer(f);
  DeviceTokens d(f, f.with_logits());
  MoeTokens t = d.tokens;
  t.hidden = reinterpret_cast<const bf16_bits*>(reinterpret_cast<const char*>(t.hidden) + 2);
  EXPECT_TRUE(
      test::fails_with(moe_forward(layer.layer, t, kCuda), Status::unsupported, "tokens.hidden"));
  std::size_t bytes = 0;
  ASSERT_TRUE(moe_workspace_size(Backend::cuda, layer.layer, 3, &bytes).ok());
  DeviceBuffer small(bytes / 2, "workspace");
  const Exec tight{Backend::cuda, small.data(), bytes / 2};
  EXPECT_TRUE(test::fails_with(moe_forward(layer.layer, d.tokens, tight),
                               Status::workspace_too_small, "bytes needed"));
  check::device_synchronize("refusals");
  EXPECT_EQ(d.out.download<bf16_bits>(), f.poisoned_out());
}

// The routing launch's shape (host logic, no GPU): one block up to 16 tokens, else blocks of
// about 8 tokens, the last placing every slot up to 512 of them; a block takes the threads its
// routing warps and its loops over the experts need, never fewer than four warps; its slot
// copies fit the shared memory it asks for.
TEST(CudaMoe, RouteShapeSizesBlocksToTheirWork) {
  struct Expected {
    int tokens, experts, n_group, top_k, blocks, threads;
    bool last_block_places = false;
  };
  const Expected cases[] = {
      {1, 128, 1, 8, 1, 128},         // Qwen3-30B at T = 1: one warp routes, four share the loops
      {1, 512, 1, 10, 1, 512},        // Qwen3-Next: a thread per expert
      {1, 256, 8, 8, 1, 256},         // DeepSeek-V3
      {16, 128, 1, 8, 1, 512},        // the most one block routes: a warp per token
      {20, 128, 1, 8, 3, 224, true},  // past it, blocks of about 8 tokens
      {64, 128, 1, 8, 8, 256, true},  // 512 slots: the last block places them
      {65, 128, 1, 8, 9, 256},        // 520 slots: a placing launch
      {64, 512, 1, 10, 8, 512},       // Qwen3-Next, 640 slots: a placing launch
      {512, 128, 1, 8, 64, 256},      // 4096 slots: a placing launch
      {1, 8, 1, 2, 1, 128},           // Mixtral
      {4096, 128, 1, 8, 128, 1024},
  };
  for (const Expected& e : cases) {
    const cuda::moe::RouteShape shape =
        cuda::moe::route_shape(e.tokens, e.experts, e.n_group, e.top_k, e.experts);
    EXPECT_EQ(shape.blocks, e.blocks) << "T = " << e.tokens << ", E = " << e.experts;
    EXPECT_EQ(shape.threads, e.threads) << "T = " << e.tokens << ", E = " << e.experts;
    EXPECT_EQ(shape.last_block_places, e.last_block_places) << "T = " << e.tokens;
  }
  for (int tokens : {1, 2, 7, 31, 32, 33, 100, 4096, 40000})
    for (int experts : {8, 60, 128, 256, 512, 2048}) {
      const cuda::moe::RouteShape shape = cuda::moe::route_shape(tokens, experts, 1, 8, experts);
      EXPECT_GE(shape.threads, 32 * shape.warps) << tokens << " tokens, " << experts;
      EXPECT_EQ(shape.threads % 32, 0) << tokens << " tokens, " << experts;
      EXPECT_LE(shape.threads, cuda::moe::kRouteThreads) << tokens << " tokens, " << experts;
      EXPECT_GE(shape.blocks * shape.tokens_per_block, tokens) << tokens << " tokens, " << experts;
      EXPECT_EQ(shape.few_slots, shape.blocks == 1 && tokens * 8 <= cuda::moe::kFewSlots)
          << tokens << " tokens, " << experts;
      EXPECT_LE(shape.shared_bytes, static_cast<std::size_t>(cuda::moe::kMaxRouteShared +
                                                            cuda::moe::kMaxSlotCopyBytes));
      if (shape.slot_copy_at > 0) {
        EXPECT_LE(shape.slot_copy_at + 8u * shape.tokens_per_block * 8, shape.shared_bytes);
      }
      if (shape.blocks > 1 && !shape.last_block_places) {  // the per-chunk sums, offsets, scan
        const std::size_t ints =
            static_cast<std::size_t>(cuda::moe::place_chunks(shape.blocks) + 1) * experts + 34;
        EXPECT_GE(shape.slot_copy_at > 0 ? std::size_t(shape.slot_copy_at) : shape.shared_bytes,
                  4 * ints)
            << tokens << " tokens, " << experts;
      }
    }
}

#else
TEST(CudaMoe, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
