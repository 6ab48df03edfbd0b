// Shared plumbing of the CUTLASS reference arm (host side, included by its .cu files only):
// CUTLASS status -> metrale::Error, the device checks every entry makes first (the kernels are
// built for sm_90a only), the 256-byte workspace carving that the size queries and the calls
// share, and the tile table of the dense bf16 GEMM. Arch: host code; the kernels are sm_90a.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cutlass/cutlass.h>

#include "core/error.hpp"
#include "cuda/cuda_check.hpp"
#include "reference/cutlass/cutlass_backend.hpp"

namespace metrale::reference::cutlass::detail {

// ---- errors ------------------------------------------------------------------------------------

// CUTLASS reports a failed step as a bare enum; we add who called, which step, and the shape.
// can_implement failures are "unsupported" (a valid call CUTLASS cannot run); the rest are
// internal (CUTLASS's run() swallows the CUDA launch error into kErrorInternal, so the name of
// the CUDA error is not recoverable here).
inline void check_cutlass(::cutlass::Status status, Status kind, const char* who, const char* step,
                          int m, int n, int k) {
  if (status == ::cutlass::Status::kSuccess) return;
  fail_message(kind, concat(who, " (CUTLASS): ", step, " failed for M = ", m, ", N = ", n,
                            ", K = ", k, ": ", ::cutlass::cutlassGetStatusString(status)));
}

// ---- device ------------------------------------------------------------------------------------

struct DeviceInfo {
  int device = 0;
  int sm_count = 0;
};

// The device the call runs on, checked to be sm_90 (the only arch the kernels are built for:
// sm_90a code does not run on sm_100 or later, and earlier parts have no wgmma/TMA).
inline DeviceInfo require_sm90(const char* who) {
  DeviceInfo info;
  METRALE_CUDA_CHECK(cudaGetDevice(&info.device));
  int major = 0, minor = 0;
  METRALE_CUDA_CHECK(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, info.device));
  METRALE_CUDA_CHECK(
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, info.device));
  if (major != 9 || minor != 0) {
    fail_message(Status::unsupported,
                 concat(who,
                        " (CUTLASS): the CUTLASS reference kernels are built for sm_90a "
                        "only; device ",
                        info.device, " is sm_", major, minor));
  }
  METRALE_CUDA_CHECK(
      cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, info.device));
  return info;
}

// SM count of the current device, for workspace-size queries (which run no kernel).
inline int current_sm_count() {
  int device = 0, sm_count = 0;
  METRALE_CUDA_CHECK(cudaGetDevice(&device));
  METRALE_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  return sm_count;
}

// ---- workspace ---------------------------------------------------------------------------------

// Every region of a call's workspace starts on a 256-byte boundary (TMA wants 16 bytes, CUTLASS's
// tensor-map workspace 64; 256 keeps every region on its own cache lines). The API guarantees
// only 16-byte alignment of the workspace itself, so the first region may start up to 240 bytes
// in: the size functions add kWorkspaceAlign of slack once.
inline constexpr std::size_t kWorkspaceAlign = 256;

constexpr std::size_t align_up(std::size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// Hands out consecutive aligned regions of the caller's workspace. The size functions add the same
// align_up() terms (plus the slack above), so a workspace of the queried size always suffices.
class Carver {
 public:
  Carver(void* base, std::size_t size) : base_(static_cast<char*>(base)), size_(size) {
    const auto address = reinterpret_cast<std::uintptr_t>(base_);
    used_ = static_cast<std::size_t>(align_up(address) - address);
  }
  void* take(std::size_t bytes) {
    char* region = base_ + used_;
    used_ += align_up(bytes);
    return region;
  }
  std::size_t used() const { return used_; }
  std::size_t capacity() const { return size_; }
  std::size_t left() const { return used_ <= size_ ? size_ - used_ : 0; }
  void* next() const { return base_ + used_; }

 private:
  char* base_;
  std::size_t size_;
  std::size_t used_ = 0;
};

inline void require_workspace(const char* who, std::size_t needed, std::size_t have) {
  if (needed > have) {
    fail_message(Status::workspace_too_small,
                 concat(who, " (CUTLASS): workspace_size = ", have,
                        " bytes is too small; this call needs ", needed, " bytes"));
  }
}

// The TMA constraints of the bf16 kernels, checked up front so the message names the value
// (CUTLASS's can_implement would only say "Error Misaligned Operand").
inline void require_tma_shape(const char* who, int n, int k) {
  if (k % 8 != 0) {
    fail_message(Status::unsupported,
                 concat(who, " (CUTLASS): K = ", k,
                        " is not a multiple of 8: the TMA loads of "
                        "the bf16 act and weight rows need 16-byte rows (alignment: K % 8 == 0)"));
  }
  if (n % 8 != 0) {
    fail_message(Status::unsupported,
                 concat(who, " (CUTLASS): N = ", n,
                        " is not a multiple of 8: the TMA store of "
                        "the bf16 output rows needs 16-byte rows (alignment: N % 8 == 0)"));
  }
}

// TMA needs 16-byte aligned global addresses (and CUTLASS's can_implement does not look at
// pointers); our own vector loads need 8 or 16.
inline void require_aligned(const char* who, const char* name, const void* ptr, std::size_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  if (address % bytes != 0) {
    fail_message(Status::unsupported,
                 concat(who, " (CUTLASS): ", name, " = ", ptr, " is not ", bytes,
                        "-byte aligned, expected a ", bytes, "-byte aligned device pointer"));
  }
}

// ---- the dense GEMM's tiles --------------------------------------------------------------------

struct TileInfo {
  Tile tile;
  int m, n;
  const char* name;
};

inline constexpr TileInfo kTiles[] = {
    {Tile::m128n256, 128, 256, "m128n256"}, {Tile::m256n128, 256, 128, "m256n128"},
    {Tile::m64n128, 64, 128, "m64n128"},    {Tile::m128n64, 128, 64, "m128n64"},
    {Tile::m64n64, 64, 64, "m64n64"},
};

constexpr const TileInfo& tile_info(Tile tile) {
  for (const TileInfo& info : kTiles) {
    if (info.tile == tile) return info;
  }
  return kTiles[0];
}

// One launch of the dense kernel: D[M,N] (bf16, row-major) = alpha · A[M,K] · B[N,K]ᵀ, A and B
// bf16 K-contiguous, fp32 accumulation. `workspace` is what CUTLASS asks for, nothing else.
struct DenseLaunch {
  const void* a;
  const void* b;
  void* d;
  int m, n, k;
  float alpha;
  void* workspace;
  std::size_t workspace_size;
  cudaStream_t stream;
  DeviceInfo device;
  const char* who;
};

// One kernel type per tile: the specializations below are defined in gemm_tiles_*.cu (one
// METRALE_CUTLASS_DENSE_TILE line each), so each kernel is compiled exactly once.
template <Tile kTile>
void run_dense(const DenseLaunch& launch);
template <Tile kTile>
std::size_t dense_workspace_size(int m, int n, int k, int sm_count);

#define METRALE_CUTLASS_DECLARE_TILE(TILE)               \
  template <>                                            \
  void run_dense<Tile::TILE>(const DenseLaunch& launch); \
  template <>                                            \
  std::size_t dense_workspace_size<Tile::TILE>(int m, int n, int k, int sm_count);
METRALE_CUTLASS_DECLARE_TILE(m128n256)
METRALE_CUTLASS_DECLARE_TILE(m256n128)
METRALE_CUTLASS_DECLARE_TILE(m64n128)
METRALE_CUTLASS_DECLARE_TILE(m128n64)
METRALE_CUTLASS_DECLARE_TILE(m64n64)
#undef METRALE_CUTLASS_DECLARE_TILE

}  // namespace metrale::reference::cutlass::detail
