// Expert offsets on the device: one MoE layer — fused gate_up (rows gathered through
// sorted_token_ids) then down on the gate output — captured once into a CUDA graph with the
// offsets and token ids in device memory (ExpertGroups::offsets_on_device, max_rows_per_expert =
// M_total), then replayed with new routings written into the same device buffers. Each replay is
// compared with the CPU oracle on that routing: gate and up bit for bit (exact mode inputs), down
// (whose input is the GPU's own gate output) within the realistic tolerance. Capture runs in
// cudaStreamCaptureModeThreadLocal, so a host synchronisation inside the calls fails the test.
// And a dense bf16 GEMM on stream-K, whose arrival counts must be zeroed on every replay.
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>

#include "check/buffers.hpp"
#include "check/grouped.hpp"
#include "check/runners.hpp"
#include "check/scoped_kernel.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

constexpr int kHidden = 256, kInter = 128, kTokens = 48, kExperts = 16, kTopK = 4;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

struct Layer {
  check::GroupedHost gate_up, down;
  check::GroupedDevice d_gate_up, d_down;
  GroupedNvfp4 gate_up_args{}, down_args{};
};

// What a captured call runs on: the shared workspace, resolved before capture (nothing may
// allocate inside it), and a stream of its own.
struct Capturing {
  cudaStream_t stream = nullptr;
  Exec exec{};
  Capturing() {
    void* ws = nullptr;
    std::size_t ws_size = 0;
    EXPECT_TRUE(shared_workspace(Backend::cuda, &ws, &ws_size).ok());
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    exec = Exec{Backend::cuda, ws, ws_size, stream};
  }
  ~Capturing() { (void)cudaStreamDestroy(stream); }
  Capturing(const Capturing&) = delete;
  Capturing& operator=(const Capturing&) = delete;
};

// The down call reads the gate output and the gate_up call's device offsets.
void make_args(Layer& layer) {
  const int m_total = layer.gate_up.routing.m_total;
  layer.gate_up_args = check::device_args(layer.gate_up, layer.d_gate_up, true, m_total);
  layer.down_args = check::device_args(layer.down, layer.d_down, true, m_total);
  layer.down_args.a = layer.d_gate_up.out[0].as<bf16_bits>();
  layer.down_args.a_rows = m_total;
  layer.down_args.groups.offsets = layer.d_gate_up.offsets.as<std::int32_t>();
}

// Compares the replay's outputs with the oracle on the routing now in `layer`.
void expect_matches_oracle(Layer& layer) {
  const auto rows = check::detail::choose_rows(layer.gate_up.routing.m_total, 0, 0, 1);
  const auto want = check::grouped_oracle(layer.gate_up, rows, false);
  for (int p = 0; p < 2; ++p) {
    const auto got = layer.d_gate_up.out[p].download<bf16_bits>();
    const auto cmp = check::compare_bf16_bits(got, want[p], kInter, {}, p ? "c_up" : "c_gate");
    EXPECT_EQ(cmp.mismatches, 0) << cmp.first_detail;
  }
  // The oracle's down reads what the GPU's gate wrote: the comparison isolates the down GEMM.
  layer.down.a = layer.d_gate_up.out[0].download<bf16_bits>();
  const auto want_down = check::grouped_oracle(layer.down, rows, false);
  const auto bound = check::grouped_oracle(layer.down, rows, true);
  const auto got_down = layer.d_down.out[0].download<bf16_bits>();
  const auto cmp = check::compare_bf16_tolerance(got_down, want_down[0], bound[0], kHidden, {},
                                                 {kInter, false}, "c");
  EXPECT_EQ(cmp.mismatches, 0) << cmp.first_detail;
  EXPECT_EQ(check::check_all_guards(layer.d_gate_up.all()), "");
  EXPECT_EQ(check::check_all_guards(layer.d_down.all()), "");
}

TEST(GraphSmall, MoeLayerWithDeviceOffsets) {
  METRALE_SKIP_WITHOUT_GPU();
  const check::Routing first{kTokens, kExperts, kTopK, RoutingKind::uniform};
  Layer layer;
  layer.gate_up = check::make_grouped_host(
      grouped_case(Op::grouped_gate_up_fused, Mode::exact, kInter, kHidden, first, 71));
  layer.down = check::make_grouped_host(
      grouped_case(Op::grouped_down, Mode::realistic, kHidden, kInter, first, 72));
  check::reroute(layer.down, layer.gate_up.routing);  // one routing for the layer
  layer.d_gate_up = check::upload_grouped(layer.gate_up);
  layer.d_down = check::upload_grouped(layer.down);
  make_args(layer);

  const Capturing capturing;
  const Exec& exec = capturing.exec;
  cudaStream_t stream = capturing.stream;
  // One eager run first (lazy per-process setup happens outside the capture) — and it must agree.
  ASSERT_TRUE(nvfp4_grouped(layer.gate_up_args, exec).ok());
  ASSERT_TRUE(nvfp4_grouped(layer.down_args, exec).ok());
  CUDA_OK(cudaStreamSynchronize(stream));
  expect_matches_oracle(layer);

  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const Result r1 = nvfp4_grouped(layer.gate_up_args, exec);
  const Result r2 = nvfp4_grouped(layer.down_args, exec);
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  ASSERT_TRUE(r1.ok()) << r1.message;
  ASSERT_TRUE(r2.ok()) << r2.message;
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorName(end);
  cudaGraphExec_t instance = nullptr;
  CUDA_OK(cudaGraphInstantiate(&instance, graph, 0));

  const check::Routing routings[] = {{kTokens, kExperts, kTopK, RoutingKind::skew},
                                     {kTokens, kExperts, kTopK, RoutingKind::empty_expert},
                                     {kTokens, kExperts, kTopK, RoutingKind::one_expert}};
  std::uint64_t seed = 80;
  for (const check::Routing& routing : routings) {
    SCOPED_TRACE(std::string("routing ") + std::string(check::routing_name(routing.kind)));
    const check::RoutingPlan plan = check::make_routing(routing, ++seed);
    check::reroute(layer.gate_up, plan);
    check::reroute(layer.down, plan);
    check::upload_routing(layer.gate_up, layer.d_gate_up);  // the buffers the graph reads
    for (auto* out : {&layer.d_gate_up.out[0], &layer.d_gate_up.out[1], &layer.d_down.out[0]})
      out->poison_bf16(check::kPoisonBf16);
    CUDA_OK(cudaGraphLaunch(instance, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    expect_matches_oracle(layer);
  }
  CUDA_OK(cudaGraphExecDestroy(instance));
  CUDA_OK(cudaGraphDestroy(graph));
}

// A dense bf16 GEMM on stream-K (METRALE_CUDA_DENSE_SCHEDULE=stream-k, and its clusters of 2:
// stream-k-pairs), captured once and
// replayed on new activations: each replay must give the bits of an eager call on the same
// inputs. The CTAs finishing a tile wait on arrival counts in the workspace, zeroed in front of
// the kernel: a replay that kept the last run's counts would add stale sums.
class GraphStreamK : public testing::TestWithParam<const char*> {};

TEST_P(GraphStreamK, DenseReplaysOnNewActivations) {
  METRALE_SKIP_WITHOUT_GPU();
  const check::ScopedVariable schedule("METRALE_CUDA_DENSE_SCHEDULE", GetParam());
  constexpr int kM = 300, kN = 1536, kK = 2048;
  std::uint64_t state = 12345;
  auto random_bf16 = [&](std::size_t count) {
    std::vector<bf16_bits> values(count);
    for (bf16_bits& v : values) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = static_cast<bf16_bits>(0x3c00 + (state >> 33) % 0x0400 + ((state >> 60) & 1) * 0x8000);
    }
    return values;
  };
  check::DeviceBuffer act = check::upload_new(random_bf16(std::size_t{kM} * kK), "act");
  check::DeviceBuffer weight = check::upload_new(random_bf16(std::size_t{kN} * kK), "weight");
  check::DeviceBuffer out(std::size_t{kM} * kN * sizeof(bf16_bits), "out");
  const DenseGemm args{
      act.as<bf16_bits>(), weight.as<bf16_bits>(), out.as<bf16_bits>(), kM, kN, kK};
  const Capturing capturing;
  const Exec& exec = capturing.exec;
  cudaStream_t stream = capturing.stream;
  ASSERT_TRUE(bf16_gemm_act_weight_t(args, exec).ok());  // per-process setup outside the capture
  CUDA_OK(cudaStreamSynchronize(stream));

  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const Result captured = bf16_gemm_act_weight_t(args, exec);
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  ASSERT_TRUE(captured.ok()) << captured.message;
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorName(end);
  cudaGraphExec_t instance = nullptr;
  CUDA_OK(cudaGraphInstantiate(&instance, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    SCOPED_TRACE(replay);
    act.upload(random_bf16(std::size_t{kM} * kK));
    out.poison_bf16(check::kPoisonBf16);
    CUDA_OK(cudaGraphLaunch(instance, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    const auto replayed = out.download<bf16_bits>();
    out.poison_bf16(check::kPoisonBf16);
    ASSERT_TRUE(bf16_gemm_act_weight_t(args, exec).ok());
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_TRUE(replayed == out.download<bf16_bits>());
    EXPECT_EQ(check::check_all_guards({&act, &weight, &out}), "");
  }
  CUDA_OK(cudaGraphExecDestroy(instance));
  CUDA_OK(cudaGraphDestroy(graph));
}

INSTANTIATE_TEST_SUITE_P(Schedules, GraphStreamK, testing::Values("stream-k", "stream-k-pairs"));

#else
TEST(GraphSmall, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
