// Environment configuration (see config.hpp for the variables and their meaning).
#include "core/config.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "core/error.hpp"

namespace metrale::core {

namespace {

// A 0/1 switch: unset, "" or "0" off, "1" on, anything else refused (naming `meaning`).
bool switch_on(const char* name, std::string_view meaning) {
  const char* raw = std::getenv(name);
  const std::string_view value = raw ? raw : "";
  if (value.empty() || value == "0") return false;
  if (value == "1") return true;
  fail(Status::invalid_argument, "{} = '{}', expected 1 ({}) or 0/unset", name, value, meaning);
}

// A two-way choice: unset, "" or `first` (the default) false, `second` true, anything else
// refused (naming both).
bool second_choice(const char* name, std::string_view first, std::string_view second) {
  const char* raw = std::getenv(name);
  const std::string_view value = raw ? raw : "";
  if (value.empty() || value == first) return false;
  if (value == second) return true;
  fail(Status::invalid_argument, "{} = '{}', expected {} (the default), {}, or unset", name, value,
       first, second);
}

}  // namespace

bool cutlass_gemm_enabled() {
  return switch_on("METRALE_CUTLASS_GEMM", "use the CUTLASS reference");
}

bool moe_check_inputs() {
  return switch_on("METRALE_MOE_CHECK_INPUTS", "check the MoE layer's token data on the host");
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

std::optional<ForcedKernel> forced_cuda_kernel() {
  const char* raw = std::getenv("METRALE_CUDA_KERNEL");
  if (raw == nullptr || *raw == '\0') return std::nullopt;
  const std::string_view value = raw;
  ForcedKernel forced;
  const std::size_t colon = value.find(':');
  forced.family = std::string(value.substr(0, colon));
  std::string_view rest = colon == std::string_view::npos ? "" : value.substr(colon + 1);
  auto number = [&](int& out, int low) {
    if (rest.empty()) return true;
    const std::size_t end_of = rest.find(':');
    const std::string_view digits = rest.substr(0, end_of);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    rest = end_of == std::string_view::npos ? "" : rest.substr(end_of + 1);
    return ec == std::errc{} && end == digits.data() + digits.size() && out >= low;
  };
  if (forced.family.empty() || !number(forced.config, 0) || !number(forced.splits, 1) ||
      !rest.empty())
    fail(Status::invalid_argument,
         "METRALE_CUDA_KERNEL = '{}', expected FAMILY[:CONFIG[:SPLITS]] (e.g. sm90-decode:0:4)",
         value);
  return forced;
}

CudaQuantizer cuda_quantizer() {
  return second_choice("METRALE_CUDA_QUANTIZER", "lean", "proven") ? CudaQuantizer::proven
                                                                   : CudaQuantizer::lean;
}

PrepackedLayout prepacked_layout() {
  return second_choice("METRALE_PREPACKED_LAYOUT", "fragments", "halves")
             ? PrepackedLayout::halves
             : PrepackedLayout::fragments;
}

bool dense_copy_by_cp_async() {
  return second_choice("METRALE_CUDA_DENSE_COPY", "tma", "cp.async");
}

DenseSchedule dense_schedule() {
  constexpr const char* kName = "METRALE_CUDA_DENSE_SCHEDULE";
  const char* raw = std::getenv(kName);
  const std::string_view value = raw ? raw : "";
  if (value.empty() || value == "auto") return DenseSchedule::automatic;
  if (value == "tiles") return DenseSchedule::tiles;
  if (value == "stream-k") return DenseSchedule::stream_k;
  if (value == "stream-k-pairs") return DenseSchedule::stream_k_pairs;
  fail(Status::invalid_argument,
       "{} = '{}', expected auto (the default), tiles, stream-k, stream-k-pairs, or unset", kName,
       value);
}

}  // namespace metrale::core
