// Shared pieces of the reference-arm tests (CUTLASS and cuBLASLt against the CPU oracle): the skip
// rule (no usable CUDA device, or the arm not compiled in: the test says which and skips), the
// verdict on one check case, and a workspace large enough for the dequantizing arms.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "check/check.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference_test {

// The dequantizing arms keep every active expert's bf16 weight in the workspace: 3.56x the NVFP4
// bytes (DeepSeek-V3 gate_up at T = 4096 needs ~15 GB). The shared workspace is sized from this
// variable at its first use; the H200 has room. An explicit setting wins.
inline const bool kWorkspaceSized = [] {
  setenv("METRALE_WORKSPACE_MB", "20480", /*overwrite=*/0);
  return true;
}();

// "" when `backend` can run here, else why not.
inline std::string unavailable(Backend backend) {
  std::string why;
  if (!check::cuda_usable(&why)) return why;
  if (!backend_built(backend)) {
    return std::string("the ") + backend_name(backend) + " reference arm was not built";
  }
  return {};
}

#define METRALE_SKIP_UNLESS_BUILT(backend)                                    \
  do {                                                                        \
    const std::string why_ = ::metrale::reference_test::unavailable(backend); \
    if (!why_.empty()) GTEST_SKIP() << why_;                                  \
  } while (0)

// Runs the case and requires a pass (a skip is a failure here: the arm is present, so a refusal
// of a shape it should run is a bug). The message carries the reproduction command.
inline void expect_pass(const check::Case& c) {
  const check::Report r = check::run_case(c);
  EXPECT_TRUE(r.passed()) << check::summary(c, r);
}

// Runs the case and requires the backend to refuse it as unsupported with a message holding
// every one of `needles`.
inline void expect_refused(const check::Case& c, const std::vector<std::string>& needles) {
  const check::Report r = check::run_case(c);
  ASSERT_TRUE(r.skipped()) << check::summary(c, r);
  for (const std::string& needle : needles) {
    EXPECT_NE(r.detail.find(needle), std::string::npos)
        << "expected \"" << needle << "\" in: " << r.detail;
  }
}

inline check::Case gemm_case(Backend backend, check::Op op, check::Mode mode, int m, int n, int k,
                             std::uint64_t seed = 1) {
  check::Case c;
  c.op = op;
  c.mode = mode;
  c.backend = backend;
  c.m = m;
  c.n = n;
  c.k = k;
  c.seed = seed;
  return c;
}

inline check::Case grouped_case(Backend backend, check::Op op, check::Mode mode, int n, int k,
                                check::Routing routing, std::uint64_t seed = 1) {
  check::Case c;
  c.op = op;
  c.mode = mode;
  c.backend = backend;
  c.n = n;
  c.k = k;
  c.routing = routing;
  c.seed = seed;
  return c;
}

}  // namespace metrale::reference_test
