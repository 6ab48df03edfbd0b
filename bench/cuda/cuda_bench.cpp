// The CUDA bench run: pick the device, record what it is, measure the ceilings, then sweep models
// × operations × token counts, one row group at a time, with a progress line on stderr.
// Memory stays bounded: the weights of one (model, operation) live in one arena, freed before the
// next; activations and outputs of one token count live in another, freed after the group.
#include "bench/cuda/cuda_bench.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "bench/bench_runners.hpp"
#include "bench/random.hpp"
#include "reference/cublaslt/lt_check.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"

namespace metrale::bench {
namespace {

constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

// "580.159.04": the first dotted number after "Kernel Module" in the module's version line
// ("... Open Kernel Module for x86_64  580.159.04  Release Build ..."), or "unknown".
std::string driver_version() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(file, line)) {
    const auto at = line.find("Kernel Module");
    if (at != std::string::npos) {
      std::istringstream rest(line.substr(at + 13));
      for (std::string word; rest >> word;)
        if (std::isdigit(static_cast<unsigned char>(word[0])) && word.find('.') != std::string::npos)
          return word;
    }
  }
  return "unknown";
}

std::string cuda_version(int v) {
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

void describe_device(const cudaDeviceProp& prop, RunInfo& info) {
  info.mode = "cuda";
  info.gpu_name = prop.name;
  info.compute_capability = fmt::format("{}.{}", prop.major, prop.minor);
  info.sms = prop.multiProcessorCount;
  info.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1ull << 30);
  info.l2_mib = prop.l2CacheSize >> 20;
  info.driver = driver_version();
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  info.cuda_runtime = cuda_version(runtime);
  info.cuda_driver_api = cuda_version(driver);
  const std::size_t lt = cublasLtGetVersion();
  info.cublaslt = fmt::format("{}.{}.{}", lt / 10000, lt / 100 % 100, lt % 100);
}

struct CublasHandle {
  cublasHandle_t handle = nullptr;
  CublasHandle() { METRALE_CUBLAS_CHECK(cublasCreate(&handle)); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() { cublasDestroy(handle); }
};

void decide_cutlass(CudaContext& ctx, RunInfo& info) {
  const char* env = std::getenv("METRALE_CUTLASS_GEMM");
  const bool on = env && std::string(env) == "1";
  if (!backend_built(Backend::cutlass)) {
    ctx.cutlass_why = "CUTLASS support was not built (no CUTLASS headers at configure time)";
    info.cutlass_arm = "not built";
  } else if (!on) {
    ctx.cutlass_why = "the CUTLASS arm is dark: set METRALE_CUTLASS_GEMM=1 to measure it";
    info.cutlass_arm = "built, dark (METRALE_CUTLASS_GEMM unset)";
  } else {
    ctx.cutlass_enabled = true;
    info.cutlass_arm = "built, measured (METRALE_CUTLASS_GEMM=1)";
  }
}

int count_steps(const BenchConfig& cfg) {
  int steps = 0;
  for (Op op : cfg.ops) steps += is_pack(op) ? 1 : static_cast<int>(cfg.tokens.size());
  return steps * static_cast<int>(cfg.models.size());
}

void sweep(CudaContext& ctx, Report& report, Progress& progress) {
  const BenchConfig& cfg = ctx.cfg;
  for (std::size_t mi = 0; mi < cfg.models.size(); ++mi) {
    const ModelShape& m = cfg.models[mi];
    validate_model(m);
    std::map<int, Routing> routings;
    for (Op op : cfg.ops) {
      if (is_pack(op)) {
        progress.step(fmt::format("{} {}", m.name, op_name(op)));
        DeviceArena scratch;
        bench_pack(ctx, m, op, scratch, report);
        continue;
      }
      if (op == Op::moe) {
        bench_moe(ctx, m, static_cast<int>(mi), report, progress);
        continue;
      }
      if (op == Op::dense) {
        for (int tokens : cfg.tokens) {
          progress.step(fmt::format("{} dense T={}", m.name, tokens));
          DeviceArena scratch;
          bench_dense(ctx, m, tokens, scratch, report);
        }
        continue;
      }
      const bool gate_up = op == Op::gate_up;
      DeviceArena weights;
      ExpertPool pool(m.experts, gate_up ? 2 : 1, gate_up ? m.inter : m.hidden,
                      gate_up ? m.hidden : m.inter,
                      derive_seed(cfg.seed, 0x77, mi, static_cast<int>(op)), weights, ctx.stream);
      for (int tokens : cfg.tokens) {
        progress.step(fmt::format("{} {} T={}", m.name, op_name(op), tokens));
        auto it = routings.find(tokens);
        if (it == routings.end()) {
          it =
              routings.emplace(tokens, route(tokens, m.experts, m.top_k, cfg.skew, cfg.seed)).first;
        }
        DeviceArena scratch;
        bench_grouped(ctx, m, op, it->second, pool, scratch, report);
      }
    }
  }
}

}  // namespace

void record_failure(Row& row, const std::exception& e) {
  row.ok = false;
  row.error = e.what();
  require_usable_device(row.impl, row.error);
}

void require_usable_device(const std::string& who, const std::string& error) {
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    fail(Status::cuda_error, "the device is unusable after {} failed ({}: {}); {}", who,
         cudaGetErrorName(err), cudaGetErrorString(err), error);
  }
  cudaGetLastError();
}

bool CudaContext::wants(Impl impl) const {
  for (Impl i : cfg.impls) {
    if (i == impl) return impl != Impl::cutlass || cutlass_enabled;
  }
  return false;
}

bool CudaContext::hides(Impl impl) const {
  return impl == Impl::cutlass && !cutlass_enabled && !cfg.user_impls;
}

void CudaContext::require_enabled(Impl impl) const {
  if (impl == Impl::cutlass && !cutlass_enabled) fail(Status::not_built, "{}", cutlass_why);
}

int CudaContext::copies_for(double bytes_per_call) const {
  if (bytes_per_call <= 0) return 2;
  const double copies = std::ceil(kColdL2Multiple * static_cast<double>(l2_bytes) / bytes_per_call);
  return static_cast<int>(std::clamp(copies, 2.0, static_cast<double>(kMaxCopies)));
}

TimingPolicy CudaContext::policy(int rotation) const {
  TimingPolicy p;
  p.budget_ms = cfg.budget_ms;
  p.rotation = std::max(rotation, 1);
  return p;
}

bool cuda_device_usable(int device, std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    *why = err != cudaSuccess
               ? fmt::format("{}: {}", cudaGetErrorName(err), cudaGetErrorString(err))
               : std::string("no CUDA device");
    cudaGetLastError();
    return false;
  }
  if (device < 0 || device >= count) {
    *why = fmt::format("--device {} but {} CUDA device(s) are present", device, count);
    return false;
  }
  err = cudaSetDevice(device);
  if (err != cudaSuccess) {
    *why = fmt::format("cudaSetDevice({}): {}", device, cudaGetErrorName(err));
    cudaGetLastError();
    return false;
  }
  return true;
}

void run_cuda_bench(const BenchConfig& cfg, Report& report) {
  const auto start = std::chrono::steady_clock::now();
  METRALE_CUDA_CHECK(cudaSetDevice(cfg.device));
  cudaDeviceProp prop{};
  METRALE_CUDA_CHECK(cudaGetDeviceProperties(&prop, cfg.device));
  describe_device(prop, report.info);
  Stream stream;
  CudaContext ctx(cfg);
  ctx.stream = stream.get();
  ctx.device = cfg.device;
  ctx.sms = prop.multiProcessorCount;
  ctx.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  DeviceArena persistent;
  ctx.lt_workspace = {persistent.allocate(reference::cublaslt::kLtWorkspaceBytes),
                      reference::cublaslt::kLtWorkspaceBytes};
  CublasHandle cublas;
  METRALE_CUBLAS_CHECK(cublasSetWorkspace(cublas.handle, persistent.allocate(kCublasWorkspaceBytes),
                                          kCublasWorkspaceBytes));
  ctx.cublas = cublas.handle;
  decide_cutlass(ctx, report.info);

  const RunInfo& info = report.info;
  fmt::print(
      "metrale bench on device {}: {} (compute capability {}, {} SMs, {:.1f} GiB, L2 {} MiB)"
      ", driver {}, CUDA runtime {}, cuBLASLt {}, commit {}\n",
      cfg.device, info.gpu_name, info.compute_capability, info.sms, info.memory_gib, info.l2_mib,
      info.driver, info.cuda_runtime, info.cublaslt, info.commit);
  std::string why;
  if (!cuda::available(&why)) {
    fmt::print("our kernels cannot run on this device ({}); their rows will say so\n", why);
    report.info.notes.push_back("our kernels unavailable: " + why);
  }
  fmt::print("CUTLASS arm: {}\n", ctx.cutlass_enabled ? info.cutlass_arm : ctx.cutlass_why);
  fmt::print(
      "rows per pass: weights rotated over copies so each pass streams >= {:.0f}x L2; "
      "budget {:.0f} ms per measurement\n\n",
      kColdL2Multiple, cfg.budget_ms);

  StepWatchdog watchdog(cfg.step_timeout_s, cfg.json_path);
  Progress progress(count_steps(cfg) + 1, &watchdog);
  report.progress = &progress;
  try {
    progress.step("ceilings");
    {
      DeviceArena arena;
      ctx.ceilings = measure_ceilings(ctx, arena);
    }
    report.ceilings = ctx.ceilings;
    progress.clear();
    report.print_ceilings();
    report.print_table_header();
    sweep(ctx, report, progress);
  } catch (const Error& e) {
    progress.clear();
    report.aborted = e.what();
    fmt::print(stderr, "metrale bench: run stopped: {}\n", e.what());
  }
  watchdog.finished();
  report.progress = nullptr;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("\n{} rows in {:.1f} s\n", report.rows.size(), seconds);
}

}  // namespace metrale::bench
