// Where a MoE layer check runs the backend: one memory space's copy of the case's inputs and
// weights, and the layer's outputs there, framed by guard bands and poisoned before each run
// (out: the bf16 NaN kPoisonBf16; topk_ids_out: -1; topk_weights_out: a NaN). Device memory for
// the CUDA-side backends (moe_memory_device.cpp); host memory for Backend::cpu, which runs the
// harness against its own oracle (moe_memory_host.cpp: the harness's self-test without a GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "check/moe_case.hpp"

namespace metrale::check {

inline constexpr std::int32_t kPoisonId = -1;
inline constexpr std::uint32_t kPoisonWeightBits = 0xFFFFFFFFu;  // a NaN

class MoeMemory {
 public:
  virtual ~MoeMemory() = default;
  // moe_forward over every token, every output requested.
  virtual Result run(const Exec& exec) = 0;
  // Waits for the run (a device's asynchronous errors become HarnessError).
  virtual void synchronize(const std::string& what) = 0;
  virtual void poison() = 0;
  virtual MoeOutputs outputs() const = 0;
  // A broken guard band or an input the run changed: "" when neither.
  virtual std::string damage() const = 0;
};

std::unique_ptr<MoeMemory> host_memory(const MoeHost& h);
#ifdef METRALE_HAS_CUDA
std::unique_ptr<MoeMemory> device_memory(const MoeHost& h);
#endif

}  // namespace metrale::check
