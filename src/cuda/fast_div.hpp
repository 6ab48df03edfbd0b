// Division by a divisor fixed before a launch, as one high multiply, an add and a shift
// (Granlund and Montgomery's round-up method, "Division by invariant integers using
// multiplication", 1994, theorem 4.2 with N = 32). A kernel that divides by a variable per work
// unit pays ~25 instructions for each `/` or `%` (a reciprocal on the special-function unit and
// its corrections); the decode family's unit lookup did seven of them a unit (docs/perf.md,
// "2026-12-04, twelfth session").
#pragma once

#include <cstdint>

#include "format/host_device.hpp"

namespace metrale::cuda {

struct FastDiv {
  std::uint32_t divisor = 1;
  std::uint32_t multiplier = 1;  // the magic number less 2^32 (it needs 33 bits)
  std::uint32_t shift = 0;       // ceil(log2(divisor))

  // Exact for divisors in [1, 2^31) and dividends in [0, 2^31) (the sum in quotient() stays
  // below 2^32).
  static constexpr FastDiv of(std::uint32_t d) {
    FastDiv f;
    f.divisor = d;
    while ((std::uint64_t{1} << f.shift) < d) ++f.shift;
    // floor(2^(32 + shift) / d) + 1 - 2^32, which is in [1, 2^32) for these divisors.
    f.multiplier = static_cast<std::uint32_t>(
        ((std::uint64_t{1} << 32) * ((std::uint64_t{1} << f.shift) - d)) / d + 1);
    return f;
  }

  METRALE_HD std::uint32_t quotient(std::uint32_t x) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t high = __umulhi(x, multiplier);
#else
    const auto high = static_cast<std::uint32_t>((std::uint64_t{x} * multiplier) >> 32);
#endif
    return (high + x) >> shift;
  }

  // x % divisor, given q = quotient(x).
  METRALE_HD std::uint32_t remainder(std::uint32_t x, std::uint32_t q) const {
    return x - q * divisor;
  }
};

}  // namespace metrale::cuda
