// The C ABI beyond the seeds' parameter lists: library information, the shared workspace and the
// size queries, the extended (_ex) entry points that carry M_total, device offsets, the gathered
// row count, a backend and the prepacked weight layout, the layout's conversion both ways
// (metrale_prepack_nvfp4_ex, metrale_unprepack_nvfp4_ex), and the seeds' reference test hooks
// (fixed CUTLASS tile, cuBLASLt algorithm index).
#include "api/c_abi_common.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/last_error.hpp"
#include "core/status.hpp"
#include "core/validate.hpp"

namespace api = metrale::api;
namespace core = metrale::core;
using metrale::Backend;

namespace {

metrale_status cutlass_tile(const char* who, api::CutlassTile tile, const void* act,
                            const void* weight, void* out, int32_t m, int32_t n, int32_t k,
                            void* workspace, size_t workspace_size, void* stream) {
  return api::c_call(who, [&] {
    api::run_cutlass_tile(who, api::dense_gemm(act, weight, out, m, n, k),
                          api::make_exec(Backend::cutlass, workspace, workspace_size, stream),
                          tile);
  });
}

// Both directions of the prepacked layout's conversion: [N, K/2] bytes, src == dst in place.
metrale_status prepack(const char* who, metrale::PrepackDir dir, const void* src, void* dst,
                       int32_t n, int32_t k, const metrale_exec* exec) {
  const metrale::PrepackNvfp4 args{static_cast<const std::uint8_t*>(src),
                                   static_cast<std::uint8_t*>(dst), n, k, dir};
  return api::c_call(
      who, [&] { api::run_on_device(who, "exec->device", args, api::make_exec(who, exec)); });
}

}  // namespace

extern "C" {

const char* metrale_last_error(void) {
  return core::last_error();
}

const char* metrale_version(void) {
  return metrale::version();
}

int32_t metrale_abi_version(void) {
  return METRALE_ABI_VERSION;
}

const char* metrale_status_name(metrale_status status) {
  return core::status_name(status);
}

int32_t metrale_backend_built(metrale_backend backend) {
  const auto value = static_cast<int32_t>(backend);
  return core::is_backend(value) && metrale::backend_built(static_cast<Backend>(value)) ? 1 : 0;
}

metrale_status metrale_workspace_get(metrale_backend backend, void** workspace,
                                     size_t* workspace_size) {
  constexpr const char* kWho = "metrale_workspace_get";
  return api::c_call(kWho, [&] {
    api::query_shared_workspace(kWho, static_cast<Backend>(backend), workspace, workspace_size);
  });
}

metrale_status metrale_pack_bf16_weight_to_nvfp4_ex(const void* weight_bf16, void* packed_t,
                                                    void* scale_t, float* scale_2_out, int32_t n,
                                                    int32_t k, const metrale_exec* exec) {
  constexpr const char* kWho = "metrale_pack_bf16_weight_to_nvfp4_ex";
  const metrale::PackNvfp4 args{static_cast<const metrale::bf16_bits*>(weight_bf16),
                                static_cast<std::uint8_t*>(packed_t),
                                static_cast<std::uint8_t*>(scale_t),
                                scale_2_out,
                                n,
                                k};
  return api::c_call(kWho, [&] {
    api::run_on_device(kWho, "exec->device", args, api::make_exec(kWho, exec));
  });
}

metrale_status metrale_nvfp4_grouped_ex(const void* a_bf16, int32_t a_rows,
                                        const int32_t* token_ids,
                                        const metrale_expert_weights* proj, void* const* out,
                                        int32_t proj_count, metrale_scale_layout scale_layout,
                                        const metrale_groups* groups, int32_t n, int32_t k,
                                        const metrale_exec* exec) {
  constexpr const char* kWho = "metrale_nvfp4_grouped_ex";
  return api::c_call(kWho, [&] {
    const metrale::ExpertGroups read = api::read_groups(kWho, groups);
    const metrale::Exec where = api::make_exec(kWho, exec);
    core::require_not_null(kWho, "proj", proj);
    core::require_not_null(kWho, "out", out);
    api::require_proj_count(kWho, proj_count);  // before proj[] and out[] are read
    metrale::GroupedNvfp4 args{};
    args.a = static_cast<const metrale::bf16_bits*>(a_bf16);
    args.a_rows = a_rows;
    args.token_ids = token_ids;
    args.proj_count = proj_count;
    for (int p = 0; p < proj_count; ++p) {
      args.proj[p] = {proj[p].packed_ptrs, proj[p].scale_ptrs, proj[p].scale2_vals};
      args.out[p] = static_cast<metrale::bf16_bits*>(out[p]);
    }
    const api::LayoutFlags layouts = api::read_layout_flags(kWho, "scale_layout", scale_layout);
    args.scale_layout = layouts.scale;
    args.weight_layout = layouts.weights;
    args.groups = read;
    args.n = n;
    args.k = k;
    api::run_on_device(kWho, "exec->device", args, where);
  });
}

metrale_status metrale_prepack_nvfp4_ex(const void* packed, void* prepacked, int32_t n, int32_t k,
                                        const metrale_exec* exec) {
  return prepack("metrale_prepack_nvfp4_ex", metrale::PrepackDir::to_prepacked, packed, prepacked,
                 n, k, exec);
}

metrale_status metrale_unprepack_nvfp4_ex(const void* prepacked, void* packed, int32_t n, int32_t k,
                                          const metrale_exec* exec) {
  return prepack("metrale_unprepack_nvfp4_ex", metrale::PrepackDir::to_packed, prepacked, packed, n,
                 k, exec);
}

metrale_status metrale_nvfp4_grouped_workspace_size(metrale_backend backend,
                                                    const metrale_groups* groups, int32_t n,
                                                    int32_t k, int32_t proj_count, size_t* bytes) {
  constexpr const char* kWho = "metrale_nvfp4_grouped_workspace_size";
  return api::c_call(kWho, [&] {
    api::grouped_workspace_size(kWho, static_cast<Backend>(backend), api::read_groups(kWho, groups),
                                n, k, proj_count, bytes);
  });
}

metrale_status metrale_gemm_workspace_size(metrale_backend backend, int32_t m, int32_t n, int32_t k,
                                           size_t* bytes) {
  constexpr const char* kWho = "metrale_gemm_workspace_size";
  return api::c_call(
      kWho, [&] { api::gemm_workspace_size(kWho, static_cast<Backend>(backend), m, n, k, bytes); });
}

#define METRALE_DEFINE_TILE(suffix, tile)                                                          \
  metrale_status metrale_cutlass_bf16_gemm_act_weight_t_##suffix(                                  \
      const void* act, const void* weight, void* out, int32_t m, int32_t n, int32_t k,             \
      void* workspace, size_t workspace_size, void* stream) {                                      \
    return cutlass_tile("metrale_cutlass_bf16_gemm_act_weight_t_" #suffix, tile, act, weight, out, \
                        m, n, k, workspace, workspace_size, stream);                               \
  }
METRALE_DEFINE_TILE(128x256, api::CutlassTile::m128n256)
METRALE_DEFINE_TILE(256x128, api::CutlassTile::m256n128)
METRALE_DEFINE_TILE(64x128, api::CutlassTile::m64n128)
METRALE_DEFINE_TILE(128x64, api::CutlassTile::m128n64)
METRALE_DEFINE_TILE(64x64, api::CutlassTile::m64n64)

metrale_status metrale_cublaslt_bf16_gemm_act_weight_t_algo(const void* act, const void* weight,
                                                            void* out, int32_t m, int32_t n,
                                                            int32_t k, void* workspace,
                                                            size_t workspace_size, void* stream,
                                                            int32_t algo_index,
                                                            int32_t* returned_count) {
  constexpr const char* kWho = "metrale_cublaslt_bf16_gemm_act_weight_t_algo";
  return api::c_call(kWho, [&] {
    int count = 0;
    api::run_cublaslt_algo(kWho, api::dense_gemm(act, weight, out, m, n, k),
                           api::make_exec(Backend::cublaslt, workspace, workspace_size, stream),
                           algo_index, returned_count != nullptr ? &count : nullptr);
    if (returned_count != nullptr) *returned_count = count;
  });
}

}  // extern "C"
