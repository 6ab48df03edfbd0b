// Probe: the stream kernel's T = 1 access shape (16 rows x 32 bytes a stage, 8 stages a warp in
// flight) against 2 rows x 256 bytes a stage and a warp's 4 KB read contiguously; same bytes.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__device__ __forceinline__ void cp16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
template <int kShape>
__global__ void __launch_bounds__(256, 3) probe(const uint8_t* w, int row_bytes, unsigned* sink) {
  __shared__ alignas(16) uint8_t ring[8][8][512];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gw = blockIdx.x * 8 + warp;  // global warp
  const int item = gw / 4, q = gw % 4;   // 16 rows, a quarter of K
  const uint8_t* rows = w + (size_t)item * 16 * row_bytes + 256 * q;
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(&ring[warp][0][0]);
  for (int s = 0; s < 8; ++s) {
    const uint8_t* src;
    if (kShape == 0) src = rows + (size_t)(lane / 2) * row_bytes + 32 * s + 16 * (lane % 2);
    else if (kShape == 1) src = rows + (size_t)(2 * s + lane / 16) * row_bytes + 16 * (lane % 16);
    else src = w + (size_t)gw * 4096 + 512 * s + 16 * lane;
    cp16(base + s * 512 + 16 * lane, src);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncwarp();
  unsigned x = 0;
  for (int s = 0; s < 8; ++s) x ^= *(const unsigned*)&ring[warp][s][16 * lane];
  if (x == 0x12345678u) sink[gw] = x;
}
int main() {
  const int rows = 12288, row_bytes = 1024, copies = 24;
  const size_t bytes = (size_t)rows * row_bytes;
  uint8_t* w; unsigned* sink;
  cudaMalloc(&w, bytes * copies); cudaMalloc(&sink, 4096 * 4);
  cudaMemset(w, 1, bytes * copies);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  const int grid = rows / 16 * 4 / 8;  // 3072 warps
  for (int shape = 0; shape < 3; ++shape)
    for (int round = 0; round < 3; ++round) {
      const int reps = 240;
      cudaEventRecord(a);
      for (int r = 0; r < reps; ++r) {
        const uint8_t* p = w + bytes * (r % copies);
        if (shape == 0) probe<0><<<grid, 256>>>(p, row_bytes, sink);
        else if (shape == 1) probe<1><<<grid, 256>>>(p, row_bytes, sink);
        else probe<2><<<grid, 256>>>(p, row_bytes, sink);
      }
      cudaEventRecord(b); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b);
      const double us = 1000.0 * ms / reps;
      printf("shape %d (%s) round %d: %.2f us a launch, %.0f GB/s\n", shape,
             shape == 0 ? "16 rows x 32 B a stage" : shape == 1 ? "2 rows x 256 B a stage" : "4 KB contiguous a warp",
             round, us, bytes / us / 1e3);
    }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
