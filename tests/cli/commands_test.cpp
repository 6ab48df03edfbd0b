// `metrale check`, `bench` and `info` end to end (issue 11, item 7): a run that compared nothing
// fails unless --allow-skip; option misuse is a usage error (exit 2), not a FAIL; bench checks
// --json's location before measuring and refuses GPU implementations it cannot run; info
// validates the environment variables it shows.
#include <string>

#include <gtest/gtest.h>

#include "bench/bench_config.hpp"
#include "cli_run.hpp"
#include "core/device.hpp"

namespace metrale::cli_test {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckCli, NothingComparedWithoutAGpuFailsUnlessAllowed) {
  if (core::cuda_device_present(nullptr)) GTEST_SKIP() << "a CUDA device is present";
  const CliRun run = run_cli("check --op nvfp4_gemm --shape 4x8x32");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "nothing was compared")) << run.output;
  const CliRun allowed = run_cli("check --op nvfp4_gemm --shape 4x8x32 --allow-skip");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
}

// The MoE layer without a device: its oracle runs, nothing is compared, and that is a failure.
TEST(CheckCli, MoeWithoutAGpuRunsTheOracleAndComparesNothing) {
  if (core::cuda_device_present(nullptr)) GTEST_SKIP() << "a CUDA device is present";
  const CliRun run =
      run_cli("check --op moe --shape 64x32 --experts 8 --topk 2 --tokens 3 --backend cuda");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "SKIP moe cuda exact 64x32 T=3")) << run.output;
  EXPECT_TRUE(contains(run.output, "CPU oracle ran")) << run.output;
  EXPECT_TRUE(contains(run.output, "nothing was compared")) << run.output;
}

TEST(CheckCli, MisuseIsAUsageError) {
  const struct {
    const char* args;
    const char* says;
  } cases[] = {
      {"--op nvfp4_gemm --shape 4x8x40", "K = 40 is not a multiple of 16"},
      {"--op grouped_down --shape 8x40 --experts 2 --topk 1", "K = 40 is not a multiple of 16"},
      {"--op nvfp4_gemm --shape 4x8x32 --sample-rows -2", "--sample-rows -2"},
      {"--op nvfp4_gemm --shape 4x8x32 --routing skew", "--routing applies to grouped ops"},
      {"--op nvfp4_gemm --shape 4x8x32 --device-offsets",
       "--device-offsets applies to grouped ops"},
      {"--op grouped_down --model deepseek-v3 --shape 8x32", "--shape 8x32 with --model"},
      {"--op moe --shape 64x40 --experts 8 --topk 2", "H = 64 and I = 40 must be positive"},
      {"--op moe --shape 64x32 --experts 8 --topk 2 --routing one_expert",
       "add --router precomputed"},
      {"--op moe --model qwen3-30b-a3b --n-group 2", "apply to --router sigmoid_grouped_topk"},
      {"--op moe --model deepseek-v3 --n-group 3", "--n-group 3 --topk-group 4"},
      {"--op moe --model deepseek-v3 --router topk", "--router topk: expected"},
      {"--op moe --model gpt-oss-120b --biases --no-biases", "give one"},
      {"--op moe --model deepseek-v3 --device-offsets", "not moe"},
      {"--op nvfp4_gemm --shape 4x8x32 --router softmax_topk", "apply to --op moe"},
      {"--op moes --model deepseek-v3", "grouped_down moe"},
      // int32 counts: 2^32 + 1 tokens once ran as 1, 5e9 experts as 705032704
      {"--op grouped_down --shape 8x32 --experts 4 --topk 2 --tokens 4294967297",
       "--tokens: Value 4294967297 not in range 0 to 2147483647"},
      {"--op grouped_down --shape 8x32 --experts 5000000000 --topk 2",
       "--experts: Value 5000000000 not in range"},
  };
  for (const auto& c : cases) {
    const CliRun run = run_cli(std::string("check ") + c.args);
    EXPECT_EQ(run.exit_code, 2) << c.args << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, c.says)) << c.args << "\n" << run.output;
  }
  const CliRun help = run_cli("check --help");
  EXPECT_TRUE(contains(help.output, "docs/perf.md")) << help.output;
  EXPECT_FALSE(contains(help.output, "PERF.md's table")) << help.output;
}

TEST(BenchCli, JsonLocationIsCheckedBeforeTheRun) {
  const CliRun run = run_cli("bench --cpu --json /nonexistent-metrale-dir/out.json");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "metrale bench: I/O error: the directory of --json")) << run.output;
  EXPECT_FALSE(contains(run.output, "metrale-cpu")) << "no measurement before the check:\n"
                                                    << run.output;
}

TEST(BenchCli, GpuImplementationsWithoutAGpuAreRefused) {
  for (const char* impl : {"cutlass", "cublaslt"}) {
    const CliRun run = run_cli(std::string("bench --cpu --impls ") + impl);
    EXPECT_EQ(run.exit_code, 1) << impl << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "needs a CUDA device")) << impl << "\n" << run.output;
  }
}

// Without CUTLASS the name is refused before anything runs; with it, like any GPU arm, it needs a
// CUDA device.
TEST(BenchCli, Bf16GroupedNeedsCutlassAndAGpu) {
  const CliRun run = run_cli("bench --cpu --impls metrale,bf16-grouped");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(
      run.output, bench::kBf16GroupedBuilt ? "needs a CUDA device" : "only in a CUTLASS build"))
      << run.output;
}

// `metrale bench --cpu` on a tiny custom shape, 1 ms a measurement; `args` names ops and tokens.
CliRun bench_tiny(const std::string& args) {
  return run_cli("bench --cpu " + args +
                 " --budget-ms 1 --name tiny --hidden 64 --inter 32 --experts 8 --top-k 2");
}

// Op moe on the CPU: the layer's row and, under it, the grouped calls and the ratio.
TEST(BenchCli, MoeRowsShowTheRatioToTheGroupedCalls) {
  const CliRun run = bench_tiny("--ops moe --tokens 2");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "tiny           moe")) << run.output;
  EXPECT_TRUE(contains(run.output, "on the layer's routing (topk_ids_out): gate_up metrale-cpu"))
      << run.output;
  EXPECT_TRUE(contains(run.output, ">>> layer / (gate_up + down) = ")) << run.output;
  const CliRun bad = run_cli("bench --cpu --ops gate_up,moes");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(
      contains(bad.output, "--ops moes is not one of gate_up, down, dense, pack, pack_unit, moe"))
      << bad.output;
}

// Both pack forms side by side on the CPU, each row saying which form it timed; no token count.
TEST(BenchCli, PackAndPackUnitRowsNameTheirForm) {
  const CliRun run = bench_tiny("--ops pack,pack_unit --tokens 1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (const char* part : {"tiny           pack           -", "tiny           pack_unit      -",
                           "scale_2 = 1 (seeds' form)"}) {
    EXPECT_TRUE(contains(run.output, part)) << part << "\n" << run.output;
  }
}

TEST(InfoCli, FlagsBadEnvironmentValues) {
  const CliRun good = run_cli("info");
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_TRUE(contains(good.output, "METRALE_WORKSPACE_MB")) << good.output;
  const CliRun bad = run_cli("info", "METRALE_WORKSPACE_MB=lots METRALE_CUTLASS_GEMM=yes");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(contains(bad.output, "INVALID: METRALE_WORKSPACE_MB = 'lots'")) << bad.output;
  EXPECT_TRUE(contains(bad.output, "INVALID: METRALE_CUTLASS_GEMM = 'yes'")) << bad.output;
}

}  // namespace
}  // namespace metrale::cli_test
