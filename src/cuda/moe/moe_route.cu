// Routing and grouping of the MoE layer. Each routing warp routes its tokens (route_token.cuh:
// docs/api.md, "Routing", operation for operation, with format::exp_f32: the CPU oracle's bits);
// the slots are then grouped by local expert, in (token, slot) order within each expert, exactly
// as the oracle orders its rows.
//
// Grouping, stable, without sorting, in parallel: each block routes a contiguous run of tokens,
// then ranks its own slots per expert (one warp, __match_any_sync) and publishes its counts per
// expert. The last block to finish (a ticket, integer atomics only) sums them per expert and
// scans over the experts. Each slot then goes to row = offset + rows of the blocks before + rank:
// placed by a second kernel, a block per routing block, which sums the rows of the blocks before
// its own (from per-chunk sums the last block leaves), or, with few slots, by the last block
// itself after a prefix over the blocks in place (and a single routing block places its own: no
// ticket either). A single block of few slots groups them by counting instead (group_few_slots).
// Deterministic: nothing depends on which block finished last.
#include <algorithm>

#include "cuda/family.hpp"
#include "cuda/moe/moe_route.hpp"
#include "cuda/moe/route_token.cuh"
#include "cuda/silu_table.cuh"
#include "format/bf16.hpp"
#include "format/moe_math.hpp"

namespace metrale::cuda::moe {
namespace {

// Where a block's slots' local experts and ranks are read and written, indexed from the block's
// first slot: shared memory when they fit (RouteArgs::slot_copy_at), so that the ranking and a
// single block's placing read them without an L2 round trip each; else the global arrays.
struct BlockSlots {
  std::int32_t* local;
  std::int32_t* rank;
  std::int32_t first;  // the block's first slot
  bool in_shared;
};

// The slots of routing block `block` in the global arrays (what place_kernel reads back).
__device__ BlockSlots global_block_slots(const RouteArgs& a, int block) {
  const int first = block * a.tokens_per_block * a.top_k;
  return {a.out.slot_local + first, a.out.slot_row + first, first, false};
}

// This block's slots: the shared copies when they fit, else the global arrays.
__device__ BlockSlots block_slots(const RouteArgs& a, std::uint8_t* shared, int block) {
  BlockSlots slots = global_block_slots(a, block);
  if (a.slot_copy_at == 0) return slots;
  auto* copy = reinterpret_cast<std::int32_t*>(shared + a.slot_copy_at);
  return {copy, copy + a.tokens_per_block * a.top_k, slots.first, true};
}

// One token: its slots' ids, weights, local experts, and whether it is bad (then its slots go
// nowhere and the combine writes a NaN row: nothing is read out of bounds).
__device__ int local_of(NoMap, int id) { return id; }
__device__ int local_of(const ExpertMap& map, int id) { return map.local[id]; }

template <RouteKind kKind, class Map>
__device__ void route_token(const RouteArgs& a, const Map& map, const TokenScratch& s,
                            const BlockSlots& slots, int token) {
  constexpr bool kPrecomputed = kKind == RouteKind::precomputed;
  const int lane = threadIdx.x & 31, k = a.top_k;
  const std::size_t first = static_cast<std::size_t>(token) * k;
  bool bad = false;
  if constexpr (kPrecomputed) {
    for (int j = lane; j < k; j += 32) {
      const std::int32_t id = a.topk_ids[first + j];
      const float weight = a.topk_weights[first + j];
      bad = bad || id < 0 || id >= a.experts || !is_finite(weight);
      s.chosen[j] = id;
      s.weight[j] = weight;
    }
    bad = __any_sync(kFullWarp, bad);
  } else {
    constexpr bool kSigmoid = kKind == RouteKind::sigmoid_grouped_topk;
    bad = !load_scores<kSigmoid>(a, s, token);
    if (!bad) route_from_logits<kSigmoid>(a, s);
  }
  __syncwarp();
  for (int j = lane; j < k; j += 32) {
    const std::int32_t id = bad && !kPrecomputed ? -1 : s.chosen[j];
    const float weight = bad && !kPrecomputed ? __int_as_float(0x7FC00000) : s.weight[j];
    a.out.weights[first + j] = weight;
    if (a.topk_ids_out) a.topk_ids_out[first + j] = id;
    if (a.topk_weights_out) a.topk_weights_out[first + j] = weight;
    const std::int32_t local = bad ? -1 : local_of(map, id);
    a.out.slot_local[first + j] = local;
    if (slots.in_shared) slots.local[first + j - slots.first] = local;
  }
  if (lane == 0) a.out.token_bad[token] = bad ? 1 : 0;
}

// Exclusive prefix of each thread's value over the block, in thread order, and the total.
// `scratch`: 33 ints.
__device__ int block_exclusive_scan(int value, int* scratch, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  int inclusive = value;
  for (int d = 1; d < 32; d <<= 1) {
    const int below = __shfl_up_sync(kFullWarp, inclusive, d);
    if (lane >= d) inclusive += below;
  }
  if (lane == 31) scratch[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const int own = lane < warps ? scratch[lane] : 0;
    int sum = own;
    for (int d = 1; d < 32; d <<= 1) {
      const int below = __shfl_up_sync(kFullWarp, sum, d);
      if (lane >= d) sum += below;
    }
    if (lane < warps) scratch[lane] = sum - own;  // the warps before this one
    if (lane == 31) scratch[32] = sum;
  }
  __syncthreads();
  *total = scratch[32];
  return scratch[warp] + inclusive - value;
}

// Each of this block's slots' rank among the block's slots with the same local expert, in
// (token, slot) order, into slots.rank (and the global slot_row, where place_kernel reads it), and
// the block's slots per expert into `count` and, past one block, block_counts[blockIdx.x]. One
// warp walks the slots 32 at a time, a slot's rank among lanes with the same expert from
// __match_any_sync: stable by construction. The slots were written by this block's warps
// (visible after the barrier the caller passed).
__device__ void rank_block_slots(const RouteArgs& a, int* count, const BlockSlots& slots,
                                 int first_token, int end_token) {
  const int L = a.local_experts;
  for (int l = threadIdx.x; l < L; l += blockDim.x) count[l] = 0;
  __syncthreads();
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const int n = (end_token - first_token) * a.top_k;
    const bool to_global = slots.in_shared && gridDim.x > 1;
    for (int base = 0; base < n; base += 32) {
      const int s = base + lane;
      const int l = s < n ? slots.local[s] : -1;
      const unsigned peers = __match_any_sync(kFullWarp, l >= 0 ? l : -1 - lane);
      if (l >= 0) {
        const int rank = count[l] + __popc(peers & ((1u << lane) - 1u));
        slots.rank[s] = rank;
        if (to_global) a.out.slot_row[slots.first + s] = rank;
      }
      __syncwarp();
      if (l >= 0 && lane == __ffs(peers) - 1) count[l] += __popc(peers);
      __syncwarp();
    }
  }
  __syncthreads();
  if (gridDim.x == 1) return;  // the only block keeps its counts in shared memory
  int* out = a.out.block_counts + static_cast<std::size_t>(blockIdx.x) * L;
  for (int l = threadIdx.x; l < L; l += blockDim.x) out[l] = count[l];
}

// Slot s (local expert l, or -1) at `row` (-1: none): its row, and the row's token and expert.
__device__ void store_slot(const RouteArgs& a, int s, int l, int row) {
  a.out.slot_row[s] = row;
  if (row < 0) return;
  a.out.row_token[row] = static_cast<std::int32_t>(a.slot_token.quotient(s));
  a.out.row_expert[row] = l;
}

// The slots of routing block `block` to their rows: row = offsets[l] + (rows of expert l in the
// blocks before: `before`, rows_before_block's, or null for the only block) + the slot's
// rank in its block. Every slot is independent of the others; their loads come first, then the
// scattered stores. `offsets` may be shared or global memory.
__device__ void place_block_slots(const RouteArgs& a, const int* offsets, const int* before,
                                  const BlockSlots& slots) {
  const int end = min(slots.first + a.tokens_per_block * a.top_k, a.tokens * a.top_k);
  for (int s = slots.first + static_cast<int>(threadIdx.x); s < end; s += blockDim.x) {
    const int i = s - slots.first;
    const int l = slots.local[i];
    store_slot(a, s, l, l < 0 ? -1 : slots.rank[i] + offsets[l] + (before ? before[l] : 0));
  }
}

// Rows past the last placed one (a token routed nowhere leaves them): the GEMMs' gathers read a
// row of zeros there. `first_thread`, `threads`: this caller's share of a grid-stride loop.
__device__ void clear_tail_rows(const RouteArgs& a, int total, int first_thread, int threads) {
  for (int row = total + first_thread; row < a.tokens * a.top_k; row += threads) {
    a.out.row_token[row] = -1;
    a.out.row_expert[row] = 0;
  }
}

// Each expert's first row from its row count `rows_of(l)`, into a.out.offsets and the shared
// `offsets` [L + 1]: each thread a contiguous run of experts, one block-wide scan (`scan`: 33
// ints). Returns the rows of all experts.
template <class RowsOf>
__device__ int write_offsets(const RouteArgs& a, RowsOf rows_of, int* offsets, int* scan) {
  const int L = a.local_experts, tid = threadIdx.x;
  const int per_thread = a.experts_per_thread;
  const int l0 = min(L, tid * per_thread), l1 = min(L, l0 + per_thread);
  int rows = 0;
  for (int l = l0; l < l1; ++l) rows += rows_of(l);
  int total = 0;
  int next = block_exclusive_scan(rows, scan, &total);
  for (int l = l0; l < l1; ++l) {
    offsets[l] = a.out.offsets[l] = next;
    next += rows_of(l);
  }
  if (tid == 0) offsets[L] = a.out.offsets[L] = total;
  __syncthreads();
  return total;
}

// Each expert's first row (write_offsets) from its rows per chunk of blocks, `sums` [chunks][L].
__device__ const int* offsets_from_chunks(const RouteArgs& a, const int* sums, int chunks,
                                          int* offsets, int* scan) {
  const int L = a.local_experts;
  write_offsets(
      a,
      [&](int l) {
        int rows = 0;
        for (int c = 0; c < chunks; ++c) rows += sums[c * L + l];
        return rows;
      },
      offsets, scan);
  return offsets;
}

// The last block, when it places the slots itself (few slots, few blocks). Every routing block
// left its slots per expert (block_counts) and its slots' ranks within it; here each (block,
// expert) gets the rows of the blocks before it, in place, and each expert its first row
// (offsets). With more slots a placing launch places them (chunk_rows): from one SM the scattered
// stores of every slot took two thirds of the routing time (docs/perf.md, "The MoE glue
// measured"). What other blocks wrote is read through L2.
__device__ const int* first_rows(const RouteArgs& a, int* shared) {
  const int L = a.local_experts, blocks = gridDim.x;
  const int tid = threadIdx.x, threads = blockDim.x;
  int* counts = a.out.block_counts;
  // 1. Per expert, the rows of the blocks before each block, in place: the blocks split in
  //    chunks (threads / L of them, so every thread has work), a sum per chunk, then the prefix.
  const int chunks = L >= threads ? 1 : min(blocks, threads / max(L, 1));  // L = 0: no rows
  int* chunk_rows = shared;                // [chunks][L]
  int* offsets = chunk_rows + chunks * L;  // [L + 1]
  int* scan = offsets + L + 1;             // [33]
  for (int i = tid; i < chunks * L; i += threads) {
    const int c = i / L, l = i % L;
    int sum = 0;
#pragma unroll 8
    for (int b = blocks * c / chunks; b < blocks * (c + 1) / chunks; ++b)
      sum += __ldcg(counts + static_cast<std::size_t>(b) * L + l);
    chunk_rows[i] = sum;
  }
  __syncthreads();
  for (int i = tid; i < chunks * L; i += threads) {
    const int c = i / L, l = i % L;
    int before = 0;
    for (int earlier = 0; earlier < c; ++earlier) before += chunk_rows[earlier * L + l];
    for (int b = blocks * c / chunks; b < blocks * (c + 1) / chunks; ++b) {
      int* at = counts + static_cast<std::size_t>(b) * L + l;
      const int n = __ldcg(at);
      *at = before;
      before += n;
    }
  }
  // 2. The expert offsets.
  return offsets_from_chunks(a, chunk_rows, chunks, offsets, scan);
}

// The last block, before a placing launch: each chunk of kPlaceChunk routing blocks' slots per
// expert (chunk_counts, and the experts' first rows from them). Each (chunk, expert) loads its
// blocks' counts together. The prefix over blocks is left to place_kernel, a block per routing
// block: from here, one SM walking every block's counts in turn (a chain of L2 round trips) and
// rewriting them was most of the kernel at T = 1024 (Qwen3-Next: ~17 of 33 us, docs/perf.md).
__device__ const int* chunk_rows(const RouteArgs& a, int* shared) {
  const int L = a.local_experts, blocks = gridDim.x, chunks = place_chunks(blocks);
  int* sums = shared;                // [chunks][L]
  int* offsets = sums + chunks * L;  // [L + 1]
  int* scan = offsets + L + 1;       // [33]
  for (int i = threadIdx.x; i < chunks * L; i += blockDim.x) {
    const int first = i / L * kPlaceChunk, l = i % L;
    int n[kPlaceChunk];
#pragma unroll
    for (int j = 0; j < kPlaceChunk; ++j)
      n[j] = first + j < blocks
                 ? __ldcg(a.out.block_counts + static_cast<std::size_t>(first + j) * L + l)
                 : 0;
    int sum = 0;
#pragma unroll
    for (int j = 0; j < kPlaceChunk; ++j) sum += n[j];
    sums[i] = a.out.chunk_counts[i] = sum;
  }
  __syncthreads();
  return offsets_from_chunks(a, sums, chunks, offsets, scan);
}

// With few slots (RouteShape::last_block_places) the last block places every block's slots
// itself, kBatch slots a thread at a time so that their loads are in flight together (one block
// at a time, each a round trip through L2, took longer than the placing launch it saves). Other
// blocks' slots are read through L2 (__ldcg): this SM's L1 may hold older lines.
__device__ void place_every_block(const RouteArgs& a, const int* offsets) {
  constexpr int kBatch = 8;
  const int slots = a.tokens * a.top_k, per_block = a.tokens_per_block * a.top_k;
  const int threads = static_cast<int>(blockDim.x);
  for (int base = static_cast<int>(threadIdx.x); base < slots; base += kBatch * threads) {
    int local[kBatch], rank[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int s = base + j * threads;
      local[j] = s < slots ? __ldcg(a.out.slot_local + s) : -1;
      rank[j] = s < slots ? __ldcg(a.out.slot_row + s) : 0;
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int s = base + j * threads, l = local[j];
      if (s >= slots) break;
      const int* before =
          a.out.block_counts + static_cast<std::size_t>(s / per_block) * a.local_experts;
      store_slot(a, s, l, l < 0 ? -1 : rank[j] + offsets[l] + before[l]);
    }
  }
  clear_tail_rows(a, offsets[a.local_experts], static_cast<int>(threadIdx.x), threads);
}

// The only routing block (every token in one block): its counts are the experts' rows. No
// ticket, no fence, no second launch: the offsets from one scan, then it places its own slots.
__device__ void single_block_rows(const RouteArgs& a, int* shared, const BlockSlots& slots) {
  const int L = a.local_experts;
  const int* count = shared;    // rank_block_slots' counts
  int* offsets = shared + L;    // [L + 1]
  int* scan = offsets + L + 1;  // [33]
  const int total = write_offsets(a, [&](int l) { return count[l]; }, offsets, scan);
  place_block_slots(a, offsets, nullptr, slots);
  clear_tail_rows(a, total, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x));
}

// The slots of a single block when they are few (RouteShape::few_slots), grouped by counting:
// slot s goes to the row after every slot ahead of it (a smaller local expert, or the same one at
// a smaller slot; a remote slot is past every expert and has no row), and expert e's first row is
// the number of slots of smaller local experts. Each thread reads the block's locals (one address
// a step for the whole block: broadcasts) and counts for its own slot and its own expert, so there
// is no scan, no sort and no barrier after the routing's; the same rows as rank_block_slots and
// single_block_rows. Against one warp sorting the slots across its lanes, then searching the
// sorted lanes for each warp of experts (two chains of dependent shuffles), the routing kernel
// 0.3-0.4 µs shorter at T = 1 under ncu; against the rank, scan and place phases, the layer
// 0.965-0.98x at 48-64 slots (docs/perf.md, thirty-third session).
__device__ void group_few_slots(const RouteArgs& a, const BlockSlots& slots) {
  const int n = a.tokens * a.top_k, tid = threadIdx.x;
  const auto L = static_cast<unsigned>(a.local_experts);
  const auto expert = [&](int s) { return static_cast<unsigned>(slots.local[s]); };  // -1: past L
  const auto key = [](unsigned l, int s) { return l << 16 | static_cast<unsigned>(s); };
  const unsigned mine = tid < n ? expert(tid) : ~0u, my_key = key(mine, tid);
  int ahead = 0, below = 0, total = 0;
#pragma unroll 4
  for (int s = 0; s < n; ++s) {
    const unsigned l = expert(s);
    ahead += key(l, s) < my_key;
    below += l < static_cast<unsigned>(tid);
    total += l < L;
  }
  if (tid < n) store_slot(a, tid, mine < L ? static_cast<int>(mine) : -1, mine < L ? ahead : -1);
  if (tid <= static_cast<int>(L)) a.out.offsets[tid] = below;
  for (int e = tid + static_cast<int>(blockDim.x); e <= static_cast<int>(L); e += blockDim.x) {
    int rows = 0;  // more experts than threads: L = 1024 on a block of 1024 (offsets[L] = total)
    for (int s = 0; s < n; ++s) rows += expert(s) < static_cast<unsigned>(e);
    a.out.offsets[e] = rows;
  }
  clear_tail_rows(a, total, tid, static_cast<int>(blockDim.x));
}

// Every warp takes part in the ranking and the grouping; the first `a.warps` also route (their
// scratch is what fits in shared memory). The others fill the block's share of the silu table
// meanwhile; when every warp routes, all fill it after the routing. A kernel per routing kind
// (kKind = a.kind): at T = 1 the routing is one warp's serial chain through cold code, half of
// whose stalls were instruction fetches, and the other kinds' code between its branches spread
// it over more cache lines; one kind a kernel took the layer 0.98-0.99x its time at T <= 64
// (H100, docs/perf.md, thirty-first session). kFew: a single block of few slots
// (RouteShape::few_slots), grouped by group_few_slots.
template <class Map, RouteKind kKind, bool kFew>
__global__ void __launch_bounds__(kRouteThreads, 1)
    route_kernel(const __grid_constant__ RouteLaunch<Map> launch) {
  const RouteArgs& a = launch.args;
  extern __shared__ __align__(16) std::uint8_t shared[];
  __shared__ bool last;
  const int warp = threadIdx.x / 32;
  const int first_token = blockIdx.x * a.tokens_per_block;
  const int end_token = min(first_token + a.tokens_per_block, a.tokens);
  const BlockSlots slots = block_slots(a, shared, blockIdx.x);
  const int routing_threads = 32 * a.warps, helpers = blockDim.x - routing_threads;
  if (warp < a.warps)
    for (int token = first_token + warp; token < end_token; token += a.warps)
      route_token<kKind>(a, launch.map, scratch_of(a, shared, warp), slots, token);
  else if (a.out.silu_table)
    fill_silu_share(a.out.silu_table, blockIdx.x, gridDim.x, threadIdx.x - routing_threads,
                    helpers);
  __syncthreads();
  if (a.out.silu_table && helpers == 0)
    fill_silu_share(a.out.silu_table, blockIdx.x, gridDim.x, threadIdx.x, blockDim.x);
  if constexpr (kFew) {
    group_few_slots(a, slots);
    return;
  }
  rank_block_slots(a, reinterpret_cast<int*>(shared), slots, first_token, end_token);
  if (gridDim.x == 1) {
    single_block_rows(a, reinterpret_cast<int*>(shared), slots);
    return;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(a.out.ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (a.last_block_places)
    place_every_block(a, first_rows(a, reinterpret_cast<int*>(shared)));
  else
    chunk_rows(a, reinterpret_cast<int*>(shared));
}

// The rows of each local expert in the routing blocks before block b, into `before` [L]: the
// chunks before b's (chunk_counts) and the blocks before b in its chunk (block_counts), every
// count of an expert loaded together.
__device__ void rows_before_block(const RouteArgs& a, int b, int* before) {
  const int L = a.local_experts, chunk = b / kPlaceChunk, first = chunk * kPlaceChunk;
  for (int l = threadIdx.x; l < L; l += blockDim.x) {
    int n[kMaxPlaceChunks + kPlaceChunk - 1];
#pragma unroll
    for (int c = 0; c < kMaxPlaceChunks; ++c)
      n[c] = c < chunk ? __ldcg(a.out.chunk_counts + static_cast<std::size_t>(c) * L + l) : 0;
#pragma unroll
    for (int j = 0; j < kPlaceChunk - 1; ++j)
      n[kMaxPlaceChunks + j] =
          first + j < b ? __ldcg(a.out.block_counts + static_cast<std::size_t>(first + j) * L + l)
                        : 0;
    int rows = 0;
#pragma unroll
    for (int i = 0; i < kMaxPlaceChunks + kPlaceChunk - 1; ++i) rows += n[i];
    before[l] = rows;
  }
  __syncthreads();
}

// After route_kernel when it ran more than one block: block b places routing block b's slots
// (read back from the global arrays route_kernel left). Dynamic shared memory: [L] ints.
__global__ void __launch_bounds__(kPlaceThreads) place_kernel(const __grid_constant__ RouteArgs a) {
  extern __shared__ int before[];
  rows_before_block(a, blockIdx.x, before);
  place_block_slots(a, a.out.offsets, before, global_block_slots(a, blockIdx.x));
  clear_tail_rows(a, a.out.offsets[a.local_experts],
                  static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x),
                  static_cast<int>(gridDim.x * blockDim.x));
}

template <class Map, RouteKind kKind, bool kFew>
cudaError_t launch_route_form(const RouteLaunch<Map>& launch, const RouteShape& shape,
                              cudaStream_t stream) {
  const void* kernel = reinterpret_cast<const void*>(route_kernel<Map, kKind, kFew>);
  if (const cudaError_t err =
          configure_once_per_device(kernel, kMaxRouteShared + kMaxSlotCopyBytes);
      err != cudaSuccess)
    return err;
  route_kernel<Map, kKind, kFew>
      <<<shape.blocks, shape.threads, shape.shared_bytes, stream>>>(launch);
  return cudaGetLastError();
}

template <class Map, RouteKind kKind>
cudaError_t launch_route_kind(const RouteLaunch<Map>& launch, const RouteShape& shape,
                              cudaStream_t stream) {
  return shape.few_slots ? launch_route_form<Map, kKind, true>(launch, shape, stream)
                         : launch_route_form<Map, kKind, false>(launch, shape, stream);
}

template <class Map>
cudaError_t launch_route_kernel(const RouteLaunch<Map>& launch, const RouteShape& shape,
                                cudaStream_t stream) {
  switch (launch.args.kind) {
    case RouteKind::softmax_topk:
      return launch_route_kind<Map, RouteKind::softmax_topk>(launch, shape, stream);
    case RouteKind::sigmoid_grouped_topk:
      return launch_route_kind<Map, RouteKind::sigmoid_grouped_topk>(launch, shape, stream);
    case RouteKind::precomputed:
      return launch_route_kind<Map, RouteKind::precomputed>(launch, shape, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_route(const RouteArgs& given, const std::int32_t* expert_map,
                         const RouteShape& shape, cudaStream_t stream) {
  RouteArgs args = given;
  args.slot_token = FastDiv::of(static_cast<std::uint32_t>(args.top_k));
  args.experts_per_thread = (args.local_experts + shape.threads - 1) / shape.threads;
  if (expert_map) {
    thread_local RouteLaunch<ExpertMap> launch;  // 8 KB: no heap per call
    launch.args = args;
    std::copy(expert_map, expert_map + args.experts, launch.map.local);
    if (const cudaError_t err = launch_route_kernel(launch, shape, stream); err != cudaSuccess)
      return err;
  } else if (const cudaError_t err =
                 launch_route_kernel(RouteLaunch<NoMap>{args, {}}, shape, stream);
             err != cudaSuccess) {
    return err;
  }
  if (shape.blocks == 1 || shape.last_block_places) return cudaGetLastError();
  place_kernel<<<shape.blocks, kPlaceThreads,
                 static_cast<std::size_t>(args.local_experts) * sizeof(int), stream>>>(args);
  return cudaGetLastError();
}

}  // namespace metrale::cuda::moe
