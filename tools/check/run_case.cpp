// run_case: dispatch to the runner of the operation, the pieces the runners share (runners.hpp),
// and the conversion of any harness failure into a failed report.
#include <algorithm>
#include <exception>
#include <numeric>

#include <fmt/format.h>

#include <string>

#include "check/inputs.hpp"
#include "check/runners.hpp"
#include "check/scoped_kernel.hpp"
#include "check/weights.hpp"

namespace metrale::check {
namespace detail {

std::vector<std::int64_t> choose_rows(std::int64_t rows, std::int64_t macs_per_row,
                                      std::int64_t requested, std::uint64_t seed) {
  std::int64_t target = rows;
  if (requested > 0) {
    target = requested;
  } else if (requested < 0 && macs_per_row > 0 && rows * macs_per_row > kOracleMacBudget) {
    target = std::max<std::int64_t>(16, kOracleMacBudget / macs_per_row);
  }
  std::vector<std::int64_t> all(static_cast<std::size_t>(std::max<std::int64_t>(rows, 0)));
  std::iota(all.begin(), all.end(), std::int64_t{0});
  if (target >= rows) return all;
  // Partial Fisher-Yates over rows 1 .. rows-2; the first and last row always join.
  Rng rng(derive_seed(seed, 301));
  std::vector<std::int64_t> picked = {0, rows - 1};
  for (std::int64_t i = 1; i < rows - 1 && static_cast<std::int64_t>(picked.size()) < target; ++i) {
    const std::int64_t j =
        i + static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(rows - 1 - i));
    std::swap(all[i], all[j]);
    picked.push_back(all[i]);
  }
  std::sort(picked.begin(), picked.end());
  return picked;
}

bool all_rows(const std::vector<std::int64_t>& rows, std::int64_t total) {
  return static_cast<std::int64_t>(rows.size()) == total;
}

std::string device_missing(const Case& c) {
  std::string why;
  const bool ok = c.backend == Backend::cuda ? cuda_usable(&why) : cuda_device_present(&why);
  return ok ? std::string() : why;
}

Report skipped_after_oracle(const Case& c, const std::string& why, double oracle_ms) {
  Report r;
  r.outcome = Outcome::skip;
  r.oracle_ms = oracle_ms;
  r.detail = fmt::format("{}: nothing to compare; CPU oracle ran in {:.0f} ms", why, oracle_ms);
  r.reproduce = reproduce_command(c);
  return r;
}

bool refused(const Case& c, const Result& result, Report& report) {
  if (result.ok()) return false;
  const bool cannot = result.status == Status::not_built || result.status == Status::unsupported;
  report.outcome = cannot ? Outcome::skip : Outcome::fail;
  report.detail = fmt::format("the {} backend {}: {}", backend_name(c.backend),
                              cannot ? "cannot run it" : "failed", result.message);
  return true;
}

void conclude(const Case& c, Report& report, const Comparison& cmp, std::int64_t poisoned,
              const std::string& guard_problem, const std::string& determinism_problem) {
  report.compared = cmp.compared;
  report.mismatches = cmp.mismatches;
  report.first_mismatch = cmp.first_mismatch;
  report.max_abs_error = cmp.max_abs;
  report.max_rel_error = cmp.max_rel;
  std::vector<std::string> problems;
  if (cmp.mismatches > 0) {
    problems.push_back(
        fmt::format("{} of {} values differ (max abs {:.4g}, max rel {:.4g}); first "
                    "at {}",
                    cmp.mismatches, cmp.compared, cmp.max_abs, cmp.max_rel, cmp.first_detail));
  }
  if (poisoned > 0)
    problems.push_back(
        fmt::format("{} output values still hold the NaN poison (never written)", poisoned));
  if (!guard_problem.empty()) problems.push_back(guard_problem);
  if (!determinism_problem.empty()) problems.push_back(determinism_problem);
  if (cmp.compared == 0 && problems.empty() && report.rows_total > 0)
    problems.push_back("nothing was compared");
  if (!problems.empty()) {
    report.outcome = Outcome::fail;
    report.detail = fmt::format("{}", fmt::join(problems, "; "));
    return;
  }
  report.outcome = Outcome::pass;
  const bool bitwise =
      c.mode == Mode::exact || c.op == Op::pack || c.op == Op::sfb || c.op == Op::transpose;
  report.detail = bitwise ? fmt::format("bit for bit equal ({} values)", cmp.compared)
                          : fmt::format(
                                "within tolerance ({} values, max abs {:.3g}, max rel "
                                "{:.3g})",
                                cmp.compared, cmp.max_abs, cmp.max_rel);
  if (c.check_determinism) report.detail += ", second run identical";
}

}  // namespace detail

Report run_case(const Case& c) {
  Report report;
  try {
    const ScopedCudaKernel forced(c.cuda_kernel);
    const ScopedCudaQuantizer quantizer(c.cuda_quantizer);
    const ScopedVariable layout("METRALE_PREPACKED_LAYOUT", c.prepacked_layout);
    if (c.op == Op::bf16_gemm || c.op == Op::nvfp4_gemm) {
      report = detail::run_gemm_case(c);
    } else if (is_grouped(c.op)) {
      report = detail::run_grouped_case(c);
    } else if (c.op == Op::moe) {
      report = detail::run_moe_case(c);
    } else {
      report = detail::run_pack_case(c);
    }
  } catch (const std::exception& e) {
    report.outcome = Outcome::fail;
    report.detail = fmt::format("harness error: {}", e.what());
  }
  report.reproduce = reproduce_command(c);
  return report;
}

}  // namespace metrale::check
