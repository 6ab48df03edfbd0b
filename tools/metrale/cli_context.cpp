// The command line as typed, and the one-line failure report of the subcommands.
#include "metrale/cli_context.hpp"

#include <cstdio>

#include <fmt/format.h>

namespace metrale::cli {
namespace {

std::string& stored_command_line() {
  static std::string line;
  return line;
}

// Quotes an argument only when the shell would need it, so the line can be pasted back.
std::string shell_quoted(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~") == std::string::npos) {
    return arg;
  }
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

void set_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    line += shell_quoted(argv[i]);
  }
  stored_command_line() = line;
}

const std::string& command_line() {
  return stored_command_line();
}

int report_failure(const char* command, const Result& result) {
  static const char* const kNames[] = {
      "ok",         "invalid argument",    "unsupported",   "not built",
      "CUDA error", "workspace too small", "internal error"};
  const auto index = static_cast<std::size_t>(result.status);
  return report_failure(command, index < std::size(kNames) ? kNames[index] : "error",
                        result.message);
}

int report_failure(const char* command, const char* kind, const std::string& text) {
  // Messages from deeper code often start with the command's own name; say it once.
  std::string message = text;
  const std::string prefix = std::string(command) + ": ";
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  fmt::print(stderr, "metrale {}: {}: {}\n", command, kind, message);
  return 1;
}

}  // namespace metrale::cli
