// Shared pieces of the reference-arm tests (CUTLASS and cuBLASLt against the CPU oracle): the skip
// rule (no usable CUDA device, or the arm not compiled in: the test says which and skips), the
// verdict on one check case, case builders, a workspace large enough for the dequantizing arms,
// the check that a call is refused naming the value, an owned stream, and the exact dense GEMM
// the tests that call an arm's bf16_gemm directly run on.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "check/check.hpp"
#include "core/error.hpp"
#include "metrale/metrale.hpp"

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>

#include "check/buffers.hpp"
#include "check/inputs.hpp"
#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_backend.hpp"
#endif

namespace metrale::reference_test {

// The harness names every reference test builds its cases from.
using check::Mode;
using check::Op;
using check::RoutingKind;

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

// A grouped case: the rows come from the routing, so M stays 0.
inline check::Case grouped_case(Backend backend, check::Op op, check::Mode mode, int n, int k,
                                check::Routing routing, std::uint64_t seed = 1) {
  check::Case c = gemm_case(backend, op, mode, 0, n, k, seed);
  c.routing = routing;
  return c;
}

// Runs `call` and requires it to throw metrale::Error with `status` and a message holding
// `needle` (a refusal that names the value); `what` says what should have been refused.
template <class Call>
void expect_error(Call&& call, Status status, const std::string& needle, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << what << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << what << ": expected \"" << needle << "\" in: " << e.what();
  }
}

#ifdef METRALE_HAS_CUDA
// An owned non-blocking stream, so that a kernel launched on the legacy default stream would not
// be ordered with the download and the comparison would catch it.
class Stream {
 public:
  Stream() { check::cuda_require(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "stream"); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// An exact-mode M x N x K bf16 GEMM on the device, for the tests that call an arm's bf16_gemm
// directly instead of through run_case: small-integer operands (every fp32 sum is exact, so any
// tile or algorithm must reproduce the CPU oracle bit for bit), the oracle's product, an output
// buffer and a workspace of the arm's size (one byte at least, so that it has guard bands too).
struct ExactDenseGemm {
  ExactDenseGemm(int m, int n, int k, std::uint64_t seed, std::size_t workspace_bytes)
      : act_host(check::small_int_bf16(static_cast<std::size_t>(m) * k, seed, 2)),
        weight_host(check::small_int_bf16(static_cast<std::size_t>(n) * k, seed + 1, 3)),
        want(static_cast<std::size_t>(m) * n),
        act(check::upload_new(act_host, "act")),
        weight(check::upload_new(weight_host, "weight")),
        out(want.size() * sizeof(bf16_bits), "out"),
        workspace(workspace_bytes > 0 ? workspace_bytes : 1, "workspace"),
        args{act.as<bf16_bits>(), weight.as<bf16_bits>(), out.as<bf16_bits>(), m, n, k},
        ws{workspace.data(), workspace_bytes} {
    cpu::bf16_gemm(DenseGemm{act_host.data(), weight_host.data(), want.data(), m, n, k});
  }

  // "" when every guard band around the four device buffers still holds.
  std::string broken_guards() const {
    return check::check_all_guards({&act, &weight, &out, &workspace});
  }

  std::vector<bf16_bits> act_host, weight_host;
  std::vector<bf16_bits> want;  // the CPU oracle's [M, N] product
  check::DeviceBuffer act, weight, out, workspace;
  DenseGemm args;      // the device operands
  core::Buffer ws;  // the workspace at the arm's size, not the one-byte minimum
};
#endif  // METRALE_HAS_CUDA

}  // namespace metrale::reference_test
