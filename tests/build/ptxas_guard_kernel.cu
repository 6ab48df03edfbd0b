// The ptxas guard's test kernels (tests/build/ptxas_guard_test.cmake). wgmma_pipeline: four wgmmas
// in one pipeline stage. As written, ptxas issues them back to back. With -DREAD_ACCUMULATOR an
// ordinary instruction reads an accumulator between them, and with -DWRITE_ACCUMULATOR one writes
// it: ptxas then waits for each wgmma before the next (its info C7514 and C7511), which the guard
// must fail. With -DSPILLING, a kernel held to 32 registers keeps 96 values live: ptxas spills
// ~200 bytes of them, past the guard's budget of 128.
#include <cstdint>

__device__ __forceinline__ void wgmma_m64n8k16(float (&d)[4], uint64_t a_desc, uint64_t b_desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(a_desc), "l"(b_desc));
}

__global__ void wgmma_pipeline(float* out, uint64_t a_desc, uint64_t b_desc) {
  float d[4] = {0, 0, 0, 0};
  float side = 0;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    wgmma_m64n8k16(d, a_desc + k, b_desc + k);
#if defined(READ_ACCUMULATOR)
    side += d[0];
#elif defined(WRITE_ACCUMULATOR)
    d[1] = side + k;
#endif
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  out[threadIdx.x] = d[0] + d[1] + d[2] + d[3] + side;
}

#if defined(SPILLING)
__global__ void __launch_bounds__(1024, 2) spilling(float* out, const float* in) {
  float v[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) v[i] = in[threadIdx.x + i * 1024];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 96; ++i) s = s * v[95 - i] + v[(i * 37) % 96];
  out[threadIdx.x] = s;
}
#endif
