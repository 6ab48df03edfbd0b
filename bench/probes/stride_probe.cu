// Read-rate probe: weight rows of K/2 bytes read by 64-row slabs, 32 bytes per row per k-tile
// (the decode family's pattern), against the same bytes read as contiguous 8 KB blocks.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -std=c++17 bench/probes/stride_probe.cu -o /tmp/stride_probe && /tmp/stride_probe
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__global__ void __launch_bounds__(128, 4) strided(const uint4* w, size_t row_bytes, int slabs, int k_tiles, int tiles_per_unit, uint32_t* sink) {
  uint32_t acc = 0;
  const int t = threadIdx.x, row = t / 2, half = t % 2;
  const int units_per_slab = k_tiles / tiles_per_unit;
  for (int u = blockIdx.x; u < slabs * units_per_slab; u += gridDim.x) {
    const int slab = u / units_per_slab, part = u % units_per_slab;
    const char* base = reinterpret_cast<const char*>(w) + (size_t(slab) * 64 + row) * row_bytes + half * 16;
    for (int kt = part * tiles_per_unit; kt < (part + 1) * tiles_per_unit; kt += 8) {
      uint4 v[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = __ldcs(reinterpret_cast<const uint4*>(base + size_t(kt + i) * 32));
#pragma unroll
      for (int i = 0; i < 8; ++i) acc ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
    }
  }
  if (acc == 0x12345678) sink[0] = acc;
}
__global__ void __launch_bounds__(128, 4) contiguous(const uint4* w, size_t total16, uint32_t* sink) {
  uint32_t acc = 0;
  const size_t blocks = total16 / (128 * 8);
  for (size_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    uint4 v[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = __ldcs(w + b * 1024 + i * 128 + threadIdx.x);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
  }
  if (acc == 0x12345678) sink[0] = acc;
}
int main() {
  const size_t bytes = size_t(2) << 30;
  uint4* w; uint32_t* sink; cudaMalloc(&w, bytes); cudaMalloc(&sink, 4); cudaMemset(w, 1, bytes);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto time = [&](auto launch, const char* name) {
    launch(); cudaDeviceSynchronize();
    float best = 1e9;
    for (int r = 0; r < 10; ++r) { cudaEventRecord(a); launch(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); best = ms < best ? ms : best; }
    printf("%-44s %8.1f us  %6.0f GB/s\n", name, best * 1e3, bytes / (best * 1e-3) / 1e9);
  };
  time([&] { contiguous<<<sms * 4, 128>>>(w, bytes / 16, sink); }, "contiguous 16 KB per CTA step");
  const int ks[] = {2048, 4096, 7168};
  for (int K : ks) {
    const size_t row_bytes = K / 2; const int k_tiles = K / 64;
    const int slabs = int(bytes / (row_bytes * 64));
    for (int tpu : {16, k_tiles}) {
      char name[96]; snprintf(name, sizeof name, "64-row slabs, K=%d, unit %d k-tiles", K, tpu);
      time([&] { strided<<<sms * 4, 128>>>(w, row_bytes, slabs, k_tiles, tpu, sink); }, name);
    }
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
