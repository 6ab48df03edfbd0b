// The command line as typed, and the one-line failure report of the subcommands.
#include "metrale/cli_context.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

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

void check_writable_location(std::string_view command, std::string_view option,
                             const std::string& path, bool prefix) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  struct stat info {};
  if (stat(dir.c_str(), &info) != 0)
    throw IoError(fmt::format("{}: the directory of {} {} ({}) is not usable: {}", command, option,
                              path, dir, std::strerror(errno)));
  if (!S_ISDIR(info.st_mode))
    throw IoError(fmt::format("{}: the directory of {} {} ({}) is not a directory", command,
                              option, path, dir));
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    throw IoError(fmt::format("{}: cannot write into the directory of {} {} ({}): {}", command,
                              option, path, dir, std::strerror(errno)));
  if (prefix || stat(path.c_str(), &info) != 0) return;  // a new file: the directory decides
  if (!S_ISREG(info.st_mode))
    throw IoError(fmt::format("{}: {} {} exists and is not a regular file", command, option, path));
  if (access(path.c_str(), W_OK) != 0)
    throw IoError(fmt::format("{}: cannot write {} {}: {}", command, option, path,
                              std::strerror(errno)));
}

}  // namespace metrale::cli
