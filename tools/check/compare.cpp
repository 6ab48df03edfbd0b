// Bitwise and tolerance comparison of outputs (compare.hpp).
#include "check/compare.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "format/bf16.hpp"

namespace metrale::check {
namespace {

double value(bf16_bits bits) {
  return static_cast<double>(format::bf16_to_float(bits));
}

std::string where(std::string_view name, std::int64_t index, std::int64_t cols,
                  std::span<const std::int64_t> rows) {
  const std::int64_t r = index / cols, c = index % cols;
  const std::int64_t row = rows.empty() ? r : rows[static_cast<std::size_t>(r)];
  return fmt::format("{}[{}, {}]", name, row, c);
}

// Records one compared element; `bad` says whether it is a mismatch.
void record(Comparison& cmp, bool bad, double abs_err, double ref, std::int64_t index,
            const std::string_view name, const auto& describe) {
  ++cmp.compared;
  if (!std::isnan(abs_err)) {
    cmp.max_abs = std::max(cmp.max_abs, abs_err);
    if (ref != 0.0) cmp.max_rel = std::max(cmp.max_rel, abs_err / std::fabs(ref));
  } else {
    cmp.max_abs = cmp.max_rel = INFINITY;
  }
  if (!bad) return;
  if (cmp.mismatches++ == 0) {
    cmp.first_mismatch = index;
    cmp.output = std::string(name);
    cmp.first_detail = describe();
  }
}

// Bitwise comparison of any plain values, described by `show` (value -> text).
template <class T, class Show>
Comparison compare_exact(std::span<const T> got, std::span<const T> want, std::int64_t cols,
                         std::span<const std::int64_t> rows, std::string_view name, Show show) {
  Comparison cmp;
  const std::size_t count = std::min(got.size(), want.size());
  for (std::size_t i = 0; i < count; ++i) {
    const bool same = std::memcmp(&got[i], &want[i], sizeof(T)) == 0;
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    record(cmp, !same, same ? 0.0 : std::fabs(g - w), w, static_cast<std::int64_t>(i), name, [&] {
      return fmt::format("{}: got {}, want {}, bit for bit",
                         where(name, static_cast<std::int64_t>(i), cols, rows), show(got[i]),
                         show(want[i]));
    });
  }
  return cmp;
}

}  // namespace

void Comparison::merge(const Comparison& other) {
  if (mismatches == 0 && other.mismatches > 0) {
    first_mismatch = other.first_mismatch;
    first_detail = other.first_detail;
    output = other.output;
  }
  compared += other.compared;
  mismatches += other.mismatches;
  max_abs = std::max(max_abs, other.max_abs);
  max_rel = std::max(max_rel, other.max_rel);
}

Comparison compare_bf16_bits(std::span<const bf16_bits> got, std::span<const bf16_bits> want,
                             std::int64_t cols, std::span<const std::int64_t> rows,
                             std::string_view name) {
  Comparison cmp;
  const std::size_t count = std::min(got.size(), want.size());
  for (std::size_t i = 0; i < count; ++i) {
    const bool same = got[i] == want[i];
    const double g = value(got[i]), w = value(want[i]);
    const double err = same ? 0.0 : std::fabs(g - w);
    record(cmp, !same, err, w, static_cast<std::int64_t>(i), name, [&] {
      return fmt::format("{}: got {} (0x{:04x}), want {} (0x{:04x}), bit for bit",
                         where(name, static_cast<std::int64_t>(i), cols, rows), g, got[i], w,
                         want[i]);
    });
  }
  return cmp;
}

Comparison compare_bf16_tolerance(std::span<const bf16_bits> got, std::span<const bf16_bits> want,
                                  std::span<const bf16_bits> bound, std::int64_t cols,
                                  std::span<const std::int64_t> rows, const Tolerance& tol,
                                  std::string_view name) {
  const double u_bf16 = std::ldexp(1.0, -8), u_fp32 = std::ldexp(1.0, -24);
  const double fp32_terms =
      static_cast<double>(tol.k + 8) * u_fp32 + (tol.dequantized_weights ? u_bf16 : 0.0);
  Comparison cmp;
  const std::size_t count = std::min({got.size(), want.size(), bound.size()});
  for (std::size_t i = 0; i < count; ++i) {
    const double g = value(got[i]), w = value(want[i]);
    const double s = value(bound[i]) * (1.0 + 2.0 * u_bf16);
    const double limit = 2.0 * u_bf16 * std::fabs(w) + fp32_terms * s + std::ldexp(1.0, -133);
    const bool same = got[i] == want[i];
    const double err = same ? 0.0 : std::fabs(g - w);
    // A NaN or Inf anywhere is a mismatch unless the bits agree; NaN errors compare false.
    const bool bad = !same && !(err <= limit);
    record(cmp, bad, err, w, static_cast<std::int64_t>(i), name, [&] {
      return fmt::format(
          "{}: got {} (0x{:04x}), want {} (0x{:04x}), |diff| {:.4g} > tolerance "
          "{:.4g} (S = {:.4g}, K = {})",
          where(name, static_cast<std::int64_t>(i), cols, rows), g, got[i], w, want[i], err, limit,
          s, tol.k);
    });
  }
  return cmp;
}

Comparison compare_bytes(std::span<const std::uint8_t> got, std::span<const std::uint8_t> want,
                         std::string_view name) {
  Comparison cmp;
  const std::size_t count = std::min(got.size(), want.size());
  for (std::size_t i = 0; i < count; ++i) {
    const bool same = got[i] == want[i];
    record(cmp, !same, same ? 0.0 : std::fabs(double(got[i]) - double(want[i])), want[i],
           static_cast<std::int64_t>(i), name, [&] {
             return fmt::format("{}[{}]: got 0x{:02x}, want 0x{:02x}", name, i, got[i], want[i]);
           });
  }
  return cmp;
}

Comparison compare_i32(std::span<const std::int32_t> got, std::span<const std::int32_t> want,
                       std::int64_t cols, std::span<const std::int64_t> rows,
                       std::string_view name) {
  return compare_exact(got, want, cols, rows, name,
                       [](std::int32_t v) { return std::to_string(v); });
}

Comparison compare_f32_bits(std::span<const float> got, std::span<const float> want,
                            std::int64_t cols, std::span<const std::int64_t> rows,
                            std::string_view name) {
  return compare_exact(got, want, cols, rows, name, [](float v) {
    return fmt::format("{} (0x{:08x})", v, std::bit_cast<std::uint32_t>(v));
  });
}

IdealRule ideal_rule(std::span<const bf16_bits> same, std::span<const double> ideal) {
  IdealRule rule;
  const std::size_t count = std::min(same.size(), ideal.size());
  for (std::size_t i = 0; i < count; ++i) {
    rule.same_error = std::max(rule.same_error, std::fabs(value(same[i]) - ideal[i]));
    rule.ideal_max = std::max(rule.ideal_max, std::fabs(ideal[i]));
  }
  rule.limit = 2.0 * rule.same_error + std::ldexp(rule.ideal_max, -8);
  return rule;
}

Comparison compare_to_ideal(std::span<const bf16_bits> got, std::span<const double> ideal,
                            const IdealRule& rule, std::int64_t cols,
                            std::span<const std::int64_t> rows, std::string_view name) {
  Comparison cmp;
  const std::size_t count = std::min(got.size(), ideal.size());
  for (std::size_t i = 0; i < count; ++i) {
    const double g = value(got[i]), err = std::fabs(g - ideal[i]);
    // NaN errors compare false: a NaN is a mismatch.
    record(cmp, !(err <= rule.limit), err, ideal[i], static_cast<std::int64_t>(i), name, [&] {
      return fmt::format(
          "{}: got {} (0x{:04x}), fp64 layer {:.6g}, |diff| {:.4g} > limit {:.4g} (2 x the CPU "
          "backend's {:.4g} + 2^-8 x {:.4g})",
          where(name, static_cast<std::int64_t>(i), cols, rows), g, got[i], ideal[i], err,
          rule.limit, rule.same_error, rule.ideal_max);
    });
  }
  return cmp;
}

std::int64_t count_poison(std::span<const bf16_bits> values) {
  return std::count(values.begin(), values.end(), kPoisonBf16);
}

}  // namespace metrale::check
