// The subcommands of the `metrale` CLI; main.cpp wires them. Each registers its options and a
// callback that returns the process exit code through `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace metrale::cli {

void add_info_command(CLI::App& app, int& exit_code);
void add_quantize_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);

}  // namespace metrale::cli
