// The CUDA backend's dispatcher: turns each API call into a Problem, gives its experts to kernel
// families by row count (the decode family streams experts with up to kDecodeMaxRows rows, and
// in a launch of its own at a wider tile the busier ones when few pass kDecodeWideMaxRows, or in
// one launch with them where either group is small beside the other; the tiled family takes the
// rest and the larger bf16 GEMMs; with device offsets one family takes every expert, chosen by the
// mean row count, the decode family in two launches by window where the row model expects both
// windows well filled), sizes the workspace as the largest of the launches it will make (they run
// one after another on the caller's stream, so they share it) and launches. Few rows
// (kStreamMaxBf16Rows, kStreamMaxNvfp4Rows, kStreamMaxNvfp4DeviceRows) go to the stream family.
// METRALE_CUDA_KERNEL overrides the choice for tuning and tests. A gated input
// (nvfp4_grouped_on_glu) runs only when every chosen launch stages it; else nothing launches.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/config.hpp"
#include "core/error.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/family.hpp"
#include "cuda/per_device.hpp"
#include "cuda/require_device.hpp"
#include "cuda/sm90/decode/decode_params.hpp"
#include "cuda/sm90/stream/stream_params.hpp"
#include "cuda/stage/expert_table.hpp"

namespace metrale::cuda {

namespace sm90 {
const Family& tiled_family();
namespace decode {
const Family& decode_family();
}
namespace stream {
const Family& stream_family();
}
}  // namespace sm90

namespace {

// The decode family copies the call's activations (gathered, in its K order) into the workspace;
// past this size the call is a prefill and the tiled family takes every expert.
// 256 MB lets DeepSeek-V3's gate/up (K = 7168) stay on the decode family up to T ~ 2300 tokens:
// at T = 1280 and 1536 (147 and 176 MB) it took 0.66-0.68x the tiled family's time (docs/perf.md,
// "2026-12-03, sixth session").
constexpr std::size_t kDecodeActivationBudget = std::size_t{256} << 20;

struct Launch {
  const Family* family;
  Plan plan;
};

// Whether any expert's row count falls in `window` (host offsets).
bool has_rows_in(const GroupedNvfp4& a, RowWindow window) {
  return rows_in_window(a.groups, window).experts > 0;
}

Launch forced_launch(const Problem& problem, const core::ForcedKernel& forced) {
  const Family* family = find_family(forced.family);
  if (family == nullptr) {
    std::string names;
    for (const Family* f : families())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", f->name());
    fail(Status::invalid_argument, "METRALE_CUDA_KERNEL names family '{}', expected one of {}",
         forced.family, names);
  }
  if (const std::string why = family->why_not(problem); !why.empty())
    fail(Status::unsupported, "{}: METRALE_CUDA_KERNEL = {} cannot run this call: {}", problem.op,
         family->name(), why);
  Plan plan = family->plan(problem, RowWindow{});
  if (forced.config >= family->config_count())
    fail(Status::invalid_argument,
         "METRALE_CUDA_KERNEL: configuration {} of {}, expected an index in [0, {})",
         forced.config, family->name(), family->config_count());
  // A forced configuration runs as given (its own split, or none); the family's own choice keeps
  // the split its plan chose unless one is forced.
  if (forced.config >= 0) {
    plan.config = forced.config;
    plan.splits = forced.splits;
  } else if (forced.splits > 0) {
    plan.splits = forced.splits;
  }
  return {family, plan};
}

// The decode family runs when it can and when its activation copy stays small.
bool decode_takes(const Problem& problem) {
  const GroupedNvfp4& a = problem.args;
  const std::size_t copy =
      static_cast<std::size_t>(a.groups.m_total) * sm90::decode::act_stride(a.k) * 2;
  if (copy > kDecodeActivationBudget) return false;
  return sm90::decode::decode_family().why_not(problem).empty();
}

// A decode launch for the experts in `window`, its token tile at most kDecodeWideMaxRows wide (a
// busier expert takes several tiles).
Launch decode_launch(const Problem& problem, RowWindow window) {
  const Family& decode = sm90::decode::decode_family();
  Plan plan = decode.plan(problem, window);
  if (sm90::decode::config_tokens(plan.config) > kDecodeWideMaxRows)
    plan.config = sm90::decode::width_config(kDecodeWideMaxRows);
  return {&decode, plan};
}

// The decode family's two row windows: the narrow experts, and the busier ones (at most
// kDecodeWideMaxRows tokens wide when they take a launch of their own).
constexpr RowWindow kNarrowRows{1, kDecodeMaxRows}, kBusierRows{kDecodeMaxRows + 1};

// The busier experts' decode launch; `after_narrow`: it follows the narrow experts' launch, whose
// plan kernel staged every row of the call, and reads those activations (Plan::input_staged).
Launch busier_launch(const Problem& problem, bool after_narrow) {
  Launch busier = decode_launch(problem, kBusierRows);
  busier.plan.input_staged = after_narrow;
  return busier;
}

// The window rules, on expert counts that host offsets count and device offsets expect
// (family.hpp): the busier experts fit the wide tile when few pass it; one window is small beside
// the other when it holds at most one in kDecodeOneLaunchShare of the other's.
bool wide_tile_fits(double past_wide, double busier) {
  return past_wide * kDecodeWideTileShare <= busier;
}
bool small_beside(double small, double other) {
  return small * kDecodeOneLaunchShare <= other;
}

// Device offsets: whether host offsets' rules (the busier experts fit the wide tile, and neither
// window is small beside the other) pick two launches for the experts' expected counts, an
// expert's rows ~ Poisson(m_total / experts) (the model the decode width uses). A narrow tile is at
// most 32 wide, so each busier expert takes one token tile more there: their count is also the
// extra tiles of one_decode_launch's second rule.
bool both_windows_expected(const ExpertGroups& g) {
  if (g.max_rows_per_expert <= kDecodeMaxRows) return false;
  const double mean = static_cast<double>(g.m_total) / g.num_experts;
  const double few = g.num_experts * (poisson_tail(mean, 0) - poisson_tail(mean, kDecodeMaxRows));
  const double busier = g.num_experts * poisson_tail(mean, kDecodeMaxRows);
  const double past_wide = g.num_experts * poisson_tail(mean, kDecodeWideMaxRows);
  return wide_tile_fits(past_wide, busier) && !small_beside(few, busier) &&
         !small_beside(busier, few);
}

// Device offsets: the row counts are unknown here, only their total (m_total, a bound) and the
// largest expert's bound. Splitting by the bound would launch both families whenever it passes
// 32 rows (the MoE layer's bound is T), each family mostly idle, and size the decode tiles for
// the bound. The mean decides instead: up to kDecodeMaxMeanRows rows an expert on average, the
// decode family takes every expert, its token tile sized by the expected row tail
// (decode_family.cpp), in one launch or, where both windows are expected well filled, two;
// past it, the tiled family takes them all.
std::vector<Launch> choose_for_device_offsets(const Problem& problem) {
  const ExpertGroups& g = problem.args.groups;
  const std::int64_t mean = (std::int64_t{g.m_total} + g.num_experts - 1) / g.num_experts;
  if (mean <= kDecodeMaxMeanRows && decode_takes(problem)) {
    if (both_windows_expected(g))
      return {decode_launch(problem, kNarrowRows), busier_launch(problem, true)};
    return {decode_launch(problem, RowWindow{})};
  }
  const Family& tiled = sm90::tiled_family();
  if (const std::string why = tiled.why_not(problem); !why.empty())
    fail(Status::unsupported, "{}: {}", problem.op, why);
  return {{&tiled, tiled.plan(problem, RowWindow{})}};
}

// One decode launch for both windows where it pays (family.hpp, kDecodeOneLaunchShare): at the
// 64-token width when the narrow experts are few beside the busier ones; at the narrow launch's
// width (`narrow`, the few window's plan) when the token tiles the busier experts take there past
// their first (each streams their weights again) are few beside the narrow experts.
std::optional<Launch> one_decode_launch(const Problem& problem, const Launch& narrow,
                                        const WindowRows& few_rows, const WindowRows& busier_rows) {
  if (small_beside(few_rows.experts, busier_rows.experts))
    return decode_launch(problem, RowWindow{});
  const int width = sm90::decode::config_tokens(narrow.plan.config);
  const long again =
      row_tiles_in_window(problem.args.groups, kBusierRows, width) - busier_rows.experts;
  if (!small_beside(again, few_rows.experts)) return std::nullopt;
  Launch both = narrow;
  both.plan.rows = RowWindow{};
  return both;
}

// A dense bf16 GEMM of up to kStreamMaxSmallBf16Rows rows whose stream grid (16 weight rows a
// CTA) fits one CTA to an SM, each CTA's weights small (family.hpp).
bool small_bf16_gemm(const Problem& problem) {
  const GroupedNvfp4& a = problem.args;
  constexpr int kCtaRows = sm90::stream::kSmallGemmRowsPerCta;
  return a.groups.m_total <= kStreamMaxSmallBf16Rows &&
         std::int64_t{kCtaRows} * a.k * 2 <= kStreamSmallBf16CtaBytes &&
         (a.n + kCtaRows - 1) / kCtaRows <= device_sm_count();
}

bool stream_can_run(const Problem& problem) {
  return sm90::stream::stream_family().why_not(problem).empty();
}

// Few rows are a weight stream: the stream family's one launch, for a dense bf16 GEMM of at most
// kStreamMaxBf16Rows rows, or an NVFP4 call whose experts have at most kStreamMaxNvfp4Rows rows
// each and whose weights weigh at most kStreamMaxNvfp4Bytes (host offsets), or may have at most
// kStreamMaxNvfp4DeviceRows (device offsets: the caller's bound) with at most
// kStreamMaxNvfp4DeviceProjectionBytes a projection (family.hpp).
bool stream_takes(const Problem& problem) {
  const ExpertGroups& g = problem.args.groups;
  if (!problem.nvfp4)
    return (g.m_total <= kStreamMaxBf16Rows || small_bf16_gemm(problem)) && stream_can_run(problem);
  const WindowRows held = rows_held(g, RowWindow{});  // experts that may have rows, the most
  const std::int64_t projection_bytes =
      std::int64_t{held.experts} * problem.args.n * problem.args.k * 9 / 16;
  const bool small = g.offsets_on_device
                         ? held.largest <= kStreamMaxNvfp4DeviceRows &&
                               projection_bytes <= kStreamMaxNvfp4DeviceProjectionBytes
                         : held.largest <= kStreamMaxNvfp4Rows &&
                               projection_bytes * problem.args.proj_count <= kStreamMaxNvfp4Bytes;
  return small && stream_can_run(problem);
}

std::vector<Launch> choose(const Problem& problem) {
  if (const auto forced = core::forced_cuda_kernel()) return {forced_launch(problem, *forced)};
  if (stream_takes(problem)) {
    const Family& stream = sm90::stream::stream_family();
    return {{&stream, stream.plan(problem, RowWindow{})}};
  }
  if (problem.args.groups.offsets_on_device) return choose_for_device_offsets(problem);
  std::vector<Launch> launches;
  RowWindow rest{};
  if (decode_takes(problem)) {
    const WindowRows few_rows = rows_in_window(problem.args.groups, kNarrowRows);
    const WindowRows busier_rows = rows_in_window(problem.args.groups, kBusierRows);
    // The busier experts go to the decode family, its token tile at most kDecodeWideMaxRows
    // wide, when few of them need a second tile (family.hpp).
    const bool busier_decode =
        few_pass_width(problem.args.groups, kBusierRows, busier_rows.experts, kDecodeWideMaxRows);
    if (few_rows.experts > 0) {
      const Launch narrow = decode_launch(problem, kNarrowRows);
      if (busier_rows.experts > 0 && busier_decode)
        if (auto one = one_decode_launch(problem, narrow, few_rows, busier_rows)) return {*one};
      launches.push_back(narrow);
    }
    if (busier_rows.experts == 0) return launches;
    if (busier_decode) {
      // After the narrow experts' launch (which has rows, so it staged the call's activations).
      launches.push_back(busier_launch(problem, !launches.empty()));
      return launches;
    }
    rest = kBusierRows;
  }
  if (has_rows_in(problem.args, rest)) {
    const Family& tiled = sm90::tiled_family();
    if (const std::string why = tiled.why_not(problem); !why.empty())
      fail(Status::unsupported, "{}: {}", problem.op, why);
    launches.push_back({&tiled, tiled.plan(problem, rest)});
  }
  return launches;
}

std::size_t workspace_for(const Problem& problem, const std::vector<Launch>& launches) {
  std::size_t bytes = 0;
  for (const Launch& l : launches)
    bytes = std::max(bytes, l.family->workspace_bytes(problem, l.plan));
  return bytes;
}

// Pointers the kernels read 16 bytes at a time: the activations, and the weights (and SFB
// scales) of every expert that may have rows.
void require_aligned_inputs(const Problem& problem) {
  const GroupedNvfp4& a = problem.args;
  require_aligned_16(problem.op, "a", a.a);
  const ExpertGroups& g = a.groups;
  const bool sfb = problem.nvfp4 && a.scale_layout == ScaleLayout::sfb;
  for (int p = 0; p < a.proj_count; ++p)
    for (int e = 0; e < g.num_experts; ++e) {
      if (!g.offsets_on_device && g.offsets[e + 1] == g.offsets[e]) continue;
      // The names are formatted only for a pointer that fails (no strings per expert per call).
      if (a.proj[p].packed_ptrs[e] % kPointerAlignment != 0)
        require_aligned_16(problem.op, fmt::format("proj[{}].packed_ptrs[{}]", p, e),
                           reinterpret_cast<const void*>(a.proj[p].packed_ptrs[e]));
      if (sfb && a.proj[p].scale_ptrs[e] % kPointerAlignment != 0)
        require_aligned_16(problem.op, fmt::format("proj[{}].scale_ptrs[{}]", p, e),
                           reinterpret_cast<const void*>(a.proj[p].scale_ptrs[e]));
    }
}

// A device, and the call's limits and alignments; false when it has no rows (nothing to launch).
bool has_rows_to_run(const Problem& problem) {
  require_device(problem.op);
  const GroupedNvfp4& a = problem.args;
  if (a.groups.num_experts == 0 || a.groups.m_total == 0) return false;
  if (a.groups.num_experts > kMaxExperts)
    fail(Status::unsupported,
         "{}: num_experts = {} exceeds the CUDA backend's limit of {} (host offsets and the plan "
         "kernel's expert scan)",
         problem.op, a.groups.num_experts, kMaxExperts);
  require_aligned_inputs(problem);
  return true;
}

void launch_all(const Problem& problem, const std::vector<Launch>& launches, core::Buffer ws,
                void* stream) {
  const std::size_t needed = workspace_for(problem, launches);
  if (ws.size < needed)
    fail(Status::workspace_too_small, "{}: needs {} bytes of workspace, got {}", problem.op,
         needed, ws.size);
  for (const Launch& l : launches)
    l.family->launch(problem, l.plan, ws, static_cast<cudaStream_t>(stream));
}

void run(const Problem& problem, core::Buffer ws, void* stream) {
  if (has_rows_to_run(problem)) launch_all(problem, choose(problem), ws, stream);
}

// A single GEMM as a one-expert problem; the host arrays live in this object.
struct SingleGemm {
  std::array<std::int32_t, 2> offsets;
  std::uint64_t weight, scale;
  float scale_2;
  Problem problem;

  SingleGemm(const char* op, bool nvfp4, const std::uint16_t* act, const void* w,
             const std::uint8_t* s, float s2, ScaleLayout layout, std::uint16_t* out, int m, int n,
             int k)
      : offsets{0, m},
        weight(reinterpret_cast<std::uint64_t>(w)),
        scale(reinterpret_cast<std::uint64_t>(s)),
        scale_2(s2) {
    problem.op = op;
    problem.nvfp4 = nvfp4;
    GroupedNvfp4& a = problem.args;
    a.a = act;
    a.a_rows = m;
    a.token_ids = nullptr;
    a.proj[0] = ExpertWeights{&weight, &scale, &scale_2};
    a.out[0] = out;
    a.proj_count = 1;
    a.scale_layout = layout;
    a.groups = ExpertGroups{offsets.data(), false, 1, m, m};
    a.n = n;
    a.k = k;
  }
  // The shape alone, no buffers: for what a call of it would plan (labels, workspace sizes).
  SingleGemm(const char* op, bool nvfp4, int m, int n, int k)
      : SingleGemm(op, nvfp4, nullptr, nullptr, nullptr, 1.0f, ScaleLayout::k16_by_n, nullptr, m, n,
                   k) {}
};

Problem grouped_problem(const char* op, const GroupedNvfp4& args) {
  Problem problem;
  problem.op = op;
  problem.args = args;
  return problem;
}

}  // namespace

std::span<const Family* const> families() {
  static const std::array<const Family*, 3> list{
      &sm90::decode::decode_family(), &sm90::stream::stream_family(), &sm90::tiled_family()};
  return list;
}

const Family* find_family(std::string_view name) {
  for (const Family* f : families())
    if (name == f->name()) return f;
  return nullptr;
}

WindowRows rows_in_window(const ExpertGroups& groups, RowWindow window) {
  WindowRows w;
  for_each_in_window(groups, window, [&](int, std::int32_t rows) {
    ++w.experts;
    w.rows += rows;
    w.largest = std::max(w.largest, rows);
  });
  return w;
}

WindowRows rows_held(const ExpertGroups& groups, RowWindow window) {
  if (!groups.offsets_on_device) return rows_in_window(groups, window);
  return {std::min(groups.m_total, groups.num_experts), groups.m_total,
          std::min(groups.max_rows_per_expert, window.max_rows)};
}

long row_tiles_in_window(const ExpertGroups& groups, RowWindow window, int tokens) {
  long tiles = 0;
  for_each_in_window(groups, window,
                     [&](int, std::int32_t rows) { tiles += (rows + tokens - 1) / tokens; });
  return tiles;
}

double poisson_tail(double mean, int rows) {
  double term = std::exp(-mean), below = term;
  for (int r = 1; r <= rows; ++r) {
    term *= mean / r;
    below += term;
  }
  return std::max(0.0, 1.0 - below);
}

bool few_pass_width(const ExpertGroups& groups, RowWindow window, std::int32_t in_window,
                    int width) {
  const RowWindow past{std::max(window.min_rows, width + 1), window.max_rows};
  return wide_tile_fits(rows_in_window(groups, past).experts, in_window);
}

namespace {

// A device attribute of the current device, cached per (device, attribute); `no_device` (an
// H200's value) when there is no device (a workspace-size query on a machine without one).
int cached_device_attribute(cudaDeviceAttr attribute, int no_device) {
  return once_per_device(
      attribute,
      [&](int device) {
        int value = 0;
        METRALE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
        return value;
      },
      [&](cudaError_t) {
        (void)cudaGetLastError();
        return no_device;
      });
}

}  // namespace

int device_sm_count() {
  constexpr int kH200Sms = 132;
  return cached_device_attribute(cudaDevAttrMultiProcessorCount, kH200Sms);
}

long device_l2_bytes() {
  constexpr int kH200L2Bytes = 60 << 20;
  return cached_device_attribute(cudaDevAttrL2CacheSize, kH200L2Bytes);
}

bool scales_aligned(const Problem& problem, std::size_t bytes) {
  const GroupedNvfp4& a = problem.args;
  for (int p = 0; p < a.proj_count; ++p)
    for (int e = 0; e < a.groups.num_experts; ++e)
      if (a.proj[p].scale_ptrs[e] % bytes != 0) return false;
  return true;
}

cudaError_t configure_once_per_device(const void* kernel, int shared_bytes) {
  return once_per_device(
      kernel,
      [&](int) {
        return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    shared_bytes);
      },
      [](cudaError_t err) { return err; });
}

void bf16_gemm(const DenseGemm& args, core::Buffer ws, void* stream) {
  const SingleGemm g("bf16_gemm_act_weight_t (CUDA)", false, args.act, args.weight, nullptr, 1.0f,
                     ScaleLayout::k16_by_n, args.out, args.m, args.n, args.k);
  run(g.problem, ws, stream);
}

void nvfp4_gemm(const Nvfp4Gemm& args, core::Buffer ws, void* stream) {
  const SingleGemm g("nvfp4_gemm_bf16_act_weight_t (CUDA)", true, args.act, args.packed, args.scale,
                     args.scale_2, args.scale_layout, args.out, args.m, args.n, args.k);
  run(g.problem, ws, stream);
}

void nvfp4_grouped(const GroupedNvfp4& args, core::Buffer ws, void* stream) {
  run(grouped_problem("nvfp4_grouped (CUDA)", args), ws, stream);
}

// Runs `problem` where every launch the dispatcher chooses for it can (`can`: a Family query of
// its plan) and returns true, or launches nothing and returns false. No rows: nothing to
// compute on either path, true.
static bool run_where_every_launch(const Problem& problem, core::Buffer ws, void* stream,
                                   bool (Family::*can)(const Plan&) const) {
  if (!has_rows_to_run(problem)) return true;
  const std::vector<Launch> launches = choose(problem);
  if (!std::all_of(launches.begin(), launches.end(),
                   [&](const Launch& l) { return (l.family->*can)(l.plan); }))
    return false;
  launch_all(problem, launches, ws, stream);
  return true;
}

bool nvfp4_grouped_on_glu(const GroupedNvfp4& args, const GluInput& glu, core::Buffer ws,
                          void* stream) {
  Problem problem = grouped_problem("nvfp4_grouped_on_glu (CUDA)", args);
  problem.glu = glu;
  if (glu.up == nullptr || args.token_ids != nullptr)
    fail(Status::invalid_argument,
         "{}: the gated input needs the up rows (glu.up = {}) and the gate rows in group order "
         "(token_ids = {}, expected null)",
         problem.op, static_cast<const void*>(glu.up), static_cast<const void*>(args.token_ids));
  return run_where_every_launch(problem, ws, stream, &Family::stages_glu_input);
}

bool nvfp4_grouped_to_glu(const GroupedNvfp4& args, const GluInput& glu, core::Buffer ws,
                          void* stream) {
  Problem problem = grouped_problem("nvfp4_grouped_to_glu (CUDA)", args);
  problem.glu = glu;
  problem.glu.up = nullptr;  // the up values are the call's own sums
  problem.glu_output = true;
  if (args.proj_count != 2)
    fail(Status::invalid_argument, "{}: proj_count = {}, expected 2 (gate and up)", problem.op,
         args.proj_count);
  return run_where_every_launch(problem, ws, stream, &Family::writes_glu_output);
}

// What choose(problem) would launch, each launch's family and configuration.
static std::string describe_launches(const Problem& problem) {
  std::string text;
  for (const Launch& l : choose(problem))
    text += (text.empty() ? "" : " + ") + l.family->describe(l.plan);
  return text;
}

std::string nvfp4_grouped_plan(const GroupedNvfp4& args) {
  return describe_launches(grouped_problem("nvfp4_grouped (CUDA)", args));
}

std::string bf16_gemm_plan(int m, int n, int k) {
  const SingleGemm g("bf16_gemm_act_weight_t (CUDA)", false, m, n, k);
  return describe_launches(g.problem);
}

// The size queries answer for the call as it would run; a call no family can run needs nothing
// (the call itself then says why).
static std::size_t workspace_or_zero(const Problem& problem) {
  try {
    return workspace_for(problem, choose(problem));
  } catch (const Error&) {
    return 0;
  }
}

// One size for both GEMMs of the shape: a bf16 GEMM may split K (its partial sums), an NVFP4 one
// stages more per expert.
std::size_t gemm_workspace_size(int m, int n, int k) {
  if (m <= 0) return 0;
  std::size_t bytes = 0;
  for (bool nvfp4 : {true, false}) {
    const SingleGemm g("gemm_workspace_size (CUDA)", nvfp4, m, n, k);
    bytes = std::max(bytes, workspace_or_zero(g.problem));
  }
  return bytes;
}

std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k,
                                         int proj_count) {
  if (groups.num_experts == 0 || groups.m_total == 0) return 0;
  Problem problem;
  problem.op = "nvfp4_grouped_workspace_size (CUDA)";
  problem.args.groups = groups;
  // Without host offsets to read, size for the bound, as for device offsets.
  if (groups.offsets == nullptr) problem.args.groups.offsets_on_device = true;
  problem.args.n = n;
  problem.args.k = k;
  problem.args.proj_count = proj_count;
  problem.args.scale_layout = ScaleLayout::sfb;
  return workspace_or_zero(problem);
}

}  // namespace metrale::cuda
