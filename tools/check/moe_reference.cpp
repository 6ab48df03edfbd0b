// The fp64 MoE layer of the realistic mode (moe_reference.hpp).
#include "check/moe_reference.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "cpu/parallel.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"

namespace metrale::check {
namespace {

// [N, K] row-major: e2m1 code × e4m3 block scale ([K/16, N] layout), exact in float.
std::vector<float> decode(const PackedWeight& weight) {
  const PackedWeight w = packed_weight(weight);  // the seeds' nibbles, read below
  const std::size_t N = static_cast<std::size_t>(w.n), K = static_cast<std::size_t>(w.k);
  std::vector<float> out(N * K);
  for (std::size_t n = 0; n < N; ++n) {
    for (std::size_t k = 0; k < K; ++k) {
      const std::uint8_t byte = w.packed[n * (K / 2) + k / 2];
      const float code = format::e2m1_to_float(k % 2 == 0 ? byte : byte >> 4);
      out[n * K + k] = code * format::e4m3_to_float(w.scale[(k / 16) * N + n]);
    }
  }
  return out;
}

// The decoded pool members the routing reaches, per projection.
using Decoded = std::map<std::pair<int, std::int32_t>, std::vector<float>>;

Decoded decode_reached(const MoeHost& h, const std::vector<std::int32_t>& ids) {
  Decoded decoded;
  for (std::int32_t e : ids) {
    const std::int32_t member = h.pool_of_expert[static_cast<std::size_t>(e)];
    for (int p = 0; p < 3; ++p)
      if (!decoded.count({p, member})) decoded[{p, member}] = decode(h.pool[p][member]);
  }
  return decoded;
}

// y[n] = Σ_k v_k·W[n,k]·scale_2 + bias[n] for one expert's projection p.
std::vector<double> project(const MoeHost& h, const Decoded& decoded, int p, std::int32_t e,
                            const std::vector<double>& v) {
  const std::size_t N = static_cast<std::size_t>(h.n_of(p)),
                    K = static_cast<std::size_t>(h.k_of(p));
  const std::vector<float>& w = decoded.at({p, h.pool_of_expert[static_cast<std::size_t>(e)]});
  const double s2 = h.scale2[p][static_cast<std::size_t>(e)];
  std::vector<double> y(N);
  for (std::size_t n = 0; n < N; ++n) {
    double sum = 0;
    for (std::size_t k = 0; k < K; ++k) sum += v[k] * static_cast<double>(w[n * K + k]);
    y[n] = sum * s2;
    if (!h.bias[p].empty())
      y[n] += format::bf16_to_float(h.bias[p][static_cast<std::size_t>(e) * N + n]);
  }
  return y;
}

double activation(const MoeRecipe& r, double g, double u) {
  if (r.activation == MoeActivation::silu) return g / (1.0 + std::exp(-g)) * u;
  const double limit = r.swiglu_limit, gc = std::min(g, limit);
  const double uc = std::clamp(u, -limit, limit);
  return gc / (1.0 + std::exp(-(static_cast<double>(r.swiglu_alpha) * gc))) * (uc + 1.0);
}

}  // namespace

std::vector<double> moe_ideal(const MoeHost& h, const std::vector<std::int64_t>& rows,
                              const std::vector<std::int32_t>& ids,
                              const std::vector<float>& weights) {
  const Decoded decoded = decode_reached(h, ids);
  const std::size_t H = static_cast<std::size_t>(h.hidden), k = static_cast<std::size_t>(h.top_k);
  std::vector<double> out(rows.size() * H, 0.0);
  cpu::parallel_for(rows.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t s = begin; s < end; ++s) {
      std::vector<double> x(H);
      for (std::size_t i = 0; i < H; ++i)
        x[i] = format::bf16_to_float(h.x[static_cast<std::size_t>(rows[s]) * H + i]);
      for (std::size_t j = 0; j < k; ++j) {
        const std::int32_t e = ids[s * k + j];
        const std::vector<double> g = project(h, decoded, kGate, e, x);
        const std::vector<double> u = project(h, decoded, kUp, e, x);
        std::vector<double> a(g.size());
        for (std::size_t n = 0; n < a.size(); ++n) a[n] = activation(h.recipe, g[n], u[n]);
        const std::vector<double> d = project(h, decoded, kDown, e, a);
        for (std::size_t c = 0; c < H; ++c) out[s * H + c] += weights[s * k + j] * d[c];
      }
    }
  });
  return out;
}

}  // namespace metrale::check
