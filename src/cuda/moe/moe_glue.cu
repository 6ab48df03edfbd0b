// The MoE layer's element-wise glue between the grouped GEMMs: the activation (after gate/up) and
// the combine (after down), with docs/api.md's rounding points and format/moe_math.hpp's fp32
// functions, so every bit matches the CPU oracle. Both read 16 bytes (8 bf16) at a time: the
// rows are I or H wide, multiples of 16, and the buffers 16-byte aligned.
#include <type_traits>

#include "cuda/moe/moe_route.hpp"
#include "cuda/silu_table.cuh"
#include "format/bf16.hpp"
#include "format/moe_math.hpp"

namespace metrale::cuda::moe {
namespace {

constexpr int kGlueThreads = 256;
// Four combine blocks an SM (64 registers a thread): at 72 registers three fit, and a T = 1024
// combine of Qwen3-30B (1024 blocks) ran 2.6 waves with its warps waiting on loads (ncu: 5.1
// warps a scheduler, 0.9 eligible, DRAM 49 %; docs/perf.md).
constexpr int kCombineBlocksPerSm = 4;
constexpr std::uint16_t kBf16Nan = format::kBf16CanonicalNan;

union Bf16x8 {
  uint4 vector;
  std::uint16_t h[8];
};

// bf16(x + bias[c]): the oracle's bias add (fp32 add, one rounding).
__device__ float plus_bias(float x, const std::uint16_t* bias, int c) {
  return format::bf16_to_float(
      format::float_to_bf16(format::add_rn(x, format::bf16_to_float(bias[c]))));
}

// The bias pointer of projection p for row `row`'s expert, or null without biases.
template <class Bias>
__device__ const std::uint16_t* bias_of(const Bias& bias, int p, const std::int32_t* row_expert,
                                        int row) {
  if constexpr (std::is_same_v<Bias, NoBias>) {
    return nullptr;
  } else {
    return bias.ptr[p][__ldg(row_expert + row)];
  }
}

template <class Bias>
__global__ void __launch_bounds__(kGlueThreads)
    activation_kernel(const __grid_constant__ GlueLaunch<ActivationArgs, Bias> launch) {
  const ActivationArgs& a = launch.args;
  const int per_row = a.inter / 8;
  const long long vectors = static_cast<long long>(__ldg(a.total_rows)) * per_row;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  // Vector i's row and column (the biases' index; the kernel without biases drops them), stepped
  // with i instead of divided: a division a vector (a 32-bit one on its fast path) before.
  const int stride_rows = static_cast<int>(stride / per_row);
  const int stride_columns = static_cast<int>(stride % per_row);
  int row = static_cast<int>(i / per_row), column = static_cast<int>(i % per_row);
  for (; i < vectors; i += stride) {
    const int c0 = column * 8;
    Bf16x8 g, u, out;
    g.vector = reinterpret_cast<const uint4*>(a.gate)[i];
    u.vector = __ldg(reinterpret_cast<const uint4*>(a.up) + i);
    const std::uint16_t* gate_bias = bias_of(launch.bias, 0, a.row_expert, row);
    const std::uint16_t* up_bias = bias_of(launch.bias, 1, a.row_expert, row);
#pragma unroll
    for (int h = 0; h < 8; ++h) {
      float gv = format::bf16_to_float(g.h[h]), uv = format::bf16_to_float(u.h[h]);
      if (gate_bias) gv = plus_bias(gv, gate_bias, c0 + h);
      if (up_bias) uv = plus_bias(uv, up_bias, c0 + h);
      out.h[h] =
          format::float_to_bf16(activation_f32(gv, uv, a.clamped, a.alpha, a.limit, a.silu_table));
    }
    reinterpret_cast<uint4*>(a.gate)[i] = out.vector;
    row += stride_rows;
    column += stride_columns;
    if (column >= per_row) {
      column -= per_row;
      ++row;
    }
  }
}

// One thread per 8 columns of one token: blockIdx.x = token · chunks + chunk. A thread sums its
// columns over the token's slots in slot order; the slots' rows are loaded 8 at a time before
// any is added, so a small T still keeps loads in flight.
template <class Bias>
__global__ void __launch_bounds__(kGlueThreads, kCombineBlocksPerSm)
    combine_kernel(const __grid_constant__ GlueLaunch<CombineArgs, Bias> launch) {
  const CombineArgs& a = launch.args;
  const int vectors = a.hidden / 8;
  const int chunks = (vectors + blockDim.x - 1) / blockDim.x;
  const int token = blockIdx.x / chunks;
  const int v = (blockIdx.x % chunks) * blockDim.x + threadIdx.x;
  if (v >= vectors) return;
  const int k = a.top_k;
  const std::size_t first = static_cast<std::size_t>(token) * k;
  constexpr int kBatch = 8;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int j0 = 0; j0 < k; j0 += kBatch) {
    int row[kBatch];
    float w[kBatch];
    Bf16x8 d[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) row[i] = j0 + i < k ? __ldg(a.slot_row + first + j0 + i) : -1;
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (row[i] < 0) continue;  // remote expert (another rank adds this slot), or past k
      w[i] = __ldg(a.weights + first + j0 + i);
      d[i].vector = __ldg(
          reinterpret_cast<const uint4*>(a.down + static_cast<std::size_t>(row[i]) * a.hidden) + v);
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (row[i] < 0) continue;
      const std::uint16_t* bias = bias_of(launch.bias, 0, a.row_expert, row[i]);
#pragma unroll
      for (int h = 0; h < 8; ++h) {
        float dv = format::bf16_to_float(d[i].h[h]);
        if (bias) dv = plus_bias(dv, bias, 8 * v + h);
        acc[h] = format::add_rn(acc[h], format::mul_rn(w[i], dv));
      }
    }
  }
  const bool bad = __ldg(a.token_bad + token) != 0;
  const std::size_t at = static_cast<std::size_t>(token) * a.hidden;
  Bf16x8 out, residual;
  if (a.residual) residual.vector = reinterpret_cast<const uint4*>(a.residual + at)[v];
#pragma unroll
  for (int h = 0; h < 8; ++h) {
    const float sum =
        a.residual ? format::add_rn(acc[h], format::bf16_to_float(residual.h[h])) : acc[h];
    out.h[h] = bad ? kBf16Nan : format::float_to_bf16(sum);
  }
  reinterpret_cast<uint4*>(a.out + at)[v] = out.vector;
}

}  // namespace

cudaError_t launch_activation(const ActivationArgs& args, const BiasTables<2>* bias, int grid,
                              cudaStream_t stream) {
  if (bias) {
    thread_local GlueLaunch<ActivationArgs, BiasTables<2>> launch;  // 16 KB: no heap per call
    launch.args = args;
    launch.bias = *bias;
    activation_kernel<<<grid, kGlueThreads, 0, stream>>>(launch);
  } else {
    activation_kernel<<<grid, kGlueThreads, 0, stream>>>(
        GlueLaunch<ActivationArgs, NoBias>{args, {}});
  }
  return cudaGetLastError();
}

cudaError_t launch_combine(const CombineArgs& args, const BiasTables<1>* bias,
                           cudaStream_t stream) {
  const int vectors = args.hidden / 8;
  const int threads = vectors < kGlueThreads ? (vectors + 31) / 32 * 32 : kGlueThreads;
  const int chunks = (vectors + threads - 1) / threads;
  const unsigned grid = static_cast<unsigned>(args.tokens) * chunks;
  if (bias) {
    thread_local GlueLaunch<CombineArgs, BiasTables<1>> launch;  // 8 KB
    launch.args = args;
    launch.bias = *bias;
    combine_kernel<<<grid, threads, 0, stream>>>(launch);
  } else {
    combine_kernel<<<grid, threads, 0, stream>>>(GlueLaunch<CombineArgs, NoBias>{args, {}});
  }
  return cudaGetLastError();
}

}  // namespace metrale::cuda::moe
