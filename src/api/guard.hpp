// The exception boundary: runs a body that may throw and returns a Result instead. Everything the
// library throws is caught here; nothing escapes the C++ API or the C ABI.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"

namespace metrale::api {

// Every message names the function called: one thrown from below the API without `who` (a
// backend's own check, an environment variable's) gets it in front, and keeps its own text.
inline std::string named(std::string_view who, std::string_view message) {
  if (message.starts_with(who) && message.substr(who.size()).starts_with(": "))
    return std::string(message);
  return fmt::format("{}: {}", who, message);
}

template <class Body>
Result guarded(std::string_view who, Body&& body) noexcept {
  try {
    try {
      body();
      return {};
    } catch (const Error& e) {
      return {e.status(), named(who, e.what())};
    } catch (const std::bad_alloc&) {
      return {Status::internal, fmt::format("{}: out of host memory", who)};
    } catch (const std::exception& e) {
      return {Status::internal, fmt::format("{}: internal error: {}", who, e.what())};
    } catch (...) {
      return {Status::internal, fmt::format("{}: unknown internal error", who)};
    }
  } catch (...) {
    // Formatting the message itself failed (out of memory): report the status alone.
    return {Status::internal, {}};
  }
}

}  // namespace metrale::api
