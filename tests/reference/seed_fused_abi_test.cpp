// The seed-shaped fused gate_up call through the C ABI, on device memory, against the CPU oracle
// called the same way (metrale_cpu_nvfp4_grouped_gate_up_fused) on host copies: the CUTLASS arm
// (metrale_cutlass_nvfp4_grouped_gate_up_fused) and our kernels
// (metrale_nvfp4_grouped_gate_up_fused with METRALE_CUTLASS_GEMM unset). 16 tokens routed top-2
// over 8 experts (experts 0 and 4 get no rows), sorted_token_ids on the device, N = 64, K = 128;
// the harness's exact-mode inputs (small-integer activations, grid weights, a power-of-two scale_2
// per expert), SFB scales from the packer. Outputs start as NaN and must equal the oracle bit for
// bit (+0 equals -0).
//
// The bug it guards: the seeds' fused parameter list has no token count, so the call reaches the
// backends with a_rows = 0 ("unknown"). The CUTLASS arm's row gather once took every token id as
// >= a_rows and wrote zero rows (the `a_rows <= 0 ||` in src/reference/cutlass/dequant.cu fixes
// it). Every oracle row is checked to hold a nonzero value, so zero rows cannot pass.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "metrale/metrale.h"
#include "reference_test_util.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/grouped.hpp"
#endif

namespace metrale::reference_test {
namespace {

#ifdef METRALE_HAS_CUDA
using FusedCall = decltype(&metrale_nvfp4_grouped_gate_up_fused);
using Outputs = std::array<std::vector<bf16_bits>, 2>;  // {gate, up}, [M_total, N] each

check::GroupedHost seed_fused_inputs() {
  const check::Case c = grouped_case(Backend::cutlass, Op::grouped_gate_up_fused, Mode::exact, 64,
                                     128, {16, 8, 2, RoutingKind::empty_expert}, 7);
  return check::make_grouped_host(c);
}

// The sign of an exact zero sum is unspecified: compare with -0 read as +0.
std::vector<bf16_bits> zero_sign_cleared(std::vector<bf16_bits> v) {
  for (bf16_bits& x : v) x = x == 0x8000 ? bf16_bits{0} : x;
  return v;
}

void cpu_oracle(const check::GroupedHost& h, Outputs& want) {
  check::ExpertPointers host;
  for (int p = 0; p < 2; ++p) {
    for (const std::int32_t member : h.pool_of_expert) {
      const check::PackedWeight& w = h.pool[p][static_cast<std::size_t>(member)];
      host.packed[p].push_back(reinterpret_cast<std::uintptr_t>(w.packed.data()));
      host.scale[p].push_back(reinterpret_cast<std::uintptr_t>(w.sfb.data()));
    }
    want[p].assign(static_cast<std::size_t>(h.routing.m_total) * h.n, check::kPoisonBf16);
  }
  ASSERT_EQ(metrale_cpu_nvfp4_grouped_gate_up_fused(
                h.a.data(), h.routing.sorted_token_ids.data(), host.packed[0].data(),
                host.scale[0].data(), h.scale2[0].data(), host.packed[1].data(),
                host.scale[1].data(), h.scale2[1].data(), want[0].data(), want[1].data(),
                h.routing.offsets.data(), h.routing.experts, h.n, h.k, nullptr, 0, nullptr),
            METRALE_STATUS_OK)
      << metrale_last_error();
  // Zero rows from a backend must not match: every oracle row holds a nonzero value.
  for (int p = 0; p < 2; ++p) {
    for (std::int32_t r = 0; r < h.routing.m_total; ++r) {
      const auto row = want[p].begin() + static_cast<std::ptrdiff_t>(r) * h.n;
      ASSERT_TRUE(std::any_of(row, row + h.n, [](bf16_bits x) { return (x & 0x7FFF) != 0; }))
          << "oracle row " << r << " of projection " << p << " is all zeros: pick another seed";
    }
  }
}

// `call` on device copies of h (outputs NaN-poisoned, the workspace `ws_backend` asks for).
void run_on_device(FusedCall call, metrale_backend ws_backend, const check::GroupedHost& h,
                   Outputs& got) {
  check::GroupedDevice d = check::upload_grouped(h);
  const metrale_groups groups{sizeof(metrale_groups), h.routing.offsets.data(), 0,
                              h.routing.experts,           h.routing.m_total,
                              h.routing.max_rows};
  std::size_t bytes = 0;
  ASSERT_EQ(metrale_nvfp4_grouped_workspace_size(ws_backend, &groups, h.n, h.k, 2, &bytes),
            METRALE_STATUS_OK)
      << metrale_last_error();
  check::DeviceBuffer ws(std::max<std::size_t>(bytes, 1), "workspace");
  ASSERT_EQ(
      call(d.a.data(), d.token_ids.as<std::int32_t>(), d.ptrs.packed[0].data(),
           d.ptrs.scale[0].data(), h.scale2[0].data(), d.ptrs.packed[1].data(),
           d.ptrs.scale[1].data(), h.scale2[1].data(), d.out[0].data(), d.out[1].data(),
           h.routing.offsets.data(), h.routing.experts, h.n, h.k, ws.data(), ws.size(), nullptr),
      METRALE_STATUS_OK)
      << metrale_last_error();
  check::device_synchronize("seed-shaped gate_up_fused");
  std::vector<const check::DeviceBuffer*> buffers = d.all();
  buffers.push_back(&ws);
  EXPECT_EQ(check::check_all_guards(buffers), "");
  for (int p = 0; p < 2; ++p) got[p] = d.out[p].download<bf16_bits>();
}

void expect_matches_oracle(FusedCall call, metrale_backend ws_backend) {
  const check::GroupedHost h = seed_fused_inputs();
  Outputs want, got;
  ASSERT_NO_FATAL_FAILURE(cpu_oracle(h, want));
  ASSERT_NO_FATAL_FAILURE(run_on_device(call, ws_backend, h, got));
  const char* names[] = {"c_gate", "c_up"};
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(check::count_poison(got[p]), 0) << names[p] << ": rows left unwritten";
    const check::Comparison cmp = check::compare_bf16_bits(
        zero_sign_cleared(got[p]), zero_sign_cleared(want[p]), h.n, {}, names[p]);
    EXPECT_EQ(cmp.mismatches, 0) << cmp.mismatches << " of " << cmp.compared
                                 << " differ; first: " << cmp.first_detail;
  }
}
#endif  // METRALE_HAS_CUDA

TEST(SeedFusedAbi, CutlassMatchesCpuOracleBitForBit) {
  std::string why;
  if (!check::cuda_usable(&why)) GTEST_SKIP() << why;
  if (metrale_backend_built(METRALE_BACKEND_CUTLASS) == 0)
    GTEST_SKIP() << "the CUTLASS reference arm was not built";
#ifdef METRALE_HAS_CUDA
  expect_matches_oracle(&metrale_cutlass_nvfp4_grouped_gate_up_fused, METRALE_BACKEND_CUTLASS);
#endif
}

TEST(SeedFusedAbi, OwnKernelsMatchCpuOracleBitForBit) {
  std::string why;
  if (!check::cuda_usable(&why)) GTEST_SKIP() << why;
#ifdef METRALE_HAS_CUDA
  unsetenv("METRALE_CUTLASS_GEMM");  // metrale_<op> dispatches to our kernels
  expect_matches_oracle(&metrale_nvfp4_grouped_gate_up_fused, METRALE_BACKEND_CUDA);
#endif
}

}  // namespace
}  // namespace metrale::reference_test
