// Dispatch of the dense bf16 and NVFP4 GEMMs (out[M,N] = act[M,K] · weight[N,K]ᵀ) and of the
// seeds' reference test hooks. Each backend is referenced only under its build gate.
#include "api/backends.hpp"
#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/validate.hpp"

namespace metrale::api {

namespace {

// A device backend's turn (M > 0): its device must be there, then the workspace it needs.
template <class Gemm>
core::Buffer device_workspace(std::string_view who, Backend backend, const Exec& exec,
                                 const Gemm& args) {
  require_device(who, backend);
  return select_workspace(who, exec, gemm_workspace_bytes(backend, args.m, args.n, args.k));
}

}  // namespace

void run(std::string_view who, const DenseGemm& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_backend(who, exec.backend);
  if (args.m == 0) return;  // nothing to compute, and nothing to read
  if (backend == Backend::cpu) return cpu::bf16_gemm(args);
  [[maybe_unused]] const auto ws = device_workspace(who, backend, exec, args);
  switch (backend) {
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::bf16_gemm(args, ws, exec.stream);
    case Backend::cublaslt: return reference::cublaslt::bf16_gemm(args, ws, exec.stream);
#endif
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass: return reference::cutlass::bf16_gemm(args, ws, exec.stream);
#endif
    default: no_dispatch(who, backend);
  }
}

void run(std::string_view who, const Nvfp4Gemm& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_backend(who, exec.backend);
  if (args.m == 0) return;
  if (backend == Backend::cpu) return cpu::nvfp4_gemm(args);
  [[maybe_unused]] const auto ws = device_workspace(who, backend, exec, args);
  switch (backend) {
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::nvfp4_gemm(args, ws, exec.stream);
    case Backend::cublaslt: return reference::cublaslt::nvfp4_gemm(args, ws, exec.stream);
#endif
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass: return reference::cutlass::nvfp4_gemm(args, ws, exec.stream);
#endif
    default: no_dispatch(who, backend);
  }
}

void run_cutlass_tile(std::string_view who, const DenseGemm& args, const Exec& exec,
                      CutlassTile tile) {
  validate(who, args);
  const Backend backend = select_backend(who, Backend::cutlass);
  if (args.m == 0) return;
#ifdef METRALE_HAS_CUTLASS
  using reference::cutlass::Tile;
  constexpr Tile kTiles[] = {Tile::m128n256, Tile::m256n128, Tile::m64n128, Tile::m128n64,
                             Tile::m64n64};
  const auto ws = device_workspace(who, backend, exec, args);
  reference::cutlass::bf16_gemm(args, ws, exec.stream, kTiles[static_cast<int>(tile)]);
#else
  (void)exec;
  (void)tile;
  no_dispatch(who, backend);
#endif
}

void run_cublaslt_algo(std::string_view who, const DenseGemm& args, const Exec& exec,
                       int algo_index, int* returned_count) {
  validate(who, args);
  const Backend backend = select_backend(who, Backend::cublaslt);
  if (args.m == 0) return;
#ifdef METRALE_HAS_CUDA
  const auto ws = device_workspace(who, backend, exec, args);
  reference::cublaslt::bf16_gemm(args, ws, exec.stream, algo_index, returned_count);
#else
  (void)exec;
  (void)algo_index;
  (void)returned_count;
  no_dispatch(who, backend);
#endif
}

void gemm_workspace_size(std::string_view who, Backend backend, int m, int n, int k,
                         std::size_t* bytes) {
  core::require_not_null(who, "bytes", bytes);
  core::require_non_negative(who, "M", m);
  core::require_positive(who, "N", n);
  core::require_positive(who, "K", k);
  *bytes = gemm_workspace_bytes(select_backend(who, backend), m, n, k);
}

}  // namespace metrale::api
