// Errors inside the library: code below the C++ API throws metrale::Error; the API catches it
// and returns a Result, the C ABI a status plus metrale_last_error(). Messages name the function,
// the argument, the value and what was expected.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <string>
#include <utility>

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

template <class... Args>
[[noreturn]] void fail(Status status, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace metrale

// Throws invalid_argument with the formatted message unless `cond` holds.
#define METRALE_REQUIRE(cond, ...)                                        \
  do {                                                                    \
    if (!(cond)) ::metrale::fail(::metrale::Status::invalid_argument, __VA_ARGS__); \
  } while (0)
