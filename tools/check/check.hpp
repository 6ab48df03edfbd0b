// The backend-vs-oracle harness shared by `metrale check` and the GPU tests (ggml's
// test-backend-ops idea): one case = one operation, one shape (or routing), one seed, one mode.
// run_case generates the inputs, runs the operation through the public C++ API on the chosen
// backend (device memory, NaN-poisoned outputs inside guard bands) and on Backend::cpu (the
// oracle), and compares:
//   exact mode      inputs on the quantization grid and small-integer activations, so that every
//                   fp32 sum is exact: the backend must match the CPU bit for bit;
//   realistic mode  random normal inputs: per element
//                   |got - ref| <= 2·u_bf16·|ref| + (K + 8)·u_fp32·S + u_bf16·S·[dequantizing arm]
//                   with S = Σ|a|·|w|·scale_2 (docs/testing.md derives it).
// Packing operations (pack, sfb, transpose) are compared bit for bit in both modes. The MoE layer
// (moe) has its own exact inputs and its own realistic rule (run_moe.cpp, docs/testing.md).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "check/moe_recipe.hpp"
#include "core/device.hpp"
#include "metrale/metrale.hpp"

namespace metrale::check {

enum class Op {
  bf16_gemm,
  nvfp4_gemm,
  pack,
  sfb,
  transpose,
  grouped_gate_up,        // per expert, [K/16, N] scales, rows already in group order
  grouped_gate_up_fused,  // SFB scales, rows gathered through sorted_token_ids
  grouped_down,           // one projection, SFB scales, rows in group order
  moe,                    // the whole MoE layer (moe_forward): routing, gate/up, act, down, combine
};

enum class Mode { exact, realistic };

// How the seeded top-k routing spreads the T·top_k group rows over the experts.
enum class RoutingKind {
  uniform,       // softmax over normal logits, then top-k
  skew,          // the same with a bias that favours low expert ids (hot experts)
  one_expert,    // every group row on one expert
  empty_expert,  // uniform, but experts 0 and E/2 never chosen (experts with no rows)
};

struct Routing {
  std::int32_t tokens = 0;
  std::int32_t experts = 0;
  std::int32_t top_k = 0;
  RoutingKind kind = RoutingKind::uniform;
};

// One preset of PERF.md's table (the performance targets). gate_up: N = inter, K = hidden; down: N = hidden, K = inter.
struct ModelPreset {
  const char* name;     // the flag's spelling: "deepseek-v3"
  const char* display;  // the model's own spelling, as the bench prints it: "DeepSeek-V3"
  std::int32_t hidden, inter, experts, top_k;
  MoeRecipe moe;  // how the model routes and activates (the MoE layer's settings)
};

// The MoE layer's own shape and settings (Op::moe). Tokens, experts and top_k are Case::routing's;
// Case::routing.kind shapes the router logits (uniform, skew, empty_expert) or, with the
// precomputed router, draws the ids as the grouped cases do (one_expert: a token names one expert
// k times).
struct MoeCase {
  std::int32_t hidden = 0, inter = 0;  // H (K of gate/up), I (N of gate/up, K of down)
  MoeRecipe recipe;
};

struct Case {
  Op op = Op::nvfp4_gemm;
  Mode mode = Mode::exact;
  std::int32_t m = 0, n = 0, k = 0;  // GEMMs M x N x K; pack/sfb/transpose N x K; grouped N x K
  Routing routing;                   // grouped operations and moe
  MoeCase moe;                       // moe only
  std::string model;                 // preset name, when the shape came from one (for messages)
  std::uint64_t seed = 1;
  Backend backend = Backend::cuda;
  bool check_determinism = true;  // run twice, require identical bits
  // Rows (moe: tokens) the CPU oracle computes: -1 picks all of them unless that would cost more
  // than kOracleMacBudget multiply-adds, then a seeded random sample (plus the first and last
  // row); 0 means all rows; > 0 that many.
  std::int64_t sample_rows = -1;
  bool pack_scale_2 = true;     // pack: ModelOpt recipe (scale_2_out) or the seeds' scale_2 = 1
  bool sfb_src_n_major = true;  // sfb: source [K/16, N] (true) or [N, K/16]
  TransposeDir transpose_dir = TransposeDir::k_to_n;
  bool device_offsets = false;  // grouped: expert offsets in device memory (bound: largest expert)
  // grouped and moe: the weights prepacked (prepack_nvfp4) for the oracle and the backend alike.
  bool prepacked = false;
  // The CUDA backend's kernel, forced for this case as METRALE_CUDA_KERNEL would
  // ("sm90-decode:0:3"); empty: the dispatcher's choice.
  std::string cuda_kernel;
  // pack: the CUDA quantizer's kernel as METRALE_CUDA_QUANTIZER would ("lean", "proven");
  // empty: the default.
  std::string cuda_quantizer;
  // What prepacked weights mean for this case, as METRALE_PREPACKED_LAYOUT would ("halves", the
  // halves' layout alone; "fragments", the default named); empty: the default.
  std::string prepacked_layout;
};

inline constexpr std::int64_t kOracleMacBudget = std::int64_t{1} << 31;

enum class Outcome { pass, fail, skip };

struct Report {
  Outcome outcome = Outcome::skip;
  std::string detail;         // the result in words, or why it failed / was skipped
  std::int64_t compared = 0;  // values (or bytes) compared
  std::int64_t mismatches = 0;
  std::int64_t first_mismatch = -1;  // flat index into the output named in detail
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  std::int64_t rows_compared = 0;  // rows of output the oracle computed
  std::int64_t rows_total = 0;
  double oracle_ms = 0.0;
  double backend_ms = 0.0;
  std::string reproduce;  // `metrale check ...` command line of this case
  bool passed() const { return outcome == Outcome::pass; }
  bool skipped() const { return outcome == Outcome::skip; }
};

Report run_case(const Case& c);

// One line: "PASS nvfp4_gemm cuda exact 129x200x2048 seed 1: ...", plus the command on failure.
std::string summary(const Case& c, const Report& r);
std::string reproduce_command(const Case& c);

// Names as typed on the command line.
std::string_view op_name(Op op);
std::optional<Op> parse_op(std::string_view name);
std::span<const Op> all_ops();
bool is_grouped(Op op);
// Ops whose case has a routing (tokens, experts, top_k): the grouped ones and moe.
bool is_routed(Op op);
std::string_view mode_name(Mode mode);
std::optional<Mode> parse_mode(std::string_view name);
std::string_view routing_name(RoutingKind kind);
std::optional<RoutingKind> parse_routing(std::string_view name);
std::optional<Backend> parse_backend(std::string_view name);

std::span<const ModelPreset> model_presets();
const ModelPreset* find_model(std::string_view name);  // case-insensitive; null when unknown
// The projection shape of a preset for a grouped op: gate_up (N = inter, K = hidden) or down;
// for moe the layer's shapes and the model's recipe.
void apply_model(Case& c, const ModelPreset& model, std::int32_t tokens);

// True when this build has the CUDA backend and the current device runs its kernels; otherwise
// `why` says what is missing ("the CUDA backend was not built", "no CUDA device (...)", ...).
bool cuda_usable(std::string* why);
// True when this build has CUDA and at least one device is visible (the reference arms may run
// where our kernels' arch was not built); otherwise `why` says what is missing. The library's own
// probe, the one the API runs before a reference arm.
using core::cuda_device_present;

}  // namespace metrale::check
