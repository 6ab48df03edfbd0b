// Check cases of the grouped operations (grouped_gate_up, grouped_gate_up_fused, grouped_down):
// a seeded top-k routing, the weight pool of grouped.hpp, host or device offsets; the backend computes every
// group row, the oracle the sampled ones (all of them unless that would take too long).
#include <span>

#include <fmt/format.h>

#include "check/grouped.hpp"
#include "check/runners.hpp"

namespace metrale::check::detail {
namespace {

#ifdef METRALE_HAS_CUDA
// Downloads the outputs (full [M_total, N] each).
std::array<std::vector<bf16_bits>, 2> download_outputs(const GroupedHost& h,
                                                       const GroupedDevice& d) {
  std::array<std::vector<bf16_bits>, 2> got;
  for (int p = 0; p < h.proj_count; ++p) got[p] = d.out[p].download<bf16_bits>();
  return got;
}

void run_on_device(const Case& c, const GroupedHost& h, const std::vector<std::int64_t>& rows,
                   const std::array<std::vector<bf16_bits>, 2>& ref,
                   const std::array<std::vector<bf16_bits>, 2>& bound, Report& report) {
  GroupedDevice d = upload_grouped(h);
  const Exec exec{c.backend, nullptr, 0, nullptr};
  const GroupedNvfp4 args = device_args(h, d, c.device_offsets, h.routing.max_rows);
  const Stopwatch watch;
  if (refused(c, nvfp4_grouped(args, exec), report)) return;
  device_synchronize(fmt::format("{} on {}", op_name(c.op), backend_name(c.backend)));
  report.backend_ms = watch.ms();
  const auto got = download_outputs(h, d);
  std::string again;
  if (c.check_determinism) {
    for (int p = 0; p < h.proj_count; ++p) d.out[p].poison_bf16(kPoisonBf16);
    if (refused(c, nvfp4_grouped(args, exec), report)) return;
    device_synchronize("second run");
    const auto second = download_outputs(h, d);
    for (int p = 0; p < h.proj_count && again.empty(); ++p) {
      const Comparison cmp = compare_bf16_bits(second[p], got[p], h.n, {}, d.out[p].name());
      if (cmp.mismatches > 0) again = "second run differs from the first: " + cmp.first_detail;
    }
  }
  std::string guards = check_all_guards(d.all());
  if (guards.empty() && d.a.download<bf16_bits>() != h.a) guards = "a was modified";
  Comparison cmp;
  std::int64_t poisoned = 0;
  const Tolerance tol{h.k, c.backend != Backend::cuda};
  // The poison over every row an expert owns (rows past offsets[E] are no expert's: never
  // written), not the sampled rows only: an expert left unwritten anywhere fails.
  const std::size_t first = static_cast<std::size_t>(h.routing.offsets.front()) * h.n;
  const std::size_t owned = static_cast<std::size_t>(h.routing.offsets.back()) * h.n - first;
  for (int p = 0; p < h.proj_count; ++p) {
    const std::vector<bf16_bits> sampled = gather_rows(got[p], h.n, rows);
    poisoned += count_poison(std::span<const bf16_bits>(got[p]).subspan(first, owned));
    cmp.merge(c.mode == Mode::exact ? compare_bf16_bits(sampled, ref[p], h.n, rows, d.out[p].name())
                                    : compare_bf16_tolerance(sampled, ref[p], bound[p], h.n, rows,
                                                             tol, d.out[p].name()));
  }
  conclude(c, report, cmp, poisoned, guards, again);
}
#endif

}  // namespace

Report run_grouped_case(const Case& c) {
  const GroupedHost h = make_grouped_host(c);
  const std::int64_t macs_per_row =
      static_cast<std::int64_t>(h.n) * h.k * h.proj_count * (c.mode == Mode::exact ? 1 : 2);
  const std::vector<std::int64_t> rows =
      choose_rows(h.routing.m_total, macs_per_row, c.sample_rows, c.seed);
  const Stopwatch watch;
  const auto ref = grouped_oracle(h, rows, false);
  const auto bound = c.mode == Mode::exact ? std::array<std::vector<bf16_bits>, 2>{}
                                           : grouped_oracle(h, rows, true);
  const double oracle_ms = watch.ms();
  const std::string missing = device_missing(c);
  if (!missing.empty()) return skipped_after_oracle(c, missing, oracle_ms);
  Report report;
  report.oracle_ms = oracle_ms;
  report.rows_compared = static_cast<std::int64_t>(rows.size());
  report.rows_total = h.routing.m_total;
#ifdef METRALE_HAS_CUDA
  run_on_device(c, h, rows, ref, bound, report);
#endif
  return report;
}

}  // namespace metrale::check::detail
