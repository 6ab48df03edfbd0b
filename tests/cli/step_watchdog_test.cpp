// `metrale bench`'s step watchdog (host side; what it guards against, a GPU kernel that never
// finishes, is reproduced here by a step that sleeps): a step past the limit ends the process
// with status 3 and a message naming the step and the JSON file; steps in time, a finished sweep
// and a limit of 0 do not. The option's validation through the CLI.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "bench/step_watchdog.hpp"
#include "cli_run.hpp"

namespace metrale::bench {
namespace {

using namespace std::chrono_literals;

// In a death test's child: `steps` steps of `each`, then (if `finish`) the sweep's end, then
// `after` of nothing; the watchdog is destroyed before the child exits with status 0.
void drive(double limit_s, int steps, std::chrono::milliseconds each, bool finish,
           std::chrono::milliseconds after) {
  {
    StepWatchdog watchdog(limit_s, "sweep.json");
    for (int step = 0; step < steps; ++step) {
      watchdog.started(step == 0 ? "[3/9] DeepSeek-V3 gate_up T=4096" : "step");
      std::this_thread::sleep_for(each);
    }
    if (finish) watchdog.finished();
    std::this_thread::sleep_for(after);
  }
  std::exit(0);
}

TEST(StepWatchdog, EndsTheRunWhenAStepOverstays) {
  EXPECT_EXIT(drive(1.0, 1, 30s, false, 0ms), ::testing::ExitedWithCode(kStepTimeoutExit),
              "step '\\[3/9\\] DeepSeek-V3 gate_up T=4096' has not finished after 1 s.*"
              "sweep\\.json");
}

TEST(StepWatchdog, StepsInTimeAndAFinishedSweepDoNotEndIt) {
  EXPECT_EXIT(drive(0.5, 4, 200ms, true, 1s), ::testing::ExitedWithCode(0), "");
}

TEST(StepWatchdog, ZeroMeansNoLimit) {
  EXPECT_EXIT(drive(0.0, 1, 500ms, false, 0ms), ::testing::ExitedWithCode(0), "");
}

TEST(StepWatchdog, TheOptionMustBeSecondsAtLeastZero) {
  for (const char* bad : {"-1", "nan", "inf"}) {
    const cli_test::CliRun run = cli_test::run_cli(
        std::string("bench --cpu -m qwen3-30b-a3b --ops gate_up --tokens 1 --step-timeout ") +
        bad);
    EXPECT_NE(run.exit_code, 0) << bad;
    EXPECT_NE(run.output.find("--step-timeout"), std::string::npos) << bad << ": " << run.output;
  }
}

}  // namespace
}  // namespace metrale::bench
