// Check cases of the single GEMMs: bf16_gemm (out = act · weightᵀ) and nvfp4_gemm (weights really
// packed, [K/16, N] scales). The oracle computes the sampled rows of act (all of them unless the
// shape is huge); the backend computes all M rows into a poisoned, guard-banded output.
#include <fmt/format.h>

#include "check/inputs.hpp"
#include "check/runners.hpp"
#include "check/weights.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/buffers.hpp"
#endif

namespace metrale::check::detail {
namespace {

struct GemmInputs {
  std::vector<bf16_bits> act;     // [M, K]
  std::vector<bf16_bits> weight;  // [N, K], dense only
  PackedWeight packed;            // nvfp4 only
  float scale_2 = 1.0f;
};

GemmInputs make_inputs(const Case& c) {
  GemmInputs in;
  const std::size_t M = static_cast<std::size_t>(c.m), N = static_cast<std::size_t>(c.n),
                    K = static_cast<std::size_t>(c.k);
  in.act = make_activations(c.mode, M * K, c.seed);
  if (c.op == Op::bf16_gemm) {
    const std::uint64_t s = derive_seed(c.seed, 111);
    in.weight = c.mode == Mode::exact ? small_int_bf16(N * K, s, 3) : normal_bf16(N * K, s);
  } else {
    in.packed = make_nvfp4_weight(c.mode, c.n, c.k, c.seed, false);
    in.scale_2 = c.mode == Mode::exact ? exact_scale_2(static_cast<std::int64_t>(c.seed))
                                       : in.packed.scale_2;
  }
  return in;
}

// out[rows, N] on the CPU for act rows `act` (already gathered); `absolute` runs it on |a|, |w|.
std::vector<bf16_bits> oracle(const Case& c, const GemmInputs& in,
                              const std::vector<bf16_bits>& act, std::int32_t rows, bool absolute) {
  std::vector<bf16_bits> out(static_cast<std::size_t>(rows) * static_cast<std::size_t>(c.n));
  const std::vector<bf16_bits> a = absolute ? abs_bf16(act) : act;
  if (c.op == Op::bf16_gemm) {
    const std::vector<bf16_bits> w = absolute ? abs_bf16(in.weight) : in.weight;
    require_ok(bf16_gemm_act_weight_t(DenseGemm{a.data(), w.data(), out.data(), rows, c.n, c.k},
                                      kCpuOracle),
               "CPU oracle bf16_gemm_act_weight_t");
  } else {
    const PackedWeight w = absolute ? abs_weight(in.packed) : in.packed;
    Nvfp4Gemm args{a.data(),
                   w.packed.data(),
                   w.scale.data(),
                   in.scale_2,
                   ScaleLayout::k16_by_n,
                   out.data(),
                   rows,
                   c.n,
                   c.k};
    require_ok(nvfp4_gemm_bf16_act_weight_t(args, kCpuOracle),
               "CPU oracle nvfp4_gemm_bf16_act_weight_t");
  }
  return out;
}

#ifdef METRALE_HAS_CUDA
struct DeviceGemm {
  DeviceBuffer act, weight, packed, scale, out;
};

Result call_backend(const Case& c, const GemmInputs& in, DeviceGemm& d) {
  const Exec exec{c.backend, nullptr, 0, nullptr};
  if (c.op == Op::bf16_gemm) {
    return bf16_gemm_act_weight_t(DenseGemm{d.act.as<bf16_bits>(), d.weight.as<bf16_bits>(),
                                            d.out.as<bf16_bits>(), c.m, c.n, c.k},
                                  exec);
  }
  return nvfp4_gemm_bf16_act_weight_t(
      Nvfp4Gemm{d.act.as<bf16_bits>(), d.packed.as<std::uint8_t>(), d.scale.as<std::uint8_t>(),
                in.scale_2, ScaleLayout::k16_by_n, d.out.as<bf16_bits>(), c.m, c.n, c.k},
      exec);
}

// Runs the backend (twice when checking determinism) and compares with the oracle's rows.
void run_on_device(const Case& c, const GemmInputs& in, const std::vector<std::int64_t>& rows,
                   const std::vector<bf16_bits>& ref, const std::vector<bf16_bits>& bound,
                   Report& report) {
  DeviceGemm d;
  d.act = upload_new(in.act, "act");
  if (c.op == Op::bf16_gemm) {
    d.weight = upload_new(in.weight, "weight");
  } else {
    d.packed = upload_new(in.packed.packed, "weight_packed_t");
    d.scale = upload_new(in.packed.scale, "weight_scale_t");
  }
  d.out = DeviceBuffer(static_cast<std::size_t>(c.m) * c.n * sizeof(bf16_bits), "out");
  d.out.poison_bf16(kPoisonBf16);
  const Stopwatch watch;
  if (refused(c, call_backend(c, in, d), report)) return;
  device_synchronize(fmt::format("{} on {}", op_name(c.op), backend_name(c.backend)));
  report.backend_ms = watch.ms();
  const std::vector<bf16_bits> got = d.out.download<bf16_bits>();
  std::string again;
  if (c.check_determinism) {
    d.out.poison_bf16(kPoisonBf16);
    if (refused(c, call_backend(c, in, d), report)) return;
    device_synchronize("second run");
    const std::vector<bf16_bits> second = d.out.download<bf16_bits>();
    const Comparison cmp = compare_bf16_bits(second, got, c.n, {}, "out");
    if (cmp.mismatches > 0)
      again = fmt::format("second run differs from the first: {}", cmp.first_detail);
  }
  std::string guards = check_all_guards({&d.act, &d.weight, &d.packed, &d.scale, &d.out});
  if (guards.empty() && d.act.download<bf16_bits>() != in.act) guards = "act was modified";
  const std::vector<bf16_bits> sampled = gather_rows(got, c.n, rows);
  const Comparison cmp =
      c.mode == Mode::exact
          ? compare_bf16_bits(sampled, ref, c.n, rows, "out")
          : compare_bf16_tolerance(
                sampled, ref, bound, c.n, rows,
                Tolerance{c.k, c.op == Op::nvfp4_gemm && c.backend != Backend::cuda}, "out");
  // The poison over every row, not the sampled ones only: a row left unwritten anywhere fails.
  conclude(c, report, cmp, count_poison(got), guards, again);
}
#endif

}  // namespace

Report run_gemm_case(const Case& c) {
  if (c.m < 0 || c.n < 1 || c.k < 1)
    throw HarnessError(
        fmt::format("shape {}x{}x{}: expected M >= 0, N >= 1, K >= 1", c.m, c.n, c.k));
  const GemmInputs in = make_inputs(c);
  const std::int64_t macs_per_row =
      static_cast<std::int64_t>(c.n) * c.k * (c.mode == Mode::exact ? 1 : 2);
  const std::vector<std::int64_t> rows = choose_rows(c.m, macs_per_row, c.sample_rows, c.seed);
  const std::vector<bf16_bits> act_rows = gather_rows(in.act, c.k, rows);
  const std::int32_t n_rows = static_cast<std::int32_t>(rows.size());
  const Stopwatch watch;
  const std::vector<bf16_bits> ref = oracle(c, in, act_rows, n_rows, false);
  const std::vector<bf16_bits> bound =
      c.mode == Mode::exact ? std::vector<bf16_bits>{} : oracle(c, in, act_rows, n_rows, true);
  const double oracle_ms = watch.ms();
  const std::string missing = device_missing(c);
  if (!missing.empty()) return skipped_after_oracle(c, missing, oracle_ms);
  Report report;
  report.oracle_ms = oracle_ms;
  report.rows_compared = n_rows;
  report.rows_total = c.m;
#ifdef METRALE_HAS_CUDA
  run_on_device(c, in, rows, ref, bound, report);
#endif
  return report;
}

}  // namespace metrale::check::detail
