// libFuzzer harness: `metrale quantize`'s input handling (tools/metrale/quantize_io.hpp) — the
// options (any N, K, an output prefix of any bytes), the input file's checks and parsing (the file
// is the fuzz input itself, behind a memfd so nothing touches the disk) and the CPU quantization
// of whatever it holds (NaN, Inf, subnormals). Every failure must be a metrale::Error or an
// IoError whose message names `quantize` or the library function; nothing else may escape.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fuzzer/FuzzedDataProvider.h>

#include "core/error.hpp"
#include "metrale/cli_context.hpp"
#include "metrale/quantize_io.hpp"

namespace {

using metrale::cli::QuantizeOptions;

void expect_named(const std::string& message) {
  if (message.rfind("quantize: ", 0) == 0 || message.rfind("pack_", 0) == 0) return;
  std::fprintf(stderr, "fuzz: quantize failed with an unnamed message: %s\n", message.c_str());
  std::abort();
}

// The fuzz bytes as a file: a memfd the quantizer opens by its /proc path.
class MemoryFile {
 public:
  explicit MemoryFile(const std::string& bytes) : fd_(memfd_create("metrale_fuzz", 0)) {
    if (fd_ < 0 || write(fd_, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      std::abort();
  }
  ~MemoryFile() { close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  QuantizeOptions opt;
  opt.n = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::int32_t>(0, 24)
                           : in.ConsumeIntegral<std::int32_t>();
  opt.k = in.ConsumeBool() ? 16 * in.ConsumeIntegralInRange<std::int32_t>(0, 8)
                           : in.ConsumeIntegral<std::int32_t>();
  opt.unit_scale_2 = in.ConsumeBool();
  opt.sfb = in.ConsumeBool();
  opt.prefix = in.ConsumeRandomLengthString(32);
  const bool through_file = in.ConsumeBool();
  const std::string body = in.ConsumeRemainingBytesAsString();
  try {
    metrale::cli::check_quantize_options(opt);
    if (opt.prefix.find('\0') == std::string::npos) metrale::cli::check_output_location(opt.prefix);
    std::vector<metrale::bf16_bits> weight;
    if (through_file) {
      const MemoryFile file(body);
      opt.input = file.path();
      weight = metrale::cli::read_weight_file(opt);
    } else {
      opt.input = "<fuzz>";
      weight = metrale::cli::parse_weight(std::as_bytes(std::span(body.data(), body.size())), opt);
    }
    const metrale::cli::Quantized q = metrale::cli::quantize_on_cpu(opt, weight);
    if (q.packed.size() * 4 != weight.size() * 2 || !(q.scale_2 > 0.0f)) std::abort();
  } catch (const metrale::Error& e) {
    expect_named(e.what());
  } catch (const metrale::cli::IoError& e) {
    expect_named(e.what());
  }
  return 0;
}
