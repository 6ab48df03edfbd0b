// Small sm_90a building blocks the GEMM kernels share: cp.async with zero fill, the wgmma
// synchronisation instructions, operand fences, and the shared-memory matrix descriptor for a
// K-major tile stored with the 128-byte swizzle (rows of 128 bytes, 16-byte chunk c of row r at
// chunk position c ^ (r % 8), tile base aligned to 1024 bytes).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace metrale::cuda::sm90 {

// Bytes of one swizzled row: 64 bf16 values of K, the GEMMs' k-tile.
constexpr int kSwizzleRowBytes = 128;
// Bytes between consecutive groups of 8 rows (the descriptor's stride byte offset).
constexpr int kSwizzleAtomBytes = 8 * kSwizzleRowBytes;

__device__ __forceinline__ uint32_t smem_address(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// Loads from a shared-memory address (smem_address's): a loop that keeps its buffers' addresses
// as 32-bit offsets does not recompute the generic window of a pointer each time. Ordered like
// any memory access (cp.async waits and barriers are not crossed).
__device__ __forceinline__ uint2 ld_shared_v2(uint32_t at) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(at) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ld_shared_u8(uint32_t at) {
  uint32_t v;
  asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(v) : "r"(at) : "memory");
  return v;
}

// Byte offset of 16-byte chunk `chunk` of row `row` inside a 128-byte-swizzled tile.
__device__ __forceinline__ uint32_t swizzled_offset(int row, int chunk) {
  return row * kSwizzleRowBytes + ((chunk ^ (row & 7)) << 4);
}

// kBytes-byte asynchronous copy global -> shared (4, 8 or 16); copies nothing and writes zeros
// when !valid (`src` must still be a mapped address). 16 bytes bypass L1 (.cg takes 16 only);
// with kL2Prefetch256 they also ask L2 to fetch the 256 bytes around `src` (cp.async's
// .L2::256B), for loaders whose later copies read those bytes (decode_loader.cuh says where; the
// tiled loader's bf16 weight rows, stage_loader.cuh).
template <int kBytes, bool kL2Prefetch256 = false>
__device__ __forceinline__ void cp_async_zfill(uint32_t dst, const void* src, bool valid) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
  if constexpr (kBytes == 16 && kL2Prefetch256) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
  } else if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src),
                 "n"(kBytes), "r"(valid ? kBytes : 0)
                 : "memory");
  }
}

// 4-byte asynchronous copy global -> shared of which the first `bytes` (0-4) are read and the
// rest written as zeros (L1-allocating).
__device__ __forceinline__ void cp_async_4_first(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  cp_async_zfill<16>(dst, src, valid);
}

// The same 16-byte copy, which writes zeros when `bits` is 0 (cp.async's ignore-src predicate):
// a piece's presence tested as a bit of a mask costs one LOP3 into a predicate, where a source
// size of valid ? 16 : 0 took three.
__device__ __forceinline__ void cp_async_16_if(uint32_t dst, const void* src, uint32_t bits) {
  asm volatile(
      "{\n.reg .pred absent;\nsetp.eq.u32 absent, %2, 0;\n"
      "cp.async.cg.shared.global [%0], [%1], 16, absent;\n}\n" ::"r"(dst),
      "l"(src), "r"(bits)
      : "memory");
}

// 8-byte asynchronous copy global -> shared (L1-allocating: .cg takes 16 bytes only).
__device__ __forceinline__ void cp_async_8(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Orders this warpgroup's register and shared-memory accesses before the next wgmma.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Pins a register at this point of the instruction stream, so that the compiler neither reads
// an accumulator before the wgmma that writes it has completed nor reuses an A-fragment
// register while a wgmma may still read it.
__device__ __forceinline__ void fence_operand(float& reg) { asm volatile("" : "+f"(reg)::"memory"); }
__device__ __forceinline__ void fence_operand(uint32_t& reg) {
  asm volatile("" : "+r"(reg)::"memory");
}

// Waits at named barrier kId for kThreads threads (a multiple of 32): a subset of the CTA
// synchronises without the rest (barrier 0 is __syncthreads).
template <int kId, int kThreads>
__device__ __forceinline__ void named_barrier_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(kThreads) : "memory");
}

// Stores four 8x8 matrices of 16-bit values, each transposed: a lane holds, in register i, the
// elements (lane / 4, 2 (lane % 4)) and (lane / 4, 2 (lane % 4) + 1) of matrix i (the layout of an
// mma accumulator pair), and lane L gives the shared address that receives column L % 8 of
// matrix L / 8 (16 contiguous bytes).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t m0, uint32_t m1,
                                                  uint32_t m2, uint32_t m3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n"
               ::"r"(addr), "r"(m0), "r"(m1), "r"(m2), "r"(m3)
               : "memory");
}

// A bf16 pair and the raw 32-bit word the decoders keep it in, one as the other.
__device__ __forceinline__ __nv_bfloat162 as_bf16x2(uint32_t word) {
  return *reinterpret_cast<const __nv_bfloat162*>(&word);
}
__device__ __forceinline__ uint32_t as_word(__nv_bfloat162 pair) {
  return *reinterpret_cast<const uint32_t*>(&pair);
}

// a * b on two bf16 pairs held as raw 32-bit words (the decoders' block-scale multiply).
__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  return as_word(__hmul2(as_bf16x2(a), as_bf16x2(b)));
}

// Descriptor of a K-major, 128-byte-swizzled tile starting at shared address `addr`
// (1024-aligned for the tile; + 32 bytes per k16 step inside the 64-wide k tile).
__device__ __forceinline__ uint64_t sw128_descriptor(uint32_t addr) {
  constexpr uint64_t kLeadingByteOffset = 1;  // unused by swizzled K-major layouts
  constexpr uint64_t kStrideByteOffset = kSwizzleAtomBytes >> 4;
  constexpr uint64_t kSwizzle128B = 1;
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (kLeadingByteOffset << 16) |
         (kStrideByteOffset << 32) | (kSwizzle128B << 62);
}

// `desc` moved `bytes` further into shared memory. The start address (bits 0..13, in 16-byte
// units) of an address below 256 KB never carries into bit 16, so one 32-bit add does it.
__device__ __forceinline__ uint64_t descriptor_plus(uint64_t desc, uint32_t bytes) {
  const uint32_t low = static_cast<uint32_t>(desc) + (bytes >> 4);
  return (desc & 0xFFFFFFFF00000000ull) | low;
}

}  // namespace metrale::cuda::sm90
