// `metrale quantize`: a raw bf16 weight file [N, K] (row-major, little-endian, 2 bytes each) to
// NVFP4 through the public API (pack_bf16_weight_to_nvfp4_t, ModelOpt recipe), on the CPU or the
// CUDA backend. Writes PREFIX.packed [N, K/2] (even k in the low nibble), PREFIX.scale [K/16, N]
// e4m3, PREFIX.scale_2 (one little-endian fp32) and, with --sfb, PREFIX.sfb (128x4 swizzle).
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "format/layouts.hpp"
#include "metrale/cli_context.hpp"
#include "metrale/commands.hpp"
#include "metrale/metrale.hpp"
#include "metrale/quantize_io.hpp"

#if defined(METRALE_HAS_CUDA)
#include <cuda_runtime.h>

#include "cuda/cuda_backend.hpp"
#endif

namespace metrale::cli {
namespace {

#if defined(METRALE_HAS_CUDA)
void check(const Result& r) {
  if (!r.ok()) throw Error(r.status, r.message);
}

// Owns one device allocation; frees it on every path out.
struct DeviceBytes {
  void* ptr = nullptr;
  explicit DeviceBytes(std::size_t bytes) {
    const cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err != cudaSuccess) {
      fail(Status::cuda_error, "quantize: cudaMalloc of {} bytes failed: {}", bytes,
           cudaGetErrorName(err));
    }
  }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  ~DeviceBytes() { cudaFree(ptr); }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

void cuda_ok(cudaError_t err, const char* call) {
  if (err != cudaSuccess) {
    fail(Status::cuda_error, "quantize: {} failed: {} ({})", call, cudaGetErrorName(err),
         cudaGetErrorString(err));
  }
}

Quantized quantize_cuda(const QuantizeOptions& opt, const std::vector<bf16_bits>& weight) {
  Quantized q;
  q.packed.resize(static_cast<std::size_t>(opt.n) * (opt.k / 2));
  q.scale.resize(static_cast<std::size_t>(opt.n) * (opt.k / 16));
  DeviceBytes d_weight(weight.size() * sizeof(bf16_bits)), d_packed(q.packed.size()),
      d_scale(q.scale.size()), d_scale_2(sizeof(float));
  cuda_ok(cudaMemcpy(d_weight.ptr, weight.data(), weight.size() * sizeof(bf16_bits),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy(weight)");
  const Exec exec{Backend::cuda};
  check(pack_bf16_weight_to_nvfp4_t(
      PackNvfp4{d_weight.as<bf16_bits>(), d_packed.as<std::uint8_t>(), d_scale.as<std::uint8_t>(),
                opt.unit_scale_2 ? nullptr : d_scale_2.as<float>(), opt.n, opt.k},
      exec));
  std::unique_ptr<DeviceBytes> d_sfb;
  if (opt.sfb) {
    q.sfb.resize(format::sfb_bytes(opt.n, opt.k));
    d_sfb = std::make_unique<DeviceBytes>(q.sfb.size());
    check(pack_weight_sfb(
        SwizzleScales{d_scale.as<std::uint8_t>(), d_sfb->as<std::uint8_t>(), opt.n, opt.k, true},
        exec));
  }
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cuda_ok(cudaMemcpy(q.packed.data(), d_packed.ptr, q.packed.size(), cudaMemcpyDeviceToHost),
          "cudaMemcpy(packed)");
  cuda_ok(cudaMemcpy(q.scale.data(), d_scale.ptr, q.scale.size(), cudaMemcpyDeviceToHost),
          "cudaMemcpy(scale)");
  if (!opt.unit_scale_2) {
    cuda_ok(cudaMemcpy(&q.scale_2, d_scale_2.ptr, sizeof(float), cudaMemcpyDeviceToHost),
            "cudaMemcpy(scale_2)");
  }
  if (opt.sfb) {
    cuda_ok(cudaMemcpy(q.sfb.data(), d_sfb->ptr, q.sfb.size(), cudaMemcpyDeviceToHost),
            "cudaMemcpy(sfb)");
  }
  return q;
}
#endif

// "cuda" or "cpu": what --backend asks for, with auto meaning CUDA when our kernels can run here.
std::string resolve_backend(const std::string& requested) {
  if (requested == "cpu") return "cpu";
#if defined(METRALE_HAS_CUDA)
  std::string why;
  const bool usable = metrale::cuda::available(&why);
  if (requested == "cuda" && !usable) {
    fail(Status::unsupported, "quantize: --backend cuda cannot run here: {}", why);
  }
  return usable ? "cuda" : "cpu";
#else
  if (requested == "cuda") {
    fail(Status::not_built, "quantize: --backend cuda, but this build has no CUDA backend");
  }
  return "cpu";
#endif
}

// Options, then where the output goes, then the input: every check that can fail runs before
// the quantization is computed, and the outputs appear only once all of them are written.
int run_quantize(const QuantizeOptions& opt) {
  check_quantize_options(opt);
  check_output_location(opt.prefix);
  const std::vector<bf16_bits> weight = read_weight_file(opt);
  const std::string backend = resolve_backend(opt.backend);
  const auto start = std::chrono::steady_clock::now();
  Quantized q;
#if defined(METRALE_HAS_CUDA)
  q = backend == "cuda" ? quantize_cuda(opt, weight) : quantize_on_cpu(opt, weight);
#else
  q = quantize_on_cpu(opt, weight);
#endif
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  fmt::print(
      "quantized [{}, {}] bf16 on the {} backend in {:.1f} ms (transfers included); "
      "scale_2 = {:.9g}{}\n",
      opt.n, opt.k, backend, ms, q.scale_2, opt.unit_scale_2 ? " (fixed)" : " (amax / 2688)");
  write_quantized(opt, q);
  return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "bf16 weight file [N, K] -> NVFP4 packed, scale and scale_2 files");
  cmd->add_option("--input,-i", opt->input, "raw bf16 [N, K] row-major file")->required();
  cmd->add_option("--n,-n", opt->n, "rows N (output channels)")->required();
  cmd->add_option("--k,-k", opt->k, "columns K (a multiple of 16)")->required();
  cmd->add_option("--out,-o", opt->prefix, "output prefix: PREFIX.packed, .scale, .scale_2")
      ->required();
  cmd->add_option("--backend", opt->backend, "auto (CUDA when usable), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_flag("--unit-scale-2", opt->unit_scale_2,
                "fix scale_2 = 1 (the seeds' form) instead of amax / 2688");
  cmd->add_flag("--sfb", opt->sfb, "also write PREFIX.sfb, the scales in the 128x4 layout");
  cmd->callback([opt, &exit_code] {
    exit_code = exit_code_of("quantize", [&] { return run_quantize(*opt); });
  });
}

}  // namespace metrale::cli
