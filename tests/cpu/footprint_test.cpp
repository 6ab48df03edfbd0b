// Issue 11, item 4: the CPU backend computes the host memory a call needs before it reads any
// input or allocates: sizes no host holds are refused at once with the sizes (they used to fail
// after 14.7 s and 4.3 GB, or read past small buffers and crash), and an NVFP4 GEMM's weight is
// decoded a panel at a time (its peak no longer grows with a fp32 copy of the whole weight).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/footprint.hpp"
#include "metrale/metrale.h"

namespace metrale {
namespace {

constexpr std::int32_t kHuge = 1 << 30;

bool refused_with_sizes(metrale_status status, const std::string& who) {
  const std::string message = metrale_last_error();
  return status == METRALE_STATUS_INVALID_ARGUMENT && message.rfind(who + ": ", 0) == 0 &&
         message.find("of host memory") != std::string::npos &&
         message.find("more than this machine's") != std::string::npos;
}

TEST(Footprint, HugeSizesAreRefusedBeforeAnyRead) {
  // Buffers of a few bytes: any read past them would crash or be caught by ASan.
  std::vector<std::uint16_t> small(64, 0x3F80);
  std::vector<std::uint8_t> bytes(64, 0x22);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(refused_with_sizes(
      metrale_cpu_bf16_gemm_act_weight_t(small.data(), small.data(), small.data(), 1, kHuge, kHuge,
                                         nullptr, 0, nullptr),
      "metrale_cpu_bf16_gemm_act_weight_t"))
      << metrale_last_error();
  EXPECT_NE(std::string(metrale_last_error()).find("M = 1, N = 1073741824, K = 1073741824"),
            std::string::npos)
      << metrale_last_error();
  EXPECT_TRUE(refused_with_sizes(
      metrale_cpu_nvfp4_gemm_bf16_act_weight_t(small.data(), bytes.data(), bytes.data(), 1.0f,
                                               small.data(), 1, kHuge, kHuge, nullptr, 0, nullptr),
      "metrale_cpu_nvfp4_gemm_bf16_act_weight_t"))
      << metrale_last_error();
  EXPECT_TRUE(refused_with_sizes(
      metrale_cpu_pack_bf16_weight_to_nvfp4_t(small.data(), bytes.data(), bytes.data(), kHuge,
                                              kHuge, nullptr),
      "metrale_cpu_pack_bf16_weight_to_nvfp4_t"))
      << metrale_last_error();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0) << "refused at once, not after allocating";
}

TEST(Footprint, FormatsBytes) {
  EXPECT_EQ(cpu::format_bytes(512), "512 bytes");
  EXPECT_EQ(cpu::format_bytes(1536.0 * 1024 * 1024), "1.50 GiB");
  EXPECT_EQ(cpu::format_bytes(2.0 * (1ull << 60)), "2.00 EiB");
}

// Peak resident memory (KiB) of `body` run in a child process.
long child_peak_kib(void (*body)()) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? usage.ru_maxrss : -1;
}

// A 1 x 8192 x 8192 NVFP4 GEMM: 32 MiB packed weight. A fp32 copy of the weight would add
// 256 MiB; the panel decode adds kilobytes. `call` = false allocates the same inputs only: the
// baseline (the fork's inherited pages, a sanitizer's shadow) that the GEMM is measured against.
template <bool call>
void one_row_gemm() {
  constexpr std::int32_t n = 8192, k = 8192;
  std::vector<std::uint16_t> act(k, 0x3F80), out(n);
  std::vector<std::uint8_t> packed(static_cast<std::size_t>(n) * k / 2, 0x22),
      scale(static_cast<std::size_t>(n) * k / 16, 0x38);
  if (call && metrale_cpu_nvfp4_gemm_bf16_act_weight_t(act.data(), packed.data(), scale.data(),
                                                       1.0f, out.data(), 1, n, k, nullptr, 0,
                                                       nullptr) != METRALE_STATUS_OK)
    _exit(1);
}

TEST(Footprint, Nvfp4WeightIsDecodedInPanels) {
  const long baseline = child_peak_kib(one_row_gemm<false>);
  const long peak = child_peak_kib(one_row_gemm<true>);
  ASSERT_GT(baseline, 0);
  ASSERT_GT(peak, 0) << "the child's GEMM failed";
  EXPECT_LT(peak - baseline, 64 * 1024)
      << "the GEMM added " << (peak - baseline) << " KiB over its inputs (" << baseline << " KiB)";
}

}  // namespace
}  // namespace metrale
