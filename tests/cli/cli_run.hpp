// Runs the built `metrale` binary (METRALE_CLI_PATH, set by tools/metrale/CMakeLists.txt) with
// arguments through the shell and returns its exit code and everything it printed (stdout and
// stderr together), for the end-to-end tests of the subcommands.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace metrale::cli_test {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

inline CliRun run_cli(const std::string& args, const std::string& env = "") {
  const std::string command = env + " " + METRALE_CLI_PATH + " " + args + " 2>&1";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> chunk{};
  while (std::size_t got = std::fread(chunk.data(), 1, chunk.size(), pipe))
    run.output.append(chunk.data(), got);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// A fresh scratch directory under the system's temp folder, removed with the object.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("metrale_cli_" + name + "_" +
                                                        std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& file) const { return (path_ / file).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace metrale::cli_test
