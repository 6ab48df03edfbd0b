// `metrale bench`: our grouped NVFP4 kernels (and the whole MoE layer against our own grouped
// calls on its routing) against cuBLASLt, cuBLAS's grouped GEMM, the naive
// dequantize-then-cuBLASLt path and, in a CUTLASS build, CUTLASS's grouped GEMM on bf16 weights
// (bf16-grouped) and the dequantizing CUTLASS arm (with METRALE_CUTLASS_GEMM=1), on
// the same device, stream, routing and weights, with the ceilings of PERF.md measured first.
// Without a usable CUDA device it runs the CPU reference backend on a reduced default and says so.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/bench_config.hpp"
#include "bench/bench_runners.hpp"
#include "bench/report.hpp"
#include "core/error.hpp"
#include "metrale/cli_context.hpp"
#include "metrale/commands.hpp"

#ifndef METRALE_GIT_COMMIT
#define METRALE_GIT_COMMIT ""
#endif

namespace metrale::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> models, ops, impls;
  std::vector<int> tokens;
  std::string shapes, name = "custom", weights = "prepacked";
  int hidden = 0, inter = 0, experts = 0, top_k = 0;
  bench::BenchConfig config;
};

const std::vector<int> kDefaultTokens = {1, 8, 64, 512, 4096, 16384};

// Builds the run's configuration from the flags: presets unless custom shapes were given.
bench::BenchConfig resolve(BenchOptions& opt) {
  bench::BenchConfig c = opt.config;
  std::vector<int> file_tokens;
  if (!opt.shapes.empty()) {
    c.models = bench::load_shape_file(opt.shapes, &file_tokens);
    c.user_models = true;
  }
  if (opt.hidden || opt.inter || opt.experts || opt.top_k) {
    bench::ModelShape m{opt.name, opt.hidden, opt.inter, opt.experts, opt.top_k, {}};
    bench::validate_model(m);
    c.models.push_back(m);
    c.user_models = true;
  }
  for (const std::string& name : opt.models) {
    if (name == "all") {
      for (const auto& m : bench::model_presets()) c.models.push_back(m);
    } else {
      c.models.push_back(bench::find_preset(name));
    }
    c.user_models = true;
  }
  if (c.models.empty()) c.models = bench::model_presets();
  c.tokens = !opt.tokens.empty() ? opt.tokens : file_tokens;
  c.user_tokens = !c.tokens.empty();
  if (c.tokens.empty()) c.tokens = kDefaultTokens;
  for (int t : c.tokens) {
    METRALE_REQUIRE(t > 0, "bench: --tokens {} must be positive", t);
  }
  for (const std::string& op : opt.ops) c.ops.push_back(bench::parse_op(op));
  c.user_ops = !c.ops.empty();
  if (c.ops.empty()) c.ops = bench::default_ops();
  for (const std::string& impl : opt.impls) c.impls.push_back(bench::parse_impl(impl));
  c.user_impls = !c.impls.empty();
  if (c.impls.empty()) c.impls = bench::default_impls();
  METRALE_REQUIRE(c.budget_ms > 0, "bench: --budget-ms {} must be positive", c.budget_ms);
  METRALE_REQUIRE(c.skew >= 0, "bench: --skew {} must be >= 0", c.skew);
  METRALE_REQUIRE(opt.weights == "packed" || opt.weights == "prepacked",
                  "bench: --weights {}: expected packed or prepacked", opt.weights);
  c.weights = opt.weights == "packed" ? WeightLayout::packed : WeightLayout::prepacked;
  METRALE_REQUIRE(c.step_timeout_s >= 0 && std::isfinite(c.step_timeout_s),
                  "bench: --step-timeout {} must be a number of seconds >= 0", c.step_timeout_s);
  if (c.commit.empty()) c.commit = METRALE_GIT_COMMIT;
  return c;
}

// The CPU fallback's reduced default: one Qwen3 shape, T in {1, 8}, gate_up and down, our CPU
// backend only; whatever the user named explicitly is kept. Op moe is left out unless named: on
// the CPU it times the layer and both grouped calls again, which makes the quick start's run about
// half as long again, and a CPU ratio says nothing about issue 9's target.
void reduce_for_cpu(bench::BenchConfig& c) {
  if (!c.user_models) c.models = {bench::model_presets()[0]};
  if (!c.user_tokens) c.tokens = {1, 8};
  if (!c.user_ops) c.ops = {bench::Op::gate_up, bench::Op::down};
  c.impls = {bench::Impl::metrale_cpu};
  // The CPU rows read the seeds' layout: the CPU backend unprepacks each half before decoding, so
  // prepacking buys it nothing, and the JSON's metadata must say what ran.
  c.weights = WeightLayout::packed;
}

// Without a GPU only the CPU backend runs: a GPU implementation the user named is an error, never
// silently dropped from the report.
void refuse_gpu_impls(const bench::BenchConfig& c, const std::string& why) {
  if (!c.user_impls) return;
  for (bench::Impl impl : c.impls) {
    if (impl == bench::Impl::metrale_cpu || impl == bench::Impl::metrale) continue;
    fail(Status::unsupported,
         "bench: --impls {} needs a CUDA device, and none is in use ({}); leave it out to run the "
         "CPU reference backend",
         bench::impl_label(impl), why);
  }
}

int run_bench(BenchOptions& opt) {
  bench::BenchConfig config = resolve(opt);
  // Where the report goes is checked before minutes of measurement, not after.
  if (!config.json_path.empty()) check_writable_location("bench", "--json", config.json_path, false);
  bench::Report report;
  report.info.version = version();
  report.info.date = bench::utc_now_iso8601();
  report.info.commit = config.commit.empty() ? "unknown" : config.commit;
  report.info.command = command_line();
  if (!config.json_path.empty())
    report.after_group = [&] { report.write_json(config.json_path, config, false); };

  std::string why = "this build has no CUDA backend";
  bool gpu = false;
#if defined(METRALE_HAS_CUDA)
  if (config.force_cpu) {
    why = "--cpu was given";
  } else {
    gpu = bench::cuda_device_usable(config.device, &why);
  }
#endif
  if (gpu) {
#if defined(METRALE_HAS_CUDA)
    bench::run_cuda_bench(config, report);
#endif
  } else {
    refuse_gpu_impls(config, why);
    fmt::print(
        "metrale bench: no CUDA device in use ({}); running the CPU reference backend on "
        "a reduced default (add --ops moe for the MoE layer). These are CPU numbers, labelled "
        "metrale-cpu, not GPU numbers.\n",
        why);
    report.info.notes.push_back("CPU run: " + why);
    reduce_for_cpu(config);
    bench::run_cpu_bench(config, report);
  }
  if (!config.json_path.empty()) {
    report.write_json(config.json_path, config);
    fmt::print("wrote {}\n", config.json_path);
  }
  return report.aborted.empty() ? 0 : 1;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<BenchOptions>();
  bench::BenchConfig& c = opt->config;
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Grouped NVFP4 GEMMs against cuBLASLt / cuBLAS / CUTLASS, and the whole MoE layer against "
      "our grouped calls, with in-run ceilings");
  cmd->add_option("--model,-m", opt->models,
                  "presets: qwen3-30b-a3b, deepseek-v3, gpt-oss-120b, mixtral-8x7b, "
                  "qwen3-next-80b-a3b, all (default: all five)")
      ->delimiter(',');
  cmd->add_option("--shapes", opt->shapes,
                  "JSON shape file: [{\"name\", \"hidden\", \"inter\", \"experts\", \"top_k\"}] or "
                  "{\"models\": [...], \"tokens\": [...]}");
  cmd->add_option("--name", opt->name, "name of the custom shape given by the flags below");
  cmd->add_option("--hidden", opt->hidden, "custom shape: model width (K of gate_up)");
  cmd->add_option("--inter", opt->inter, "custom shape: expert width (N of gate and of up)");
  cmd->add_option("--experts", opt->experts, "custom shape: number of experts");
  cmd->add_option("--top-k", opt->top_k, "custom shape: experts per token");
  cmd->add_option("--tokens,-t", opt->tokens, "token counts (default 1,8,64,512,4096,16384)")
      ->delimiter(',');
  cmd->add_option("--ops", opt->ops,
                  "gate_up, down, dense, pack (scale_2 computed), pack_unit (scale_2 = 1, the "
                  "seeds' form), moe (the whole MoE layer; default gate_up,down,moe on a GPU, "
                  "gate_up,down on the CPU)")
      ->delimiter(',');
  cmd->add_option("--impls", opt->impls,
                  "metrale, cublaslt, cublas-grouped, dequant-cublaslt, cutlass, bf16-grouped "
                  "(default: all that can run; cutlass needs a CUTLASS build and "
                  "METRALE_CUTLASS_GEMM=1, bf16-grouped a CUTLASS build)")
      ->delimiter(',');
  cmd->add_option("--skew", c.skew, "routing skew: logit_e -= skew*ln(1+e) (default 0, uniform)");
  cmd->add_option("--seed", c.seed, "seed of routing, activations and weights (default 1)");
  cmd->add_option("--weights", opt->weights,
                  "NVFP4 weights of metrale's GPU rows: prepacked (prepack_nvfp4 at setup, the "
                  "default) or packed (the seeds' layout); the reference arms read packed");
  cmd->add_option("--budget-ms", c.budget_ms,
                  "measured time per implementation and shape, after warm-up (default 150)");
  cmd->add_option("--step-timeout", c.step_timeout_s,
                  "GPU runs: seconds one step (a row with all its implementations) may take; a "
                  "longer one ends the run with status 3, naming it (0: no limit; default 600)");
  cmd->add_option("--device", c.device, "CUDA device index (default 0)");
  cmd->add_flag("--cpu", c.force_cpu, "run the CPU reference backend even if a GPU is present");
  cmd->add_option("--json", c.json_path, "write every row and the run's metadata to FILE");
  cmd->add_option("--commit", c.commit, "git commit to record (default: the one built from)");
  cmd->callback(
      [opt, &exit_code] { exit_code = exit_code_of("bench", [&] { return run_bench(*opt); }); });
}

}  // namespace metrale::cli
