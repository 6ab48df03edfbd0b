// The MoE layer on the CUDA backend given bad token data, refused inputs, and the routing
// launch's shape (host logic): a NaN logit or an id out of range that only the device sees makes
// only that token's row NaN; METRALE_MOE_CHECK_INPUTS=1 refuses bad data on the host with the CPU
// backend's message; host-side refusals name the value.
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include <cmath>
#include <string>
#include <vector>

#include "api/api_test_util.hpp"
#include "cuda/moe/moe_route.hpp"
#include "moe_device_layer.hpp"

namespace metrale::cuda_test {
namespace {

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

}  // namespace
}  // namespace metrale::cuda_test
#endif
