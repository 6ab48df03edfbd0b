// What one `metrale bench` run measures: models (PERF.md presets or custom shapes), token counts,
// operations and implementations, routing and timing knobs. Host only.
//
// Operations (out = act · Wᵀ, row-major):
//   gate_up  [rows, hidden] × [E, 2·inter, hidden]ᵀ — our fused op computes gate and up, N = inter
//            each, rows gathered through the routing's token ids
//   down     [rows, inter] × [E, hidden, inter]ᵀ — rows already in expert order
//   dense    [T, hidden] × [2·inter, hidden]ᵀ in bf16 — one dense FFN-sized GEMM
//   pack     pack_bf16_weight_to_nvfp4_t on stacked expert weights (≥ 256 MiB of bf16), the
//            recipe form (scale_2 computed: an amax scan, then the quantize pass)
//   pack_unit the same call, weights and floor in the seeds' form (scale_2 = 1, scale_2_out
//            null: the quantize pass alone)
//   moe      the whole MoE layer (moe_forward: routing, gate/up, activation, down, combine) with
//            the model's own routing and activation, and on the routing it chose our gate_up and
//            down grouped calls alone: layer / (gate_up + down) is issue 9's target
// with rows = T · top_k.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "check/moe_recipe.hpp"

namespace metrale::bench {

struct ModelShape {
  std::string name;
  int hidden = 0;  // model width: K of gate_up, N of down
  int inter = 0;   // one expert's intermediate width: N of gate and of up, K of down
  int experts = 0;
  int top_k = 0;
  check::MoeRecipe moe;  // op moe: the model's routing and activation (custom shapes: softmax
                         // top-k, renormalised, silu)
};

// The model presets of PERF.md (and Qwen3-Next, 512 experts).
const std::vector<ModelShape>& model_presets();

// The values seed weights and activations (derive_seed): a new op goes at the end.
enum class Op { gate_up, down, dense, pack, moe, pack_unit };
// pack and pack_unit: one row per model, no token count.
inline bool is_pack(Op op) {
  return op == Op::pack || op == Op::pack_unit;
}
// Which form of pack_bf16_weight_to_nvfp4_t a pack row times, as its note says it.
inline const char* pack_form(Op op) {
  return op == Op::pack ? "scale_2 computed" : "scale_2 = 1 (seeds' form)";
}
// Who produced a number. metrale_cpu is our CPU backend (machines without a GPU). bf16_grouped is
// CUTLASS's sm90 grouped GEMM on bf16 weights (the kernel torch._grouped_mm runs): it exists only
// in a CUTLASS build (kBf16GroupedBuilt); elsewhere --impls refuses its name, saying why.
enum class Impl {
  metrale,
  cublaslt,
  cublas_grouped,
  dequant_cublaslt,
  cutlass,
  bf16_grouped,
  metrale_cpu
};

#if defined(METRALE_HAS_CUTLASS)
inline constexpr bool kBf16GroupedBuilt = true;
#else
inline constexpr bool kBf16GroupedBuilt = false;
#endif

const char* op_name(Op op);
const char* impl_label(Impl impl);  // "metrale", "cuBLASLt", "bf16-grouped (CUTLASS)", ...
// What a metrale row's kernel label adds for its weight layout: "" (packed),
// " (prepacked, fragment order)" (the default), or " (prepacked, halves)" under
// METRALE_PREPACKED_LAYOUT=halves.
const char* layout_label(WeightLayout layout);
Op parse_op(const std::string& name);
Impl parse_impl(const std::string& name);
// What a run measures when --impls is not given: every GPU implementation this build has.
std::vector<Impl> default_impls();

struct BenchConfig {
  std::vector<ModelShape> models;
  std::vector<int> tokens;
  std::vector<Op> ops;
  std::vector<Impl> impls;
  double skew = 0.0;         // 0: uniform routing; larger favours low-numbered experts
  // The NVFP4 weights metrale's grouped and moe rows read: prepacked (prepack_nvfp4, once,
  // outside the timing) or the seeds' packed bytes. The reference arms read packed weights.
  WeightLayout weights = WeightLayout::prepacked;
  std::uint64_t seed = 1;    // routing, activations and weights derive from it
  double budget_ms = 150.0;  // measured time per implementation and shape, after warm-up
  double step_timeout_s = 600.0;  // GPU: a step (a row, all implementations) longer ends the run
  int device = 0;
  bool force_cpu = false;
  std::string json_path;
  std::string commit;
  // Set when the user named them; the CPU fallback keeps them instead of its reduced default.
  bool user_models = false, user_tokens = false, user_ops = false, user_impls = false;
};

// Models from a JSON shape file: [{"name", "hidden", "inter", "experts", "top_k"}, ...] or
// {"models": [...], "tokens": [...]}; tokens, when present, are appended to `tokens`.
std::vector<ModelShape> load_shape_file(const std::string& path, std::vector<int>* tokens);

// The ops a run measures when --ops is not given.
std::vector<Op> default_ops();

// Throws Status::invalid_argument naming the field when a shape cannot be benchmarked.
void validate_model(const ModelShape& model);

const ModelShape& find_preset(const std::string& name);

}  // namespace metrale::bench
