// The file handling and CPU path of `metrale quantize` (quantize_io.hpp). File-system failures
// throw IoError with the OS reason (strerror), so the CLI reports them as I/O errors, not as
// invalid arguments.
#include "metrale/quantize_io.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "format/layouts.hpp"
#include "metrale/cli_context.hpp"

namespace metrale::cli {
namespace {

[[noreturn]] void io_fail(const std::string& what, int err) {
  throw IoError(fmt::format("quantize: {}: {}", what, std::strerror(err)));
}

void check(const Result& r) {
  if (!r.ok()) throw Error(r.status, r.message);
}

// One output: its final path and the temporary file it is first written to.
struct PendingFile {
  std::string path, temp;
};

PendingFile write_temp(const std::string& path, const void* data, std::size_t bytes) {
  std::string temp = path + ".tmp-XXXXXX";
  const int fd = mkstemp(temp.data());
  if (fd < 0) io_fail(fmt::format("cannot create a temporary file for {}", path), errno);
  FILE* file = fdopen(fd, "wb");
  if (file == nullptr) {
    const int err = errno;
    close(fd);
    std::remove(temp.c_str());
    io_fail(fmt::format("cannot open {}", temp), err);
  }
  const bool written = std::fwrite(data, 1, bytes, file) == bytes;
  const int write_err = errno;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) {
    std::remove(temp.c_str());
    io_fail(fmt::format("cannot write {} ({} bytes)", path, bytes), written ? errno : write_err);
  }
  return {path, temp};
}

// The input's size against N x K bf16, before anything is read or allocated.
void require_weight_bytes(std::size_t bytes, const QuantizeOptions& opt) {
  const std::size_t count = static_cast<std::size_t>(opt.n) * static_cast<std::size_t>(opt.k);
  METRALE_REQUIRE(bytes == count * sizeof(bf16_bits),
                  "quantize: --input {} holds {} bytes, but N = {} x K = {} bf16 needs {}",
                  opt.input, bytes, opt.n, opt.k, count * sizeof(bf16_bits));
}

}  // namespace

void check_quantize_options(const QuantizeOptions& opt) {
  METRALE_REQUIRE(opt.n > 0 && opt.k > 0, "quantize: N = {} and K = {} must be positive", opt.n,
                  opt.k);
  METRALE_REQUIRE(opt.k % 16 == 0, "quantize: K = {} is not a multiple of 16", opt.k);
  METRALE_REQUIRE(!opt.prefix.empty(),
                  "quantize: --out is empty, expected an output prefix such as out/w (writes "
                  "out/w.packed, out/w.scale, out/w.scale_2)");
}

void check_output_location(const std::string& prefix) {
  check_writable_location("quantize", "--out", prefix, true);
}

std::vector<bf16_bits> read_weight_file(const QuantizeOptions& opt) {
  struct stat info {};
  if (stat(opt.input.c_str(), &info) != 0) io_fail(fmt::format("cannot open --input {}", opt.input), errno);
  if (!S_ISREG(info.st_mode))
    throw IoError(fmt::format("quantize: --input {} is not a regular file (a directory or a "
                              "device), expected a raw bf16 [N, K] file",
                              opt.input));
  require_weight_bytes(static_cast<std::size_t>(info.st_size), opt);
  FILE* file = std::fopen(opt.input.c_str(), "rb");
  if (file == nullptr) io_fail(fmt::format("cannot open --input {}", opt.input), errno);
  std::vector<std::byte> bytes(static_cast<std::size_t>(info.st_size));
  const std::size_t got = std::fread(bytes.data(), 1, bytes.size(), file);
  const int err = errno;
  std::fclose(file);
  if (got != bytes.size())
    io_fail(fmt::format("short read from --input {} ({} of {} bytes)", opt.input, got,
                        bytes.size()),
            err);
  return parse_weight(bytes, opt);
}

std::vector<bf16_bits> parse_weight(std::span<const std::byte> bytes, const QuantizeOptions& opt) {
  require_weight_bytes(bytes.size(), opt);
  const std::size_t count = static_cast<std::size_t>(opt.n) * static_cast<std::size_t>(opt.k);
  std::vector<bf16_bits> weight(count);
  // Little-endian on disk, whatever the host: assemble each value from its two bytes.
  for (std::size_t i = 0; i < count; ++i) {
    weight[i] = static_cast<bf16_bits>(std::to_integer<unsigned>(bytes[2 * i]) |
                                       std::to_integer<unsigned>(bytes[2 * i + 1]) << 8);
  }
  return weight;
}

Quantized quantize_on_cpu(const QuantizeOptions& opt, std::span<const bf16_bits> weight) {
  Quantized q;
  q.packed.resize(static_cast<std::size_t>(opt.n) * static_cast<std::size_t>(opt.k / 2));
  q.scale.resize(static_cast<std::size_t>(opt.n) * static_cast<std::size_t>(opt.k / 16));
  const Exec exec{Backend::cpu};
  check(
      pack_bf16_weight_to_nvfp4_t(PackNvfp4{weight.data(), q.packed.data(), q.scale.data(),
                                            opt.unit_scale_2 ? nullptr : &q.scale_2, opt.n, opt.k},
                                  exec));
  if (opt.sfb) {
    q.sfb.resize(format::sfb_bytes(opt.n, opt.k));
    check(pack_weight_sfb(SwizzleScales{q.scale.data(), q.sfb.data(), opt.n, opt.k, true}, exec));
  }
  return q;
}

void write_quantized(const QuantizeOptions& opt, const Quantized& q) {
  std::vector<PendingFile> pending;
  auto discard = [&] {
    for (const PendingFile& f : pending) std::remove(f.temp.c_str());
  };
  try {
    pending.push_back(write_temp(opt.prefix + ".packed", q.packed.data(), q.packed.size()));
    pending.push_back(write_temp(opt.prefix + ".scale", q.scale.data(), q.scale.size()));
    pending.push_back(write_temp(opt.prefix + ".scale_2", &q.scale_2, sizeof q.scale_2));
    if (opt.sfb) pending.push_back(write_temp(opt.prefix + ".sfb", q.sfb.data(), q.sfb.size()));
  } catch (...) {
    discard();
    throw;
  }
  // A destination that cannot be replaced (a directory) is found before any rename.
  for (const PendingFile& f : pending) {
    if (std::filesystem::is_directory(f.path)) {
      discard();
      throw IoError(fmt::format("quantize: cannot write {}: it is a directory", f.path));
    }
  }
  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (std::rename(pending[i].temp.c_str(), pending[i].path.c_str()) != 0) {
      const int err = errno;
      // Take back what was already renamed, so the prefix holds no mix of old and new outputs.
      for (std::size_t j = 0; j < i; ++j) std::remove(pending[j].path.c_str());
      for (std::size_t j = i; j < pending.size(); ++j) std::remove(pending[j].temp.c_str());
      io_fail(fmt::format("cannot rename {} to {}", pending[i].temp, pending[i].path), err);
    }
  }
  for (const PendingFile& f : pending) fmt::print("  wrote {}\n", f.path);
}

}  // namespace metrale::cli
