// The bench's bf16-grouped opponent (reference/cutlass/bf16_grouped.hpp: CUTLASS's sm90 ptr-array
// grouped GEMM on bf16 weights, torch._grouped_mm's kernels) against the CPU oracle, exact mode:
// small-integer activations and weights, so every fp32 sum is exact and both kernels must agree
// with cpu::bf16_gemm bit for bit. Group sizes around the tiles (an empty group, 1, 63..65,
// 127..129, 257 rows) with N and K off the tiles; each kernel forced, then the automatic choice;
// NaN-poisoned outputs between guard bands, a non-default stream, two runs bitwise identical,
// and a CUDA-graph replay (the bench captures run()). Host only, so they run without a GPU too:
// torch's kernel rule, and the refusals that name the value.
#include <gtest/gtest.h>

#ifdef METRALE_HAS_CUTLASS
#include <cuda_runtime.h>

#include <numeric>
#include <string>
#include <vector>

#include "check/buffers.hpp"
#include "check/compare.hpp"
#include "check/inputs.hpp"
#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "reference/cutlass/bf16_grouped.hpp"
#include "reference_test_util.hpp"

namespace metrale::reference_test {
namespace {

using reference::cutlass::Bf16Group;
using reference::cutlass::Bf16Grouped;
using reference::cutlass::Bf16GroupedKernel;
using reference::cutlass::Bf16GroupedPlan;

// G groups of the given sizes over one activation buffer [sum rows, K], one output [sum rows, N]
// and one weight [G, N, K]; the oracle's output per group.
struct ExactGrouped {
  ExactGrouped(std::vector<int> rows_of, int n_, int k_, std::uint64_t seed)
      : rows(std::move(rows_of)),
        n(n_),
        k(k_),
        total(std::accumulate(rows.begin(), rows.end(), 0)),
        act_host(check::small_int_bf16(static_cast<std::size_t>(total) * k, seed, 2)),
        weight_host(check::small_int_bf16(rows.size() * n * k, seed + 1, 3)),
        want(static_cast<std::size_t>(total) * n, check::kPoisonBf16),
        act(check::upload_new(act_host, "act")),
        weight(check::upload_new(weight_host, "weight")),
        out(want.size() * sizeof(bf16_bits), "out") {
    int begin = 0;
    for (std::size_t g = 0; g < rows.size(); ++g) {
      const std::size_t a_at = static_cast<std::size_t>(begin) * k;
      const std::size_t b_at = g * n * k;
      const std::size_t d_at = static_cast<std::size_t>(begin) * n;
      if (rows[g] > 0) {
        cpu::bf16_gemm(DenseGemm{act_host.data() + a_at, weight_host.data() + b_at,
                                 want.data() + d_at, rows[g], n, k});
      }
      args.groups.push_back(Bf16Group{rows[g], act.as<bf16_bits>() + a_at,
                                      weight.as<bf16_bits>() + b_at, out.as<bf16_bits>() + d_at});
      begin += rows[g];
    }
    args.n = n;
    args.k = k;
  }

  std::vector<int> rows;
  int n, k, total;
  std::vector<bf16_bits> act_host, weight_host, want;
  check::DeviceBuffer act, weight, out;
  Bf16Grouped args;
};

// "" when `got` is the oracle's output, every row written.
std::string compare(const ExactGrouped& g, const std::vector<bf16_bits>& got) {
  const check::Comparison cmp = check::compare_bf16_bits(got, g.want, g.n, {}, "out");
  if (cmp.mismatches > 0) {
    return std::to_string(cmp.mismatches) + " of " + std::to_string(cmp.compared) +
           " differ, first " + cmp.first_detail;
  }
  if (check::count_poison(got) > 0) return "some outputs were never written";
  return {};
}

// Runs `kernel` twice on a non-default stream, then once from a CUDA graph; "" when all agree with
// the oracle bit for bit and no guard band moved.
std::string run_exact(ExactGrouped& g, Bf16GroupedKernel kernel) {
  g.args.kernel = kernel;
  const std::size_t bytes = reference::cutlass::bf16_grouped_workspace_size(g.args);
  check::DeviceBuffer workspace(bytes > 0 ? bytes : 1, "workspace");
  const Stream stream;
  const Bf16GroupedPlan plan(g.args, core::Buffer{workspace.data(), bytes}, stream.get());
  std::vector<bf16_bits> first;
  for (int run = 0; run < 2; ++run) {
    g.out.poison_bf16(check::kPoisonBf16);
    plan.run(stream.get());
    check::cuda_require(cudaStreamSynchronize(stream.get()), "bf16_grouped run");
    const std::vector<bf16_bits> got = g.out.download<bf16_bits>();
    const std::string diff = compare(g, got);
    if (!diff.empty()) return "run " + std::to_string(run) + ": " + diff;
    if (run == 1 && got != first) return "the second run differs from the first";
    first = got;
  }

  g.out.poison_bf16(check::kPoisonBf16);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  check::cuda_require(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal), "capture");
  plan.run(stream.get());
  check::cuda_require(cudaStreamEndCapture(stream.get(), &graph), "end capture");
  check::cuda_require(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  check::cuda_require(cudaGraphLaunch(exec, stream.get()), "graph launch");
  check::cuda_require(cudaStreamSynchronize(stream.get()), "graph replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  const std::string diff = compare(g, g.out.download<bf16_bits>());
  if (!diff.empty()) return "graph replay: " + diff;

  const std::string guards = check::check_all_guards({&g.act, &g.weight, &g.out, &workspace});
  return guards.empty() ? std::string() : "guard band broken: " + guards;
}

TEST(CutlassBf16Grouped, EveryKernelExactAroundTheTiles) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  // N = 136 (128 + 8) and K = 200 (off the 64 and 128 k-tiles): partial tiles everywhere.
  ExactGrouped g({0, 1, 63, 64, 65, 127, 128, 129, 257, 3}, 136, 200, 7);
  for (const Bf16GroupedKernel kernel :
       {Bf16GroupedKernel::pingpong_64x128x128, Bf16GroupedKernel::cooperative_128x256x64,
        Bf16GroupedKernel::automatic}) {
    SCOPED_TRACE(reference::cutlass::bf16_grouped_kernel_name(kernel));
    EXPECT_EQ(run_exact(g, kernel), "");
  }
}

TEST(CutlassBf16Grouped, PrefillSizedGroupsExact) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  // 16 experts with ~200 rows each (the automatic choice is the cooperative kernel), N > 256.
  std::vector<int> rows;
  for (int e = 0; e < 16; ++e) rows.push_back(150 + 7 * e);
  ExactGrouped g(rows, 264, 512, 11);
  ASSERT_EQ(reference::cutlass::bf16_grouped_kernel(g.args),
            Bf16GroupedKernel::cooperative_128x256x64);
  EXPECT_EQ(run_exact(g, Bf16GroupedKernel::automatic), "");
}

TEST(CutlassBf16Grouped, NoRowsRunsNothing) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  Bf16Grouped args;
  args.groups = {Bf16Group{}, Bf16Group{}};
  args.n = 64;
  args.k = 64;
  EXPECT_EQ(reference::cutlass::bf16_grouped_workspace_size(args), 0u);
  const Bf16GroupedPlan plan(args, core::Buffer{}, nullptr);
  plan.run(nullptr);
  check::device_synchronize("an empty bf16_grouped");
}

TEST(CutlassBf16Grouped, WorkspaceBelowTheQueryIsRefused) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  ExactGrouped g({5, 9}, 64, 64, 3);
  const std::size_t bytes = reference::cutlass::bf16_grouped_workspace_size(g.args);
  check::DeviceBuffer workspace(bytes, "workspace");
  expect_error(
      [&] {
        Bf16GroupedPlan plan(g.args, core::Buffer{workspace.data(), bytes - 1}, nullptr);
      },
      Status::workspace_too_small, "bf16_grouped", "a workspace one byte short");
}

// ---- host only: these run without a GPU --------------------------------------------------------

Bf16Grouped groups_of_rows(const std::vector<int>& rows, int n) {
  Bf16Grouped args;
  for (int r : rows) args.groups.push_back(Bf16Group{r, nullptr, nullptr, nullptr});
  args.n = n;
  args.k = 2048;
  return args;
}

// torch._grouped_mm on sm90: ping-pong 64x128x128 when the rows average <= 128 over every group
// (empty ones included) or N <= 128; cooperative 128x256x64 otherwise.
TEST(CutlassBf16Grouped, KernelChoiceIsTorchs) {
  using K = Bf16GroupedKernel;
  const auto choice = [](const std::vector<int>& rows, int n) {
    return reference::cutlass::bf16_grouped_kernel(groups_of_rows(rows, n));
  };
  EXPECT_EQ(choice({128, 128}, 768), K::pingpong_64x128x128);
  EXPECT_EQ(choice({129, 128}, 768), K::cooperative_128x256x64);
  EXPECT_EQ(choice({300, 0}, 768), K::cooperative_128x256x64);
  EXPECT_EQ(choice({300, 0, 0}, 768), K::pingpong_64x128x128);  // the empty groups count
  EXPECT_EQ(choice({4096}, 128), K::pingpong_64x128x128);
  EXPECT_EQ(choice({4096}, 136), K::cooperative_128x256x64);
  // Qwen3-30B-A3B gate_up at T = 512 and 4096 (rows = T·8 over 128 experts, two projections).
  EXPECT_EQ(choice(std::vector<int>(256, 32), 768), K::pingpong_64x128x128);
  EXPECT_EQ(choice(std::vector<int>(256, 256), 768), K::cooperative_128x256x64);
  Bf16Grouped forced = groups_of_rows({4096}, 768);
  forced.kernel = K::pingpong_64x128x128;
  EXPECT_EQ(reference::cutlass::bf16_grouped_kernel(forced), K::pingpong_64x128x128);
}

TEST(CutlassBf16Grouped, UnsupportedShapesAndPointersNameTheValue) {
  alignas(16) static bf16_bits buffer[64];
  Bf16Grouped args;
  args.groups = {Bf16Group{4, buffer, buffer, buffer}};
  args.n = 30;
  args.k = 64;
  const auto make_plan = [&] { Bf16GroupedPlan plan(args, core::Buffer{}, nullptr); };
  expect_error(make_plan, Status::unsupported, "N = 30", "N = 30");
  args.n = 64;
  args.groups.push_back(Bf16Group{2, buffer + 1, buffer, buffer});
  expect_error(make_plan, Status::unsupported, "groups[1].a", "a misaligned a");
  args.groups[1] = Bf16Group{2, buffer, nullptr, buffer};
  expect_error(make_plan, Status::invalid_argument, "groups[1]", "a null b");
}

}  // namespace
}  // namespace metrale::reference_test

#endif  // METRALE_HAS_CUTLASS
