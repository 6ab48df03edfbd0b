// cuBLASLt reference arm, dense bf16: out[M, N] = act[M, K] · weight[N, K]ᵀ, row-major, fp32
// accumulation, bf16 out. Any arch cuBLASLt supports.
//
// cuBLASLt is column-major. A row-major [R, C] matrix is the same bytes as a column-major [C, R]
// one, so the row-major product out = act · weightᵀ is, read column-major, outᵀ = weight · actᵀ:
//   A = weight as column-major [K, N] (ld K), op(A) = Aᵀ -> [N, K]   (TRANSA = T)
//   B = act    as column-major [K, M] (ld K), op(B) = B  -> [K, M]   (TRANSB = N)
//   C = D = out as column-major [N, M] (ld N)
// i.e. cuBLAS's (m, n, k) = (N, M, K), the "TN" form every cuBLASLt bf16 kernel supports.
//
// Plans (descriptors plus the heuristics' answer) are cached per device, shape, pointer
// alignment and workspace limit, so a per-expert loop pays for the heuristic query once per
// distinct row count. Handles are created once per device and live as long as the process.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"
#include "reference/cublaslt/lt_check.hpp"
#include "reference/cublaslt/lt_internal.hpp"

namespace metrale::reference::cublaslt {
namespace {

constexpr int kMaxHeuristics = 32;

cublasLtHandle_t handle_for_device(int device) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t handle = nullptr;
  METRALE_CUBLAS_CHECK(cublasLtCreate(&handle));
  handles.emplace(device, handle);
  return handle;
}

// Largest power of two (at most 256, cuBLASLt's default requirement) dividing the address.
std::uint32_t alignment_of(const void* ptr) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  if (address == 0) return 256;
  const std::uintptr_t lowest = address & (~address + 1);
  return static_cast<std::uint32_t>(std::min<std::uintptr_t>(lowest, 256));
}

struct PlanKey {
  int device, m, n, k;
  std::uint32_t align_act, align_weight, align_out;
  std::uint64_t workspace_limit;
  bool enumerate;  // all heuristics (algo_index >= 0 or a count requested) or just the first
  auto operator<=>(const PlanKey&) const = default;
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t weight_layout = nullptr, act_layout = nullptr, out_layout = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics;

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (out_layout) cublasLtMatrixLayoutDestroy(out_layout);
    if (act_layout) cublasLtMatrixLayoutDestroy(act_layout);
    if (weight_layout) cublasLtMatrixLayoutDestroy(weight_layout);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

struct PreferenceGuard {
  cublasLtMatmulPreference_t pref = nullptr;
  ~PreferenceGuard() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
  }
};

std::shared_ptr<Plan> make_plan(const PlanKey& key, cublasLtHandle_t handle) {
  auto plan = std::make_shared<Plan>();
  METRALE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  METRALE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                      &trans_a, sizeof trans_a));
  METRALE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                      &trans_b, sizeof trans_b));
  METRALE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&plan->weight_layout, CUDA_R_16BF, key.k, key.n, key.k));
  METRALE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&plan->act_layout, CUDA_R_16BF, key.k, key.m, key.k));
  METRALE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&plan->out_layout, CUDA_R_16BF, key.n, key.m, key.n));

  PreferenceGuard pref;
  METRALE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.pref));
  const std::uint64_t limit = key.workspace_limit;
  METRALE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof limit));
  // A is the weight, B the activations, C and D the output (see the mapping above).
  const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_weight},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_act},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_out},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_out}};
  for (const auto& [attribute, value] : alignments) {
    METRALE_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref.pref, attribute, &value, sizeof value));
  }

  const int requested = key.enumerate ? kMaxHeuristics : 1;
  std::vector<cublasLtMatmulHeuristicResult_t> results(requested);
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle, plan->desc, plan->weight_layout, plan->act_layout, plan->out_layout, plan->out_layout,
      pref.pref, requested, results.data(), &returned);
  // NOT_SUPPORTED here means "no algorithm for this configuration": an empty list, reported by
  // the caller with the shape, rather than an error about the query itself.
  if (status != CUBLAS_STATUS_NOT_SUPPORTED) METRALE_CUBLAS_CHECK(status);
  for (int i = 0; i < returned && status == CUBLAS_STATUS_SUCCESS; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->heuristics.push_back(results[i]);
  }
  return plan;
}

std::shared_ptr<Plan> find_plan(const PlanKey& key, cublasLtHandle_t handle) {
  // A bench sweep meets a few hundred distinct shapes; the bound only guards a long-running
  // process against unbounded growth. shared_ptr keeps a plan alive for a caller mid-use.
  constexpr std::size_t kMaxPlans = 8192;
  static std::mutex mutex;
  static std::map<PlanKey, std::shared_ptr<Plan>> plans;
  {
    std::lock_guard lock(mutex);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
  }
  auto plan = make_plan(key, handle);  // outside the lock: the heuristic query is slow
  std::lock_guard lock(mutex);
  if (plans.size() >= kMaxPlans) plans.clear();
  return plans.emplace(key, std::move(plan)).first->second;
}

}  // namespace

core::Buffer align_workspace(core::Buffer ws) {
  if (ws.ptr == nullptr) return {};
  const auto address = reinterpret_cast<std::uintptr_t>(ws.ptr);
  const std::uintptr_t aligned =
      (address + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
  const std::size_t skipped = aligned - address;
  if (skipped >= ws.size) return {};
  return {reinterpret_cast<void*>(aligned), ws.size - skipped};
}

void bf16_gemm(const DenseGemm& args, core::Buffer ws, void* stream, int algo_index,
               int* returned_count) {
  if (returned_count) *returned_count = 0;
  if (args.m == 0) return;  // an empty problem (an expert with no rows) is a no-op
  int device = 0;
  METRALE_CUDA_CHECK(cudaGetDevice(&device));
  cublasLtHandle_t handle = handle_for_device(device);
  ws = align_workspace(ws);

  const PlanKey key{device,
                    args.m,
                    args.n,
                    args.k,
                    alignment_of(args.act),
                    alignment_of(args.weight),
                    alignment_of(args.out),
                    ws.size,
                    algo_index >= 0 || returned_count != nullptr};
  const std::shared_ptr<Plan> plan = find_plan(key, handle);
  const int count = static_cast<int>(plan->heuristics.size());
  if (returned_count) *returned_count = count;
  if (count == 0) {
    fail(Status::unsupported,
         "cublaslt bf16_gemm: cuBLASLt offers no algorithm for m = {}, n = {}, k = {} with a "
         "{}-byte workspace on device {}",
         args.m, args.n, args.k, ws.size, device);
  }
  const int index = algo_index < 0 ? 0 : algo_index;
  if (index >= count) {
    fail(Status::invalid_argument,
         "cublaslt bf16_gemm: algo_index = {} but cuBLASLt returned {} heuristics for m = {}, "
         "n = {}, k = {}",
         algo_index, count, args.m, args.n, args.k);
  }
  const cublasLtMatmulHeuristicResult_t& choice = plan->heuristics[index];
  const float alpha = 1.0f, beta = 0.0f;
  METRALE_CUBLAS_CHECK(cublasLtMatmul(handle, plan->desc, &alpha, args.weight, plan->weight_layout,
                                      args.act, plan->act_layout, &beta, args.out, plan->out_layout,
                                      args.out, plan->out_layout, &choice.algo, ws.ptr,
                                      choice.workspaceSize, static_cast<cudaStream_t>(stream)));
}

std::size_t gemm_workspace_size(int m, int n, int k) {
  // Enough for nvfp4_gemm too: its dequantized weight, then cuBLASLt's own workspace.
  (void)m;
  return aligned_bytes(static_cast<std::size_t>(n) * k * sizeof(bf16_bits)) + kLtWorkspaceBytes +
         kWorkspaceAlign;
}

}  // namespace metrale::reference::cublaslt
