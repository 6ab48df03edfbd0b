// Process-wide facts the subcommands share: the command line as typed (recorded by the bench in
// its JSON), and the one-line error report every subcommand uses.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "metrale/metrale.hpp"

namespace metrale::cli {

void set_command_line(int argc, char** argv);
const std::string& command_line();

// Prints "metrale <command>: <status>: <message>" on stderr and returns the exit code (1).
int report_failure(const char* command, const Result& result);
// The same line for a failure that is no library status: "metrale <command>: <kind>: <message>".
int report_failure(const char* command, const char* kind, const std::string& message);

// A file-system failure in a subcommand (the message carries the OS reason): reported as an I/O
// error, exit 1, never as an invalid argument.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A misuse of the command line found after parsing (a bad combination of options): reported as a
// usage error, exit 2, like CLI11's own parse errors.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Before any work: `path` (the value of `option`, e.g. --json) can be written — its directory
// exists, is a directory and is writable, and an existing `path` is a writable regular file.
// With `prefix` the files are PATH.<ext>, so only the directory is checked. IoError (with the OS
// reason) otherwise.
void check_writable_location(std::string_view command, std::string_view option,
                             const std::string& path, bool prefix);

// Runs a subcommand's body, which returns the exit code; a metrale::Error, IoError or UsageError
// it throws becomes report_failure's line and exit code.
template <class Body>
int exit_code_of(const char* command, Body&& body) {
  try {
    return body();
  } catch (const Error& e) {
    return report_failure(command, Result{e.status(), e.what()});
  } catch (const IoError& e) {
    return report_failure(command, "I/O error", e.what());
  } catch (const UsageError& e) {
    report_failure(command, "usage error", e.what());
    return 2;
  }
}

}  // namespace metrale::cli
