// The CUDA backend: our own kernels (src/cuda/sm90/ for Hopper). Arguments arrive validated and
// on device memory; `ws` is the resolved workspace. Each function throws metrale::Error with
// Status::unsupported (naming the device's arch and the archs built) when it cannot run, and
// Status::cuda_error naming the call, the device and the error when CUDA fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/config.hpp"
#include "core/workspace.hpp"
#include "metrale/metrale.hpp"

namespace metrale::cuda {

// True when this build has the CUDA backend and the current device can run its kernels;
// otherwise `why` says which of the two is missing.
bool available(std::string* why);

void bf16_gemm(const DenseGemm& args, core::Buffer ws, void* stream);
void nvfp4_gemm(const Nvfp4Gemm& args, core::Buffer ws, void* stream);
// Refuses (unsupported) a call on a capturing stream, saying why it cannot be captured.
void refuse_capture(std::string_view who, void* stream, std::string_view reason);
// Copies `bytes` of device memory to the host after the work queued on `stream`, and waits.
void download(const void* device, std::size_t bytes, void* host, void* stream);

// The quantizer's scratch (amax and the first non-finite index the device found); `who` names
// the entry point in a refusal of NaN or ±Inf weights. pack_nvfp4 waits for its stream, so a
// capturing stream is refused first, before anything (the shared workspace's allocation
// included) could break the capture. `quantizer` picks the quantize kernel (the same bits).
inline constexpr std::size_t kPackScratchBytes = 16;
void refuse_pack_capture(std::string_view who, void* stream);
void pack_nvfp4(std::string_view who, const PackNvfp4& args, core::Buffer ws, void* stream,
                core::CudaQuantizer quantizer);
void swizzle_scales(const SwizzleScales& args, void* stream);
void transpose_packed(const TransposePacked& args, void* stream);
// [N, K/2] bytes into or out of the prepacked layout (format/prepack.hpp); src == dst in place.
void prepack_nvfp4(const PrepackNvfp4& args, void* stream);
void nvfp4_grouped(const GroupedNvfp4& args, core::Buffer ws, void* stream);

// A gated input for a grouped GEMM, applied while a family stages its activations: row i of A
// is act(a[i], up[i]) with a the gate rows ([rows, K], in group order: no token ids), each value
// silu_mul or swiglu_clamped (format/moe_math.hpp) in fp32 of the bf16 inputs, rounded to bf16:
// the bits the MoE layer's activation kernel writes when the layer has no gate/up biases.
struct GluInput {
  const std::uint16_t* up = nullptr;  // [rows, K] bf16
  bool clamped = false;               // swiglu_clamped, else silu
  float alpha = 0, limit = 0;         // swiglu_clamped's
  const float* silu_table = nullptr;  // silu of every bf16 (cuda/silu_table.cuh), or null
};

// nvfp4_grouped on the gated input: true when every launch the dispatcher chooses for `args`
// stages it (the decode family), and then it ran; false when one would not, and then nothing was
// launched (the caller computes the activation rows and calls nvfp4_grouped). The workspace is
// nvfp4_grouped's.
bool nvfp4_grouped_on_glu(const GroupedNvfp4& args, const GluInput& glu, core::Buffer ws,
                          void* stream);

// nvfp4_grouped for gate/up (proj_count 2) with the activation applied to its sums: out[0]
// receives act(gate, up) of the rows' bf16 gate and up values (GluInput's activation; glu.up is
// not read), the bits the activation kernel writes over the gate rows without biases; out[1] is
// not written. True when every launch the dispatcher chooses for `args` writes it (the stream
// family), and then it ran; false when one would not, and then nothing was launched (the caller
// runs nvfp4_grouped and the activation). The workspace is nvfp4_grouped's.
bool nvfp4_grouped_to_glu(const GroupedNvfp4& args, const GluInput& glu, core::Buffer ws,
                          void* stream);

// The MoE layer (moe/moe_layer.cpp): routing, gate/up, activation, down and combine on `stream`,
// no host synchronisation. Non-finite logits or weights and ids outside [0, E), which only the
// device sees, make that token's output row NaN (docs/api.md). `who` names the entry point.
void moe_forward(std::string_view who, const MoeForward& args, core::Buffer ws, void* stream);
// What the CUDA layer cannot run, refused before anything is enqueued (and before asking for a
// device): E, L (with biases too) past the launch parameters' room, H or I not multiples of 32
// (refuse_moe_layer_beyond_limits: the layer alone, which the workspace query checks too), then
// unaligned token buffers or expert weights. The API calls it, then (T > 0) require_device and
// moe_forward, which does not check these again.
void refuse_moe_layer_beyond_limits(std::string_view who, const MoeLayer& layer);
void refuse_moe_beyond_limits(std::string_view who, const MoeForward& args);
// The workspace of a layer that passed refuse_moe_layer_beyond_limits.
std::size_t moe_workspace_size(const MoeLayer& layer, int num_tokens);

// The kernel families and configurations nvfp4_grouped would launch for `args` (for the bench's
// labels), e.g. "sm90-decode tokens=8 splits=auto".
std::string nvfp4_grouped_plan(const GroupedNvfp4& args);
// The same for bf16_gemm on an m x n x k problem, e.g. "sm90-tiled tokens=128 weight_rows=128
// warp-specialised".
std::string bf16_gemm_plan(int m, int n, int k);

// Workspace bytes of the calls above (what the expert tables, the decode family's activation
// copy and split partials take); the single GEMMs' is their one-expert grouped problem's.
std::size_t gemm_workspace_size(int m, int n, int k);
std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k, int proj_count);

}  // namespace metrale::cuda
