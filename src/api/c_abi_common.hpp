// Shared by the C ABI files: the status + last-error boundary, and the translation of the seeds'
// parameter lists into the C++ API's argument structs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "api/dispatch.hpp"
#include "api/guard.hpp"
#include "api/run_on_device.hpp"
#include "core/error.hpp"
#include "metrale/metrale.h"
#include "metrale/metrale.hpp"

namespace metrale::api {

// Records r.message as this thread's last error ("" on success) and returns r's status.
metrale_status finish(const Result& r);

template <class Body>
metrale_status c_call(std::string_view who, Body&& body) noexcept {
  return finish(guarded(who, body));
}

// One operation (dispatch.hpp's run) inside the boundary, on the device exec->device names.
template <class Args>
metrale_status c_run(std::string_view who, const Args& args, const Exec& exec) noexcept {
  return c_call(who, [&] { run_on_device(who, "exec->device", args, exec); });
}

// The first struct_size bytes of the caller's struct over `defaults`. min_size is the size of the
// oldest layout still accepted; anything larger than this library's layout comes from a newer
// header, whose fields this library cannot honour.
template <class T>
T read_versioned(std::string_view who, std::string_view name, std::string_view type,
                 std::string_view init, const T* in, std::size_t min_size, T defaults) {
  const std::size_t size = in->struct_size;
  METRALE_REQUIRE(size >= min_size,
                  "{}: {}->struct_size = {}, expected sizeof({}) = {} (set it with {}; a struct "
                  "from an older metrale.h has at least {} bytes)",
                  who, name, size, type, sizeof(T), init, min_size);
  METRALE_REQUIRE(size <= sizeof(T),
                  "{}: {}->struct_size = {} is larger than this library's {} ({} bytes, ABI {}): "
                  "the caller was built against a newer metrale.h; use a libmetrale at least as "
                  "new as that header",
                  who, name, size, type, sizeof(T), METRALE_ABI_VERSION);
  std::memcpy(static_cast<void*>(&defaults), in, size);
  return defaults;
}

Exec make_exec(Backend backend, void* workspace, std::size_t workspace_size, void* stream);
// The caller's versioned structs (metrale.h): struct_size is checked against the sizes this
// library knows, then only the bytes the caller's header had are read. A null exec means
// METRALE_EXEC_INIT (automatic backend, shared workspace, current device).
Exec make_exec(std::string_view who, const metrale_exec* exec);
ExpertGroups read_groups(std::string_view who, const metrale_groups* groups);

// A metrale_scale_layout value as the C ABI passes it: METRALE_SCALE_K16_BY_N or
// METRALE_SCALE_SFB, or'ed with METRALE_WEIGHTS_PREPACKED when the packed weights are prepacked.
// Any other value is refused (invalid_argument), naming `name` and the value.
struct LayoutFlags {
  ScaleLayout scale;
  WeightLayout weights;
};
LayoutFlags read_layout_flags(std::string_view who, std::string_view name,
                              metrale_scale_layout value);

// The dense GEMM's arguments from the C ABI's untyped pointers.
DenseGemm dense_gemm(const void* act, const void* weight, void* out, std::int32_t m, std::int32_t n,
                     std::int32_t k);

// A seed-shaped grouped call: host offsets with M_total = offsets[num_experts], a_rows = M_total
// without a gather and 0 ("unknown") with one. proj[1]/c[1] are unused when proj_count is 1.
struct SeedGrouped {
  const void* a;
  const std::int32_t* token_ids;
  ExpertWeights proj[2];
  void* c[2];
  std::int32_t proj_count;
  ScaleLayout layout;
  const std::int32_t* offsets;
  std::int32_t num_experts, n, k;
};
void run_seed_grouped(std::string_view who, const SeedGrouped& call, const Exec& exec);

}  // namespace metrale::api
