// Environment configuration (see config.hpp for the variables and their meaning).
#include "core/config.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "core/error.hpp"

namespace metrale::core {

bool cutlass_gemm_enabled() {
  const char* raw = std::getenv("METRALE_CUTLASS_GEMM");
  const std::string_view value = raw ? raw : "";
  if (value.empty() || value == "0") return false;
  if (value == "1") return true;
  fail(Status::invalid_argument,
       "METRALE_CUTLASS_GEMM = '{}', expected 1 (use the CUTLASS reference) or 0/unset", value);
}

std::size_t workspace_megabytes() {
  const char* raw = std::getenv("METRALE_WORKSPACE_MB");
  if (raw == nullptr || *raw == '\0') return kDefaultWorkspaceMb;
  const std::string_view value = raw;
  std::size_t mb = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mb);
  if (ec != std::errc{} || end != value.data() + value.size() || mb > kMaxWorkspaceMb) {
    fail(Status::invalid_argument,
         "METRALE_WORKSPACE_MB = '{}', expected a whole number of megabytes in [0, {}]", value,
         kMaxWorkspaceMb);
  }
  return mb;
}

std::size_t workspace_bytes() {
  return workspace_megabytes() << 20;
}

std::optional<int> forced_sm90_tile(int tile_count) {
  const char* raw = std::getenv("METRALE_SM90_TILE");
  if (raw == nullptr || *raw == '\0') return std::nullopt;
  const std::string_view value = raw;
  int tile = -1;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), tile);
  if (ec != std::errc{} || end != value.data() + value.size() || tile < 0 || tile >= tile_count)
    fail(Status::invalid_argument, "METRALE_SM90_TILE = '{}', expected a tile index in [0, {})",
         value, tile_count);
  return tile;
}

}  // namespace metrale::core
