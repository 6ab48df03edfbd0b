// Device queries the API layer needs before handing work to a CUDA-side backend.
#pragma once

#include <string>

namespace metrale::core {

// True when this build has CUDA and at least one device is visible; otherwise `why` (if given)
// says which is missing, with the CUDA error name.
bool cuda_device_present(std::string* why);

}  // namespace metrale::core
