// `metrale info`: the version, which backends this build holds, the environment variables the
// library reads (each validated as the library parses it; a bad one makes the exit code 1), and
// the CUDA devices this process sees — name, compute capability, SMs, memory — with whether our
// kernels can run on each.
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "core/config.hpp"
#include "core/error.hpp"
#include "metrale/commands.hpp"
#include "metrale/metrale.h"
#include "metrale/metrale.hpp"

#if defined(METRALE_HAS_CUDA)
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda/cuda_backend.hpp"
#endif

namespace metrale::cli {
namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

void print_build() {
  const auto built = [](Backend b) { return backend_built(b) ? "built" : "not built"; };
  fmt::print("build\n");
  fmt::print("  {:<14} {} (the reference oracle, host memory)\n", "CPU backend",
             built(Backend::cpu));
  fmt::print("  {:<14} {}\n", "CUDA backend", built(Backend::cuda));
#if defined(METRALE_HAS_CUDA)
  const std::size_t lt = cublasLtGetVersion();
  fmt::print("  {:<14} {} (cuBLASLt {}.{}.{}; NVFP4 through dequantize + GEMM)\n", "cuBLASLt arm",
             built(Backend::cublaslt), lt / 10000, lt / 100 % 100, lt % 100);
#else
  fmt::print("  {:<14} {}\n", "cuBLASLt arm", built(Backend::cublaslt));
#endif
  if (backend_built(Backend::cutlass)) {
    fmt::print("  {:<14} built\n", "CUTLASS arm");
  } else {
    fmt::print("  {:<14} not built (no CUTLASS headers at configure time)\n", "CUTLASS arm");
  }
}

// Each variable the library reads, as the library itself parses it: a value every call would
// refuse is flagged here, with the library's message. Returns false when one is bad.
bool print_environment() {
  fmt::print("environment\n");
  bool ok = true;
  auto show = [&ok](const char* name, auto&& parse) {
    try {
      fmt::print("  {:<22} {}\n", name, parse());
    } catch (const Error& e) {
      ok = false;
      fmt::print("  {:<22} INVALID: {} (every call will refuse it)\n", name, e.what());
    }
  };
  show("METRALE_CUTLASS_GEMM", [] {
    const bool on = core::cutlass_gemm_enabled();
    return fmt::format("{}: {}", env_or("METRALE_CUTLASS_GEMM", "unset"),
                       on ? "automatic dispatch uses the CUTLASS reference" : "own kernels");
  });
  show("METRALE_WORKSPACE_MB", [] {
    return fmt::format("{}: shared workspace of {} MiB (default {})",
                       env_or("METRALE_WORKSPACE_MB", "unset"), core::workspace_megabytes(),
                       core::kDefaultWorkspaceMb);
  });
  return ok;
}

#if defined(METRALE_HAS_CUDA)
void print_device(int index) {
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, index);
  if (err != cudaSuccess) {
    fmt::print("  device {}: properties unavailable: {}\n", index, cudaGetErrorName(err));
    return;
  }
  fmt::print("  device {}: {}, compute capability {}.{}, {} SMs, {:.1f} GiB, L2 {} MiB\n", index,
             prop.name, prop.major, prop.minor, prop.multiProcessorCount,
             static_cast<double>(prop.totalGlobalMem) / (1ull << 30), prop.l2CacheSize >> 20);
  std::string why;
  bool runs = false;
  err = cudaSetDevice(index);
  if (err == cudaSuccess) {
    runs = metrale::cuda::available(&why);
  } else {
    why = fmt::format("cudaSetDevice failed: {}", cudaGetErrorName(err));
  }
  fmt::print("    our kernels: {}{}\n", runs ? "can run" : "cannot run",
             why.empty() ? "" : " (" + why + ")");
}

void print_devices() {
  fmt::print("CUDA\n");
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  if (driver > 0) {
    fmt::print("  runtime {}.{}, driver supports CUDA {}.{}\n", runtime / 1000, runtime % 1000 / 10,
               driver / 1000, driver % 1000 / 10);
  } else {
    fmt::print("  runtime {}.{}, no CUDA driver found\n", runtime / 1000, runtime % 1000 / 10);
  }
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    fmt::print("  no CUDA device ({})\n",
               err != cudaSuccess
                   ? std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err)
                   : std::string("the driver reports 0 devices"));
    cudaGetLastError();  // clear, so later commands start clean
    return;
  }
  for (int i = 0; i < count; ++i) print_device(i);
}
#else
void print_devices() {
  fmt::print("CUDA\n  no CUDA device (this build has no CUDA backend)\n");
}
#endif

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
  CLI::App* info = app.add_subcommand("info", "Version, backends built, CUDA devices found");
  info->callback([&exit_code] {
    fmt::print("metrale {} (ABI {})\n", version(), METRALE_ABI_VERSION);
    print_build();
    const bool environment_ok = print_environment();
    print_devices();
    exit_code = environment_ok ? 0 : 1;
  });
}

}  // namespace metrale::cli
