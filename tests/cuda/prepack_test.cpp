// The CUDA backend's prepack_nvfp4 (cuda/pack/prepack.cu) against the CPU oracle's bytes: into
// another buffer, in place, and unprepacked back to the input, for N from 1 row to past a CTA's
// worth and K from one block to a real model's, at byte offsets 0 and 4 (the 32-bit word kernel)
// and 1 and 2 (the half-at-a-time fallback), the bytes around the weight and the guard bands
// untouched; in both prepacked layouts (METRALE_PREPACKED_LAYOUT: the halves' default, and the
// fragment order, a group a thread, at K with and without a 32-code tail).
#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu_test_util.hpp"
#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/buffers.hpp"
#include "check/scoped_kernel.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

constexpr std::uint8_t kPoison = 0xCD;

std::vector<std::uint8_t> cpu_prepack(const std::vector<std::uint8_t>& packed, int n, int k) {
  std::vector<std::uint8_t> out(packed.size(), kPoison);
  const Result r = prepack_nvfp4({packed.data(), out.data(), n, k, PrepackDir::to_prepacked},
                                 Exec{Backend::cpu});
  EXPECT_TRUE(r.ok()) << r.message;
  return out;
}

// `bytes` of weight at byte `offset` of a device buffer, poison around it.
struct Placed {
  std::size_t offset, bytes;
  check::DeviceBuffer buffer;
  Placed(const std::vector<std::uint8_t>& weight, std::size_t at, const char* name)
      : offset(at), bytes(weight.size()), buffer(weight.size() + 8, name) {
    std::vector<std::uint8_t> host(buffer.size(), kPoison);
    std::copy(weight.begin(), weight.end(), host.begin() + static_cast<std::ptrdiff_t>(at));
    buffer.upload(host);
  }
  std::uint8_t* weight() const { return buffer.as<std::uint8_t>() + offset; }
  // The weight's bytes, after checking that nothing around them changed.
  std::vector<std::uint8_t> download() const {
    const auto host = buffer.download<std::uint8_t>();
    for (std::size_t i = 0; i < host.size(); ++i) {
      if (i < offset || i >= offset + bytes) {
        EXPECT_EQ(host[i], kPoison) << "byte " << i;
      }
    }
    EXPECT_EQ(buffer.check_guards(), "");
    return {host.begin() + static_cast<std::ptrdiff_t>(offset),
            host.begin() + static_cast<std::ptrdiff_t>(offset + bytes)};
  }
};

Result run(const Placed& src, const Placed& dst, int n, int k, PrepackDir dir) {
  return prepack_nvfp4({src.weight(), dst.weight(), n, k, dir}, kCuda);
}

TEST(CudaPrepack, EqualsTheCpuOracle) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const char* layout : {"", "fragments"}) {
    const check::ScopedVariable prepacked_layout("METRALE_PREPACKED_LAYOUT", layout);
    for (int n : {1, 3, 129, 1000})
      for (int k : {16, 48, 2880, 2880 + 32})
        for (std::size_t offset : {0, 1, 2, 4}) {
          SCOPED_TRACE(testing::Message() << "layout '" << layout << "', N = " << n << ", K = " << k
                                          << ", offset " << offset);
          const auto packed = test::random_bytes(static_cast<std::size_t>(n) * k / 2, 3u * n + k);
          const auto want = cpu_prepack(packed, n, k);
          const Placed src(packed, offset, "packed");
          const Placed dst(std::vector<std::uint8_t>(packed.size(), kPoison), offset, "prepacked");
          const Result r = run(src, dst, n, k, PrepackDir::to_prepacked);
          ASSERT_TRUE(r.ok()) << r.message;
          EXPECT_EQ(dst.download(), want);
          EXPECT_EQ(src.download(), packed) << "the source is only read";
          ASSERT_TRUE(run(dst, dst, n, k, PrepackDir::to_packed).ok()) << "unprepack in place";
          EXPECT_EQ(dst.download(), packed);
          ASSERT_TRUE(run(src, src, n, k, PrepackDir::to_prepacked).ok()) << "prepack in place";
          EXPECT_EQ(src.download(), want);
        }
  }
}

TEST(CudaPrepack, SecondRunIsIdentical) {
  METRALE_SKIP_WITHOUT_GPU();
  const int n = 2880, k = 2880;  // gpt-oss's expert shape: a grid-stride loop over many CTAs
  const auto packed = test::random_bytes(static_cast<std::size_t>(n) * k / 2, 77);
  const Placed src(packed, 0, "packed");
  const Placed dst(packed, 0, "prepacked");
  ASSERT_TRUE(run(src, dst, n, k, PrepackDir::to_prepacked).ok());
  const auto first = dst.download();
  EXPECT_EQ(first, cpu_prepack(packed, n, k));
  ASSERT_TRUE(run(src, dst, n, k, PrepackDir::to_prepacked).ok());
  EXPECT_EQ(dst.download(), first);
}

#else
TEST(CudaPrepack, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
