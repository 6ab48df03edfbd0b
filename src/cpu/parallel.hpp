// parallel_for for the CPU reference backend: splits [0, count) into chunks of `grain` items
// handed out through an atomic counter to one std::thread per hardware thread (the caller's
// thread works too). Deterministic results need nothing from the schedule: every item writes its
// own outputs. An exception from any item (or a failure to start a thread) never escapes a worker;
// the first one is rethrown on the calling thread after all workers joined.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace metrale::cpu {

inline unsigned worker_count() {
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1u : hardware;
}

// Calls fn(begin, end) on disjoint ranges covering [0, count).
template <class Fn>
void parallel_for(std::size_t count, std::size_t grain, Fn&& fn) {
  if (count == 0) return;
  grain = std::max<std::size_t>(grain, 1);
  const std::size_t chunks = (count + grain - 1) / grain;
  const std::size_t threads = std::min<std::size_t>(worker_count(), chunks);
  if (threads <= 1) {
    fn(std::size_t{0}, count);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (std::size_t chunk = next++; chunk < chunks; chunk = next++) {
        const std::size_t begin = chunk * grain;
        fn(begin, std::min(begin + grain, count));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      next = chunks;  // stop handing out work
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (std::size_t t = 0; t + 1 < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (...) {
      break;  // could not start a thread: the ones running (and this one) do the rest
    }
  }
  work();
  for (auto& thread : pool) thread.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace metrale::cpu
