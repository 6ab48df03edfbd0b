// The C++ API of include/metrale/metrale.hpp: each operation validates, selects a backend and
// runs (dispatch.hpp) inside the exception boundary (guard.hpp), so it returns a Result and never
// throws. Messages name the operation as the seeds do.
#include "api/dispatch.hpp"
#include "api/guard.hpp"
#include "api/run_on_device.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"

namespace metrale {
namespace {

template <class Args>
Result guarded_run(std::string_view who, const Args& args, const Exec& exec) {
  return api::guarded(who, [&] { api::run_on_device(who, "exec.device", args, exec); });
}

}  // namespace

Result bf16_gemm_act_weight_t(const DenseGemm& args, const Exec& exec) {
  return guarded_run("bf16_gemm_act_weight_t", args, exec);
}

Result nvfp4_gemm_bf16_act_weight_t(const Nvfp4Gemm& args, const Exec& exec) {
  return guarded_run("nvfp4_gemm_bf16_act_weight_t", args, exec);
}

Result pack_bf16_weight_to_nvfp4_t(const PackNvfp4& args, const Exec& exec) {
  return guarded_run("pack_bf16_weight_to_nvfp4_t", args, exec);
}

Result pack_weight_sfb(const SwizzleScales& args, const Exec& exec) {
  return guarded_run("pack_weight_sfb", args, exec);
}

Result transpose_nvfp4_packed(const TransposePacked& args, const Exec& exec) {
  return guarded_run(args.dir == TransposeDir::n_to_k ? "transpose_nvfp4_packed_ntok"
                                                      : "transpose_nvfp4_packed_kton",
                     args, exec);
}

Result prepack_nvfp4(const PrepackNvfp4& args, const Exec& exec) {
  return guarded_run("prepack_nvfp4", args, exec);
}

Result nvfp4_grouped(const GroupedNvfp4& args, const Exec& exec) {
  return guarded_run(api::grouped_op_name(args), args, exec);
}

Result moe_forward(const MoeLayer& layer, const MoeTokens& tokens, const Exec& exec) {
  return guarded_run("moe_forward", MoeForward{layer, tokens}, exec);
}

Result moe_workspace_size(Backend backend, const MoeLayer& layer, std::int32_t num_tokens,
                          std::size_t* bytes) {
  constexpr std::string_view kWho = "moe_workspace_size";
  return api::guarded(
      kWho, [&] { api::moe_workspace_size(kWho, backend, layer, num_tokens, bytes); });
}

Result gemm_workspace_size(Backend backend, std::int32_t m, std::int32_t n, std::int32_t k,
                           std::size_t* bytes) {
  constexpr std::string_view kWho = "gemm_workspace_size";
  return api::guarded(kWho, [&] { api::gemm_workspace_size(kWho, backend, m, n, k, bytes); });
}

Result nvfp4_grouped_workspace_size(Backend backend, const ExpertGroups& groups, std::int32_t n,
                                    std::int32_t k, std::int32_t proj_count, std::size_t* bytes) {
  constexpr std::string_view kWho = "nvfp4_grouped_workspace_size";
  return api::guarded(
      kWho, [&] { api::grouped_workspace_size(kWho, backend, groups, n, k, proj_count, bytes); });
}

Result shared_workspace(Backend backend, void** workspace, std::size_t* size) {
  constexpr std::string_view kWho = "shared_workspace";
  return api::guarded(kWho, [&] { api::query_shared_workspace(kWho, backend, workspace, size); });
}

}  // namespace metrale
