// The two ways a `metrale bench` run executes: on a CUDA device (our kernels and the opponents,
// ceilings measured first) or, where there is none, on the CPU reference backend; and `check`,
// which both use on every public-API call they make.
#pragma once

#include <string>

#include "bench/bench_config.hpp"
#include "bench/report.hpp"
#include "core/error.hpp"
#include "metrale/metrale.hpp"

namespace metrale::bench {

// Raises a metrale::Error from a failed Result (the bench reports errors by exception).
inline void check(const Result& result) {
  if (!result.ok()) throw Error(result.status, result.message);
}

void run_cpu_bench(const BenchConfig& config, Report& report);

#if defined(METRALE_HAS_CUDA)
// True when `device` exists and can be selected; `why` says otherwise. (Whether our own kernels
// run there is reported per row: the opponents may still run.)
bool cuda_device_usable(int device, std::string* why);
void run_cuda_bench(const BenchConfig& config, Report& report);
#endif

}  // namespace metrale::bench
