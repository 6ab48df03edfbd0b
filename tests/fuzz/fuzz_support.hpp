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

// A heap buffer of exactly `bytes` bytes filled from the input; data() is null when bytes is 0
// or the harness chose to pass no buffer, and off by one byte when it chose a misaligned one.
class Buffer {
 public:
  Buffer(FuzzedDataProvider& in, std::size_t bytes, bool present) {
    if (!present) return;
    misaligned_ = in.ConsumeIntegralInRange<int>(0, 15) == 0;
    storage_.resize(bytes + (misaligned_ ? 1 : 0));
    const std::vector<std::uint8_t> fill = in.ConsumeBytes<std::uint8_t>(storage_.size());
    if (!fill.empty()) std::memcpy(storage_.data(), fill.data(), fill.size());
  }
  void* data() { return storage_.empty() ? nullptr : storage_.data() + (misaligned_ ? 1 : 0); }

 private:
  std::vector<std::uint8_t> storage_;
  bool misaligned_ = false;
};

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
