// Pieces of the CUDA bench run (bench_runners.hpp's run_cuda_bench): the shared context, the
// ceilings, and one function per kind of row group. Each row-group function appends one Row per
// implementation to the report (a failed implementation gets a row with its error) and prints
// the group.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <exception>
#include <string>
#include <utility>

#include "bench/bench_config.hpp"
#include "bench/bench_runners.hpp"
#include "bench/cuda/device_memory.hpp"
#include "bench/cuda/expert_pool.hpp"
#include "bench/cuda/timing.hpp"
#include "bench/report.hpp"
#include "bench/routing.hpp"
#include "cuda/cuda_backend.hpp"

namespace metrale::bench {

struct CudaContext {
  explicit CudaContext(const BenchConfig& config) : cfg(config) {}

  const BenchConfig& cfg;
  cudaStream_t stream = nullptr;
  int device = 0, sms = 0;
  std::size_t l2_bytes = 0;
  cublasHandle_t cublas = nullptr;
  core::Buffer lt_workspace;  // cuBLASLt's workspace for the per-expert and dense opponents
  Ceilings ceilings;
  bool cutlass_enabled = false;  // built and METRALE_CUTLASS_GEMM=1
  std::string cutlass_why;       // why not, when it is not

  bool wants(Impl impl) const;
  // CUTLASS when it is not enabled is dark by default: no row at all unless --impls named it...
  bool hides(Impl impl) const;
  // ...and then its row fails with Status::not_built and cutlass_why.
  void require_enabled(Impl impl) const;
  // The rotation that makes one timed pass over `bytes_per_call` touch kColdL2Multiple × L2.
  int copies_for(double bytes_per_call) const;
  TimingPolicy policy(int rotation) const;
};

// Pass-through of the bench's cold-L2 rule: each pass streams at least this many L2 sizes.
inline constexpr double kColdL2Multiple = 4.0;
inline constexpr int kMaxCopies = 64;
// Device memory left free when planning weight copies (cuBLAS, the workspace, the outputs).
inline constexpr std::size_t kMemoryMarginBytes = std::size_t{2} << 30;

Ceilings measure_ceilings(CudaContext& ctx, DeviceArena& arena);

void bench_grouped(CudaContext& ctx, const ModelShape& model, Op op, const Routing& routing,
                   ExpertPool& pool, DeviceArena& scratch, Report& report);
void bench_dense(CudaContext& ctx, const ModelShape& model, int tokens, DeviceArena& scratch,
                 Report& report);
// Op pack: the recipe form (scale_2 computed); op pack_unit: the seeds' form (scale_2_out null).
void bench_pack(CudaContext& ctx, const ModelShape& model, Op op, DeviceArena& scratch,
                Report& report);
// Op moe for one model: every token count, the layer's weights made once (moe_bench.cpp).
void bench_moe(CudaContext& ctx, const ModelShape& model, int model_index, Report& report,
               Progress& progress);

// For a failed implementation: fills the row's error and makes sure the device is still usable
// (a sticky CUDA error ends the run: every later number would be wrong).
void record_failure(Row& row, const std::exception& e);
// The second half of that: throws Status::cuda_error when `who`'s failure left the device unusable.
void require_usable_device(const std::string& who, const std::string& error);

// Measures one implementation's row: `measure()` fills in its numbers and the row is ok; if it
// throws, the row records the failure instead (record_failure). Then the row moves to the report.
template <class Measure>
void add_row(Report& report, Row& row, Measure&& measure) {
  try {
    measure();
    row.ok = true;
  } catch (const std::exception& e) {
    record_failure(row, e);
  }
  report.rows.push_back(std::move(row));
}

}  // namespace metrale::bench
