// Statistics and floors of a bench row (measure.hpp).
#include "bench/measure.hpp"

#include <algorithm>
#include <cmath>

namespace metrale::bench {
namespace {

// Linear interpolation between order statistics; `sorted` is non-empty.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Stats summarize(std::vector<double> per_call_us, int iterations, std::string timing) {
  Stats s;
  s.iterations = iterations;
  s.timing = std::move(timing);
  s.samples = static_cast<int>(per_call_us.size());
  if (per_call_us.empty()) return s;
  std::sort(per_call_us.begin(), per_call_us.end());
  s.min_us = per_call_us.front();
  s.max_us = per_call_us.back();
  s.median_us = quantile(per_call_us, 0.5);
  s.p10_us = quantile(per_call_us, 0.1);
  s.p90_us = quantile(per_call_us, 0.9);
  return s;
}

Work grouped_work(int active, int projections, int n, int k, int a_rows, int rows) {
  const double nk = static_cast<double>(n) * k;
  Work w;
  w.flops = 2.0 * rows * nk * projections;
  w.bytes = static_cast<double>(active) * projections * nk * 0.5625 +  // 4 bits + e4m3 per 16
            2.0 * a_rows * static_cast<double>(k) +                    // bf16 activations
            2.0 * rows * static_cast<double>(n) * projections;         // bf16 outputs
  return w;
}

Work operator+(const Work& a, const Work& b) {
  return Work{a.flops + b.flops, a.bytes + b.bytes};
}

Floor chain_of(const Floor& a, const Floor& b) {
  return Floor{a.bytes_us + b.bytes_us, a.compute_us + b.compute_us, a.floor_us() + b.floor_us()};
}

Floor floor_of(const Work& work, double bandwidth_gbps, double tflops) {
  Floor f;
  // GB/s = 1e3 bytes per µs; TFLOP/s = 1e6 flop per µs.
  if (bandwidth_gbps > 0) f.bytes_us = work.bytes / (bandwidth_gbps * 1e3);
  if (tflops > 0) f.compute_us = work.flops / (tflops * 1e6);
  return f;
}

}  // namespace metrale::bench
