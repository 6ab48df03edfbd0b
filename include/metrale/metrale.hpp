// metrale — C++ API. The operations, typed; every call validates here, once, for every caller
// (the C ABI is a thin layer over this file), then runs on the backend that `Exec` names.
// Functions never throw: they return a Result whose message names the failed value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace metrale {

// Raw bits of one bfloat16 value; the library never needs a bf16 arithmetic type in its API.
using bf16_bits = std::uint16_t;

enum class Status : std::int32_t {
  ok = 0,
  invalid_argument = 1,
  unsupported = 2,
  not_built = 3,
  cuda_error = 4,
  workspace_too_small = 5,
  internal = 6,
};

struct Result {
  Status status = Status::ok;
  std::string message;
  bool ok() const { return status == Status::ok; }
};

enum class Backend : std::int32_t { automatic = 0, cpu = 1, cuda = 2, cutlass = 3, cublaslt = 4 };

const char* backend_name(Backend backend);
// Whether the backend was compiled in (it may still have no device to run on).
bool backend_built(Backend backend);

// Where a call runs. A null workspace with size 0 selects the shared workspace of the backend.
struct Exec {
  Backend backend = Backend::automatic;
  void* workspace = nullptr;
  std::size_t workspace_size = 0;
  void* stream = nullptr;  // cudaStream_t; ignored by the CPU backend
  std::int32_t device = -1;  // CUDA device made current for the call (restored after); -1: keep
                             // the thread's current device. Ignored by the CPU backend.
};

enum class ScaleLayout : std::int32_t {
  k16_by_n = 0,  // [K/16, N]: scale of (n, k) at (k/16)·N + n
  sfb = 1,       // 128x4 swizzle (src/format/layouts.hpp, NVFP4.md section 6)
};

// ---- single GEMMs: out[M, N] = act[M, K] · weight[N, K]ᵀ, fp32 accumulation, bf16 out -----------

struct DenseGemm {
  const bf16_bits* act;     // [M, K]
  const bf16_bits* weight;  // [N, K]
  bf16_bits* out;           // [M, N]
  std::int32_t m, n, k;
};

struct Nvfp4Gemm {
  const bf16_bits* act;         // [M, K]
  const std::uint8_t* packed;   // [N, K/2] e2m1 pairs, even k in the low nibble
  const std::uint8_t* scale;    // e4m3 block scales in `scale_layout`
  float scale_2;                // fp32 per-tensor decode scale
  ScaleLayout scale_layout = ScaleLayout::k16_by_n;
  bf16_bits* out;               // [M, N]
  std::int32_t m, n, k;
};

// ---- packing -------------------------------------------------------------------------------

// bf16 [N, K] -> packed [N, K/2] + scale [K/16, N]. With scale_2_out null, scale_2 is fixed at 1
// (the seeds' form); otherwise the ModelOpt recipe picks scale_2 = amax / 2688 and writes it to
// *scale_2_out (in the backend's memory space).
struct PackNvfp4 {
  const bf16_bits* weight;  // [N, K]
  std::uint8_t* packed;     // [N, K/2]
  std::uint8_t* scale;      // [K/16, N]
  float* scale_2_out;       // nullable
  std::int32_t n, k;
};

// Block scales into the SFB layout, padding zeroed. src_n_major: scale_in is [K/16, N];
// otherwise [N, K/16].
struct SwizzleScales {
  const std::uint8_t* scale_in;
  std::uint8_t* scale_out;  // sfb_bytes(n, k) bytes
  std::int32_t n, k;
  bool src_n_major;
};

enum class TransposeDir : std::int32_t {
  k_to_n = 0,  // [N, K/2] -> [K/2, N]
  n_to_k = 1,  // [K/2, N] -> [N, K/2]
};

struct TransposePacked {
  const std::uint8_t* src;
  std::uint8_t* dst;
  std::int32_t n, k;
  TransposeDir dir;
};

// How the packed [N, K/2] bytes of an NVFP4 weight hold their codes.
enum class WeightLayout : std::int32_t {
  packed = 0,     // the seeds': two e2m1 codes a byte, even k in the low nibble
  prepacked = 1,  // what prepack_nvfp4 writes (docs/api.md, "Prepacked weights"): the GPU
                  // decodes it faster
};

enum class PrepackDir : std::int32_t {
  to_prepacked = 0,  // packed -> prepacked
  to_packed = 1,     // prepacked -> packed (the inverse)
};

// [N, K/2] bytes from one weight layout into the other; src == dst (in place) is allowed.
struct PrepackNvfp4 {
  const std::uint8_t* src;
  std::uint8_t* dst;
  std::int32_t n, k;
  PrepackDir dir;
};

// ---- grouped (per-expert) GEMMs --------------------------------------------------------------

struct ExpertGroups {
  const std::int32_t* offsets;     // num_experts + 1 entries, host or device
  bool offsets_on_device = false;  // device: read only by kernels, nothing syncs
  std::int32_t num_experts;
  std::int32_t m_total;            // rows of the outputs (and of `a` without a gather)
  std::int32_t max_rows_per_expert;  // bound used to size launches when offsets are on device
};

// One projection's weights, one entry per expert (host arrays of device pointers).
struct ExpertWeights {
  const std::uint64_t* packed_ptrs;  // -> [N, K/2]
  const std::uint64_t* scale_ptrs;   // -> block scales in the call's ScaleLayout
  const float* scale2_vals;
};

// out[p][i, :] = a[row(i), :] · W_p[e(i)]ᵀ for every group row i, where e(i) is the expert whose
// offsets range holds i and row(i) = token_ids ? token_ids[i] : i.
struct GroupedNvfp4 {
  const bf16_bits* a;
  std::int32_t a_rows;              // rows of `a` (tokens, when gathered)
  const std::int32_t* token_ids;    // m_total entries in the backend's memory space, or null
  ExpertWeights proj[2];
  bf16_bits* out[2];                // [m_total, N] each
  std::int32_t proj_count;          // 1 (down) or 2 (gate, up)
  ScaleLayout scale_layout;
  ExpertGroups groups;
  std::int32_t n, k;
  WeightLayout weight_layout = WeightLayout::packed;  // of every expert's packed weights
};

// ---- the MoE layer (docs/api.md, "The MoE layer"; metrale.h has the formula) -----------------
// The CPU and CUDA backends run it; the reference GEMM backends refuse it.

enum class MoeRouting : std::int32_t {
  softmax_topk = 0,          // Qwen3, Mixtral, gpt-oss
  sigmoid_grouped_topk = 1,  // DeepSeek-V3
  precomputed = 2,           // the caller's topk_ids and topk_weights
};

enum class MoeActivation : std::int32_t {
  silu = 0,            // silu(g) · u
  swiglu_clamped = 1,  // gpt-oss: min(g, limit) · sigmoid(alpha · min(g, limit)) · (clamp(u) + 1)
};

enum class DType : std::int32_t { f32 = 0, bf16 = 1 };

struct MoeLayer {
  std::int32_t num_experts = 0;        // E: router columns, the range of expert ids
  std::int32_t num_local_experts = 0;  // L: entries of every per-expert table (E without a map)
  std::int32_t hidden_size = 0;        // H: K of gate/up, N of down
  std::int32_t intermediate_size = 0;  // I: N of gate/up, K of down
  std::int32_t top_k = 0;
  ScaleLayout scale_layout = ScaleLayout::sfb;
  ExpertWeights gate{}, up{};  // -> [I, H/2] packed each
  ExpertWeights down{};        // -> [H, I/2] packed each
  const std::uint64_t* gate_bias_ptrs = nullptr;  // optional -> bf16 [I]
  const std::uint64_t* up_bias_ptrs = nullptr;    // optional -> bf16 [I]
  const std::uint64_t* down_bias_ptrs = nullptr;  // optional -> bf16 [H]
  const std::int32_t* expert_map = nullptr;  // optional host [E]: local id, or -1 (remote)
  MoeActivation activation = MoeActivation::silu;
  float swiglu_alpha = 1.702f;
  float swiglu_limit = 7.0f;
  MoeRouting routing = MoeRouting::softmax_topk;
  bool renormalize = true;              // from logits: weights divided by their sum
  std::int32_t n_group = 1;             // sigmoid_grouped_topk only; else 1
  std::int32_t topk_group = 1;          // sigmoid_grouped_topk only; else 1
  float routed_scaling_factor = 1.0f;   // from logits
  const float* correction_bias = nullptr;  // sigmoid_grouped_topk: optional fp32 [E]
  WeightLayout weight_layout = WeightLayout::packed;  // of gate, up and down
};

struct MoeTokens {
  std::int32_t num_tokens = 0;
  const bf16_bits* hidden = nullptr;      // [T, H]
  const void* router_logits = nullptr;    // [T, E] in logits_dtype (routing from logits)
  DType logits_dtype = DType::f32;
  const std::int32_t* topk_ids = nullptr;  // [T, k] (precomputed)
  const float* topk_weights = nullptr;     // [T, k] (precomputed)
  const bf16_bits* residual = nullptr;     // optional [T, H]; may be the same buffer as out
  bf16_bits* out = nullptr;                // [T, H]
  std::int32_t* topk_ids_out = nullptr;    // optional [T, k]
  float* topk_weights_out = nullptr;       // optional [T, k]
};

// The arguments of one moe_forward, as dispatch passes them.
struct MoeForward {
  MoeLayer layer;
  MoeTokens tokens;
};

Result moe_forward(const MoeLayer& layer, const MoeTokens& tokens, const Exec& exec);
Result moe_workspace_size(Backend backend, const MoeLayer& layer, std::int32_t num_tokens,
                          std::size_t* bytes);

Result bf16_gemm_act_weight_t(const DenseGemm& args, const Exec& exec);
Result nvfp4_gemm_bf16_act_weight_t(const Nvfp4Gemm& args, const Exec& exec);
Result pack_bf16_weight_to_nvfp4_t(const PackNvfp4& args, const Exec& exec);
Result pack_weight_sfb(const SwizzleScales& args, const Exec& exec);
Result transpose_nvfp4_packed(const TransposePacked& args, const Exec& exec);
Result prepack_nvfp4(const PrepackNvfp4& args, const Exec& exec);
Result nvfp4_grouped(const GroupedNvfp4& args, const Exec& exec);

// Workspace bytes a call would need on `backend` (our CUDA kernels stage their expert tables and,
// for the decode family, the activations there: docs/api.md, "Workspace"); gemm_workspace_size
// covers both GEMMs of the shape (NVFP4 and bf16, whose K split keeps partial sums there).
Result gemm_workspace_size(Backend backend, std::int32_t m, std::int32_t n, std::int32_t k,
                           std::size_t* bytes);
Result nvfp4_grouped_workspace_size(Backend backend, const ExpertGroups& groups, std::int32_t n,
                                    std::int32_t k, std::int32_t proj_count, std::size_t* bytes);

// The shared, lazily allocated workspace of `backend` on the current device.
Result shared_workspace(Backend backend, void** workspace, std::size_t* size);

const char* version();

}  // namespace metrale
