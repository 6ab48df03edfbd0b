// The seeds' entry points, with their exact parameter lists, for the three families of
// metrale.h: metrale_<op> (Backend::automatic: our CUDA kernels, or CUTLASS when
// METRALE_CUTLASS_GEMM=1), metrale_cutlass_<op> and metrale_cpu_<op> (host memory). Each builds
// the C++ API's arguments and runs inside the status + last-error boundary. Messages name the C
// function that was called.
#include "api/c_abi_common.hpp"
#include "api/dispatch.hpp"

namespace metrale::api {
namespace {

using u8 = std::uint8_t;

metrale_status bf16_gemm(const char* who, Backend backend, const void* act, const void* weight,
                         void* out, int32_t m, int32_t n, int32_t k, void* workspace,
                         size_t workspace_size, void* stream) {
  return c_run(who, dense_gemm(act, weight, out, m, n, k),
               make_exec(backend, workspace, workspace_size, stream));
}

metrale_status nvfp4_gemm(const char* who, Backend backend, const void* act, const void* packed,
                          const void* scale, float scale_2, void* out, int32_t m, int32_t n,
                          int32_t k, void* workspace, size_t workspace_size, void* stream) {
  const Nvfp4Gemm args{static_cast<const bf16_bits*>(act),
                       static_cast<const u8*>(packed),
                       static_cast<const u8*>(scale),
                       scale_2,
                       ScaleLayout::k16_by_n,
                       static_cast<bf16_bits*>(out),
                       m,
                       n,
                       k};
  return c_run(who, args, make_exec(backend, workspace, workspace_size, stream));
}

// The seed form fixes scale_2 = 1 (no output for it); _ex runs the full recipe.
metrale_status pack(const char* who, Backend backend, const void* weight, void* packed, void* scale,
                    int32_t n, int32_t k, void* stream) {
  const PackNvfp4 args{static_cast<const bf16_bits*>(weight),
                       static_cast<u8*>(packed),
                       static_cast<u8*>(scale),
                       nullptr,
                       n,
                       k};
  return c_run(who, args, make_exec(backend, nullptr, 0, stream));
}

metrale_status swizzle(const char* who, Backend backend, const void* scale_in, void* scale_out,
                       int32_t n, int32_t k, int32_t src_n_major, void* stream) {
  return c_call(who, [&] {
    METRALE_REQUIRE(src_n_major == 0 || src_n_major == 1,
                    "{}: src_n_major = {}, expected 1 (scale_in is [K/16, N]) or 0 ([N, K/16])",
                    who, src_n_major);
    const SwizzleScales args{static_cast<const u8*>(scale_in), static_cast<u8*>(scale_out), n, k,
                             src_n_major == 1};
    run(who, args, make_exec(backend, nullptr, 0, stream));
  });
}

metrale_status transpose(const char* who, Backend backend, TransposeDir dir, const void* src,
                         void* dst, int32_t n, int32_t k, void* stream) {
  const TransposePacked args{static_cast<const u8*>(src), static_cast<u8*>(dst), n, k, dir};
  return c_run(who, args, make_exec(backend, nullptr, 0, stream));
}

metrale_status grouped(const char* who, Backend backend, const SeedGrouped& call, void* workspace,
                       size_t workspace_size, void* stream) {
  return c_call(who, [&] {
    run_seed_grouped(who, call, make_exec(backend, workspace, workspace_size, stream));
  });
}

ExpertWeights weights(const uint64_t* packed, const uint64_t* scale, const float* scale2) {
  return ExpertWeights{packed, scale, scale2};
}

// nvfp4_grouped_gate_up ([K/16, N] scales, a in group order) and its fused form (SFB scales, a
// gathered through sorted_token_ids): two projections.
metrale_status gate_up(const char* who, Backend backend, ScaleLayout layout, const void* a,
                       const int32_t* token_ids, const ExpertWeights& gate, const ExpertWeights& up,
                       void* c_gate, void* c_up, const int32_t* offsets, int32_t num_experts,
                       int32_t n, int32_t k, void* workspace, size_t workspace_size, void* stream) {
  const SeedGrouped call{.a = a,
                         .token_ids = token_ids,
                         .proj = {gate, up},
                         .c = {c_gate, c_up},
                         .proj_count = 2,
                         .layout = layout,
                         .offsets = offsets,
                         .num_experts = num_experts,
                         .n = n,
                         .k = k};
  return grouped(who, backend, call, workspace, workspace_size, stream);
}

// nvfp4_grouped_down: one projection, SFB scales, a in group order.
metrale_status down(const char* who, Backend backend, const void* a, const ExpertWeights& weight,
                    void* c, const int32_t* offsets, int32_t num_experts, int32_t n, int32_t k,
                    void* workspace, size_t workspace_size, void* stream) {
  const SeedGrouped call{.a = a,
                         .token_ids = nullptr,
                         .proj = {weight, {}},
                         .c = {c, nullptr},
                         .proj_count = 1,
                         .layout = ScaleLayout::sfb,
                         .offsets = offsets,
                         .num_experts = num_experts,
                         .n = n,
                         .k = k};
  return grouped(who, backend, call, workspace, workspace_size, stream);
}

}  // namespace
}  // namespace metrale::api

using metrale::Backend;
using metrale::ScaleLayout;
using metrale::TransposeDir;
namespace api = metrale::api;

// One family of the seeds' entry points, all running on `backend`.
#define METRALE_DEFINE_FAMILY(prefix, backend)                                                     \
  metrale_status prefix##bf16_gemm_act_weight_t(const void* act, const void* weight, void* out,    \
                                                int32_t m, int32_t n, int32_t k, void* workspace,  \
                                                size_t workspace_size, void* stream) {             \
    return api::bf16_gemm(#prefix "bf16_gemm_act_weight_t", backend, act, weight, out, m, n, k,    \
                          workspace, workspace_size, stream);                                      \
  }                                                                                                \
  metrale_status prefix##nvfp4_gemm_bf16_act_weight_t(                                             \
      const void* act, const void* weight_packed_t, const void* weight_scale_t,                    \
      float weight_scale_2, void* out, int32_t m, int32_t n, int32_t k, void* workspace,           \
      size_t workspace_size, void* stream) {                                                       \
    return api::nvfp4_gemm(#prefix "nvfp4_gemm_bf16_act_weight_t", backend, act, weight_packed_t,  \
                           weight_scale_t, weight_scale_2, out, m, n, k, workspace,                \
                           workspace_size, stream);                                                \
  }                                                                                                \
  metrale_status prefix##pack_bf16_weight_to_nvfp4_t(const void* weight_bf16, void* packed_t,      \
                                                     void* scale_t, int32_t n, int32_t k,          \
                                                     void* stream) {                               \
    return api::pack(#prefix "pack_bf16_weight_to_nvfp4_t", backend, weight_bf16, packed_t,        \
                     scale_t, n, k, stream);                                                       \
  }                                                                                                \
  metrale_status prefix##nvfp4_grouped_gate_up(                                                    \
      const void* a_bf16, const uint64_t* gate_packed_ptrs, const uint64_t* gate_scale_ptrs,       \
      const float* gate_scale2_vals, const uint64_t* up_packed_ptrs,                               \
      const uint64_t* up_scale_ptrs, const float* up_scale2_vals, void* c_gate_bf16,               \
      void* c_up_bf16, const int32_t* expert_offsets_host, int32_t num_experts, int32_t n,         \
      int32_t k, void* workspace, size_t workspace_size, void* stream) {                           \
    return api::gate_up(                                                                           \
        #prefix "nvfp4_grouped_gate_up", backend, ScaleLayout::k16_by_n, a_bf16, nullptr,          \
        api::weights(gate_packed_ptrs, gate_scale_ptrs, gate_scale2_vals),                         \
        api::weights(up_packed_ptrs, up_scale_ptrs, up_scale2_vals), c_gate_bf16, c_up_bf16,       \
        expert_offsets_host, num_experts, n, k, workspace, workspace_size, stream);                \
  }                                                                                                \
  metrale_status prefix##nvfp4_grouped_gate_up_fused(                                              \
      const void* a_bf16, const int32_t* sorted_token_ids, const uint64_t* gate_packed_ptrs,       \
      const uint64_t* gate_sfb_ptrs, const float* gate_scale2_vals,                                \
      const uint64_t* up_packed_ptrs, const uint64_t* up_sfb_ptrs, const float* up_scale2_vals,    \
      void* c_gate_bf16, void* c_up_bf16, const int32_t* expert_offsets_host, int32_t num_experts, \
      int32_t n, int32_t k, void* workspace, size_t workspace_size, void* stream) {                \
    return api::gate_up(                                                                           \
        #prefix "nvfp4_grouped_gate_up_fused", backend, ScaleLayout::sfb, a_bf16,                  \
        sorted_token_ids, api::weights(gate_packed_ptrs, gate_sfb_ptrs, gate_scale2_vals),         \
        api::weights(up_packed_ptrs, up_sfb_ptrs, up_scale2_vals), c_gate_bf16, c_up_bf16,         \
        expert_offsets_host, num_experts, n, k, workspace, workspace_size, stream);                \
  }                                                                                                \
  metrale_status prefix##nvfp4_grouped_down(                                                       \
      const void* a_bf16, const uint64_t* packed_ptrs, const uint64_t* sfb_ptrs,                   \
      const float* scale2_vals, void* c_bf16, const int32_t* expert_offsets_host,                  \
      int32_t num_experts, int32_t n, int32_t k, void* workspace, size_t workspace_size,           \
      void* stream) {                                                                              \
    return api::down(#prefix "nvfp4_grouped_down", backend, a_bf16,                                \
                     api::weights(packed_ptrs, sfb_ptrs, scale2_vals), c_bf16,                     \
                     expert_offsets_host, num_experts, n, k, workspace, workspace_size, stream);   \
  }                                                                                                \
  metrale_status prefix##pack_weight_sfb(const void* scale_in, void* scale_out, int32_t n,         \
                                         int32_t k, int32_t src_n_major, void* stream) {           \
    return api::swizzle(#prefix "pack_weight_sfb", backend, scale_in, scale_out, n, k,             \
                        src_n_major, stream);                                                      \
  }                                                                                                \
  metrale_status prefix##transpose_nvfp4_packed_kton(const void* src_packed_t, void* dst_packed,   \
                                                     int32_t n, int32_t k, void* stream) {         \
    return api::transpose(#prefix "transpose_nvfp4_packed_kton", backend, TransposeDir::k_to_n,    \
                          src_packed_t, dst_packed, n, k, stream);                                 \
  }                                                                                                \
  metrale_status prefix##transpose_nvfp4_packed_ntok(const void* src_packed, void* dst_packed_t,   \
                                                     int32_t n, int32_t k, void* stream) {         \
    return api::transpose(#prefix "transpose_nvfp4_packed_ntok", backend, TransposeDir::n_to_k,    \
                          src_packed, dst_packed_t, n, k, stream);                                 \
  }

extern "C" {
METRALE_DEFINE_FAMILY(metrale_, Backend::automatic)
METRALE_DEFINE_FAMILY(metrale_cutlass_, Backend::cutlass)
METRALE_DEFINE_FAMILY(metrale_cpu_, Backend::cpu)
}
