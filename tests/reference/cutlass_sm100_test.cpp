// The CUTLASS Blackwell block-scaled NVFP4 GEMM (reference::cutlass::nvfp4_w4a4_gemm_sm100) can
// only be checked for its REFUSAL here. Its kernel is compiled for sm_100a (with
// -DMETRALE_CUTLASS_SM100=ON) and runs only on a compute capability 10.0 GPU; the H200 (sm_90) and
// every machine this project tests on cannot run it, so no test in this repository checks its
// numbers. What is checked, on a non-Blackwell device:
//   - the call throws Status::unsupported naming the device and its arch, with and without rows
//     (no silent no-op for M = 0 either), and writes nothing into the output;
//   - the workspace query covers at least the quantized activation, SFA and a swizzled SFB.
// Skipped when the arm is not built (the message says so) or no CUDA device is present; on an
// sm_100 device the refusal test skips too, saying that nothing here checks the kernel's output.
#include <gtest/gtest.h>

#ifdef METRALE_HAS_CUTLASS
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "check/check.hpp"
#include "core/error.hpp"
#include "format/layouts.hpp"
#include "reference/cutlass/cutlass_backend.hpp"

namespace metrale::reference_test {
namespace {

namespace rc = reference::cutlass;

struct DeviceName {
  std::string name;
  int major = 0, minor = 0;
};

DeviceName current_device() {
  int device = 0;
  cudaDeviceProp prop{};
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(cudaGetDeviceProperties(&prop, device), cudaSuccess);
  return {prop.name, prop.major, prop.minor};
}

// The message of the call's metrale::Error; fails the test when it throws nothing or another
// status.
std::string refusal(const Nvfp4Gemm& args, core::Buffer ws) {
  try {
    rc::nvfp4_w4a4_gemm_sm100(args, ws, nullptr);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::unsupported) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "nvfp4_w4a4_gemm_sm100 returned without refusing";
  return {};
}

bool not_built(const std::string& message) {
  return message.find("was not built") != std::string::npos;
}

TEST(CutlassSm100, RefusesNonBlackwellDevice) {
  std::string why;
  if (!check::cuda_device_present(&why)) GTEST_SKIP() << why;
  const DeviceName device = current_device();
  if (device.major == 10 && device.minor == 0) {
    GTEST_SKIP() << "an sm_100 device: this test checks only the refusal elsewhere; nothing in "
                    "this repository checks the Blackwell kernel's output";
  }
  constexpr int kM = 16, kN = 64, kK = 64;
  void* buffers[4] = {};
  const std::size_t bytes[4] = {kM * kK * 2, kN * kK / 2, format::sfb_bytes(kN, kK), kM * kN * 2};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(cudaMalloc(&buffers[i], bytes[i]), cudaSuccess);
  ASSERT_EQ(cudaMemset(buffers[3], 0x7F, bytes[3]), cudaSuccess);  // poison: must stay untouched

  Nvfp4Gemm args{};
  args.act = static_cast<const bf16_bits*>(buffers[0]);
  args.packed = static_cast<const std::uint8_t*>(buffers[1]);
  args.scale = static_cast<const std::uint8_t*>(buffers[2]);
  args.scale_2 = 1.0f;
  args.scale_layout = ScaleLayout::sfb;
  args.out = static_cast<bf16_bits*>(buffers[3]);
  args.m = kM;
  args.n = kN;
  args.k = kK;
  const std::string expected = "needs an sm_100a device; this is " + device.name + " (sm_" +
                               std::to_string(device.major) + std::to_string(device.minor) + ")";

  const std::string message = refusal(args, {});
  if (not_built(message)) {
    for (void* b : buffers) cudaFree(b);
    GTEST_SKIP() << message;
  }
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  args.m = 0;
  const std::string empty = refusal(args, {});
  EXPECT_NE(empty.find(expected), std::string::npos) << empty;

  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::uint8_t> out(bytes[3]);
  ASSERT_EQ(cudaMemcpy(out.data(), buffers[3], bytes[3], cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 0x7F) << "byte " << i;
  for (void* b : buffers) ASSERT_EQ(cudaFree(b), cudaSuccess);
}

TEST(CutlassSm100, WorkspaceCoversQuantizedActivationAndScales) {
  std::string why;
  if (!check::cuda_device_present(&why)) GTEST_SKIP() << why;
  // Built or not: asked of the call's refusal, except on an sm_100 device, where the call would
  // run (on null pointers): there the query's 0 of a build without the GEMM decides.
  const DeviceName device = current_device();
  bool built = rc::nvfp4_w4a4_gemm_sm100_workspace_size(1, 8, 32) > 0;
  if (device.major != 10 || device.minor != 0) {
    Nvfp4Gemm probe{};
    probe.m = 1;
    probe.n = 8;
    probe.k = 32;
    built = !not_built(refusal(probe, {}));
  }
  if (!built) GTEST_SKIP() << "the sm_100a GEMM was not built";
  for (const auto [m, n, k] : {std::array{1, 8, 32}, std::array{300, 200, 96},
                               std::array{4096, 7168, 2048}}) {
    const std::size_t floor = static_cast<std::size_t>(m) * k / 2 + format::sfb_bytes(m, k) +
                              format::sfb_bytes(n, k);
    EXPECT_GE(rc::nvfp4_w4a4_gemm_sm100_workspace_size(m, n, k), floor)
        << "M = " << m << ", N = " << n << ", K = " << k;
  }
  EXPECT_EQ(rc::nvfp4_w4a4_gemm_sm100_workspace_size(0, 8, 32), 0u);
}

}  // namespace
}  // namespace metrale::reference_test

#else
TEST(CutlassSm100, NotBuilt) { GTEST_SKIP() << "built without the CUTLASS reference arm"; }
#endif
