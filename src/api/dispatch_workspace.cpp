// The shared-workspace query (dispatch.hpp): the out pointers, the backend, its device, then the
// buffer. Without the device check a machine with no usable GPU answered cuda_error with the
// runtime's allocation failure, while every other call said unsupported: one story now.
#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "core/validate.hpp"

namespace metrale::api {

void query_shared_workspace(std::string_view who, Backend backend, void** workspace,
                            std::size_t* workspace_size) {
  core::require_not_null(who, "workspace", workspace);
  core::require_not_null(who, "workspace_size", workspace_size);
  const Backend selected = select_backend(who, backend);
  if (selected != Backend::cpu) require_device(who, selected);
  get_shared_workspace(who, selected, workspace, workspace_size);
}

}  // namespace metrale::api
