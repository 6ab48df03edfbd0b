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

/* The library's version (semantic: a MAJOR change breaks callers, MINOR adds, PATCH fixes), and
 * the version of this binary interface: the layouts of the structs below and the entry points'
 * parameter lists. METRALE_ABI_VERSION grows by one whenever a struct gains a field; a library
 * accepts every struct whose struct_size it knows (an older caller's), and refuses, with a
 * message, a struct_size larger than its own (a caller built against a newer header).
 * metrale_abi_version() is the library's value, to compare with the header's at run time. The
 * CMake project reads its version from these three lines. */
#define METRALE_VERSION_MAJOR 0
#define METRALE_VERSION_MINOR 3
#define METRALE_VERSION_PATCH 0
#define METRALE_ABI_VERSION 1

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
METRALE_API const char* metrale_version(void); /* "MAJOR.MINOR.PATCH" */
METRALE_API int32_t metrale_abi_version(void);  /* METRALE_ABI_VERSION the library was built with */
METRALE_API const char* metrale_status_name(metrale_status status);
/* Nonzero when the backend was compiled in (it may still have no device to run on). */
METRALE_API int32_t metrale_backend_built(metrale_backend backend);

/* ---- process-wide workspace ---------------------------------------------------------------- */
/* The shared workspace of the current device (host memory for the CPU backend), allocated on
 * first call with METRALE_WORKSPACE_MB megabytes (default 512). Thread-safe. */
METRALE_API metrale_status metrale_workspace_get(metrale_backend backend, void** workspace,
                                                 size_t* workspace_size);

/* ---- the seeds' entry points ---------------------------------------------------------------- */
/* The same nine operations in three families, with the seeds' exact parameter lists:
 *   bf16_gemm_act_weight_t        out[M,N] = act[M,K] · weight[N,K]ᵀ (bf16)
 *   nvfp4_gemm_bf16_act_weight_t  the same with weight = e2m1 · e4m3 · weight_scale_2; scales in
 *                                 the [K/16, N] layout
 *   pack_bf16_weight_to_nvfp4_t   bf16 [N, K] -> packed [N, K/2] + scale [K/16, N]. This form has
 *                                 no output for scale_2: it quantizes with scale_2 = 1 (pass 1.0f
 *                                 to the GEMMs); metrale_pack_bf16_weight_to_nvfp4_ex runs the
 *                                 full ModelOpt recipe and returns the scale_2 it chose. NaN or
 *                                 ±Inf weights are refused, naming the lowest index
 *                                 (invalid_argument, every backend but CUTLASS's; on CUDA this
 *                                 form may have written packed_t and scale_t by then, and the
 *                                 call waits for the stream, so it cannot be graph-captured).
 *   nvfp4_grouped_gate_up         per expert, gate and up products; a in group order, [K/16, N]
 *                                 scales
 *   nvfp4_grouped_gate_up_fused   the same in one launch, rows gathered through sorted_token_ids
 *                                 (identity when NULL), SFB scales
 *   nvfp4_grouped_down            one projection, a in group order, SFB scales
 *   pack_weight_sfb               block scales into the SFB layout, zero-padded to 128 rows and 4
 *                                 scale columns; src_n_major = 1 reads [K/16, N] (the quantizer's
 *                                 output), 0 reads [N, K/16] (a checkpoint's weight_scale)
 *   transpose_nvfp4_packed_kton   [N, K/2] -> [K/2, N] bytes; _ntok is its inverse
 * Grouped calls: expert e owns group rows [expert_offsets_host[e], expert_offsets_host[e+1]);
 * M_total = expert_offsets_host[num_experts]; the per-expert arrays hold num_experts entries (one
 * device pointer, or one fp32, per expert). The seed-shaped grouped calls cannot see the sizes
 * of a, c or the token ids (marked UNCHECKED SIZES below): metrale_nvfp4_grouped_ex carries them
 * and checks them. */

/* ---- metrale_<op>: our own CUDA kernels (device memory) ------------------------------------- */
METRALE_API metrale_status metrale_bf16_gemm_act_weight_t(const void* act, const void* weight,
    void* out, int32_t m, int32_t n, int32_t k, void* workspace, size_t workspace_size,
    void* stream);
METRALE_API metrale_status metrale_nvfp4_gemm_bf16_act_weight_t(const void* act,
    const void* weight_packed_t, const void* weight_scale_t, float weight_scale_2, void* out,
    int32_t m, int32_t n, int32_t k, void* workspace, size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_pack_bf16_weight_to_nvfp4_t(const void* weight_bf16,
    void* packed_t, void* scale_t, int32_t n, int32_t k, void* stream);
/* UNCHECKED SIZES: a_bf16 must hold expert_offsets[num_experts] rows of K, c_gate_bf16 and
 * c_up_bf16 as many rows of N; nothing here carries their sizes, so rows past them are read or
 * written out of bounds. metrale_nvfp4_grouped_ex (a_rows, groups->m_total) checks them. */
METRALE_API metrale_status metrale_nvfp4_grouped_gate_up(const void* a_bf16,
    const uint64_t* gate_packed_ptrs, const uint64_t* gate_scale_ptrs,
    const float* gate_scale2_vals, const uint64_t* up_packed_ptrs, const uint64_t* up_scale_ptrs,
    const float* up_scale2_vals, void* c_gate_bf16, void* c_up_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
/* UNCHECKED SIZES: every sorted_token_ids[i] must be a row of a_bf16 and c_gate_bf16/c_up_bf16
 * must hold expert_offsets[num_experts] rows; the token count does not cross this call (the CPU
 * backend checks ids only for sign and against INT32_MAX), so an id past a's rows reads out of
 * bounds. metrale_nvfp4_grouped_ex with a_rows > 0 checks every id. */
METRALE_API metrale_status metrale_nvfp4_grouped_gate_up_fused(const void* a_bf16,
    const int32_t* sorted_token_ids, const uint64_t* gate_packed_ptrs,
    const uint64_t* gate_sfb_ptrs, const float* gate_scale2_vals, const uint64_t* up_packed_ptrs,
    const uint64_t* up_sfb_ptrs, const float* up_scale2_vals, void* c_gate_bf16, void* c_up_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
/* UNCHECKED SIZES: a_bf16 and c_bf16 must hold expert_offsets[num_experts] rows (of K and N);
 * nothing here carries their sizes. metrale_nvfp4_grouped_ex (a_rows, groups->m_total) checks
 * them. */
METRALE_API metrale_status metrale_nvfp4_grouped_down(const void* a_bf16,
    const uint64_t* packed_ptrs, const uint64_t* sfb_ptrs, const float* scale2_vals, void* c_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_pack_weight_sfb(const void* scale_in, void* scale_out,
    int32_t n, int32_t k, int32_t src_n_major, void* stream);
METRALE_API metrale_status metrale_transpose_nvfp4_packed_kton(const void* src_packed_t,
    void* dst_packed, int32_t n, int32_t k, void* stream);
METRALE_API metrale_status metrale_transpose_nvfp4_packed_ntok(const void* src_packed,
    void* dst_packed_t, int32_t n, int32_t k, void* stream);

/* ---- metrale_cutlass_<op>: the CUTLASS reference arm (device memory; NOT_BUILT without it) -- */
METRALE_API metrale_status metrale_cutlass_bf16_gemm_act_weight_t(const void* act,
    const void* weight, void* out, int32_t m, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cutlass_nvfp4_gemm_bf16_act_weight_t(const void* act,
    const void* weight_packed_t, const void* weight_scale_t, float weight_scale_2, void* out,
    int32_t m, int32_t n, int32_t k, void* workspace, size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cutlass_pack_bf16_weight_to_nvfp4_t(const void* weight_bf16,
    void* packed_t, void* scale_t, int32_t n, int32_t k, void* stream);
/* UNCHECKED SIZES: as metrale_nvfp4_grouped_gate_up above. */
METRALE_API metrale_status metrale_cutlass_nvfp4_grouped_gate_up(const void* a_bf16,
    const uint64_t* gate_packed_ptrs, const uint64_t* gate_scale_ptrs,
    const float* gate_scale2_vals, const uint64_t* up_packed_ptrs, const uint64_t* up_scale_ptrs,
    const float* up_scale2_vals, void* c_gate_bf16, void* c_up_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
/* UNCHECKED SIZES: as metrale_nvfp4_grouped_gate_up_fused above. */
METRALE_API metrale_status metrale_cutlass_nvfp4_grouped_gate_up_fused(const void* a_bf16,
    const int32_t* sorted_token_ids, const uint64_t* gate_packed_ptrs,
    const uint64_t* gate_sfb_ptrs, const float* gate_scale2_vals, const uint64_t* up_packed_ptrs,
    const uint64_t* up_sfb_ptrs, const float* up_scale2_vals, void* c_gate_bf16, void* c_up_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
/* UNCHECKED SIZES: as metrale_nvfp4_grouped_down above. */
METRALE_API metrale_status metrale_cutlass_nvfp4_grouped_down(const void* a_bf16,
    const uint64_t* packed_ptrs, const uint64_t* sfb_ptrs, const float* scale2_vals, void* c_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cutlass_pack_weight_sfb(const void* scale_in, void* scale_out,
    int32_t n, int32_t k, int32_t src_n_major, void* stream);
METRALE_API metrale_status metrale_cutlass_transpose_nvfp4_packed_kton(const void* src_packed_t,
    void* dst_packed, int32_t n, int32_t k, void* stream);
METRALE_API metrale_status metrale_cutlass_transpose_nvfp4_packed_ntok(const void* src_packed,
    void* dst_packed_t, int32_t n, int32_t k, void* stream);

/* ---- metrale_cpu_<op>: the CPU oracle (host memory; stream, workspace ignored) -------------- */
METRALE_API metrale_status metrale_cpu_bf16_gemm_act_weight_t(const void* act, const void* weight,
    void* out, int32_t m, int32_t n, int32_t k, void* workspace, size_t workspace_size,
    void* stream);
METRALE_API metrale_status metrale_cpu_nvfp4_gemm_bf16_act_weight_t(const void* act,
    const void* weight_packed_t, const void* weight_scale_t, float weight_scale_2, void* out,
    int32_t m, int32_t n, int32_t k, void* workspace, size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cpu_pack_bf16_weight_to_nvfp4_t(const void* weight_bf16,
    void* packed_t, void* scale_t, int32_t n, int32_t k, void* stream);
/* UNCHECKED SIZES: as metrale_nvfp4_grouped_gate_up above. */
METRALE_API metrale_status metrale_cpu_nvfp4_grouped_gate_up(const void* a_bf16,
    const uint64_t* gate_packed_ptrs, const uint64_t* gate_scale_ptrs,
    const float* gate_scale2_vals, const uint64_t* up_packed_ptrs, const uint64_t* up_scale_ptrs,
    const float* up_scale2_vals, void* c_gate_bf16, void* c_up_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
/* UNCHECKED SIZES: as metrale_nvfp4_grouped_gate_up_fused above. */
METRALE_API metrale_status metrale_cpu_nvfp4_grouped_gate_up_fused(const void* a_bf16,
    const int32_t* sorted_token_ids, const uint64_t* gate_packed_ptrs,
    const uint64_t* gate_sfb_ptrs, const float* gate_scale2_vals, const uint64_t* up_packed_ptrs,
    const uint64_t* up_sfb_ptrs, const float* up_scale2_vals, void* c_gate_bf16, void* c_up_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
/* UNCHECKED SIZES: as metrale_nvfp4_grouped_down above. */
METRALE_API metrale_status metrale_cpu_nvfp4_grouped_down(const void* a_bf16,
    const uint64_t* packed_ptrs, const uint64_t* sfb_ptrs, const float* scale2_vals, void* c_bf16,
    const int32_t* expert_offsets_host, int32_t num_experts, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cpu_pack_weight_sfb(const void* scale_in, void* scale_out,
    int32_t n, int32_t k, int32_t src_n_major, void* stream);
METRALE_API metrale_status metrale_cpu_transpose_nvfp4_packed_kton(const void* src_packed_t,
    void* dst_packed, int32_t n, int32_t k, void* stream);
METRALE_API metrale_status metrale_cpu_transpose_nvfp4_packed_ntok(const void* src_packed,
    void* dst_packed_t, int32_t n, int32_t k, void* stream);

/* ---- the seeds' reference test hooks -------------------------------------------------------- */
/* The CUTLASS Hopper bf16 GEMM with one fixed tile shape (METRALE_STATUS_NOT_BUILT without
 * CUTLASS), and the cuBLASLt bf16 GEMM with the algo_index-th heuristic algorithm (algo_index < 0:
 * the first; *returned_count, if not NULL, receives how many heuristics there are). Device
 * pointers; for A/B comparisons of tile and algorithm choice. */
METRALE_API metrale_status metrale_cutlass_bf16_gemm_act_weight_t_128x256(const void* act,
    const void* weight, void* out, int32_t m, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cutlass_bf16_gemm_act_weight_t_256x128(const void* act,
    const void* weight, void* out, int32_t m, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cutlass_bf16_gemm_act_weight_t_64x128(const void* act,
    const void* weight, void* out, int32_t m, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cutlass_bf16_gemm_act_weight_t_128x64(const void* act,
    const void* weight, void* out, int32_t m, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cutlass_bf16_gemm_act_weight_t_64x64(const void* act,
    const void* weight, void* out, int32_t m, int32_t n, int32_t k, void* workspace,
    size_t workspace_size, void* stream);
METRALE_API metrale_status metrale_cublaslt_bf16_gemm_act_weight_t_algo(
    const void* act, const void* weight, void* out, int32_t m, int32_t n, int32_t k,
    void* workspace, size_t workspace_size, void* stream, int32_t algo_index,
    int32_t* returned_count);

/* ---- extended entry points ------------------------------------------------------------------ */

/* Versioned structs. struct_size, the first field, is sizeof() of the struct in the header the
 * caller was built with: set it with the METRALE_*_INIT initialisers below (a zeroed struct has
 * struct_size 0 and is refused, so no field is ever read from a struct the caller did not mean to
 * pass). The library reads only the first struct_size bytes; fields beyond them take the default
 * their comment names. */

/* Expert grouping. Expert e owns group rows [offsets[e], offsets[e+1]); offsets has
 * num_experts + 1 entries, non-negative and non-decreasing, offsets[num_experts] <= m_total.
 * When offsets_on_device is nonzero the array lives in device memory and is read only by the
 * kernels (nothing synchronises with the host: capturable in a CUDA graph); then
 * max_rows_per_expert (<= m_total) bounds every group and the launch is sized from it. */
typedef struct metrale_groups {
  size_t struct_size;          /* sizeof(metrale_groups); ABI 1: every field below */
  const int32_t* offsets;      /* num_experts + 1 entries, host or device memory */
  int32_t offsets_on_device;   /* nonzero: offsets is a device array, never read on the host */
  int32_t num_experts;         /* >= 0 */
  int32_t m_total;             /* rows of every output (and of a without a gather) */
  int32_t max_rows_per_expert; /* device offsets: a bound on every expert's rows; else unread */
} metrale_groups;
#define METRALE_GROUPS_INIT {sizeof(metrale_groups), NULL, 0, 0, 0, 0}

/* The calling thread's current CUDA device (cudaGetDevice), for metrale_exec.device. */
#define METRALE_DEVICE_CURRENT (-1)

/* Where and how an extended call runs. workspace NULL + size 0: the shared workspace. */
typedef struct metrale_exec {
  size_t struct_size;      /* sizeof(metrale_exec) */
  metrale_backend backend; /* METRALE_BACKEND_* */
  void* workspace;         /* caller's scratch (device memory for CUDA-side backends), or NULL */
  size_t workspace_size;   /* its bytes; 0 with NULL selects the shared workspace */
  void* stream;            /* cudaStream_t; NULL is the default stream; ignored by the CPU */
  int32_t device;          /* CUDA device the call runs on (made current for the call, restored
                            * after); METRALE_DEVICE_CURRENT keeps the thread's current device,
                            * and so does a struct_size that ends before this field */
} metrale_exec;
#define METRALE_EXEC_INIT {sizeof(metrale_exec), METRALE_BACKEND_AUTO, NULL, 0, NULL, -1}

/* Scale layout of the per-expert block scales. */
typedef int32_t metrale_scale_layout;
enum {
  METRALE_SCALE_K16_BY_N = 0, /* [K/16, N], pack_bf16_weight_to_nvfp4_t's layout */
  METRALE_SCALE_SFB = 1       /* 128x4 swizzled, pack_weight_sfb's layout */
};
/* Or'ed into a metrale_scale_layout value (metrale_nvfp4_grouped_ex's scale_layout argument and
 * metrale_moe_layer.scale_layout): the packed weights are in the layout metrale_prepack_nvfp4_ex
 * writes, e.g. METRALE_SCALE_SFB | METRALE_WEIGHTS_PREPACKED. The CPU and CUDA backends read it;
 * the reference backends (CUTLASS, cuBLASLt) refuse it (unsupported). Any other bit is refused. */
#define METRALE_WEIGHTS_PREPACKED 0x100

/* One projection's per-expert weights: host arrays of num_experts entries each. */
typedef struct metrale_expert_weights {
  const uint64_t* packed_ptrs; /* device pointers to [N, K/2] */
  const uint64_t* scale_ptrs;  /* device pointers to the block scales */
  const float* scale2_vals;    /* per-expert fp32 decode scale */
} metrale_expert_weights;

/* Full ModelOpt recipe: scale_2 = amax / 2688 is computed and written to *scale_2_out, which
 * lives where the other buffers live (device memory on CUDA, host memory on the CPU). scale_2_out
 * may be NULL: then scale_2 = 1, as the seed-shaped pack_bf16_weight_to_nvfp4_t. NaN or ±Inf
 * weights are refused (invalid_argument, naming the lowest index; with scale_2_out set nothing is
 * written then; on CUDA the call waits for the stream, so it cannot be graph-captured).
 * exec NULL: METRALE_EXEC_INIT. */
METRALE_API metrale_status metrale_pack_bf16_weight_to_nvfp4_ex(const void* weight_bf16,
                                                                void* packed_t, void* scale_t,
                                                                float* scale_2_out, int32_t n,
                                                                int32_t k,
                                                                const metrale_exec* exec);

/* The prepacked weight layout (docs/api.md, "Prepacked weights"): packed [N, K/2] bytes with the
 * codes of each 64-code group of a row in the order the CUDA kernels' fragments take them
 * (src/format/fragment_order.hpp) and the bits of each 16-bit half (four codes) moved to where
 * they decode in fewer operations (src/format/prepack.hpp has the table); under
 * METRALE_PREPACKED_LAYOUT=halves the bits alone. Same byte count; block scales, scale_2 and
 * the scale layouts are unchanged. An offline step: prepack each expert's weight once at load,
 * then pass METRALE_WEIGHTS_PREPACKED with the scale layout. metrale_unprepack_nvfp4_ex is the
 * inverse. N > 0, K > 0 a multiple of 16; the source and destination are the same buffer (in
 * place) or do not overlap. Backends: CPU and CUDA (the reference arms refuse it: unsupported).
 * exec NULL: METRALE_EXEC_INIT. */
METRALE_API metrale_status metrale_prepack_nvfp4_ex(const void* packed, void* prepacked, int32_t n,
                                                    int32_t k, const metrale_exec* exec);
METRALE_API metrale_status metrale_unprepack_nvfp4_ex(const void* prepacked, void* packed,
                                                      int32_t n, int32_t k,
                                                      const metrale_exec* exec);

/* c[M_total, N] = gather(a) · Wᵀ per expert, for one (down) or two (gate and up) projections.
 * a has a_rows rows; group row i reads row token_ids[i] (array of m_total entries in the
 * backend's memory, or identity when NULL). gate_up: proj_count = 2, out[0] = gate, out[1] = up;
 * each out[p] holds m_total rows of N. With host ids on the CPU backend every id is checked
 * against a_rows (a_rows = 0: unknown, as in the seeds' fused call: then only for sign).
 * scale_layout: METRALE_SCALE_*, or'ed with METRALE_WEIGHTS_PREPACKED for prepacked weights. */
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

/* ---- the MoE layer ----------------------------------------------------------------------------
 * metrale_moe_forward: one MoE layer, routing to combine. For each token t and each of its top_k
 * slots j (expert e = topk_ids[t][j], weight w = topk_weights[t][j]), with l the local expert
 * (expert_map[e], or e without a map; -1: the expert lives elsewhere and the slot adds nothing):
 *   g = bf16(gate_l · x_t (+ gate_bias_l)),  u = bf16(up_l · x_t (+ up_bias_l))      [I]
 *   a = bf16(act(g, u))                                                           [I]
 *   d = bf16(down_l · a (+ down_bias_l))                                          [H]
 *   out[t] = bf16(Σ_j w · d  (fp32, slots in order j = 0..k-1)  (+ residual[t]))
 * docs/api.md ("The MoE layer") gives the routing functions' formulas and every rounding point;
 * the layer equals metrale's own grouped calls composed with that glue, bit for bit.
 * Backends: CPU and CUDA (the reference GEMM backends refuse it). On CUDA nothing waits for the
 * host (graph-capturable); a token with non-finite logits or weights, or an id outside [0, E),
 * which only the device sees, gets a NaN output row (docs/api.md). */

typedef int32_t metrale_moe_routing;
enum {
  METRALE_MOE_ROUTING_SOFTMAX_TOPK = 0,         /* Qwen3, Mixtral, gpt-oss (router_logits) */
  METRALE_MOE_ROUTING_SIGMOID_GROUPED_TOPK = 1, /* DeepSeek-V3 (router_logits) */
  METRALE_MOE_ROUTING_PRECOMPUTED = 2           /* the caller's topk_ids and topk_weights */
};

typedef int32_t metrale_moe_activation;
enum {
  METRALE_MOE_ACT_SILU = 0,          /* silu(g) · u */
  METRALE_MOE_ACT_SWIGLU_CLAMPED = 1 /* gpt-oss: g' = min(g, limit), u' = clamp(u, ±limit),
                                      * g' · sigmoid(alpha · g') · (u' + 1) */
};

typedef int32_t metrale_dtype;
enum { METRALE_DTYPE_F32 = 0, METRALE_DTYPE_BF16 = 1 };

/* The layer: shapes, weights, routing. Per-expert tables are host arrays of num_local_experts
 * entries (device pointers on CUDA-side backends, host addresses on the CPU), as in
 * metrale_nvfp4_grouped_ex. Every local expert the expert map can reach (all of them without a
 * map) needs its gate, up and down weights, scales and scale_2 (and biases, when given). */
typedef struct metrale_moe_layer {
  size_t struct_size;           /* sizeof(metrale_moe_layer); ABI 1: every field below */
  int32_t num_experts;          /* E >= 1: router_logits columns, the range of expert ids */
  int32_t num_local_experts;    /* L: entries of every per-expert table; = E without expert_map */
  int32_t hidden_size;          /* H > 0, a multiple of 16: K of gate/up, N of down */
  int32_t intermediate_size;    /* I > 0, a multiple of 16: N of gate/up, K of down */
  int32_t top_k;                /* k in [1, E] */
  metrale_scale_layout scale_layout; /* of every block scale below; | METRALE_WEIGHTS_PREPACKED:
                                      * gate, up and down are prepacked */
  metrale_expert_weights gate;  /* [I, H/2] packed each */
  metrale_expert_weights up;    /* [I, H/2] packed each */
  metrale_expert_weights down;  /* [H, I/2] packed each */
  const uint64_t* gate_bias_ptrs; /* optional (NULL: none): bf16 [I] per local expert */
  const uint64_t* up_bias_ptrs;   /* optional: bf16 [I] per local expert */
  const uint64_t* down_bias_ptrs; /* optional: bf16 [H] per local expert */
  const int32_t* expert_map;    /* optional host array of E entries: local id in [0, L), or -1
                                 * (remote: that slot contributes zero) */
  metrale_moe_activation activation;
  float swiglu_alpha;           /* METRALE_MOE_ACT_SWIGLU_CLAMPED: 1.702 in gpt-oss */
  float swiglu_limit;           /* METRALE_MOE_ACT_SWIGLU_CLAMPED: 7.0 in gpt-oss; > 0 */
  metrale_moe_routing routing;
  int32_t renormalize;          /* from logits: nonzero divides the k weights by their sum */
  int32_t n_group;              /* SIGMOID_GROUPED_TOPK: E/n_group experts a group; else 1 */
  int32_t topk_group;           /* SIGMOID_GROUPED_TOPK: groups kept, in [1, n_group]; else 1 */
  float routed_scaling_factor;  /* from logits: multiplies every final weight; > 0 (1: none) */
  const float* correction_bias; /* SIGMOID_GROUPED_TOPK: optional fp32 [E] added to the scores
                                 * for the choice only (backend memory); else NULL */
} metrale_moe_layer;
#define METRALE_MOE_LAYER_INIT                                                                \
  {sizeof(metrale_moe_layer), 0, 0, 0, 0, 0, METRALE_SCALE_SFB, {NULL, NULL, NULL},          \
   {NULL, NULL, NULL}, {NULL, NULL, NULL}, NULL, NULL, NULL, NULL, METRALE_MOE_ACT_SILU,     \
   1.702f, 7.0f, METRALE_MOE_ROUTING_SOFTMAX_TOPK, 1, 1, 1, 1.0f, NULL}

/* One call's tokens, in the backend's memory. out may be the same buffer as residual (an
 * in-place residual add); no other overlap is allowed. */
typedef struct metrale_moe_tokens {
  size_t struct_size;          /* sizeof(metrale_moe_tokens); ABI 1: every field below */
  int32_t num_tokens;          /* T >= 0 (0: nothing is read or written) */
  const void* hidden;          /* [T, H] bf16 */
  const void* router_logits;   /* [T, E] in logits_dtype: routing from logits; else NULL */
  metrale_dtype logits_dtype;  /* METRALE_DTYPE_F32 or METRALE_DTYPE_BF16 */
  const int32_t* topk_ids;     /* [T, k] in [0, E): METRALE_MOE_ROUTING_PRECOMPUTED; else NULL */
  const float* topk_weights;   /* [T, k] finite: METRALE_MOE_ROUTING_PRECOMPUTED; else NULL */
  const void* residual;        /* optional [T, H] bf16, added before the final rounding */
  void* out;                   /* [T, H] bf16 */
  int32_t* topk_ids_out;       /* optional [T, k]: the experts chosen (global ids) */
  float* topk_weights_out;     /* optional [T, k]: their final weights */
} metrale_moe_tokens;
#define METRALE_MOE_TOKENS_INIT \
  {sizeof(metrale_moe_tokens), 0, NULL, NULL, METRALE_DTYPE_F32, NULL, NULL, NULL, NULL, NULL, NULL}

/* exec NULL: METRALE_EXEC_INIT (the automatic backend: CUDA, device buffers). Every argument is
 * validated before any buffer is read. */
METRALE_API metrale_status metrale_moe_forward(const metrale_moe_layer* layer,
                                               const metrale_moe_tokens* tokens,
                                               const metrale_exec* exec);
/* Bytes of workspace metrale_moe_forward needs for num_tokens tokens (0 on the CPU backend;
 * on CUDA about num_tokens·top_k·(2·I + H)·2 plus the grouped GEMMs' own). On CUDA a layer past
 * the CUDA layer's limits (experts, H or I not multiples of 32) is refused as the call would. */
METRALE_API metrale_status metrale_moe_workspace_size(metrale_backend backend,
                                                      const metrale_moe_layer* layer,
                                                      int32_t num_tokens, size_t* bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* METRALE_METRALE_H */
