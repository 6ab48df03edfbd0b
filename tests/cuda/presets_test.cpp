// The four model presets of docs/PERF.md (Qwen3-30B-A3B, DeepSeek-V3, gpt-oss-120b, Mixtral-8x7B)
// at T = 1, 64 and 4096 tokens, fused gate_up and down, realistic mode, on the CUDA backend. The
// backend computes every group row; the CPU oracle a seeded random sample of rows (all columns)
// once the full product would exceed check::kOracleMacBudget multiply-adds, and the case report
// says so. Experts share a pool of distinct weights when all of them would not fit the host
// budget (tools/check/grouped.hpp), each with its own scale_2.
#include <string_view>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

namespace metrale::cuda_test {
namespace {

void run_preset(std::string_view name) {
  const check::ModelPreset* model = check::find_model(name);
  ASSERT_NE(model, nullptr) << name;
  for (int tokens : {1, 64, 4096}) {
    for (Op op : {Op::grouped_gate_up_fused, Op::grouped_down}) {
      check::Case c = grouped_case(op, Mode::realistic, 0, 0, {}, 4000 + tokens);
      check::apply_model(c, *model, tokens);
      expect_pass(c);
    }
  }
}

TEST(Presets, Qwen3_30B_A3B) {
  METRALE_SKIP_WITHOUT_GPU();
  run_preset("qwen3-30b-a3b");
}

TEST(Presets, DeepSeekV3) {
  METRALE_SKIP_WITHOUT_GPU();
  run_preset("deepseek-v3");
}

TEST(Presets, GptOss120b) {
  METRALE_SKIP_WITHOUT_GPU();
  run_preset("gpt-oss-120b");
}

TEST(Presets, Mixtral8x7B) {
  METRALE_SKIP_WITHOUT_GPU();
  run_preset("mixtral-8x7b");
}

}  // namespace
}  // namespace metrale::cuda_test
