// Shared pieces of the GPU tests (tests/cuda): the skip rule (no usable CUDA device or arch: the
// test says why and ctest reports it skipped), the harness names and the plain CUDA Exec every
// test uses, case builders, the verdict on a check case, and the shape lists taken from the CUDA
// backend's constraints (docs/testing.md):
//   M       1, 2, 3, 63, 64, 65, 127, 128, 129   (1, 2, 3, tile-1, tile, tile+1 for 64 and 128)
//   N       1, 8, 63, 64, 65, 200
//   K       32, 64, 96, 2048                      (multiples of 32: the NVFP4 kernels' rule)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "check/check.hpp"
#include "metrale/metrale.hpp"

namespace metrale::cuda_test {

inline constexpr std::array<int, 9> kRowsM = {1, 2, 3, 63, 64, 65, 127, 128, 129};
inline constexpr std::array<int, 6> kColsN = {1, 8, 63, 64, 65, 200};
inline constexpr std::array<int, 4> kDepthK = {32, 64, 96, 2048};

// The harness names every GPU test builds its cases from.
using check::Mode;
using check::Op;
using check::RoutingKind;

// The CUDA backend on the default stream without a caller workspace: the plain call the tests
// compare against the oracle (graph_test builds its own Exec with a stream and workspace).
inline const Exec kCuda{Backend::cuda, nullptr, 0, nullptr};

#define METRALE_SKIP_WITHOUT_GPU()                                   \
  do {                                                               \
    std::string why_;                                                \
    if (!::metrale::check::cuda_usable(&why_)) GTEST_SKIP() << why_; \
  } while (0)

// Runs the case and requires a pass: a skip is a failure here (the device is present, so a
// refusal of a supported shape is a bug). The message carries the reproduction command.
inline bool expect_pass(const check::Case& c) {
  const check::Report r = check::run_case(c);
  EXPECT_TRUE(r.passed()) << check::summary(c, r);
  return r.passed();
}

inline check::Case gemm_case(check::Op op, check::Mode mode, int m, int n, int k,
                             std::uint64_t seed = 1) {
  check::Case c;
  c.op = op;
  c.mode = mode;
  c.backend = Backend::cuda;
  c.m = m;
  c.n = n;
  c.k = k;
  c.seed = seed;
  return c;
}

inline check::Case grouped_case(check::Op op, check::Mode mode, int n, int k,
                                check::Routing routing, std::uint64_t seed = 1) {
  check::Case c = gemm_case(op, mode, 0, n, k, seed);
  c.routing = routing;
  return c;
}

// A MoE layer (moe_forward) of hidden width `hidden` and expert width `inter`.
inline check::Case moe_case(check::Mode mode, int hidden, int inter, check::Routing routing,
                            check::MoeRecipe recipe, std::uint64_t seed) {
  check::Case c = gemm_case(check::Op::moe, mode, 0, 0, 0, seed);
  c.moe = check::MoeCase{hidden, inter, recipe};
  c.routing = routing;
  return c;
}

// Stops a shape sweep after this many failures: the first ones say it all.
inline constexpr int kMaxReportedFailures = 8;

// The CUDA quantizer's two quantize kernels (METRALE_CUDA_QUANTIZER): every GPU pack test runs
// both against the CPU oracle, bit for bit, until the lean one replaces the proven one.
inline constexpr std::array<const char*, 2> kQuantizers = {"proven", "lean"};

}  // namespace metrale::cuda_test

namespace metrale::cuda_test {

// Grouped shapes: routing edge cases (one token, no tokens, an empty expert, every row on one
// expert, hot experts, 256 experts with most of them empty, an expert past 64 rows) crossed with
// N and K at and around the alignments.
struct GroupedShape {
  int n, k;
  check::Routing routing;
};

inline std::vector<GroupedShape> grouped_shapes() {
  using check::RoutingKind;
  return {
      {8, 32, {1, 1, 1, RoutingKind::uniform}},
      {1, 32, {2, 4, 2, RoutingKind::uniform}},
      {63, 64, {3, 4, 2, RoutingKind::uniform}},
      {65, 96, {17, 8, 2, RoutingKind::skew}},
      {64, 64, {33, 8, 2, RoutingKind::empty_expert}},
      {64, 64, {20, 8, 2, RoutingKind::one_expert}},
      {200, 2048, {64, 8, 2, RoutingKind::uniform}},
      {129, 128, {64, 16, 4, RoutingKind::skew}},
      {64, 64, {5, 256, 8, RoutingKind::uniform}},
      {8, 32, {64, 256, 8, RoutingKind::skew}},
      {64, 96, {48, 256, 8, RoutingKind::one_expert}},
      {8, 32, {0, 4, 2, RoutingKind::uniform}},
      // 80 rows on one expert: past 64 rows it sums K in one chunk, here 3 k-tiles, not a whole
      // number of stages (the decode family with device offsets; the tiled one with host offsets).
      {72, 160, {80, 8, 1, RoutingKind::one_expert}},
  };
}

// Grouped cases of `op`: each of `shapes` on host, then device offsets, seeded ++seed, `kernel`
// forced as METRALE_CUDA_KERNEL would ("": the dispatcher's choice), the weights prepacked or
// not. False once `failures` (counted across calls) reaches kMaxReportedFailures.
inline bool sweep_grouped_shapes(check::Op op, check::Mode mode,
                                 const std::vector<GroupedShape>& shapes, const std::string& kernel,
                                 bool prepacked, std::uint64_t& seed, int& failures) {
  for (const GroupedShape& s : shapes)
    for (bool device_offsets : {false, true}) {
      check::Case c = grouped_case(op, mode, s.n, s.k, s.routing, ++seed);
      c.device_offsets = device_offsets;
      c.cuda_kernel = kernel;
      c.prepacked = prepacked;
      if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return false;
    }
  return true;
}

}  // namespace metrale::cuda_test
