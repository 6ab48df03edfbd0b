// `metrale check`: one operation, one shape (or model preset and routing; for moe a whole MoE
// layer, the preset's routing and activation unless flags change them), one seed, one mode, on
// one or every CUDA-side backend against the CPU oracle, through the harness the GPU tests use
// (tools/check). One line per backend with the error and PASS/FAIL/SKIP; exit 1 when any case
// fails or nothing was compared (unless --allow-skip), 2 for bad options. Without a usable device
// it says why, still times the CPU oracle, and says that nothing was compared.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "check/check.hpp"
#include "metrale/commands.hpp"

namespace metrale::cli {
namespace {

struct CheckOptions {
  std::string op, shape, model, mode = "exact", backend = "all", routing;  // routing "": uniform
  std::int64_t tokens = 64, experts = 0, topk = 0, sample_rows = -1;
  std::uint64_t seed = 1;
  bool no_determinism = false, scale2_one = false, src_n_by_k16 = false, n_to_k = false,
       allow_skip = false, device_offsets = false, prepacked = false;
  // moe: changes to the recipe (empty or 0: the preset's, or the plain one for a custom shape)
  std::string router, activation;
  std::int32_t n_group = 0, topk_group = 0;
  bool biases = false, no_biases = false;
  bool changes_recipe() const {
    return !router.empty() || !activation.empty() || n_group || topk_group || biases || no_biases;
  }
};

// A bad option: one line, exit code 2.
struct BadOption {
  std::string message;
};

// "129x200x2048" -> {129, 200, 2048}.
std::vector<std::int32_t> parse_dims(const std::string& text) {
  std::vector<std::int32_t> dims;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (p < end) {
    std::int32_t value = 0;
    const auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc() || value < 0)
      throw BadOption{
          fmt::format("--shape {}: not a list of "
                      "non-negative integers "
                      "joined by x",
                      text)};
    dims.push_back(value);
    p = next;
    if (p < end && (*p == 'x' || *p == 'X'))
      ++p;
    else if (p < end)
      throw BadOption{fmt::format("--shape {}: unexpected '{}'", text, *p)};
  }
  return dims;
}

void apply_shape(check::Case& c, const CheckOptions& o) {
  const bool gemm = c.op == check::Op::bf16_gemm || c.op == check::Op::nvfp4_gemm;
  const char* form = gemm ? "MxNxK" : (c.op == check::Op::moe ? "HxI" : "NxK");
  if (o.shape.empty()) throw BadOption{fmt::format("--op {} needs --shape {}", o.op, form)};
  const std::vector<std::int32_t> dims = parse_dims(o.shape);
  if (gemm && dims.size() == 3) {
    c.m = dims[0], c.n = dims[1], c.k = dims[2];
  } else if (!gemm && dims.size() == 2) {
    c.n = dims[0], c.k = dims[1];
  } else {
    throw BadOption{fmt::format("--shape {}: {} takes {}", o.shape, o.op, form)};
  }
}

void apply_grouped(check::Case& c, const CheckOptions& o) {
  c.routing.tokens = static_cast<std::int32_t>(o.tokens);
  if (!o.model.empty() && !o.shape.empty())
    throw BadOption{fmt::format("--shape {} with --model {}: the model sets the shape; give one",
                                o.shape, o.model)};
  if (!o.model.empty()) {
    const check::ModelPreset* model = check::find_model(o.model);
    if (!model) {
      std::string names;
      for (const auto& m : check::model_presets()) names += fmt::format(" {}", m.name);
      throw BadOption{fmt::format("--model {}: unknown; expected one of{}", o.model, names)};
    }
    check::apply_model(c, *model, c.routing.tokens);
  } else {
    apply_shape(c, o);
    c.moe = check::MoeCase{c.n, c.k, {}};  // a custom moe shape is HxI, with the plain recipe
    if (o.experts < 1 || o.topk < 1 || o.topk > o.experts)
      throw BadOption{
          fmt::format("--op {} without --model needs --experts E >= 1 and --topk k "
                      "in [1, E] (got E = {}, k = {})",
                      o.op, o.experts, o.topk)};
    c.routing.experts = static_cast<std::int32_t>(o.experts);
    c.routing.top_k = static_cast<std::int32_t>(o.topk);
  }
  if (o.experts > 0 && !o.model.empty()) c.routing.experts = static_cast<std::int32_t>(o.experts);
  if (o.topk > 0 && !o.model.empty()) c.routing.top_k = static_cast<std::int32_t>(o.topk);
  const auto kind = check::parse_routing(o.routing.empty() ? "uniform" : o.routing);
  if (!kind)
    throw BadOption{
        fmt::format("--routing {}: expected uniform, skew, one_expert or "
                    "empty_expert",
                    o.routing)};
  c.routing.kind = *kind;
}

// moe: the recipe's flags applied to the preset's (or the plain) recipe, then checked as the
// library would check the layer.
void apply_recipe_options(check::Case& c, const CheckOptions& o) {
  check::MoeRecipe& r = c.moe.recipe;
  if (!o.router.empty()) {
    const auto router = check::parse_router(o.router);
    if (!router)
      throw BadOption{fmt::format(
          "--router {}: expected softmax_topk, sigmoid_grouped_topk or precomputed", o.router)};
    r = check::with_router(r, *router);
  }
  if (!o.activation.empty()) {
    const auto activation = check::parse_activation(o.activation);
    if (!activation)
      throw BadOption{
          fmt::format("--activation {}: expected silu or swiglu_clamped", o.activation)};
    r.activation = *activation;
  }
  if (o.biases && o.no_biases) throw BadOption{"--biases and --no-biases: give one"};
  if (o.biases || o.no_biases) r.biases = o.biases;
  const bool grouped = r.routing == MoeRouting::sigmoid_grouped_topk;
  if ((o.n_group || o.topk_group) && !grouped)
    throw BadOption{"--n-group and --topk-group apply to --router sigmoid_grouped_topk"};
  if (o.n_group) r.n_group = o.n_group;
  if (o.topk_group) r.topk_group = o.topk_group;
  const std::int32_t experts = c.routing.experts, k = c.routing.top_k;
  if (grouped && (r.n_group < 1 || experts % r.n_group != 0 || r.topk_group < 1 ||
                  r.topk_group > r.n_group || r.topk_group * (experts / r.n_group) < k))
    throw BadOption{fmt::format(
        "--n-group {} --topk-group {}: expected n_group dividing E = {} and topk_group in [1, "
        "n_group] keeping at least top_k = {} experts",
        r.n_group, r.topk_group, experts, k)};
  if (c.routing.kind == check::RoutingKind::one_expert && r.routing != MoeRouting::precomputed)
    throw BadOption{
        "--routing one_expert: a router picks k distinct experts; add --router "
        "precomputed"};
}

// What the library would refuse for every backend is a usage error here (exit 2), not a FAIL:
// N, K > 0, and K a multiple of 16 for everything NVFP4 (one e4m3 scale per 16 weights).
void require_valid_shape(const check::Case& c, const CheckOptions& o) {
  if (c.op == check::Op::moe) {
    if (c.moe.hidden <= 0 || c.moe.hidden % 16 != 0 || c.moe.inter <= 0 || c.moe.inter % 16 != 0)
      throw BadOption{fmt::format("--op moe: H = {} and I = {} must be positive multiples of 16",
                                  c.moe.hidden, c.moe.inter)};
    return;
  }
  if (c.n <= 0 || c.k <= 0)
    throw BadOption{fmt::format("--op {}: N = {} and K = {} must be positive", o.op, c.n, c.k)};
  if (c.op != check::Op::bf16_gemm && c.k % 16 != 0)
    throw BadOption{fmt::format("--op {}: K = {} is not a multiple of 16 (one e4m3 scale per 16 "
                                "weights)",
                                o.op, c.k)};
}

check::Case make_case(const CheckOptions& o) {
  check::Case c;
  const auto op = check::parse_op(o.op);
  if (!op) {
    std::string names;
    for (check::Op each : check::all_ops()) names += fmt::format(" {}", check::op_name(each));
    throw BadOption{fmt::format("--op {}: unknown; expected one of{}", o.op, names)};
  }
  c.op = *op;
  const auto mode = check::parse_mode(o.mode);
  if (!mode) throw BadOption{fmt::format("--mode {}: expected exact or realistic", o.mode)};
  c.mode = *mode;
  if (o.tokens < 0) throw BadOption{fmt::format("--tokens {}: expected >= 0", o.tokens)};
  if (o.sample_rows < -1)
    throw BadOption{fmt::format("--sample-rows {}: expected -1 (auto), 0 (all) or a row count",
                                o.sample_rows)};
  if (c.op != check::Op::moe && o.changes_recipe())
    throw BadOption{fmt::format(
        "--router, --activation, --biases, --n-group, --topk-group apply to --op moe, not {}",
        o.op)};
  if (c.op == check::Op::moe && o.device_offsets)
    throw BadOption{"--device-offsets applies to grouped ops, not moe (the layer groups itself)"};
  if (check::is_routed(c.op)) {
    apply_grouped(c, o);
    if (c.op == check::Op::moe) apply_recipe_options(c, o);
  } else {
    if (!o.model.empty())
      throw BadOption{fmt::format("--model applies to grouped ops and moe, not {}", o.op)};
    if (!o.routing.empty())
      throw BadOption{fmt::format("--routing applies to grouped ops and moe, not {}", o.op)};
    if (o.device_offsets)
      throw BadOption{fmt::format("--device-offsets applies to grouped ops, not {}", o.op)};
    if (o.prepacked)
      throw BadOption{fmt::format("--prepacked applies to grouped ops and moe, not {}", o.op)};
    apply_shape(c, o);
  }
  require_valid_shape(c, o);
  c.seed = o.seed;
  c.sample_rows = o.sample_rows;
  c.device_offsets = o.device_offsets;
  c.prepacked = o.prepacked;
  c.check_determinism = !o.no_determinism;
  c.pack_scale_2 = !o.scale2_one;
  c.sfb_src_n_major = !o.src_n_by_k16;
  c.transpose_dir = o.n_to_k ? TransposeDir::n_to_k : TransposeDir::k_to_n;
  return c;
}

std::vector<Backend> backends_to_run(const std::string& name) {
  if (name == "all") return {Backend::cuda, Backend::cutlass, Backend::cublaslt};
  const auto backend = check::parse_backend(name);
  if (!backend || *backend == Backend::cpu)
    throw BadOption{
        fmt::format("--backend {}: expected cuda, cutlass, cublaslt or all (the CPU "
                    "backend is the oracle)",
                    name)};
  return {*backend};
}

int run_check(const CheckOptions& o) {
  check::Case c;
  std::vector<Backend> backends;
  try {
    c = make_case(o);
    backends = backends_to_run(o.backend);
  } catch (const BadOption& bad) {
    fmt::print(stderr, "metrale check: {}\n", bad.message);
    return 2;
  }
  std::string why;
  if (!check::cuda_usable(&why)) {
    fmt::print("metrale check: the CUDA backend is unavailable: {}\n", why);
    // With no device at all, one oracle run says it all; with a device our kernels cannot run
    // on, the reference arms still can.
    if (o.backend == "all" && !check::cuda_device_present(nullptr)) backends = {Backend::cuda};
  }
  int failures = 0, compared = 0;
  for (Backend b : backends) {
    c.backend = b;
    if (!backend_built(b) && b != Backend::cuda) {  // cuda: run_case still times the oracle
      fmt::print("SKIP {} {}: the {} backend was not built\n", check::op_name(c.op),
                 backend_name(b), backend_name(b));
      continue;
    }
    const check::Report r = check::run_case(c);
    fmt::print("{}\n", check::summary(c, r));
    std::fflush(stdout);
    if (r.outcome == check::Outcome::fail) ++failures;
    if (r.outcome != check::Outcome::skip) ++compared;
  }
  if (failures > 0) return 1;
  if (compared == 0) {
    // A run that compared nothing proved nothing: say so, and fail unless the caller accepts it.
    fmt::print("metrale check: nothing was compared (every backend skipped){}\n",
               o.allow_skip ? "; --allow-skip: exit 0" : "; exit 1 (--allow-skip accepts this)");
    return o.allow_skip ? 0 : 1;
  }
  return 0;
}

}  // namespace

void add_check_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Run one operation on the CUDA-side backends and on the CPU oracle and compare");
  cmd->add_option("--op", options->op,
                  "bf16_gemm, nvfp4_gemm, pack, sfb, transpose, grouped_gate_up, "
                  "grouped_gate_up_fused, grouped_down, moe (the whole MoE layer)")
      ->required();
  cmd->add_option("--shape", options->shape, "MxNxK (GEMMs), NxK (packing, grouped) or HxI (moe)");
  cmd->add_option("--model", options->model,
                  "grouped, moe: a model preset (qwen3-30b-a3b, deepseek-v3, gpt-oss-120b, "
                  "mixtral-8x7b, qwen3-next-80b-a3b; docs/perf.md lists their shapes; moe also "
                  "takes the model's routing and activation)");
  // Counts the harness keeps in int32: past it a value would wrap (2^32 + 1 tokens ran as 1).
  const CLI::Range int32_count(std::int64_t{0}, std::int64_t{INT32_MAX});
  cmd->add_option("--tokens", options->tokens, "grouped, moe: tokens T (rows = T x top-k)")
      ->capture_default_str()
      ->check(int32_count);
  cmd->add_option("--experts", options->experts, "grouped, moe: experts E (without --model)")
      ->check(int32_count);
  cmd->add_option("--topk", options->topk, "grouped, moe: experts per token (without --model)")
      ->check(int32_count);
  cmd->add_option("--routing", options->routing,
                  "grouped, moe: uniform (the default), skew, one_expert (moe: with --router "
                  "precomputed), empty_expert");
  cmd->add_option("--router", options->router,
                  "moe: softmax_topk, sigmoid_grouped_topk or precomputed (default: the model's; "
                  "softmax_topk for a custom shape)");
  cmd->add_option("--activation", options->activation, "moe: silu or swiglu_clamped");
  cmd->add_flag("--biases", options->biases, "moe: bf16 gate, up and down biases per expert");
  cmd->add_flag("--no-biases", options->no_biases, "moe: none (gpt-oss-120b has them)");
  cmd->add_option("--n-group", options->n_group, "moe, sigmoid_grouped_topk: expert groups");
  cmd->add_option("--topk-group", options->topk_group, "moe, sigmoid_grouped_topk: groups kept");
  cmd->add_option("--seed", options->seed, "seed of every input")->capture_default_str();
  cmd->add_option("--mode", options->mode, "exact (bit for bit) or realistic (tolerance)")
      ->capture_default_str();
  cmd->add_option("--backend", options->backend, "cuda, cutlass, cublaslt or all")
      ->capture_default_str();
  cmd->add_option("--sample-rows", options->sample_rows,
                  "rows the CPU oracle computes: -1 auto (bounded time), 0 all")
      ->capture_default_str();
  cmd->add_flag("--no-determinism", options->no_determinism, "skip the second, bitwise run");
  cmd->add_flag("--allow-skip", options->allow_skip,
                "exit 0 when nothing could be compared (no usable device); the default is 1");
  cmd->add_flag("--scale2-one", options->scale2_one, "pack: the seeds' form (scale_2 = 1)");
  cmd->add_flag("--src-n-by-k16", options->src_n_by_k16, "sfb: source scales are [N, K/16]");
  cmd->add_flag("--n-to-k", options->n_to_k, "transpose: [K/2, N] -> [N, K/2]");
  cmd->add_flag("--device-offsets", options->device_offsets,
                "grouped: expert offsets in device memory (as a CUDA graph would pass them)");
  cmd->add_flag(
      "--prepacked", options->prepacked,
      "grouped and moe: weights prepacked (prepack_nvfp4) for the oracle and the backend");
  cmd->callback([options, &exit_code] { exit_code = run_check(*options); });
}

}  // namespace metrale::cli
