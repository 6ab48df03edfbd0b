// One operation (dispatch.hpp's run) on the CUDA device its Exec names: the device is made
// current for the call and restored after (core::DeviceScope). `device_name` is how the caller
// spells the field: "exec->device" in C, "exec.device" in C++.
#pragma once

#include <string_view>

#include "api/dispatch.hpp"
#include "core/device.hpp"
#include "metrale/metrale.hpp"

namespace metrale::api {

template <class Args>
void run_on_device(std::string_view who, std::string_view device_name, const Args& args,
                   const Exec& exec) {
  const core::DeviceScope scope(who, device_name, exec.device, exec.backend == Backend::cpu);
  run(who, args, exec);
}

}  // namespace metrale::api
