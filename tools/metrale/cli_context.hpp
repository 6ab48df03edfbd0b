// Process-wide facts the subcommands share: the command line as typed (recorded by the bench in
// its JSON), and the one-line error report every subcommand uses.
#pragma once

#include <string>

#include "core/error.hpp"
#include "metrale/metrale.hpp"

namespace metrale::cli {

void set_command_line(int argc, char** argv);
const std::string& command_line();

// Prints "metrale <command>: <status>: <message>" on stderr and returns the exit code (1).
int report_failure(const char* command, const Result& result);

// Runs a subcommand's body, which returns the exit code; a metrale::Error it throws becomes
// report_failure's line and exit code.
template <class Body>
int exit_code_of(const char* command, Body&& body) {
  try {
    return body();
  } catch (const Error& e) {
    return report_failure(command, Result{e.status(), e.what()});
  }
}

}  // namespace metrale::cli
