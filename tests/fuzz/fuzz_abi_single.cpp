// libFuzzer harness: the single-matrix entry points of the C ABI on the CPU backend — both
// GEMMs, the quantizer (seed form and _ex with a fuzzed metrale_exec), the SFB swizzle, both
// transposes and the workspace query — with shapes small enough to back with exact buffers, or
// arbitrary with no buffers. Each call must refuse cleanly or compute inside its buffers.
#include <cstddef>

#include "fuzz_support.hpp"

namespace {

using metrale::fuzz::Buffer;
using metrale::fuzz::check_contract;
using metrale::fuzz::draw_dim;
using metrale::fuzz::small;

constexpr std::int32_t kMaxM = 33, kMaxN = 40, kMaxK = 128;

// An exec as a caller might fill it: any struct_size among the meaningful ones, any backend
// value, any device index.
metrale_exec draw_exec(FuzzedDataProvider& in) {
  metrale_exec exec = METRALE_EXEC_INIT;
  const std::size_t sizes[] = {sizeof(metrale_exec), offsetof(metrale_exec, device), 0,
                               sizeof(metrale_exec) + 8, in.ConsumeIntegral<std::uint8_t>()};
  exec.struct_size = sizes[in.ConsumeIntegralInRange<int>(0, 4)];
  exec.backend = in.ConsumeBool() ? METRALE_BACKEND_CPU : in.ConsumeIntegral<std::int32_t>();
  exec.device = in.ConsumeBool() ? -1 : in.ConsumeIntegral<std::int32_t>();
  return exec;
}

void gemms(FuzzedDataProvider& in, std::int32_t m, std::int32_t n, std::int32_t k, bool fits) {
  const std::size_t M = fits ? m : 0, N = fits ? n : 0, K = fits ? k : 0;
  Buffer act(in, M * K * 2, fits && in.ConsumeBool()), weight(in, N * K * 2, fits),
      out(in, M * N * 2, fits);
  check_contract("metrale_cpu_bf16_gemm_act_weight_t",
                 metrale_cpu_bf16_gemm_act_weight_t(act.data(), weight.data(), out.data(), m, n, k,
                                                    nullptr, 0, nullptr));
  Buffer packed(in, N * K / 2, fits), scale(in, N * (K / 16), fits);
  const float scale_2 = in.ConsumeBool() ? 1.0f : in.ConsumeFloatingPoint<float>();
  check_contract("metrale_cpu_nvfp4_gemm_bf16_act_weight_t",
                 metrale_cpu_nvfp4_gemm_bf16_act_weight_t(act.data(), packed.data(), scale.data(),
                                                          scale_2, out.data(), m, n, k, nullptr,
                                                          0, nullptr));
}

void packing(FuzzedDataProvider& in, std::int32_t n, std::int32_t k, bool fits) {
  const std::size_t N = fits ? n : 0, K = fits ? k : 0;
  Buffer weight(in, N * K * 2, fits), packed(in, N * K / 2, fits), scale(in, N * (K / 16), fits);
  if (in.ConsumeBool()) {
    check_contract("metrale_cpu_pack_bf16_weight_to_nvfp4_t",
                   metrale_cpu_pack_bf16_weight_to_nvfp4_t(weight.data(), packed.data(),
                                                           scale.data(), n, k, nullptr));
  } else {
    const metrale_exec exec = draw_exec(in);
    Buffer scale_2(in, sizeof(float), fits && in.ConsumeBool());
    check_contract("metrale_pack_bf16_weight_to_nvfp4_ex",
                   metrale_pack_bf16_weight_to_nvfp4_ex(
                       weight.data(), packed.data(), scale.data(),
                       static_cast<float*>(scale_2.data()), n, k, in.ConsumeBool() ? &exec : nullptr));
  }
  // SFB: padded to 128 rows and 4 scale columns.
  const std::size_t sfb = ((N + 127) / 128 * 128) * ((K / 16 + 3) / 4 * 4);
  Buffer sfb_out(in, sfb, fits);
  const std::int32_t src_n_major = in.ConsumeIntegralInRange<std::int32_t>(-1, 2);
  check_contract("metrale_cpu_pack_weight_sfb",
                 metrale_cpu_pack_weight_sfb(scale.data(), sfb_out.data(), n, k, src_n_major,
                                             nullptr));
  Buffer transposed(in, N * K / 2, fits);
  check_contract("metrale_cpu_transpose_nvfp4_packed_kton",
                 metrale_cpu_transpose_nvfp4_packed_kton(packed.data(), transposed.data(), n, k,
                                                         nullptr));
  check_contract("metrale_cpu_transpose_nvfp4_packed_ntok",
                 metrale_cpu_transpose_nvfp4_packed_ntok(transposed.data(), packed.data(), n, k,
                                                         nullptr));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::int32_t m = draw_dim(in, kMaxM, 1), n = draw_dim(in, kMaxN, 1),
                     k = draw_dim(in, kMaxK, in.ConsumeBool() ? 16 : 1);
  const bool fits = small(m, kMaxM) && small(n, kMaxN) && small(k, kMaxK);
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: gemms(in, m, n, k, fits); break;
    case 1: packing(in, n, k, fits); break;
    default: {
      std::size_t bytes = 0;
      const metrale_backend backend = in.ConsumeIntegralInRange<std::int32_t>(-1, 5);
      check_contract("metrale_gemm_workspace_size",
                     metrale_gemm_workspace_size(backend, m, n, k, in.ConsumeBool() ? &bytes : nullptr));
    }
  }
  return 0;
}
