// One 64-row slab per CTA, all CTAs at once (decode T=1), k-tiles in order or rotated per CTA.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -std=c++17 bench/probes/lockstep_probe.cu -o /tmp/lockstep_probe && /tmp/lockstep_probe
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__global__ void __launch_bounds__(128, 4) slab(const char* w, size_t row_bytes, int k_tiles, int rotate, int per_load, uint32_t* sink) {
  uint32_t acc = 0;
  const int t = threadIdx.x, row = t / 2, half = t % 2;
  const char* base = w + (size_t(blockIdx.x) * 64 + row) * row_bytes + half * 16;
  const int start = rotate ? (blockIdx.x * 13) % k_tiles : 0;
  for (int i0 = 0; i0 < k_tiles; i0 += 8) {
    uint4 v[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) { int kt = i0 + i + start; if (kt >= k_tiles) kt -= k_tiles; v[i] = __ldcs(reinterpret_cast<const uint4*>(base + size_t(kt) * 32)); }
#pragma unroll
    for (int i = 0; i < 8; ++i) acc ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
  }
  if (acc == 0x12345678) sink[0] = acc;
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int grid = sms * 4;
  uint32_t* sink; cudaMalloc(&sink, 4);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int K : {2048, 4096, 7168}) {
    const size_t row_bytes = K / 2, bytes = size_t(grid) * 64 * row_bytes;
    // 8 copies rotated so that each launch reads from DRAM, not L2
    char* w; cudaMalloc(&w, bytes * 8); cudaMemset(w, 1, bytes * 8);
    for (int rot = 0; rot < 2; ++rot) {
      float best = 1e9;
      for (int r = 0; r < 24; ++r) {
        const char* src = w + (r % 8) * bytes;
        cudaEventRecord(a); slab<<<grid, 128>>>(src, row_bytes, K / 64, rot, 8, sink); cudaEventRecord(b);
        cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); if (r >= 8 && ms < best) best = ms;
      }
      printf("K=%5d %s  %6.1f MB  %7.1f us  %6.0f GB/s\n", K, rot ? "rotated " : "in order", bytes / 1e6, best * 1e3, bytes / (best * 1e-3) / 1e9);
    }
    cudaFree(w);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
