// The C++ API of include/metrale/metrale.hpp: each operation validates, selects a backend and
// runs (dispatch.hpp) inside the exception boundary (guard.hpp), so it returns a Result and never
// throws. Messages name the operation as the seeds do.
#include "api/dispatch.hpp"
#include "api/guard.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"

namespace metrale {

Result bf16_gemm_act_weight_t(const DenseGemm& args, const Exec& exec) {
  constexpr std::string_view kWho = "bf16_gemm_act_weight_t";
  return api::guarded(kWho, [&] { api::run(kWho, args, exec); });
}

Result nvfp4_gemm_bf16_act_weight_t(const Nvfp4Gemm& args, const Exec& exec) {
  constexpr std::string_view kWho = "nvfp4_gemm_bf16_act_weight_t";
  return api::guarded(kWho, [&] { api::run(kWho, args, exec); });
}

Result pack_bf16_weight_to_nvfp4_t(const PackNvfp4& args, const Exec& exec) {
  constexpr std::string_view kWho = "pack_bf16_weight_to_nvfp4_t";
  return api::guarded(kWho, [&] { api::run(kWho, args, exec); });
}

Result pack_weight_sfb(const SwizzleScales& args, const Exec& exec) {
  constexpr std::string_view kWho = "pack_weight_sfb";
  return api::guarded(kWho, [&] { api::run(kWho, args, exec); });
}

Result transpose_nvfp4_packed(const TransposePacked& args, const Exec& exec) {
  const std::string_view who = args.dir == TransposeDir::n_to_k ? "transpose_nvfp4_packed_ntok"
                                                                : "transpose_nvfp4_packed_kton";
  return api::guarded(who, [&] { api::run(who, args, exec); });
}

Result nvfp4_grouped(const GroupedNvfp4& args, const Exec& exec) {
  const std::string_view who = api::grouped_op_name(args);
  return api::guarded(who, [&] { api::run(who, args, exec); });
}

Result gemm_workspace_size(Backend backend, std::int32_t m, std::int32_t n, std::int32_t k,
                           std::size_t* bytes) {
  constexpr std::string_view kWho = "gemm_workspace_size";
  return api::guarded(kWho, [&] {
    core::require_not_null(kWho, "bytes", bytes);
    *bytes = api::gemm_workspace_size(kWho, backend, m, n, k);
  });
}

Result nvfp4_grouped_workspace_size(Backend backend, const ExpertGroups& groups, std::int32_t n,
                                    std::int32_t k, std::int32_t proj_count, std::size_t* bytes) {
  constexpr std::string_view kWho = "nvfp4_grouped_workspace_size";
  return api::guarded(kWho, [&] {
    core::require_not_null(kWho, "bytes", bytes);
    *bytes = api::grouped_workspace_size(kWho, backend, groups, n, k, proj_count);
  });
}

Result shared_workspace(Backend backend, void** workspace, std::size_t* size) {
  constexpr std::string_view kWho = "shared_workspace";
  return api::guarded(kWho, [&] {
    core::require_not_null(kWho, "workspace", workspace);
    core::require_not_null(kWho, "workspace_size", size);
    const core::Buffer buffer = api::shared_workspace_for(kWho, api::select_backend(kWho, backend));
    *workspace = buffer.ptr;
    *size = buffer.size;
  });
}

}  // namespace metrale
