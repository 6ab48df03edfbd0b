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
// activation and biases) at T in {1, 3, 8, 64, 4096}; the placing launch across chunk edges;
// bf16 logits; precomputed ids naming an expert twice; every token on one expert; experts with
// no tokens; an expert map with half the experts remote; 1100 experts; a residual, in place too;
// a second run bitwise identical; a captured graph replayed on new logits; output guard bands.
// Bad token data, refusals and the routing launch's shape: moe_layer_inputs_test.cpp.
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include <cmath>
#include <vector>

#include "api/api_test_util.hpp"
#include "cuda/moe/moe_route.hpp"
#include "moe_device_layer.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

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

#else
TEST(CudaMoe, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
