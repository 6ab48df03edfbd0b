// The `metrale` command line: info, quantize, check, bench (commands.hpp wires them). Every
// failure ends as one line on stderr and a non-zero exit code; nothing escapes as a stack trace.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "metrale/cli_context.hpp"
#include "metrale/commands.hpp"

int main(int argc, char** argv) {
  metrale::cli::set_command_line(argc, argv);
  CLI::App app{
      "metrale — NVFP4 mixture-of-experts GEMMs: inspect the build, quantize weights, "
      "check backends against the CPU oracle, benchmark against cuBLASLt and CUTLASS"};
  app.require_subcommand(1);
  int exit_code = 0;
  metrale::cli::add_info_command(app, exit_code);
  metrale::cli::add_quantize_command(app, exit_code);
  metrale::cli::add_check_command(app, exit_code);
  metrale::cli::add_bench_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "metrale: {} (see metrale --help)\n", e.what());
    return 2;  // a usage error
  } catch (const std::exception& e) {
    fmt::print(stderr, "metrale: error: {}\n", e.what());
    return 1;
  } catch (...) {
    fmt::print(stderr, "metrale: error: unknown failure\n");
    return 1;
  }
  return exit_code;
}
