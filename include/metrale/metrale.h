/* metrale — C ABI of the NVFP4 MoE GEMM layer.
 *
 * C99, no exceptions cross this boundary, nothing aborts: every function returns a
 * metrale_status, and on failure metrale_last_error() holds a message that names the function,
 * the argument, its value and what was expected.
 *
 * Three families of entry points share the seeds' exact parameter lists:
 *   metrale_<op>          our own kernels on device memory (the CUDA backend). Dispatch reaches the
 *                         CUTLASS reference instead only when METRALE_CUTLASS_GEMM=1 is set.
 *   metrale_cutlass_<op>  the CUTLASS reference arm, always; METRALE_STATUS_NOT_BUILT when the
 *                         library was built without CUTLASS headers.
 *   metrale_cpu_<op>      the CPU reference backend (the oracle) on host memory; `stream` and the
 *                         workspace are ignored, a NULL workspace is fine.
 * The `_ex` entry points add what the seeds' lists cannot carry: M_total, expert offsets that
 * live on the device (for CUDA-graph capture), the number of gathered tokens, and an explicit
 * backend.
 *
 * Layouts (all row-major, contiguous; bf16 passed as its 16 raw bits):
 *   act [M, K] bf16, weight [N, K] bf16, out [M, N] bf16 — out = act · weightᵀ.
 *   packed [N, K/2] uint8: two e2m1 codes a byte, even k in the low nibble.
 *   scale  [K/16, N] e4m3 ("_t" layout written by pack_bf16_weight_to_nvfp4_t), or the 128x4
 *          swizzled SFB layout written by pack_weight_sfb (src/format/layouts.hpp).
 *   scale_2 fp32 per-tensor decode scale: w = e2m1 · e4m3 · scale_2.
 * A NULL workspace with workspace_size 0 selects the process-wide shared workspace
 * (METRALE_WORKSPACE_MB, allocated on first use).
 */
#ifndef METRALE_METRALE_H
#define METRALE_METRALE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define METRALE_API __declspec(dllexport)
#else
#define METRALE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t metrale_status;
enum {
  METRALE_STATUS_OK = 0,
  METRALE_STATUS_INVALID_ARGUMENT = 1,  /* a value failed validation; nothing was touched */
  METRALE_STATUS_UNSUPPORTED = 2,       /* valid, but this backend cannot run it (arch, shape) */
  METRALE_STATUS_NOT_BUILT = 3,         /* the backend was not compiled into this library */
  METRALE_STATUS_CUDA_ERROR = 4,        /* a CUDA call failed; the message names call and device */
  METRALE_STATUS_WORKSPACE_TOO_SMALL = 5,
  METRALE_STATUS_INTERNAL = 6
};

/* Sized integers across the ABI (an enum's size is the compiler's choice). */
typedef int32_t metrale_backend;
enum {
  METRALE_BACKEND_AUTO = 0,     /* own CUDA kernels; CUTLASS when METRALE_CUTLASS_GEMM=1 */
  METRALE_BACKEND_CPU = 1,      /* reference oracle, host pointers */
  METRALE_BACKEND_CUDA = 2,     /* own CUDA kernels, device pointers */
  METRALE_BACKEND_CUTLASS = 3,  /* CUTLASS reference arm */
  METRALE_BACKEND_CUBLASLT = 4  /* cuBLASLt reference arm (dense bf16; NVFP4 via dequantization) */
};

/* Thread-local message of the last failure on this thread ("" after a success). */
METRALE_API const char* metrale_last_error(void);
METRALE_API const char* metrale_version(void);
METRALE_API const char* metrale_status_name(metrale_status status);
/* Nonzero when the backend was compiled in (it may still have no device to run on). */
METRALE_API int32_t metrale_backend_built(metrale_backend backend);

/* ---- process-wide workspace ---------------------------------------------------------------- */
/* The shared workspace of the current device (host memory for the CPU backend), allocated on
 * first call with METRALE_WORKSPACE_MB megabytes (default 512). Thread-safe. */
METRALE_API metrale_status metrale_workspace_get(metrale_backend backend, void** workspace,
                                                 size_t* workspace_size);

/* ---- dense and NVFP4 GEMM: out[M,N] = act[M,K] · weight[N,K]ᵀ ------------------------------- */
#define METRALE_DECLARE_GEMMS(prefix)                                                          \
  METRALE_API metrale_status prefix##bf16_gemm_act_weight_t(                                   \
      const void* act, const void* weight, void* out, int32_t m, int32_t n, int32_t k,         \
      void* workspace, size_t workspace_size, void* stream);                                   \
  METRALE_API metrale_status prefix##nvfp4_gemm_bf16_act_weight_t(                             \
      const void* act, const void* weight_packed_t, const void* weight_scale_t,                \
      float weight_scale_2, void* out, int32_t m, int32_t n, int32_t k, void* workspace,       \
      size_t workspace_size, void* stream);                                                    \
  METRALE_API metrale_status prefix##pack_bf16_weight_to_nvfp4_t(                              \
      const void* weight_bf16, void* packed_t, void* scale_t, int32_t n, int32_t k,            \
      void* stream);                                                                           \
  METRALE_API metrale_status prefix##nvfp4_grouped_gate_up(                                    \
      const void* a_bf16, const uint64_t* gate_packed_ptrs, const uint64_t* gate_scale_ptrs,   \
      const float* gate_scale2_vals, const uint64_t* up_packed_ptrs,                           \
      const uint64_t* up_scale_ptrs, const float* up_scale2_vals, void* c_gate_bf16,           \
      void* c_up_bf16, const int32_t* expert_offsets_host, int32_t num_experts, int32_t n,     \
      int32_t k, void* workspace, size_t workspace_size, void* stream);                        \
  METRALE_API metrale_status prefix##nvfp4_grouped_gate_up_fused(                              \
      const void* a_bf16, const int32_t* sorted_token_ids, const uint64_t* gate_packed_ptrs,   \
      const uint64_t* gate_sfb_ptrs, const float* gate_scale2_vals,                            \
      const uint64_t* up_packed_ptrs, const uint64_t* up_sfb_ptrs,                             \
      const float* up_scale2_vals, void* c_gate_bf16, void* c_up_bf16,                         \
      const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k,           \
      void* workspace, size_t workspace_size, void* stream);                                   \
  METRALE_API metrale_status prefix##nvfp4_grouped_down(                                       \
      const void* a_bf16, const uint64_t* packed_ptrs, const uint64_t* sfb_ptrs,              \
      const float* scale2_vals, void* c_bf16, const int32_t* expert_offsets_host,              \
      int32_t num_experts, int32_t n, int32_t k, void* workspace, size_t workspace_size,       \
      void* stream);                                                                           \
  METRALE_API metrale_status prefix##pack_weight_sfb(const void* scale_in, void* scale_out,    \
                                                     int32_t n, int32_t k, int32_t src_n_major, \
                                                     void* stream);                            \
  METRALE_API metrale_status prefix##transpose_nvfp4_packed_kton(                              \
      const void* src_packed_t, void* dst_packed, int32_t n, int32_t k, void* stream);         \
  METRALE_API metrale_status prefix##transpose_nvfp4_packed_ntok(                              \
      const void* src_packed, void* dst_packed_t, int32_t n, int32_t k, void* stream);

/* The seeds' entry points, for each backend family. `pack_weight_sfb`: src_n_major = 1 reads
 * scale_in as [K/16, N] (N contiguous: pack_bf16_weight_to_nvfp4_t's output); 0 reads [N, K/16]
 * (a checkpoint's weight_scale). The SFB output is zero-padded to 128 rows and 4 scale columns.
 * `transpose_nvfp4_packed_kton`: [N, K/2] -> [K/2, N] bytes; `_ntok` is its inverse.
 * The seed-shaped `pack_bf16_weight_to_nvfp4_t` has no output for scale_2: it quantizes with
 * scale_2 = 1 (the caller passes 1.0f to the GEMMs). metrale_pack_bf16_weight_to_nvfp4_ex runs
 * the full ModelOpt recipe and returns the scale_2 it chose. */
METRALE_DECLARE_GEMMS(metrale_)
METRALE_DECLARE_GEMMS(metrale_cutlass_)
METRALE_DECLARE_GEMMS(metrale_cpu_)

/* ---- the seeds' reference test hooks -------------------------------------------------------- */
/* The CUTLASS Hopper bf16 GEMM with one fixed tile shape (METRALE_STATUS_NOT_BUILT without
 * CUTLASS), and the cuBLASLt bf16 GEMM with the algo_index-th heuristic algorithm (algo_index < 0:
 * the first; *returned_count, if not NULL, receives how many heuristics there are). Device
 * pointers; for A/B comparisons of tile and algorithm choice. */
#define METRALE_DECLARE_DENSE(name)                                                            \
  METRALE_API metrale_status name(const void* act, const void* weight, void* out, int32_t m,   \
                                  int32_t n, int32_t k, void* workspace, size_t workspace_size, \
                                  void* stream);
METRALE_DECLARE_DENSE(metrale_cutlass_bf16_gemm_act_weight_t_128x256)
METRALE_DECLARE_DENSE(metrale_cutlass_bf16_gemm_act_weight_t_256x128)
METRALE_DECLARE_DENSE(metrale_cutlass_bf16_gemm_act_weight_t_64x128)
METRALE_DECLARE_DENSE(metrale_cutlass_bf16_gemm_act_weight_t_128x64)
METRALE_DECLARE_DENSE(metrale_cutlass_bf16_gemm_act_weight_t_64x64)
METRALE_API metrale_status metrale_cublaslt_bf16_gemm_act_weight_t_algo(
    const void* act, const void* weight, void* out, int32_t m, int32_t n, int32_t k,
    void* workspace, size_t workspace_size, void* stream, int32_t algo_index,
    int32_t* returned_count);

/* ---- extended entry points ------------------------------------------------------------------ */

/* Expert grouping. Expert e owns group rows [offsets[e], offsets[e+1]); offsets has
 * num_experts + 1 entries, non-negative and non-decreasing, offsets[num_experts] <= m_total.
 * When offsets_on_device is nonzero the array lives in device memory and is read only by the
 * kernels (nothing synchronises with the host: capturable in a CUDA graph); then
 * max_rows_per_expert (<= m_total) bounds every group and the launch is sized from it. */
typedef struct metrale_groups {
  const int32_t* offsets;
  int32_t offsets_on_device;
  int32_t num_experts;
  int32_t m_total;
  int32_t max_rows_per_expert;
} metrale_groups;

/* Where and how an extended call runs. workspace NULL + size 0: the shared workspace. */
typedef struct metrale_exec {
  metrale_backend backend;
  void* workspace;
  size_t workspace_size;
  void* stream;
} metrale_exec;

/* Scale layout of the per-expert block scales. */
typedef int32_t metrale_scale_layout;
enum {
  METRALE_SCALE_K16_BY_N = 0, /* [K/16, N], pack_bf16_weight_to_nvfp4_t's layout */
  METRALE_SCALE_SFB = 1       /* 128x4 swizzled, pack_weight_sfb's layout */
};

/* One projection's per-expert weights: host arrays of num_experts entries each. */
typedef struct metrale_expert_weights {
  const uint64_t* packed_ptrs; /* device pointers to [N, K/2] */
  const uint64_t* scale_ptrs;  /* device pointers to the block scales */
  const float* scale2_vals;    /* per-expert fp32 decode scale */
} metrale_expert_weights;

/* Full ModelOpt recipe: scale_2 = amax / 2688 is computed and written to *scale_2_out, which
 * lives where the other buffers live (device memory on CUDA, host memory on the CPU). */
METRALE_API metrale_status metrale_pack_bf16_weight_to_nvfp4_ex(const void* weight_bf16,
                                                                void* packed_t, void* scale_t,
                                                                float* scale_2_out, int32_t n,
                                                                int32_t k,
                                                                const metrale_exec* exec);

/* c[M_total, N] = gather(a) · Wᵀ per expert, for one (down) or two (gate and up) projections.
 * a has a_rows rows; group row i reads row token_ids[i] (device array of m_total entries, or
 * identity when NULL). gate_up: proj_count = 2, out[0] = gate, out[1] = up. */
METRALE_API metrale_status metrale_nvfp4_grouped_ex(
    const void* a_bf16, int32_t a_rows, const int32_t* token_ids,
    const metrale_expert_weights* proj, void* const* out, int32_t proj_count,
    metrale_scale_layout scale_layout, const metrale_groups* groups, int32_t n, int32_t k,
    const metrale_exec* exec);

/* Bytes of workspace each operation needs on the given backend (0 for most of ours). */
METRALE_API metrale_status metrale_nvfp4_grouped_workspace_size(metrale_backend backend,
                                                                const metrale_groups* groups,
                                                                int32_t n, int32_t k,
                                                                int32_t proj_count,
                                                                size_t* bytes);
METRALE_API metrale_status metrale_gemm_workspace_size(metrale_backend backend, int32_t m,
                                                       int32_t n, int32_t k, size_t* bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* METRALE_METRALE_H */
