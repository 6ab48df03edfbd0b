// Internals shared by the per-operation runners of run_case (run_gemm.cpp, run_pack.cpp,
// run_grouped.cpp, run_moe.cpp): the row sample of the oracle, timing, the verdict on an API
// refusal, and the final report. Not part of the harness's interface (check.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "check/check.hpp"
#include "check/compare.hpp"

namespace metrale::check::detail {

Report run_gemm_case(const Case& c);
Report run_pack_case(const Case& c);
Report run_grouped_case(const Case& c);
Report run_moe_case(const Case& c);

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Rows (ascending) of a `rows`-row output the oracle computes, each costing `macs_per_row`
// multiply-adds: all of them, or a seeded sample that always holds the first and last row (see
// Case::sample_rows).
std::vector<std::int64_t> choose_rows(std::int64_t rows, std::int64_t macs_per_row,
                                      std::int64_t requested, std::uint64_t seed);
bool all_rows(const std::vector<std::int64_t>& rows, std::int64_t total);

// Rows `rows` of a row-major [*, cols] matrix, gathered.
template <class T>
std::vector<T> gather_rows(const std::vector<T>& data, std::int64_t cols,
                           const std::vector<std::int64_t>& rows) {
  std::vector<T> out(rows.size() * static_cast<std::size_t>(cols));
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::copy_n(data.begin() + rows[r] * cols, cols, out.begin() + r * cols);
  return out;
}

// Whether the backend's cuda-side device is there: "" if so, else why not (the case is skipped).
std::string device_missing(const Case& c);

// The report of a case whose oracle ran but had nothing to compare against.
Report skipped_after_oracle(const Case& c, const std::string& why, double oracle_ms);

// A refusal by the API: not_built and unsupported are the backend saying it cannot (skip);
// anything else is a failure. True (and `report` says which) when r is not ok.
bool refused(const Case& c, const Result& r, Report& report);

// Fills outcome and detail from the comparison and the run's other findings ("" when fine).
void conclude(const Case& c, Report& report, const Comparison& cmp, std::int64_t poisoned,
              const std::string& guard_problem, const std::string& determinism_problem);

}  // namespace metrale::check::detail
