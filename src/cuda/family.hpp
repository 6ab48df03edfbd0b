// The CUDA backend's seam. Every product the backend runs (dense bf16, dense NVFP4, grouped NVFP4)
// arrives as one backend-neutral Problem; kernel families are peers behind one small interface:
//   why_not   -> "" when the family can run the problem, else a message naming the reason;
//   plan      -> the configuration it would launch (a tile, a split), printable;
//   workspace -> the scratch bytes that plan needs;
//   launch    -> stage what it needs into the workspace and launch on the caller's stream;
//   stages_glu_input -> whether its launch can compute a gated input (the MoE layer's activation)
//                while it stages the activations;
//   writes_glu_output -> whether its launch can apply that activation to gate/up's sums.
// The dispatcher (dispatch.cpp) chooses a family per expert row count; the check harness and the
// bench enumerate families and configurations through the same calls (families()).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/config.hpp"
#include "core/workspace.hpp"
#include "cuda/cuda_backend.hpp"
#include "metrale/metrale.hpp"

namespace metrale::cuda {

// One call, in terms every family understands. A single GEMM is a grouped problem with one
// expert owning rows [0, m); a bf16 GEMM has bf16 weights (nvfp4 = false, no scales).
struct Problem {
  const char* op = "";      // the caller's function name, for messages
  bool nvfp4 = true;        // false: weight pointers are bf16 [N, K]
  GroupedNvfp4 args{};      // shapes, pointers (host arrays of device pointers), routing
  GluInput glu{};           // glu.up set: A's rows are act(args.a, up) (stages_glu_input)
  bool glu_output = false;  // out[0] receives act(gate, up) of glu's activation (writes_glu_output)
};

// Rows per expert up to which the dispatcher (dispatch.cpp) gives an expert to the decode family,
// at its narrow widths (8-32 tokens, 4 CTAs an SM); METRALE_CUDA_KERNEL=sm90-decode forces it
// anyway (up to 256 rows read once, more as several token tiles).
inline constexpr std::int32_t kDecodeMaxRows = 32;
// Past kDecodeMaxRows, the decode family's 64-token width (launch bounds of one CTA an SM; an
// expert's weights read once per 64 rows) against the tiled family's 128-token tile, which pads
// 33-64 rows to 128. Measured (docs/perf.md, "2026-12-03, fifth session"): where experts of
// 33-64 rows carry the call, the 64-token decode takes 0.50-0.94x the time (DeepSeek-V3 and
// gpt-oss at 32-48 rows an expert, Qwen3-30B at 32-48, skewed routing at T = 64, a single GEMM
// of 48 or 64 rows). Where many experts pass 64 rows it lost: every expert forced on it, 1.10x
// at 64 rows an expert (Qwen3-30B T = 1024), their second token tile streaming the weights
// again; a decode launch for the 33-64-row experts beside the tiled family's for the busier
// ones, 1.07-1.09x there and 1.12x (Qwen3-Next down at 80 rows an expert). From 96 rows up the
// tiled family's wide tiles win by 1.5-2.2x. So with host offsets the experts past
// kDecodeMaxRows go to the decode family, at most kDecodeWideMaxRows tokens wide, when at most
// one in kDecodeWideTileShare of them passes that width, else to the tiled family.
inline constexpr std::int32_t kDecodeWideMaxRows = 64;
inline constexpr std::int32_t kDecodeWideTileShare = 10;
// Two decode launches (the narrow widths' and the 64-token one) each end in a tail of their own.
// One launch takes both where the narrow experts number at most one in kDecodeOneLaunchShare of
// the busier ones (padded to the 64-token tile), or where the busier experts' token tiles past
// their first at the narrow width (each streaming their weights again) number at most one in
// kDecodeOneLaunchShare of the narrow experts. Measured against two launches in one call
// (docs/perf.md, "2026-12-03, sixth session"): Qwen3-30B T = 768 (1 expert of 128 at most 32
// rows) 0.80x gate_up and 0.85x down on the 64-token tile; Qwen3-Next T = 1024 (3 of 512 past 32
// rows) 0.85x / 0.93x on the 32-token tile; no row of 40 slower than 1.015x.
inline constexpr std::int32_t kDecodeOneLaunchShare = 10;
// Device offsets give one family every expert, chosen by the mean rows an expert: the decode
// family up to this mean (at most kDecodeWideMaxRows wide), the tiled family above.
inline constexpr std::int32_t kDecodeMaxMeanRows = 48;
// The stream family (one launch, weights loaded straight into mma.sync's registers, no pipeline
// to fill) takes a dense bf16 GEMM of up to kStreamMaxBf16Rows rows, and an NVFP4 call whose
// experts all have at most kStreamMaxNvfp4Rows rows (host offsets) or may have (device offsets:
// max_rows_per_expert) when it can run it (its why_not); the other families take the rest.
// Measured on an H100 against the tiled family and cuBLASLt in one call (docs/perf.md,
// twenty-eighth session), dense bf16 of the five presets: at M <= 16 0.49-0.97x the tiled family's
// time and 1.02-1.51x cuBLASLt's speed; at M = 32 (stream_params.hpp's bf16_config) 0.47-0.88x
// the tiled family's time, except Mixtral-8x7B's 1.03x; at M = 64 1.02-2.98x (Qwen3-Next 0.92x),
// so 64 rows stay tiled, small GEMMs aside (below). Its NVFP4 kernel, with teams of warps (H200,
// twenty-ninth session), measured 0.75-1.28x the decode family's time at T <= 8 on the presets,
// faster on 6 of 20 rows, all small calls (Qwen3-30B-A3B and gpt-oss down at T = 1, Qwen3-Next at
// T = 1 and 8) and losing most on the largest (DeepSeek-V3, 1.13-1.20x). So on host offsets it
// takes NVFP4 calls of one row an expert whose weights (codes and scales, 9/16 byte a value, of
// the experts with rows) weigh at most kStreamMaxNvfp4Bytes. Measured on an H100 (docs/perf.md,
// thirtieth session; MiB): at T = 1, 0.85-0.93x the decode family's time on gpt-oss-120b down
// (17.8 MiB), Qwen3-30B-A3B down and Qwen3-Next (2.3-6.8 MiB), 1.01x on Qwen3-30B-A3B gate_up
// (13.5 MiB), 1.09x on gpt-oss gate_up (35.6 MiB).
// On device offsets (the MoE layer's) the decode family plans its work on the device, a plan
// kernel a call, and launches CTAs for every expert the rows could reach, which the stream family
// does not pay. There it takes calls of up to kStreamMaxNvfp4DeviceRows rows an expert whose
// weights, counted for as many experts as the rows could reach, weigh at most
// kStreamMaxNvfp4DeviceProjectionBytes a projection: the same bound for gate/up and down (a
// projection of each is I x H values), so both of a layer's GEMMs go to one family, and down
// never runs on the stream family after gate/up on the decode family, which costs the layer the
// activation launch that down's decode staging saves. Measured on an H100, the layer with both
// GEMMs on the stream family over the dispatcher's choice before (docs/perf.md, thirty-third
// session; MiB a projection): Qwen3-30B-A3B at T = 2 / 3 / 4 (14 / 20 / 27 MiB) 0.81 / 0.93 /
// 0.96x, Qwen3-Next 0.82 / 0.94-0.96 / 0.92x (11 / 17 / 23), gpt-oss-120b at T = 2 (35.6 MiB)
// 0.89x; at T = 4 (71 MiB) 1.04x, DeepSeek-V3 at T = 1 (63 MiB) 1.14x; at T = 8 1.05x (Qwen3-Next,
// 45 MiB) and 1.10x (Qwen3-30B, 54 MiB). Down alone on it, after gate/up on the decode
// family: 1.10x on Qwen3-30B at T = 4, 1.02-1.04x on gpt-oss at T = 3 and 4, 1.09x on DeepSeek-V3
// at T = 1.
inline constexpr std::int32_t kStreamMaxBf16Rows = 32;
// Past kStreamMaxBf16Rows, up to the stream family's 64 rows, a small dense GEMM is a latency
// problem: the stream family's 64 x 16 configuration (one pass over the weights, all 64 tokens of
// a weight row at once, no pipeline to fill) takes one whose CTAs (16 weight rows each) fit one
// to an SM and stream at most kStreamSmallBf16CtaBytes of weights each (K <= 2048). H100, one call
// (docs/perf.md, forty-seventh session), over the tiled family's choice at M = 33-64, 2 rounds:
// Qwen3-30B (N x K = 1536 x 2048, 96 CTAs) 0.83-0.96x, Qwen3-Next (1024 x 2048) 0.83-0.96x,
// 2048 x 1024 0.76-0.89x, 2112 x 1536 (132 CTAs) 0.77-0.97x; past the CTA bytes it lost, 1024 x
// 4096 (128 KiB a CTA) 1.09-1.16x and 512 x 8192 1.35-1.50x, and past one CTA an SM, 3072 x 2048
// 1.13-1.44x, gpt-oss, DeepSeek-V3 and Mixtral 1.19-2.18x.
inline constexpr std::int32_t kStreamMaxSmallBf16Rows = 64;
inline constexpr std::int64_t kStreamSmallBf16CtaBytes = std::int64_t{64} << 10;
inline constexpr std::int32_t kStreamMaxNvfp4Rows = 1;
inline constexpr std::int64_t kStreamMaxNvfp4Bytes = std::int64_t{24} << 20;
inline constexpr std::int32_t kStreamMaxNvfp4DeviceRows = 4;
inline constexpr std::int64_t kStreamMaxNvfp4DeviceProjectionBytes = std::int64_t{40} << 20;

// Expert row counts a launch covers: experts whose rows fall outside are left to another family.
struct RowWindow {
  std::int32_t min_rows = 1;
  std::int32_t max_rows = INT32_MAX;
  bool contains(std::int32_t rows) const { return rows >= min_rows && rows <= max_rows; }
};

// fn(expert, rows) for each expert of a host-offset call whose row count falls in `window`
// (experts without rows never do), in expert order.
template <class Fn>
void for_each_in_window(const ExpertGroups& groups, RowWindow window, Fn&& fn) {
  for (int e = 0; e < groups.num_experts; ++e) {
    const std::int32_t rows = groups.offsets[e + 1] - groups.offsets[e];
    if (rows > 0 && window.contains(rows)) fn(e, rows);
  }
}

// The experts of a host-offset call whose row counts fall in `window` (experts without rows never
// do): how many, their rows in all, and the largest.
struct WindowRows {
  std::int32_t experts = 0;
  long rows = 0;
  std::int32_t largest = 0;
};
WindowRows rows_in_window(const ExpertGroups& groups, RowWindow window);
// The same where the offsets may live on the device: counted on host offsets; on device offsets
// (counts unknown here) bounds: no more experts than group rows, all the group rows, and the
// caller's max_rows_per_expert within the window's.
WindowRows rows_held(const ExpertGroups& groups, RowWindow window);
// Token tiles of `tokens` rows that the experts in `window` take (host offsets).
long row_tiles_in_window(const ExpertGroups& groups, RowWindow window, int tokens);
// Whether at most one in kDecodeWideTileShare of the experts in `window` (`in_window` of them,
// rows_in_window's count) has more than `width` rows: the rule for a token tile's width, the
// others fitting one tile (host offsets).
bool few_pass_width(const ExpertGroups& groups, RowWindow window, std::int32_t in_window,
                    int width);

// P(X > rows) for X ~ Poisson(mean): the share of experts past `rows` rows when the row counts are
// unknown (device offsets) and routing spreads m_total rows over the experts evenly at random.
double poisson_tail(double mean, int rows);

// What a family would launch. `config` indexes the family's configuration table; `splits` is the
// decode family's K split (0: chosen on the device to fill the GPU).
struct Plan {
  std::int32_t config = 0;
  std::int32_t splits = 0;
  RowWindow rows{};
  // The decode family: the launch before this one in the call was the decode family's too and
  // left the call's staged activations in the workspace (the same layout), so this one does not
  // copy them again.
  bool input_staged = false;
  // The tiled family: a dense bf16 GEMM whose stages TMA copies (sm90/tiled/tma_stages.cuh) ...
  bool tma = false;
  // ... shared out by stream-K where the tile has it (sm90/tiled/stream_k_kernel.cuh): 0 not,
  // else the CTAs of a stream-K worker (1, or a cluster of 2 sharing their weight rows).
  int stream_k = 0;
};

class Family {
 public:
  virtual ~Family() = default;
  virtual const char* name() const = 0;
  virtual int config_count() const = 0;
  virtual std::string describe(const Plan& plan) const = 0;
  // "" when this family can run `problem`, else why not (naming the values).
  virtual std::string why_not(const Problem& problem) const = 0;
  // The configuration the family picks for the experts in `rows`.
  virtual Plan plan(const Problem& problem, RowWindow rows) const = 0;
  virtual std::size_t workspace_bytes(const Problem& problem, const Plan& plan) const = 0;
  virtual void launch(const Problem& problem, const Plan& plan, core::Buffer ws,
                      cudaStream_t stream) const = 0;
  // Whether `plan`'s launch computes a gated input (Problem::glu) while it stages the activations,
  // at no extra workspace. A family that does not stage them would need the activation rows
  // written first, so it is never given a problem with glu set.
  virtual bool stages_glu_input(const Plan&) const { return false; }
  // Whether `plan`'s launch writes act(gate, up) of gate/up's sums (Problem::glu_output) into
  // out[0]. A family that does not is never given a problem with glu_output set.
  virtual bool writes_glu_output(const Plan&) const { return false; }
};

// Every family built into this library, in dispatch order of preference.
std::span<const Family* const> families();
// The family named `name`, or null.
const Family* find_family(std::string_view name);

// The current device's multiprocessor count and L2 size in bytes (cached per device).
int device_sm_count();
long device_l2_bytes();

// Whether every expert's block-scale pointer is a multiple of `bytes` (16: vector loads of
// [K/16, N] rows; 4: the stream family's 4-byte copies).
bool scales_aligned(const Problem& problem, std::size_t bytes);

// Whether the weights are prepacked (format/prepack.hpp's bits; each family decodes both
// layouts).
inline bool prepacked(const GroupedNvfp4& args) {
  return args.weight_layout == WeightLayout::prepacked;
}
// Whether prepacked weights are also in the fragment order (format/fragment_order.hpp; the
// default, the halves alone under METRALE_PREPACKED_LAYOUT=halves): both families read it (not
// the tiled family's decoder-warpgroup tiles), the decode family with its activations staged in
// natural K order.
inline bool fragment_order(const GroupedNvfp4& args) {
  return prepacked(args) && core::prepacked_layout() == core::PrepackedLayout::fragments;
}

// Function attributes (dynamic shared memory) are per device: a kernel configured on device 0 is
// not configured on device 1. Runs `configure` once per (kernel, device).
cudaError_t configure_once_per_device(const void* kernel, int shared_bytes);

}  // namespace metrale::cuda
