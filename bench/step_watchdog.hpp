// Ends `metrale bench` when one step of a GPU sweep (a row with all its implementations, or the
// ceilings) does not finish in time. A kernel that never completes would otherwise hold the
// process forever, and a time-boxed sweep would lose the reason with the run; the JSON file holds
// every group finished before the step. Host only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace metrale::bench {

// The exit status of a run ended by the watchdog (1: a failure, 2: a usage error).
inline constexpr int kStepTimeoutExit = 3;

class StepWatchdog {
 public:
  // limit_s <= 0: no limit (no thread). json_path: named in the message when not empty.
  StepWatchdog(double limit_s, std::string json_path);
  StepWatchdog(const StepWatchdog&) = delete;
  StepWatchdog& operator=(const StepWatchdog&) = delete;
  ~StepWatchdog();

  // A step began: the clock restarts for it.
  void started(const std::string& what);
  // The sweep is over: no step is timed any more.
  void finished();

 private:
  void watch();

  using Clock = std::chrono::steady_clock;
  const std::chrono::duration<double> limit_;
  const std::string json_path_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string step_;
  Clock::time_point deadline_;
  bool armed_ = false, stopping_ = false;
  std::thread thread_;
};

}  // namespace metrale::bench
