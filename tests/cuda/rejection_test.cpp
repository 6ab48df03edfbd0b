// What the CUDA backend must refuse, and how: with a status and a message naming the value, never
// garbage and never an abort. The backend's own limits (Status::unsupported): NVFP4 GEMMs need
// K % 32 == 0, the bf16 GEMM K % 8 == 0, device pointers 16-byte aligned. The API's validation
// (Status::invalid_argument, for every backend): K % 16, offsets beyond M_total, decreasing
// offsets, a too short `a`, non-finite scale_2. Nothing may be written on a refusal: the outputs
// keep their poison and the guard bands hold.
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include <cmath>

#include "check/buffers.hpp"
#include "check/grouped.hpp"
#include "check/scoped_kernel.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

void expect_refused(const Result& r, Status status, std::initializer_list<const char*> needles) {
  EXPECT_EQ(r.status, status) << r.message;
  for (const char* needle : needles)
    EXPECT_NE(r.message.find(needle), std::string::npos)
        << "expected \"" << needle << "\" in: " << r.message;
}

// Buffers of one NVFP4 GEMM (device), outputs poisoned.
struct GemmBuffers {
  check::DeviceBuffer act, packed, scale, out;
  GemmBuffers(int m, int n, int k)
      : act(std::size_t(m) * k * 2 + 64, "act"),
        packed(std::size_t(n) * k / 2 + 64, "packed"),
        scale(std::size_t(n) * k / 16 + 64, "scale"),
        out(std::size_t(m) * n * 2 + 64, "out") {
    act.poison_bytes(0);
    packed.poison_bytes(0x22);
    scale.poison_bytes(0x38);
    out.poison_bf16(check::kPoisonBf16);
  }
  Nvfp4Gemm args(int m, int n, int k) {
    return {act.as<bf16_bits>(),
            packed.as<std::uint8_t>(),
            scale.as<std::uint8_t>(),
            1.0f,
            ScaleLayout::k16_by_n,
            out.as<bf16_bits>(),
            m,
            n,
            k};
  }
  void expect_untouched() {
    const auto values = out.download<bf16_bits>();
    EXPECT_EQ(check::count_poison(values), std::int64_t(values.size())) << "a refused call wrote";
    EXPECT_EQ(check::check_all_guards({&act, &packed, &scale, &out}), "");
  }
};

// A K split forced where it does not run: NVFP4 weights (one order of K, so a grouped call and a
// GEMM on an expert's rows agree), the warp-specialised tiles, and on a narrow tile (whose ranges
// fold within a cluster) more ranges than a cluster holds.
TEST(RejectSmall, KSplitOnlyForBf16OnCtaSynchronisedTiles) {
  METRALE_SKIP_WITHOUT_GPU();
  GemmBuffers b(4, 64, 1024);
  {
    const check::ScopedCudaKernel forced("sm90-tiled:6:2");
    expect_refused(nvfp4_gemm_bf16_act_weight_t(b.args(4, 64, 1024), kCuda), Status::unsupported,
                   {"splits = 2", "NVFP4"});
  }
  {
    const check::ScopedCudaKernel forced("sm90-tiled:4:3");
    DenseGemm dense{b.act.as<bf16_bits>(), b.act.as<bf16_bits>(), b.out.as<bf16_bits>(), 4, 4, 64};
    expect_refused(bf16_gemm_act_weight_t(dense, kCuda), Status::unsupported,
                   {"splits = 3", "warp-specialised"});
  }
  {
    const check::ScopedCudaKernel forced("sm90-tiled:0:9");
    DenseGemm dense{b.act.as<bf16_bits>(), b.act.as<bf16_bits>(), b.out.as<bf16_bits>(), 4, 4, 64};
    expect_refused(bf16_gemm_act_weight_t(dense, kCuda), Status::unsupported,
                   {"splits = 9", "cluster", "at most 8"});
  }
  b.expect_untouched();
}

TEST(RejectSmall, KernelAlignmentOfK) {
  METRALE_SKIP_WITHOUT_GPU();
  GemmBuffers b(4, 8, 48);
  expect_refused(nvfp4_gemm_bf16_act_weight_t(b.args(4, 8, 48), kCuda), Status::unsupported,
                 {"K = 48", "32"});
  DenseGemm dense{b.act.as<bf16_bits>(), b.act.as<bf16_bits>(), b.out.as<bf16_bits>(), 2, 2, 12};
  expect_refused(bf16_gemm_act_weight_t(dense, kCuda), Status::unsupported, {"K = 12", "8"});
  b.expect_untouched();
  // The grouped operations refuse K = 48 too.
  const auto h = check::make_grouped_host(
      grouped_case(Op::grouped_down, Mode::exact, 16, 48, {8, 4, 2, RoutingKind::uniform}, 5));
  check::GroupedDevice d = check::upload_grouped(h);
  expect_refused(nvfp4_grouped(check::device_args(h, d, false, h.routing.max_rows), kCuda),
                 Status::unsupported, {"K = 48"});
  EXPECT_EQ(check::count_poison(d.out[0].download<bf16_bits>()),
            std::int64_t(h.routing.m_total) * 16);
}

TEST(RejectSmall, MisalignedPointers) {
  METRALE_SKIP_WITHOUT_GPU();
  GemmBuffers b(4, 8, 64);
  Nvfp4Gemm args = b.args(4, 8, 64);
  args.act += 1;  // 2-byte aligned: fine for the API, not for 16-byte vector loads
  expect_refused(nvfp4_gemm_bf16_act_weight_t(args, kCuda), Status::unsupported,
                 {"act", "16-byte aligned"});
  args = b.args(4, 8, 64);
  args.packed += 8;
  expect_refused(nvfp4_gemm_bf16_act_weight_t(args, kCuda), Status::unsupported,
                 {"packed", "16-byte aligned"});
  b.expect_untouched();
  // The quantizer: the weight is read 16 bytes at a time.
  check::DeviceBuffer weight(64 * 2 * 8 + 64, "weight");
  PackNvfp4 pack{weight.as<bf16_bits>() + 4,
                 b.packed.as<std::uint8_t>(),
                 b.scale.as<std::uint8_t>(),
                 nullptr,
                 8,
                 64};
  expect_refused(pack_bf16_weight_to_nvfp4_t(pack, kCuda), Status::unsupported,
                 {"weight_bf16", "16-byte aligned"});
}

TEST(RejectSmall, ValidationOfShapesAndOffsets) {
  METRALE_SKIP_WITHOUT_GPU();
  GemmBuffers b(4, 8, 64);
  expect_refused(nvfp4_gemm_bf16_act_weight_t(b.args(4, 8, 40), kCuda), Status::invalid_argument,
                 {"K = 40", "16"});
  Nvfp4Gemm nan_scale = b.args(4, 8, 64);
  nan_scale.scale_2 = std::nanf("");
  expect_refused(nvfp4_gemm_bf16_act_weight_t(nan_scale, kCuda), Status::invalid_argument,
                 {"scale_2"});
  b.expect_untouched();

  auto h = check::make_grouped_host(
      grouped_case(Op::grouped_down, Mode::exact, 16, 64, {8, 4, 2, RoutingKind::uniform}, 6));
  check::GroupedDevice d = check::upload_grouped(h);
  // Offsets that run past M_total (a short output), then decreasing offsets.
  GroupedNvfp4 args = check::device_args(h, d, false, h.routing.max_rows);
  args.groups.m_total = h.routing.m_total - 1;
  expect_refused(nvfp4_grouped(args, kCuda), Status::invalid_argument, {"M_total"});
  std::vector<std::int32_t> bad = h.routing.offsets;
  std::swap(bad[1], bad[2]);
  if (bad[1] == bad[2]) bad[1] = bad[2] + 1;
  args = check::device_args(h, d, false, h.routing.max_rows);
  args.groups.offsets = bad.data();
  expect_refused(nvfp4_grouped(args, kCuda), Status::invalid_argument, {"expert_offsets"});
  // A too short `a` (no token ids: group row i reads row i).
  args = check::device_args(h, d, false, h.routing.max_rows);
  args.a_rows = h.routing.m_total - 1;
  expect_refused(nvfp4_grouped(args, kCuda), Status::invalid_argument, {"a_rows"});
  EXPECT_EQ(check::count_poison(d.out[0].download<bf16_bits>()),
            std::int64_t(h.routing.m_total) * 16);
  EXPECT_EQ(check::check_all_guards(d.all()), "");
}

#else
TEST(RejectSmall, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
