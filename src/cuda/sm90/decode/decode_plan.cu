// The decode family's plan kernels: everything the main kernel reads, written into the workspace
// in one launch, from the host arrays they carry as parameters or from device offsets:
//   - the expert table: its first chunk (kTableChunk experts with host offsets, kWideTableChunk
//     with device offsets; later chunks: stage_tables);
//   - the work list (CTA 0): one Segment per expert with rows in the window, the unit prefix, the
//     split that fills the GPU;
//   - (the other CTAs) the split tiles' counters zeroed, and the activations, gathered per group
//     row and put in decode K order (format::decode_k_source), so the main kernel copies
//     contiguous rows; with a gated input (PlanShape::glu, the MoE layer's down) each value is
//     act(gate, up), computed here instead of in an activation kernel. A call's second decode
//     launch finds them staged by the first (PlanShape::act_staged) and copies nothing.
// No host synchronisation: a graph replay re-plans from whatever offsets the device holds.
// A host-planned launch (HostWork) runs the staging kernel instead: counters and activations only.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/silu_table.cuh"
#include "cuda/sm90/decode/decode_plan.hpp"
#include "cuda/stage/stage_tables.hpp"
#include "format/bf16.hpp"
#include "format/layouts.hpp"
#include "format/moe_math.hpp"

namespace metrale::cuda::sm90::decode {
namespace {

// CTA 0 plans kItems consecutive experts per thread (a blocked arrangement, so block-wide sums run
// in expert order): the fewest that cover the launch's experts. Sized for kMaxExperts always, the
// plan's per-expert integer work (chunk sizes, divisions, scans of 8 items) made the plan kernel
// ~10 us at T = 1, as long as the GEMM it plans (docs/perf.md).
constexpr int kMaxItems = kMaxExperts / kPlanThreads;
static_assert(kMaxItems * kPlanThreads == kMaxExperts, "experts split evenly over the threads");

int items_for(int experts) {
  int items = 1;
  while (items < kMaxItems && items * kPlanThreads < experts) items *= 2;
  return items;
}

// Each expert's first row (the offsets, clamped into [0, m_total]: device offsets are not
// validated) and row count into shared memory.
__device__ void stage_row_counts(int experts, const std::int32_t* begin, std::int32_t* rows) {
  for (int e = threadIdx.x; e < experts; e += blockDim.x)
    rows[e] = max(begin[e + 1] - begin[e], 0);
  __syncthreads();
}

// Host offsets sit in the parameter block, where loads of different addresses by one warp are
// serialised: they are read 16 bytes at a time.
__device__ void stage_rows(const PlanArgs& a, std::int32_t* begin, std::int32_t* rows) {
  const int experts = a.shape.tables.num_experts, count = experts + 1;
  const int m_total = a.shape.m_total;
  const auto* wide = reinterpret_cast<const uint4*>(a.offsets.values);
  for (int i = threadIdx.x; i < (count + 3) / 4; i += blockDim.x) {
    const uint4 v = wide[i];
    const std::int32_t four[4] = {static_cast<std::int32_t>(v.x), static_cast<std::int32_t>(v.y),
                                  static_cast<std::int32_t>(v.z), static_cast<std::int32_t>(v.w)};
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (4 * i + j < count) begin[4 * i + j] = min(max(four[j], 0), m_total);
  }
  __syncthreads();
  stage_row_counts(experts, begin, rows);
}

__device__ void stage_rows(const DevicePlanArgs& a, std::int32_t* begin, std::int32_t* rows) {
  const int experts = a.shape.tables.num_experts, m_total = a.shape.m_total;
  for (int i = threadIdx.x; i <= experts; i += blockDim.x)
    begin[i] = min(max(__ldg(a.offsets + i), 0), m_total);
  __syncthreads();
  stage_row_counts(experts, begin, rows);
}

struct Larger {
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};

// The most chunks an expert of the launch's window takes (the host plan's rule: experts outside
// the window are not this launch's, whatever their chunks).
template <int kItems>
__device__ __forceinline__ int max_chunks(const PlanShape& a, const int (&rows)[kItems],
                                          const int (&active)[kItems]) {
  using MaxReduce = cub::BlockReduce<int, kPlanThreads>;
  __shared__ typename MaxReduce::TempStorage storage;
  __shared__ int result;
  int mine = 1;
#pragma unroll
  for (int j = 0; j < kItems; ++j)
    if (active[j]) mine = max(mine, chunk_count(rows[j], a.k_tiles));
  const int block_max = MaxReduce(storage).Reduce(mine, Larger{});
  if (threadIdx.x == 0) result = block_max;
  __syncthreads();
  return result;
}

// CTA 0: the work list. Experts are taken in order, kItems consecutive ones per thread, so
// block-wide exclusive sums give each expert its first tile, unit and partial slot.
template <int kItems>
__device__ void plan_work(const PlanShape& a, int experts, const std::int32_t* first_row,
                          const std::int32_t* row_count) {
  using IntScan = cub::BlockScan<int, kPlanThreads>;
  using LongScan = cub::BlockScan<long long, kPlanThreads>;
  __shared__ union {
    typename IntScan::TempStorage ints;
    typename LongScan::TempStorage longs;
  } scan;
  int rows[kItems], begin[kItems], tiles[kItems], active[kItems];
  const int first = threadIdx.x * kItems;
  const int tiles_per_token_tile = a.proj_count * a.n_tiles;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int e = first + j;
    rows[j] = begin[j] = 0;
    if (e < experts) {
      begin[j] = first_row[e];
      rows[j] = row_count[e];
    }
    active[j] = rows[j] > 0 && rows[j] >= a.min_rows && rows[j] <= a.max_rows;
    tiles[j] = active[j] ? output_tiles(rows[j], a.tokens, tiles_per_token_tile) : 0;
  }
  int tile_first[kItems], segment_index[kItems], total_tiles, total_segments;
  IntScan(scan.ints).ExclusiveSum(tiles, tile_first, total_tiles);
  __syncthreads();
  IntScan(scan.ints).ExclusiveSum(active, segment_index, total_segments);
  __syncthreads();
  const int splits = choose_splits(total_tiles, max_chunks(a, rows, active), a.grid,
                                   a.split_capacity, a.forced_splits);
  ExpertWork work[kItems];
  int units[kItems];
  long long partials[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    work[j] = expert_work(rows[j], a.tokens, a.unit_rows, tiles_per_token_tile, a.k_tiles, splits);
    units[j] = active[j] ? work[j].units : 0;
    partials[j] = active[j] ? work[j].partials : 0;
  }
  int unit_first[kItems], total_units;
  long long partial_first[kItems], total_partials;
  IntScan(scan.ints).ExclusiveSum(units, unit_first, total_units);
  __syncthreads();
  LongScan(scan.longs).ExclusiveSum(partials, partial_first, total_partials);
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (!active[j]) continue;
    const int s = segment_index[j];
    a.segments[s] =
        segment_of(first + j, begin[j], rows[j], work[j], tile_first[j], partial_first[j]);
    a.unit_first[s] = unit_first[j];
  }
  if (threadIdx.x == 0) {
    a.unit_first[total_segments] = total_units;
    *a.totals = PlanTotals{total_segments, total_units};
  }
}

// How a plan kernel stages the activations: copied (gathered when token ids are given), or
// computed from a gated input (PlanShape::glu). A template parameter, not a branch: the gated
// staging's registers would otherwise change how ptxas allocates the copying kernels' planning.
// The _natural forms keep K in its natural order, for weights in the fragment order
// (format/fragment_order.hpp: each thread's codes are its fragment pairs in that order).
enum class Staging { copy, glu, copy_natural, glu_natural };
constexpr bool gated(Staging s) {
  return s == Staging::glu || s == Staging::glu_natural;
}
constexpr bool natural(Staging s) {
  return s == Staging::copy_natural || s == Staging::glu_natural;
}

// The bf16 at column `k` (0..63) of a k-tile whose 32 words are `words`.
__device__ std::uint16_t tile_value(const std::uint32_t* words, int k) {
  return static_cast<std::uint16_t>(words[k / 2] >> (16 * (k % 2)));
}

// Output piece `piece` of a k-tile (decode columns 8·piece .. +7) from its source words in
// shared memory: copied (each bf16 pair from the two words that hold its sources), or each value
// act(gate, up) of its source column, zero past K (`valid` columns of the tile hold values).
template <Staging kStaging>
__device__ uint4 build_piece(const PlanShape& a, const std::uint32_t* gate, const std::uint32_t* up,
                             int piece, int valid) {
  std::uint32_t out[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    // In natural order but for a row's K % 64 tail (fewer valid columns), which the fragment
    // order keeps in the halves' layout and so the decode order (format/fragment_order.hpp).
    const bool in_order = natural(kStaging) && valid == kKTile;
    const int s0 = in_order ? 8 * piece + 2 * q : format::decode_k_source(8 * piece + 2 * q);
    const int s1 =
        in_order ? 8 * piece + 2 * q + 1 : format::decode_k_source(8 * piece + 2 * q + 1);
    if (kStaging == Staging::copy_natural && in_order) {
      out[q] = gate[s0 / 2];
    } else if constexpr (kStaging == Staging::copy || kStaging == Staging::copy_natural) {
      constexpr int kLowHalf = 0x10, kHighHalf = 0x32;  // byte selectors of a bf16 in a word
      const int selector =
          (s0 % 2 ? kHighHalf : kLowHalf) | ((s1 % 2 ? kHighHalf : kLowHalf) + 0x44) << 8;
      out[q] = __byte_perm(gate[s0 / 2], gate[s1 / 2], selector);
    } else {
      const std::uint32_t low =
          s0 < valid ? glu_value(a.glu, tile_value(gate, s0), tile_value(up, s0)) : 0;
      const std::uint32_t high =
          s1 < valid ? glu_value(a.glu, tile_value(gate, s1), tile_value(up, s1)) : 0;
      out[q] = low | high << 16;
    }
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// Staging piece `i` (kPiecesPerKTile pieces a k-tile, `tiles` k-tiles a row): its group row (the
// token ids give its source row) and the first K column of its k-tile, in the source and the
// output alike.
struct PiecePlace {
  int row, k0;
};
__device__ PiecePlace place_of(int i, int tiles) {
  const int group = i / kPiecesPerKTile;
  return {group / tiles, group % tiles * kKTile};
}

// The activations' staging, piece `i` (decode columns 8·(i % 8) .. +7 of group row i / 8 / tiles's
// k-tile i / 8 % tiles), kBatch a thread (the plan grid's share). A warp's 32
// consecutive pieces are four k-tiles (the loop's pieces start at multiples of 32, so a k-tile's
// eight pieces share a warp): each lane loads the source piece at its own place (gate and up with
// a gated input), 512 contiguous bytes a warp where the rows are, puts it in shared memory, and
// builds its output piece from its k-tile's words there (format::decode_k_source). Loads and
// stores are whole lines. Past K (the last k-tile when K % 64 == 32) or for a row without a
// source, zeros. One thread a k-tile stored 16 bytes 128 apart per instruction, half sectors:
// the plan kernel of Qwen3-30B gate_up at T = 512 spent ~23 us on its 16.8 MB with L2 at 65 % of
// its throughput, ~11 us this way; its gated staging (the layer's down), which loaded single
// bf16s, ~19 us, ~16 (docs/perf.md).
// items < 2^31: the copy is at most kDecodeActivationBudget (256 MB) of 128-byte k-tiles, so at
// most 2^21 k-tiles and 2^24 pieces.
template <Staging kStaging>
__device__ void stage_activations(const PlanShape& a, int thread, int threads) {
  constexpr bool kGated = gated(kStaging);
  constexpr int kBatch = staging_batch(kGated);
  __shared__ uint4 staged[kGated ? 2 : 1][kPlanThreads];
  const int tiles = act_stride(a.k) / kKTile;
  const int items = a.m_total * tiles * kPiecesPerKTile;
  const int piece = threadIdx.x % kPiecesPerKTile;
  const auto* gate = reinterpret_cast<const std::uint32_t*>(&staged[0][threadIdx.x - piece]);
  const auto* up = reinterpret_cast<const std::uint32_t*>(&staged[kGated][threadIdx.x - piece]);
  for (int first = thread; first - static_cast<int>(threadIdx.x % 32) < items;
       first += kBatch * threads) {
    PiecePlace place[kBatch];
    int src[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int i = first + b * threads;
      place[b] = place_of(i, tiles);
      src[b] = i >= items ? -1 : a.token_ids ? __ldg(a.token_ids + place[b].row) : place[b].row;
      if (a.a_rows > 0 && src[b] >= a.a_rows) src[b] = -1;  // reads as zeros
    }
    uint4 in[kBatch], in_up[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int k0 = place[b].k0;
      const bool present = src[b] >= 0 && k0 + 8 * piece < a.k;
      const std::size_t at = static_cast<std::size_t>(max(src[b], 0)) * a.k + k0;
      const uint4 zero = make_uint4(0, 0, 0, 0);
      in[b] = present ? __ldg(reinterpret_cast<const uint4*>(a.a + at) + piece) : zero;
      if constexpr (kGated)
        in_up[b] = present ? __ldg(reinterpret_cast<const uint4*>(a.glu.up + at) + piece) : zero;
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      staged[0][threadIdx.x] = in[b];
      if constexpr (kGated) staged[1][threadIdx.x] = in_up[b];
      __syncwarp();
      const int valid = src[b] < 0 ? 0 : min(kKTile, a.k - place[b].k0);
      const uint4 out = build_piece<kStaging>(a, gate, up, piece, valid);
      __syncwarp();
      if (first + b * threads >= items) continue;
      auto* to = reinterpret_cast<uint4*>(
          a.act + static_cast<std::size_t>(place[b].row) * act_stride(a.k) + place[b].k0);
      to[piece] = out;
    }
  }
}

// Counters, activations: spread over the CTAs from `first_cta` on.
template <Staging kStaging>
__device__ void stage_rest(const PlanShape& a, int first_cta) {
  if (static_cast<int>(blockIdx.x) < first_cta) return;
  const int thread = (blockIdx.x - first_cta) * blockDim.x + threadIdx.x;
  const int threads = (gridDim.x - first_cta) * blockDim.x;
  for (int i = thread; i < a.split_capacity; i += threads) a.counters[i] = 0;
  if (!a.act_staged) stage_activations<kStaging>(a, thread, threads);
}

template <int kItems, class Args>
__device__ void plan_on_cta0(const Args& a, int experts) {
  __shared__ std::int32_t first_row[kMaxExperts + 1], row_count[kMaxExperts];
  stage_rows(a, first_row, row_count);
  plan_work<kItems>(a.shape, experts, first_row, row_count);
}

// PlanArgs or DevicePlanArgs: the offsets and the table's first chunk travel with the launch.
template <int kItems, Staging kStaging, class Args>
__global__ void __launch_bounds__(kPlanThreads) plan_kernel(const __grid_constant__ Args a) {
  // The main kernel may start launching now; it waits for this grid's writes before reading.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if (blockIdx.x == 0) plan_on_cta0<kItems>(a, a.shape.tables.num_experts);
  copy_table_chunk(a.chunk, a.shape.tables, blockIdx.x * blockDim.x + threadIdx.x,
                   gridDim.x * blockDim.x);
  // The other CTAs stage while CTA 0 plans (its scans and the staging's dependent loads, token
  // id then row, no longer add up at T = 1); CTA 0 stages too when it is alone.
  stage_rest<kStaging>(a.shape, gridDim.x > 1 ? 1 : 0);
}

// A host-planned launch (HostWork): the main kernel carries its work list and table, so only the
// counters and the activations are left, spread over every CTA.
template <Staging kStaging>
__global__ void __launch_bounds__(kPlanThreads)
    staging_kernel(const __grid_constant__ PlanShape a) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  stage_rest<kStaging>(a, 0);
}

// Calls fn.template operator()<kItems, kStaging>() with the items per thread for `experts` (one
// instantiation per power of two up to kMaxItems) and the staging `shape` asks for.
template <Staging kStaging, class Fn>
void with_items_staging(int experts, Fn& fn) {
  static_assert(kMaxItems == 8, "one case per power of two up to kMaxItems");
  switch (items_for(experts)) {
    case 1: fn.template operator()<1, kStaging>(); break;
    case 2: fn.template operator()<2, kStaging>(); break;
    case 4: fn.template operator()<4, kStaging>(); break;
    default: fn.template operator()<8, kStaging>(); break;
  }
}

// Calls fn.template operator()<kStaging>() with the staging `shape` and `natural_k` ask for.
template <class Fn>
cudaError_t with_staging(const PlanShape& shape, bool natural_k, Fn&& fn) {
  const bool glu = shape.glu.up != nullptr;
  if (glu && !natural_k)
    fn.template operator()<Staging::glu>();
  else if (!natural_k)
    fn.template operator()<Staging::copy>();
  else if (glu)
    fn.template operator()<Staging::glu_natural>();
  else
    fn.template operator()<Staging::copy_natural>();
  return cudaGetLastError();
}

template <class Fn>
cudaError_t with_items(const PlanShape& shape, int experts, bool natural_k, Fn&& fn) {
  return with_staging(shape, natural_k,
                      [&]<Staging kStaging>() { with_items_staging<kStaging>(experts, fn); });
}

}  // namespace

cudaError_t launch_plan(const PlanArgs& args, bool natural_k, int grid, cudaStream_t stream) {
  return with_items(
      args.shape, args.shape.tables.num_experts, natural_k, [&]<int kItems, Staging kStaging>() {
        plan_kernel<kItems, kStaging, PlanArgs><<<grid, kPlanThreads, 0, stream>>>(args);
      });
}

cudaError_t launch_plan(const DevicePlanArgs& args, bool natural_k, int grid, cudaStream_t stream) {
  return with_items(
      args.shape, args.shape.tables.num_experts, natural_k, [&]<int kItems, Staging kStaging>() {
        plan_kernel<kItems, kStaging, DevicePlanArgs><<<grid, kPlanThreads, 0, stream>>>(args);
      });
}

cudaError_t launch_staging(const PlanShape& shape, bool natural_k, int grid, cudaStream_t stream) {
  return with_staging(shape, natural_k, [&]<Staging kStaging>() {
    staging_kernel<kStaging><<<grid, kPlanThreads, 0, stream>>>(shape);
  });
}

}  // namespace metrale::cuda::sm90::decode
