#include "bench/step_watchdog.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

namespace metrale::bench {

StepWatchdog::StepWatchdog(double limit_s, std::string json_path)
    : limit_(limit_s), json_path_(std::move(json_path)) {
  if (limit_s > 0) thread_ = std::thread([this] { watch(); });
}

StepWatchdog::~StepWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StepWatchdog::started(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    step_ = what;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit_);
    armed_ = true;
  }
  wake_.notify_all();
}

void StepWatchdog::finished() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }
  wake_.notify_all();
}

void StepWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    if (Clock::now() < deadline_) {
      wake_.wait_until(lock, deadline_);
      continue;
    }
    // The GPU work the step queued has not completed, and nothing can cancel it from here: say
    // so and end the process (exit handlers could wait on that same work).
    fmt::print(stderr,
               "\nmetrale bench: step '{}' has not finished after {:.0f} s: the GPU work it "
               "queued did not complete (a kernel that never finishes?); run ended{}\n",
               step_, limit_.count(),
               json_path_.empty() ? ""
                                  : fmt::format(", the groups finished before it are in {}",
                                                json_path_));
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(kStepTimeoutExit);
  }
}

}  // namespace metrale::bench
