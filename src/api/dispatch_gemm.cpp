// Dispatch of the dense bf16 and NVFP4 GEMMs (out[M,N] = act[M,K] · weight[N,K]ᵀ) and of the
// seeds' reference test hooks. Each backend is referenced only under its build gate.
#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "cpu/cpu_backend.hpp"

#ifdef METRALE_HAS_CUDA
#include "reference/cublaslt/cublaslt_backend.hpp"
#endif
#ifdef METRALE_HAS_CUTLASS
#include "reference/cutlass/cutlass_backend.hpp"
#endif

namespace metrale::api {

namespace {

// Selection has already refused backends that are not built; this is the impossible rest.
[[noreturn]] void unreachable(std::string_view who, Backend backend) {
  fail(Status::internal, "{}: no dispatch for backend {}", who, backend_name(backend));
}

}  // namespace

void run(std::string_view who, const DenseGemm& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_backend(who, exec.backend);
  if (args.m == 0) return;  // nothing to compute, and nothing to read
  if (backend == Backend::cpu) return cpu::bf16_gemm(args);
  require_device(who, backend);
  [[maybe_unused]] const auto ws =
      select_workspace(who, exec, gemm_workspace_bytes(backend, args.m, args.n, args.k));
  switch (backend) {
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::bf16_gemm(args, ws, exec.stream);
    case Backend::cublaslt: return reference::cublaslt::bf16_gemm(args, ws, exec.stream);
#endif
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass: return reference::cutlass::bf16_gemm(args, ws, exec.stream);
#endif
    default: unreachable(who, backend);
  }
}

void run(std::string_view who, const Nvfp4Gemm& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_backend(who, exec.backend);
  if (args.m == 0) return;
  if (backend == Backend::cpu) return cpu::nvfp4_gemm(args);
  require_device(who, backend);
  [[maybe_unused]] const auto ws =
      select_workspace(who, exec, gemm_workspace_bytes(backend, args.m, args.n, args.k));
  switch (backend) {
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::nvfp4_gemm(args, ws, exec.stream);
    case Backend::cublaslt: return reference::cublaslt::nvfp4_gemm(args, ws, exec.stream);
#endif
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass: return reference::cutlass::nvfp4_gemm(args, ws, exec.stream);
#endif
    default: unreachable(who, backend);
  }
}

void run_cutlass_tile(std::string_view who, const DenseGemm& args, const Exec& exec,
                      CutlassTile tile) {
  validate(who, args);
  const Backend backend = select_backend(who, Backend::cutlass);
  if (args.m == 0) return;
  require_device(who, backend);
#ifdef METRALE_HAS_CUTLASS
  using reference::cutlass::Tile;
  constexpr Tile kTiles[] = {Tile::m128n256, Tile::m256n128, Tile::m64n128, Tile::m128n64,
                             Tile::m64n64};
  const auto ws =
      select_workspace(who, exec, gemm_workspace_bytes(backend, args.m, args.n, args.k));
  reference::cutlass::bf16_gemm(args, ws, exec.stream, kTiles[static_cast<int>(tile)]);
#else
  (void)exec;
  (void)tile;
  unreachable(who, backend);
#endif
}

void run_cublaslt_algo(std::string_view who, const DenseGemm& args, const Exec& exec,
                       int algo_index, int* returned_count) {
  validate(who, args);
  const Backend backend = select_backend(who, Backend::cublaslt);
  if (args.m == 0) return;
  require_device(who, backend);
#ifdef METRALE_HAS_CUDA
  const auto ws =
      select_workspace(who, exec, gemm_workspace_bytes(backend, args.m, args.n, args.k));
  reference::cublaslt::bf16_gemm(args, ws, exec.stream, algo_index, returned_count);
#else
  (void)exec;
  (void)algo_index;
  (void)returned_count;
  unreachable(who, backend);
#endif
}

std::size_t gemm_workspace_size(std::string_view who, Backend backend, int m, int n, int k) {
  core::require_non_negative(who, "M", m);
  core::require_positive(who, "N", n);
  core::require_positive(who, "K", k);
  return gemm_workspace_bytes(select_backend(who, backend), m, n, k);
}

}  // namespace metrale::api
