// `metrale quantize` without the command line: checking the options and the output location,
// reading and parsing the raw bf16 input, the CPU quantization and the all-or-nothing writing of
// the outputs. Shared by quantize_command.cpp and the fuzz harness (tests/fuzz).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "metrale/metrale.hpp"

namespace metrale::cli {

struct QuantizeOptions {
  std::string input, prefix, backend = "auto";
  std::int32_t n = 0, k = 0;
  bool unit_scale_2 = false, sfb = false;
};

// Host-side results of one quantization.
struct Quantized {
  std::vector<std::uint8_t> packed, scale, sfb;
  float scale_2 = 1.0f;
};

// N > 0, K > 0, K % 16 == 0 and a non-empty --out: invalid_argument otherwise (before any I/O).
void check_quantize_options(const QuantizeOptions& opt);
// The directory PREFIX's files go to exists, is a directory and is writable (IoError otherwise),
// checked before anything is read or computed.
void check_output_location(const std::string& prefix);
// --input is a regular file of exactly N·K·2 bytes; read whole (IoError with the OS reason).
std::vector<bf16_bits> read_weight_file(const QuantizeOptions& opt);
// Raw little-endian bf16 bytes of [N, K] (size checked: invalid_argument naming both sizes).
std::vector<bf16_bits> parse_weight(std::span<const std::byte> bytes, const QuantizeOptions& opt);
// The quantization on the CPU backend (refuses NaN/Inf weights, naming the first).
Quantized quantize_on_cpu(const QuantizeOptions& opt, std::span<const bf16_bits> weight);
// Writes PREFIX.packed, .scale, .scale_2 (and .sfb): each to a temporary file beside it, renamed
// into place only once every one was written, so a failure leaves no partial output.
void write_quantized(const QuantizeOptions& opt, const Quantized& q);

}  // namespace metrale::cli
