// Dispatch of the packing operations: the NVFP4 quantizer, the SFB swizzle of block scales, the
// packed [N, K/2] <-> [K/2, N] transposes and the prepacked layout's conversion. cuBLASLt has
// none of them; the CUTLASS reference has no prepacking (it reads the packed layout only).
#include "api/backends.hpp"
#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/config.hpp"
#include "core/error.hpp"

namespace metrale::api {

namespace {

[[noreturn]] void not_implemented(std::string_view who, Backend backend) {
  fail(Status::unsupported,
       "{}: the {} backend does not implement this operation; use the cuda or cpu backend", who,
       backend_name(backend));
}

// The backend of a packing operation: cuBLASLt is refused, a device backend needs its device.
Backend select_packing_backend(std::string_view who, Backend requested) {
  const Backend backend = select_backend(who, requested);
  if (backend == Backend::cublaslt) not_implemented(who, backend);
  if (backend != Backend::cpu) require_device(who, backend);
  return backend;
}

}  // namespace

void run(std::string_view who, const PackNvfp4& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_packing_backend(who, exec.backend);
  if (backend == Backend::cpu) cpu::require_pack_memory(args);
  require_disjoint_buffers(who, args);
  if (backend == Backend::cpu) {
    require_finite_weights_on_host(who, args);
    return cpu::pack_nvfp4(args);
  }
  switch (backend) {
#ifdef METRALE_HAS_CUDA
    // 16 bytes of scratch: the amax and the first non-finite index the device finds.
    case Backend::cuda: {
      cuda::refuse_pack_capture(who, exec.stream);
      // Read before the workspace: a bad METRALE_CUDA_QUANTIZER is refused before anything is
      // allocated (function arguments are evaluated in no set order).
      const core::CudaQuantizer kernel = core::cuda_quantizer();
      return cuda::pack_nvfp4(who, args, select_workspace(who, exec, cuda::kPackScratchBytes),
                              exec.stream, kernel);
    }
#endif
#ifdef METRALE_HAS_CUTLASS
    // The reference's amax reduction runs in *scale_2_out itself: no scratch.
    case Backend::cutlass: return reference::cutlass::pack_nvfp4(args, {}, exec.stream);
#endif
    default: not_implemented(who, backend);
  }
}

void run(std::string_view who, const SwizzleScales& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_packing_backend(who, exec.backend);
  require_disjoint_buffers(who, args);
  switch (backend) {
    case Backend::cpu: return cpu::swizzle_scales(args);
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::swizzle_scales(args, exec.stream);
#endif
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass: return reference::cutlass::swizzle_scales(args, exec.stream);
#endif
    default: not_implemented(who, backend);
  }
}

void run(std::string_view who, const TransposePacked& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_packing_backend(who, exec.backend);
  require_disjoint_buffers(who, args);
  switch (backend) {
    case Backend::cpu: return cpu::transpose_packed(args);
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::transpose_packed(args, exec.stream);
#endif
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass: return reference::cutlass::transpose_packed(args, exec.stream);
#endif
    default: not_implemented(who, backend);
  }
}

void run(std::string_view who, const PrepackNvfp4& args, const Exec& exec) {
  validate(who, args);
  // The reference arms are refused before any device is asked for: they have no prepacking.
  const Backend backend = select_backend(who, exec.backend);
  if (backend == Backend::cuda) require_device(who, backend);
  switch (backend) {
    case Backend::cpu: return cpu::prepack_nvfp4(args);
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::prepack_nvfp4(args, exec.stream);
#endif
    default: not_implemented(who, backend);
  }
}

}  // namespace metrale::api
