// A progress line on stderr for long sweeps: rewritten in place on a terminal, one line per step
// otherwise (so a log file still shows where a run stopped). Each step restarts the watchdog's
// clock when there is one. Host only.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "bench/step_watchdog.hpp"

namespace metrale::bench {

class Progress {
 public:
  explicit Progress(int total, StepWatchdog* watchdog = nullptr)
      : total_(total), tty_(isatty(fileno(stderr)) != 0), watchdog_(watchdog) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { clear(); }

  void step(const std::string& what) {
    ++done_;
    const std::string line = fmt::format("[{}/{}] {}", done_, total_, what);
    if (watchdog_) watchdog_->started(line);
    if (tty_) {
      fmt::print(stderr, "\r\033[K{}", line);
    } else {
      fmt::print(stderr, "{}\n", line);
    }
    std::fflush(stderr);
  }

  // Erases the in-place line before ordinary output is printed.
  void clear() {
    if (tty_) {
      fmt::print(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  }

 private:
  int total_ = 0, done_ = 0;
  bool tty_ = false;
  StepWatchdog* watchdog_ = nullptr;
};

}  // namespace metrale::bench
