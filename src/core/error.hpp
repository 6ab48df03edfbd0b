// Errors inside the library: code below the C++ API throws metrale::Error; the API catches it
// and returns a Result, the C ABI a status plus metrale_last_error(). Messages name the function,
// the argument, the value and what was expected.
//
// fmt does not compile under nvcc (its constexpr/consteval machinery trips the host pass), so
// CUDA translation units build messages with concat() and call fail_message(); C++ files use the
// fmt-formatted fail().
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>

#ifndef __CUDACC__
#include <fmt/format.h>
#endif

#include "metrale/metrale.hpp"

namespace metrale {

class Error : public std::exception {
 public:
  Error(Status status, std::string message) : status_(status), message_(std::move(message)) {}
  Status status() const { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  Status status_;
  std::string message_;
};

[[noreturn]] inline void fail_message(Status status, std::string message) {
  throw Error(status, std::move(message));
}

// Streams its arguments into one string: the message builder of CUDA translation units.
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

#ifndef __CUDACC__
// The format string is checked at run time, so the same call compiles everywhere fmt does.
template <class... Args>
[[noreturn]] void fail(Status status, fmt::string_view format, const Args&... args) {
  throw Error(status, fmt::vformat(format, fmt::make_format_args(args...)));
}
#endif

}  // namespace metrale

#ifndef __CUDACC__
// Throws invalid_argument with the formatted message unless `cond` holds.
#define METRALE_REQUIRE(cond, ...)                                                  \
  do {                                                                              \
    if (!(cond)) ::metrale::fail(::metrale::Status::invalid_argument, __VA_ARGS__); \
  } while (0)
#endif
