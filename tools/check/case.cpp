// Names, model presets, the one-line summary and the reproduction command of a check case.
#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "check/check.hpp"

#ifdef METRALE_HAS_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace metrale::check {
namespace {

constexpr std::array<Op, 9> kOps = {Op::bf16_gemm,
                                    Op::nvfp4_gemm,
                                    Op::pack,
                                    Op::sfb,
                                    Op::transpose,
                                    Op::grouped_gate_up,
                                    Op::grouped_gate_up_fused,
                                    Op::grouped_down,
                                    Op::moe};

// PERF.md's shapes (the model presets of the performance targets), with each model's routing and
// activation (moe_recipe.hpp).
constexpr std::array<ModelPreset, 5> kModels = {{
    {"qwen3-30b-a3b", "Qwen3-30B-A3B", 2048, 768, 128, 8, {}},
    {"deepseek-v3", "DeepSeek-V3", 7168, 2048, 256, 8, kDeepSeekV3Recipe},
    {"gpt-oss-120b", "gpt-oss-120b", 2880, 2880, 128, 4, kGptOssRecipe},
    {"mixtral-8x7b", "Mixtral-8x7B", 4096, 14336, 8, 2, {}},
    {"qwen3-next-80b-a3b", "Qwen3-Next-80B-A3B", 2048, 512, 512, 10, {}},
}};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string shape_text(const Case& c) {
  switch (c.op) {
    case Op::bf16_gemm:
    case Op::nvfp4_gemm: return fmt::format("{}x{}x{}", c.m, c.n, c.k);
    case Op::moe: return fmt::format("{}x{}", c.moe.hidden, c.moe.inter);
    default: return fmt::format("{}x{}", c.n, c.k);
  }
}

std::string variant_text(const Case& c) {
  switch (c.op) {
    case Op::pack: return c.pack_scale_2 ? "" : " (scale_2 = 1)";
    case Op::sfb: return c.sfb_src_n_major ? " (from [K/16, N])" : " (from [N, K/16])";
    case Op::transpose: return c.transpose_dir == TransposeDir::k_to_n ? " (k_to_n)" : " (n_to_k)";
    default: break;
  }
  if (!is_routed(c.op)) return "";
  std::string text = fmt::format(" T={} E={} top_k={} routing {}", c.routing.tokens,
                                 c.routing.experts, c.routing.top_k, routing_name(c.routing.kind));
  if (c.op == Op::moe) text += "; " + recipe_text(c.moe.recipe);
  return text;
}

// The recipe a moe case starts from: its preset's, or the plain one for a custom shape.
MoeRecipe base_recipe(const Case& c) {
  const ModelPreset* preset = c.model.empty() ? nullptr : find_model(c.model);
  return preset ? preset->moe : MoeRecipe{};
}

// The flags that turn the base recipe into the case's (only the fields the CLI sets).
std::string recipe_flags(const Case& c) {
  const MoeRecipe base = base_recipe(c), &r = c.moe.recipe;
  const MoeRecipe routed = with_router(base, r.routing);
  std::string flags;
  if (r.routing != base.routing) flags += fmt::format(" --router {}", router_name(r.routing));
  if (r.routing == MoeRouting::sigmoid_grouped_topk &&
      (r.n_group != routed.n_group || r.topk_group != routed.topk_group))
    flags += fmt::format(" --n-group {} --topk-group {}", r.n_group, r.topk_group);
  if (r.activation != base.activation)
    flags += fmt::format(" --activation {}", activation_name(r.activation));
  if (r.biases != base.biases) flags += r.biases ? " --biases" : " --no-biases";
  return flags;
}

}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::bf16_gemm: return "bf16_gemm";
    case Op::nvfp4_gemm: return "nvfp4_gemm";
    case Op::pack: return "pack";
    case Op::sfb: return "sfb";
    case Op::transpose: return "transpose";
    case Op::grouped_gate_up: return "grouped_gate_up";
    case Op::grouped_gate_up_fused: return "grouped_gate_up_fused";
    case Op::grouped_down: return "grouped_down";
    case Op::moe: return "moe";
  }
  return "unknown";
}

std::optional<Op> parse_op(std::string_view name) {
  for (Op op : kOps)
    if (iequals(name, op_name(op))) return op;
  return std::nullopt;
}

std::span<const Op> all_ops() {
  return kOps;
}

bool is_grouped(Op op) {
  return op == Op::grouped_gate_up || op == Op::grouped_gate_up_fused || op == Op::grouped_down;
}

bool is_routed(Op op) {
  return is_grouped(op) || op == Op::moe;
}

std::string_view mode_name(Mode mode) {
  return mode == Mode::exact ? "exact" : "realistic";
}

std::optional<Mode> parse_mode(std::string_view name) {
  if (iequals(name, "exact")) return Mode::exact;
  if (iequals(name, "realistic")) return Mode::realistic;
  return std::nullopt;
}

std::string_view routing_name(RoutingKind kind) {
  switch (kind) {
    case RoutingKind::uniform: return "uniform";
    case RoutingKind::skew: return "skew";
    case RoutingKind::one_expert: return "one_expert";
    case RoutingKind::empty_expert: return "empty_expert";
  }
  return "unknown";
}

std::optional<RoutingKind> parse_routing(std::string_view name) {
  for (RoutingKind kind : {RoutingKind::uniform, RoutingKind::skew, RoutingKind::one_expert,
                           RoutingKind::empty_expert})
    if (iequals(name, routing_name(kind))) return kind;
  return std::nullopt;
}

std::optional<Backend> parse_backend(std::string_view name) {
  for (Backend b : {Backend::cpu, Backend::cuda, Backend::cutlass, Backend::cublaslt})
    if (iequals(name, backend_name(b))) return b;
  return std::nullopt;
}

std::span<const ModelPreset> model_presets() {
  return kModels;
}

const ModelPreset* find_model(std::string_view name) {
  for (const ModelPreset& m : kModels)
    if (iequals(name, m.name)) return &m;
  return nullptr;
}

void apply_model(Case& c, const ModelPreset& model, std::int32_t tokens) {
  const bool down = c.op == Op::grouped_down;
  c.model = model.name;
  c.moe = MoeCase{model.hidden, model.inter, model.moe};
  c.n = down ? model.hidden : model.inter;
  c.k = down ? model.inter : model.hidden;
  c.routing.tokens = tokens;
  c.routing.experts = model.experts;
  c.routing.top_k = model.top_k;
}

std::string reproduce_command(const Case& c) {
  std::string cmd = c.cuda_kernel.empty() ? "" : fmt::format("METRALE_CUDA_KERNEL={} ", c.cuda_kernel);
  if (!c.cuda_quantizer.empty()) cmd += fmt::format("METRALE_CUDA_QUANTIZER={} ", c.cuda_quantizer);
  if (!c.prepacked_layout.empty())
    cmd += fmt::format("METRALE_PREPACKED_LAYOUT={} ", c.prepacked_layout);
  cmd += fmt::format("metrale check --op {} --backend {} --mode {} --seed {}", op_name(c.op),
                     backend_name(c.backend), mode_name(c.mode), c.seed);
  if (is_routed(c.op)) {
    if (!c.model.empty()) {
      cmd += fmt::format(" --model {}", c.model);
      // --experts / --topk may have overridden the preset's routing: repeat them when they did.
      const ModelPreset* preset = find_model(c.model);
      if (preset && preset->experts != c.routing.experts)
        cmd += fmt::format(" --experts {}", c.routing.experts);
      if (preset && preset->top_k != c.routing.top_k) cmd += fmt::format(" --topk {}", c.routing.top_k);
    } else {
      cmd += fmt::format(" --shape {} --experts {} --topk {}", shape_text(c), c.routing.experts,
                         c.routing.top_k);
    }
    if (c.op == Op::moe) cmd += recipe_flags(c);
    cmd += fmt::format(" --tokens {}", c.routing.tokens);
    if (c.routing.kind != RoutingKind::uniform)
      cmd += fmt::format(" --routing {}", routing_name(c.routing.kind));
    if (c.device_offsets) cmd += " --device-offsets";
    if (c.prepacked) cmd += " --prepacked";
  } else {
    cmd += fmt::format(" --shape {}", shape_text(c));
  }
  if (c.op == Op::pack && !c.pack_scale_2) cmd += " --scale2-one";
  if (c.op == Op::sfb && !c.sfb_src_n_major) cmd += " --src-n-by-k16";
  if (c.op == Op::transpose && c.transpose_dir == TransposeDir::n_to_k) cmd += " --n-to-k";
  if (c.sample_rows >= 0) cmd += fmt::format(" --sample-rows {}", c.sample_rows);
  return cmd;
}

std::string summary(const Case& c, const Report& r) {
  const char* outcome = r.outcome == Outcome::pass   ? "PASS"
                        : r.outcome == Outcome::fail ? "FAIL"
                                                     : "SKIP";
  std::string line =
      fmt::format("{} {} {} {} {}{}{} seed {}: {}", outcome, op_name(c.op), backend_name(c.backend),
                  mode_name(c.mode), shape_text(c), c.model.empty() ? "" : " " + c.model,
                  variant_text(c), c.seed, r.detail);
  if (r.rows_total > 0 && r.rows_compared < r.rows_total)
    line += fmt::format(" [oracle on {} sampled rows of {}]", r.rows_compared, r.rows_total);
  if (r.outcome == Outcome::fail) line += fmt::format("\n  reproduce: {}", r.reproduce);
  return line;
}

bool cuda_usable(std::string* why) {
#ifdef METRALE_HAS_CUDA
  return cuda::available(why);
#else
  if (why) *why = "the CUDA backend was not built (configure with a CUDA toolkit)";
  return false;
#endif
}

}  // namespace metrale::check
