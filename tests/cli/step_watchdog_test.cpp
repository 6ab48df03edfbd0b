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

TEST(StepWatchdog, EndsTheRunWhenAStepOverstays) {
  EXPECT_EXIT(
      {
        StepWatchdog watchdog(1.0, "sweep.json");
        watchdog.started("[3/9] DeepSeek-V3 gate_up T=4096");
        std::this_thread::sleep_for(30s);
        std::exit(0);
      },
      ::testing::ExitedWithCode(kStepTimeoutExit),
      "step '\\[3/9\\] DeepSeek-V3 gate_up T=4096' has not finished after 1 s.*sweep\\.json");
}

TEST(StepWatchdog, StepsInTimeAndAFinishedSweepDoNotEndIt) {
  EXPECT_EXIT(
      {
        {
          StepWatchdog watchdog(0.5, "");
          for (int step = 0; step < 4; ++step) {
            watchdog.started("step");
            std::this_thread::sleep_for(200ms);
          }
          watchdog.finished();
          std::this_thread::sleep_for(1s);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StepWatchdog, ZeroMeansNoLimit) {
  EXPECT_EXIT(
      {
        {
          StepWatchdog watchdog(0.0, "");
          watchdog.started("step");
          std::this_thread::sleep_for(500ms);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
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
