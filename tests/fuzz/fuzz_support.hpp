// What every libFuzzer harness of metrale shares: drawing shapes that are either small (so real,
// exactly sized buffers can back them) or any int32 at all (then the harness passes no buffers,
// and the library must refuse or do nothing), heap buffers of exactly the bytes a call may touch
// (ASan catches one byte beyond), and the C ABI's contract checked after every call.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include "metrale/metrale.h"

namespace metrale::fuzz {

// A dimension: small and in range with high probability, else any int32 (negative, 0, huge).
inline std::int32_t draw_dim(FuzzedDataProvider& in, std::int32_t small_max, std::int32_t step) {
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) return in.ConsumeIntegral<std::int32_t>();
  return in.ConsumeIntegralInRange<std::int32_t>(0, small_max / step) * step;
}

inline bool small(std::int64_t value, std::int64_t max) {
  return value >= 0 && value <= max;
}

// True one time in n. An exhausted input draws 0, so by default (`rare_last`) the rare case is
// the draw's last value and a short input draws the usual ones; the older draws of the grouped
// calls have it first (rare_last = false), as their corpus was found with.
inline bool rarely(FuzzedDataProvider& in, int n, bool rare_last = true) {
  return in.ConsumeIntegralInRange<int>(0, n - 1) == (rare_last ? n - 1 : 0);
}

// A heap buffer of exactly `bytes` bytes filled from the input; data() is null when bytes is 0
// or the harness chose to pass no buffer, and off by one byte when it chose a misaligned one.
class Buffer {
 public:
  Buffer() = default;  // no buffer: data() is null
  Buffer(FuzzedDataProvider& in, std::size_t bytes, bool present, bool rare_last = false) {
    if (!present) return;
    misaligned_ = rarely(in, 16, rare_last);
    storage_.resize(bytes + (misaligned_ ? 1 : 0));
    const std::vector<std::uint8_t> fill = in.ConsumeBytes<std::uint8_t>(storage_.size());
    if (!fill.empty()) std::memcpy(storage_.data(), fill.data(), fill.size());
  }
  void* data() { return storage_.empty() ? nullptr : storage_.data() + (misaligned_ ? 1 : 0); }

 private:
  std::vector<std::uint8_t> storage_;
  bool misaligned_ = false;
};

// One projection's per-expert weights, as metrale_expert_weights points at them: each expert's
// packed [n, k/2] and its scales (SFB, or [k/16, n]), null one time in `odds.absent`, and a
// scale_2 of 0.5, or any float (NaN, 0, negative) one time in `odds.any_scale2`.
struct ExpertOdds {
  int absent = 10, any_scale2 = 2;
  bool rare_last = false;  // rarely()'s: false for the grouped calls, true for the MoE layer
};

struct Experts {
  std::vector<Buffer> buffers;
  std::vector<std::uint64_t> packed, scale;
  std::vector<float> scale2;
};

inline Experts draw_experts(FuzzedDataProvider& in, std::int32_t experts, std::size_t n,
                            std::size_t k, bool sfb, ExpertOdds odds = {}) {
  Experts x;
  const std::size_t scale_bytes =
      sfb ? ((n + 127) / 128 * 128) * ((k / 16 + 3) / 4 * 4) : n * (k / 16);
  x.buffers.reserve(2 * static_cast<std::size_t>(experts));
  for (std::int32_t e = 0; e < experts; ++e) {
    const bool present = !rarely(in, odds.absent, odds.rare_last);
    x.buffers.emplace_back(in, n * k / 2, present, odds.rare_last);
    x.packed.push_back(reinterpret_cast<std::uintptr_t>(x.buffers.back().data()));
    x.buffers.emplace_back(in, scale_bytes, present, odds.rare_last);
    x.scale.push_back(reinterpret_cast<std::uintptr_t>(x.buffers.back().data()));
    const bool any = rarely(in, odds.any_scale2, odds.rare_last);
    x.scale2.push_back(any ? in.ConsumeFloatingPoint<float>() : 0.5f);
  }
  return x;
}

[[noreturn]] inline void contract_broken(const char* who, const std::string& why) {
  std::fprintf(stderr, "fuzz: %s broke the C ABI contract: %s\n", who, why.c_str());
  std::abort();
}

// After a call of `who`: a known status; "" after success, else a message naming the function.
inline void check_contract(const char* who, metrale_status status) {
  const std::string message = metrale_last_error();
  if (status < METRALE_STATUS_OK || status > METRALE_STATUS_INTERNAL)
    contract_broken(who, "unknown status " + std::to_string(status));
  if (status == METRALE_STATUS_INTERNAL) contract_broken(who, "internal error: " + message);
  if (status == METRALE_STATUS_OK && !message.empty())
    contract_broken(who, "OK with a message: " + message);
  if (status != METRALE_STATUS_OK && message.rfind(std::string(who) + ": ", 0) != 0)
    contract_broken(who, "the message does not name the function: " + message);
}

}  // namespace metrale::fuzz
