// The MoE layer's activation computed in the decode family's staging (nvfp4_grouped_on_glu):
//   - on random bf16 gate and up rows, the grouped down GEMM on the gated input equals the
//     activation kernel followed by the plain grouped call, bit for bit: silu and gpt-oss's
//     clamped SwiGLU, K a multiple of 64 and K % 64 == 32 (the zero-padded last k-tile), host and
//     device offsets, an expert without rows, the automatic plan and a forced width and split;
//     a second run is bitwise identical;
//   - when a chosen launch would not stage it (the tiled family forced, or an expert past the
//     decode family's rows under host offsets) it launches nothing: the output stays poisoned;
//   - host only: which families stage it, and a gathered input refused before any device work.
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>

#include "check/buffers.hpp"
#include "check/grouped.hpp"
#include "core/error.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/family.hpp"
#include "cuda/moe/moe_route.hpp"
#include "format/bf16.hpp"
#include "format/moe_math.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

using check::DeviceBuffer;

constexpr int kN = 72;  // down's N (H): a partial 64-row weight tile
// gpt-oss's clamped SwiGLU; gate and up are drawn with |x| up to 12, so the clamp bites.
constexpr float kAlpha = 1.702f, kLimit = 7.0f;

// Random bf16 in (-12, 12): finite, with both signs and values past the clamp.
std::vector<bf16_bits> random_rows(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(-12.0f, 12.0f);
  std::vector<bf16_bits> rows(count);
  for (bf16_bits& v : rows) v = format::float_to_bf16(value(rng));
  return rows;
}

cuda::GluInput glu_input(const DeviceBuffer& up, bool clamped) {
  cuda::GluInput glu;
  glu.up = up.as<std::uint16_t>();
  glu.clamped = clamped;
  glu.alpha = kAlpha;
  glu.limit = kLimit;
  return glu;
}

// The inputs of one case: down's weights and routing (check::GroupedHost), random gate and up
// rows in group order, and the workspace nvfp4_grouped sizes for the call.
struct GluCall {
  check::GroupedHost host;
  check::GroupedDevice device;
  DeviceBuffer gate, up, workspace;
  bool device_offsets;

  GluCall(int k, check::Routing routing, bool on_device, std::uint64_t seed)
      : host(check::make_grouped_host(
            grouped_case(Op::grouped_down, Mode::realistic, kN, k, routing, seed))),
        device(check::upload_grouped(host)),
        device_offsets(on_device) {
    const std::size_t values = static_cast<std::size_t>(host.routing.m_total) * k;
    gate = check::upload_new(random_rows(values, seed + 1), "gate");
    up = check::upload_new(random_rows(values, seed + 2), "up");
    const std::size_t bytes = cuda::nvfp4_grouped_workspace_size(args(gate).groups, kN, k, 1);
    workspace = DeviceBuffer(bytes > 0 ? bytes : 1, "workspace");
  }

  // The grouped down call on `a` (gate rows, or the activation rows), writing `out`.
  GroupedNvfp4 args(const DeviceBuffer& a, bf16_bits* out = nullptr) {
    GroupedNvfp4 g = check::device_args(host, device, device_offsets, host.routing.max_rows);
    g.a = a.as<bf16_bits>();
    if (out) g.out[0] = out;
    return g;
  }

  core::Buffer ws() const { return {workspace.data(), workspace.size()}; }

  DeviceBuffer poisoned_output(const std::string& name) const {
    DeviceBuffer out(static_cast<std::size_t>(host.routing.m_total) * kN * sizeof(bf16_bits), name);
    out.poison_bf16(check::kPoisonBf16);
    return out;
  }
};

// The unfused path: the MoE layer's activation kernel over a copy of gate (no biases), then
// the plain grouped call on the activation rows.
std::vector<bf16_bits> activation_then_down(GluCall& c, bool clamped) {
  DeviceBuffer act(c.gate.size(), "act");
  check::cuda_require(
      cudaMemcpy(act.data(), c.gate.data(), c.gate.size(), cudaMemcpyDeviceToDevice), "copy gate");
  const std::int32_t rows = c.host.routing.m_total;
  DeviceBuffer total = check::upload_new(std::vector<std::int32_t>{rows}, "total_rows");
  cuda::moe::ActivationArgs a{};
  a.gate = act.as<std::uint16_t>();
  a.up = c.up.as<std::uint16_t>();
  a.total_rows = total.as<std::int32_t>();
  a.inter = c.host.k;
  a.clamped = clamped;
  a.alpha = kAlpha;
  a.limit = kLimit;
  check::cuda_require(cuda::moe::launch_activation(a, nullptr, 64, nullptr), "activation");
  DeviceBuffer out = c.poisoned_output("c_unfused");
  cuda::nvfp4_grouped(c.args(act, out.as<bf16_bits>()), c.ws(), nullptr);
  check::device_synchronize("activation then down");
  EXPECT_EQ(out.check_guards(), "");
  return out.download<bf16_bits>();
}

std::vector<bf16_bits> down_on_glu(GluCall& c, bool clamped) {
  DeviceBuffer out = c.poisoned_output("c_glu");
  EXPECT_TRUE(cuda::nvfp4_grouped_on_glu(c.args(c.gate, out.as<bf16_bits>()),
                                         glu_input(c.up, clamped), c.ws(), nullptr));
  check::device_synchronize("down on the gated input");
  EXPECT_EQ(out.check_guards(), "");
  return out.download<bf16_bits>();
}

int nan_count(const std::vector<bf16_bits>& values) {
  int count = 0;
  for (bf16_bits v : values) count += (v & 0x7FFF) > 0x7F80;
  return count;
}

// Runs `kernel` (METRALE_CUDA_KERNEL, "" for the automatic choice) on one case.
void expect_same_bits(int k, bool clamped, bool device_offsets, const std::string& kernel,
                      std::uint64_t seed) {
  const std::string label =
      fmt::format("K = {}, {}, {} offsets, kernel '{}'", k, clamped ? "swiglu_clamped" : "silu",
                  device_offsets ? "device" : "host", kernel);
  GluCall c(k, {24, 8, 2, RoutingKind::empty_expert}, device_offsets, seed);
  setenv("METRALE_CUDA_KERNEL", kernel.c_str(), 1);
  const auto want = activation_then_down(c, clamped);
  const auto got = down_on_glu(c, clamped);
  const auto again = down_on_glu(c, clamped);
  unsetenv("METRALE_CUDA_KERNEL");
  ASSERT_EQ(nan_count(want), 0) << label << ": the unfused path left rows unwritten";
  const check::Comparison cmp = check::compare_bf16_bits(got, want, kN, {}, label);
  EXPECT_EQ(cmp.mismatches, 0) << label << ": " << cmp.first_detail;
  const check::Comparison rerun = check::compare_bf16_bits(again, got, kN, {}, label);
  EXPECT_EQ(rerun.mismatches, 0) << label << ": a second run differs: " << rerun.first_detail;
}

TEST(DecodeGluStaging, EqualsTheActivationKernelThenDown) {
  METRALE_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 7600;
  for (int k : {128, 2048, 96, 1056})  // K % 64: 0, 0, 32, 32
    for (bool clamped : {false, true})
      for (bool device_offsets : {false, true})
        for (const char* kernel : {"", "sm90-decode:1:2"})
          expect_same_bits(k, clamped, device_offsets, kernel, seed += 10);
}

// The activation kernel's silu from a table (cuda/silu_table.cuh, which the MoE layer's routing
// kernel fills past one routing block) against silu computed: gate rows holding every bf16 bit
// pattern (NaNs, infinities and subnormals too), up random; computed on the device, looked up in
// a table built on the host with format::silu_f32, and the CPU oracle's silu_mul: the same bits.
TEST(DecodeGluStaging, SiluTableEqualsTheFunctionOnEveryBf16) {
  METRALE_SKIP_WITHOUT_GPU();
  constexpr int kInter = 64, kValues = format::kBf16Patterns;
  std::vector<bf16_bits> gate(kValues);
  for (int i = 0; i < kValues; ++i) gate[i] = static_cast<bf16_bits>(i);
  const std::vector<bf16_bits> up = random_rows(kValues, 7700);
  std::vector<float> table(kValues);
  std::vector<bf16_bits> want(kValues);
  for (int i = 0; i < kValues; ++i) {
    const float g = format::bf16_to_float(gate[i]), u = format::bf16_to_float(up[i]);
    table[i] = format::silu_f32(g);
    want[i] = format::float_to_bf16(format::silu_mul(g, u));
  }
  const DeviceBuffer up_device = check::upload_new(up, "up");
  const DeviceBuffer table_device = check::upload_new(table, "silu_table");
  const DeviceBuffer total = check::upload_new(std::vector<std::int32_t>{kValues / kInter}, "rows");
  const float* const lookups[] = {nullptr, table_device.as<float>()};
  for (const float* lookup : lookups) {
    const DeviceBuffer act = check::upload_new(gate, "act");
    cuda::moe::ActivationArgs a{};
    a.gate = act.as<std::uint16_t>();
    a.up = up_device.as<std::uint16_t>();
    a.total_rows = total.as<std::int32_t>();
    a.inter = kInter;
    a.silu_table = lookup;
    check::cuda_require(cuda::moe::launch_activation(a, nullptr, 64, nullptr), "activation");
    check::device_synchronize("activation");
    const std::vector<bf16_bits> got = act.download<bf16_bits>();
    int mismatches = 0, first = -1;
    for (int i = 0; i < kValues; ++i)
      if (got[i] != want[i] && mismatches++ == 0) first = i;
    EXPECT_EQ(mismatches, 0) << (lookup ? "table" : "computed") << ": first at gate bits " << first
                             << ", got " << (first >= 0 ? got[first] : 0) << ", want "
                             << (first >= 0 ? want[first] : 0);
  }
}

// Nothing launched: the output keeps its poison, every bf16 of it.
void expect_refused_untouched(GluCall& c, const std::string& label) {
  DeviceBuffer out = c.poisoned_output("c");
  const bool ran = cuda::nvfp4_grouped_on_glu(c.args(c.gate, out.as<bf16_bits>()),
                                              glu_input(c.up, false), c.ws(), nullptr);
  check::device_synchronize(label);
  EXPECT_FALSE(ran) << label;
  const auto values = out.download<bf16_bits>();
  EXPECT_EQ(nan_count(values), static_cast<int>(values.size())) << label << ": output written";
  EXPECT_EQ(out.check_guards(), "") << label;
}

TEST(DecodeGluStaging, RefusedWithoutLaunchingWhenALaunchWouldNotStageIt) {
  METRALE_SKIP_WITHOUT_GPU();
  for (bool device_offsets : {false, true}) {
    GluCall c(128, {24, 8, 2, RoutingKind::empty_expert}, device_offsets, 7700);
    setenv("METRALE_CUDA_KERNEL", "sm90-tiled", 1);
    expect_refused_untouched(c,
                             fmt::format("sm90-tiled forced, device offsets {}", device_offsets));
    unsetenv("METRALE_CUDA_KERNEL");
  }
  // Host offsets, 80 rows on one expert: past kDecodeMaxRows, and past kDecodeWideMaxRows (64),
  // so the tiled family takes that expert.
  GluCall busy(128, {40, 8, 2, RoutingKind::one_expert}, false, 7710);
  expect_refused_untouched(busy, "one expert of 80 rows");
}

// Host logic, no GPU: only the decode family stages a gated input.
TEST(DecodeGluStaging, OnlyTheDecodeFamilyStagesIt) {
  const cuda::Family* decode = cuda::find_family("sm90-decode");
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  const cuda::Family* stream = cuda::find_family("sm90-stream");
  ASSERT_NE(decode, nullptr);
  ASSERT_NE(tiled, nullptr);
  ASSERT_NE(stream, nullptr);
  EXPECT_TRUE(decode->stages_glu_input(cuda::Plan{}));
  EXPECT_FALSE(tiled->stages_glu_input(cuda::Plan{}));
  EXPECT_FALSE(stream->stages_glu_input(cuda::Plan{}));
}

// Host logic, no GPU: the gated input takes gate rows in group order; token ids are refused,
// naming them, before a device is asked for.
TEST(DecodeGluStaging, GatheredInputIsRefused) {
  const std::int32_t offsets[2] = {0, 1}, ids[1] = {0};
  GroupedNvfp4 args{};
  args.token_ids = ids;
  args.groups = ExpertGroups{offsets, false, 1, 1, 1};
  args.n = 64;
  args.k = 64;
  args.proj_count = 1;
  cuda::GluInput glu;
  const std::uint16_t up = 0;
  glu.up = &up;
  try {
    cuda::nvfp4_grouped_on_glu(args, glu, {}, nullptr);
    ADD_FAILURE() << "token ids were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("token_ids"), std::string::npos) << e.what();
  }
}

#else
TEST(DecodeGluStaging, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
