// cuBLASLt reference arm, NVFP4: "dequantize to bf16, then cuBLASLt" — the naive path our NVFP4
// kernels must beat, timed end to end by the bench. Any arch cuBLASLt supports.
//
// Workspace, carved in this order, each region 256-byte aligned:
//   [gathered activations: max rows of one expert × K bf16, grouped calls only]
//   [one dequantized weight: N × K bf16]
//   [cuBLASLt's own workspace: what is left, kLtWorkspaceBytes recommended]
// Grouped calls walk the experts on the host (offsets must be host memory): per expert with rows,
// gather its rows when token_ids is given, then for each projection dequantize that expert's
// weight into the one weight region and run one GEMM. Stream order makes the reuse safe.
// Rounding: see dequantize_nvfp4 — bf16 weights carry scale_2, unlike our fp32 epilogue.
#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"
#include "reference/cublaslt/lt_internal.hpp"

namespace metrale::reference::cublaslt {
namespace {

struct Carved {
  bf16_bits* gathered = nullptr;
  bf16_bits* weight = nullptr;
  core::Buffer lt;
};

Carved carve(core::Buffer ws, std::size_t gathered_bytes, std::size_t weight_bytes,
             const char* who, int n, int k) {
  ws = align_workspace(ws);
  const std::size_t need = aligned_bytes(gathered_bytes) + aligned_bytes(weight_bytes);
  if (ws.size < need) {
    fail(Status::workspace_too_small,
         "{}: the workspace holds {} usable bytes but the dequantized weight (n = {}, k = {}) and "
         "gathered rows need {} (query the workspace size first)",
         who, ws.size, n, k, need);
  }
  auto* base = static_cast<std::uint8_t*>(ws.ptr);
  Carved carved;
  if (gathered_bytes > 0) carved.gathered = reinterpret_cast<bf16_bits*>(base);
  base += aligned_bytes(gathered_bytes);
  carved.weight = reinterpret_cast<bf16_bits*>(base);
  base += aligned_bytes(weight_bytes);
  carved.lt = {ws.size > need ? base : nullptr, ws.size - need};
  return carved;
}

std::size_t weight_bytes(int n, int k) {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(k) * sizeof(bf16_bits);
}

// The largest group, from host offsets; the bound m_total when they are not readable here.
std::int32_t max_group_rows(const ExpertGroups& groups) {
  if (groups.offsets_on_device || groups.offsets == nullptr) return groups.m_total;
  std::int32_t rows = 0;
  for (std::int32_t e = 0; e < groups.num_experts; ++e) {
    rows = std::max(rows, groups.offsets[e + 1] - groups.offsets[e]);
  }
  return rows;
}

}  // namespace

void nvfp4_gemm(const Nvfp4Gemm& args, core::Buffer ws, void* stream) {
  if (args.m == 0) return;
  const Carved carved =
      carve(ws, 0, weight_bytes(args.n, args.k), "cublaslt nvfp4_gemm", args.n, args.k);
  dequantize_nvfp4(args.packed, args.scale, args.scale_layout, args.scale_2, carved.weight, args.n,
                   args.k, stream);
  cublaslt::bf16_gemm(DenseGemm{args.act, carved.weight, args.out, args.m, args.n, args.k},
                      carved.lt, stream);
}

void nvfp4_grouped(const GroupedNvfp4& args, core::Buffer ws, void* stream) {
  const ExpertGroups& groups = args.groups;
  if (groups.offsets_on_device) {
    fail(Status::unsupported,
         "cublaslt nvfp4_grouped: expert offsets in device memory are not supported by the "
         "cuBLASLt reference arm (it launches one GEMM per expert from host offsets); pass host "
         "offsets");
  }
  const std::size_t k = static_cast<std::size_t>(args.k);
  const std::size_t gathered_bytes =
      args.token_ids ? static_cast<std::size_t>(max_group_rows(groups)) * k * sizeof(bf16_bits) : 0;
  const Carved carved = carve(ws, gathered_bytes, weight_bytes(args.n, args.k),
                              "cublaslt nvfp4_grouped", args.n, args.k);
  for (std::int32_t e = 0; e < groups.num_experts; ++e) {
    const std::int32_t begin = groups.offsets[e];
    const std::int32_t rows = groups.offsets[e + 1] - begin;
    if (rows <= 0) continue;
    const bf16_bits* a = args.a + static_cast<std::size_t>(begin) * k;
    if (args.token_ids) {
      gather_rows(args.a, args.a_rows, args.token_ids + begin, rows, args.k, carved.gathered,
                  stream);
      a = carved.gathered;
    }
    for (std::int32_t p = 0; p < args.proj_count; ++p) {
      const ExpertWeights& w = args.proj[p];
      dequantize_nvfp4(reinterpret_cast<const std::uint8_t*>(w.packed_ptrs[e]),
                       reinterpret_cast<const std::uint8_t*>(w.scale_ptrs[e]), args.scale_layout,
                       w.scale2_vals[e], carved.weight, args.n, args.k, stream);
      bf16_bits* out = args.out[p] + static_cast<std::size_t>(begin) * args.n;
      cublaslt::bf16_gemm(DenseGemm{a, carved.weight, out, rows, args.n, args.k}, carved.lt,
                          stream);
    }
  }
}

std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k, int proj_count) {
  (void)proj_count;  // projections run one after the other through the same regions
  const std::size_t gathered =
      static_cast<std::size_t>(std::max(max_group_rows(groups), 0)) * k * sizeof(bf16_bits);
  return kWorkspaceAlign + aligned_bytes(gathered) + aligned_bytes(weight_bytes(n, k)) +
         kLtWorkspaceBytes;
}

}  // namespace metrale::reference::cublaslt
