// Tests of the prepacked weight layout on the CPU backend. On the halves' layout
// (METRALE_PREPACKED_LAYOUT=halves): prepack_nvfp4 writes every 16-bit half as
// format::prepack_half of the source half and unprepack restores the input, into another buffer,
// in place and at an odd byte offset; the grouped gate_up ([K/16, N] scales), the fused gate_up
// (SFB scales, rows gathered by token id) and down on prepacked weights equal the same calls on
// the packed weights bit for bit, and prepacked bytes read as packed do not (the layout is read,
// not ignored). In the fragment order (the default): the conversions go back to the input, in
// place and at odd byte offsets too, the grouped operations and the MoE layer (both scale
// layouts, biases, the clamped activation, an expert map) equal the packed layout.
#include "format/prepack.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "check/scoped_kernel.hpp"
#include "cpu/cpu_test_util.hpp"
#include "cpu/moe_fixture.hpp"
#include "metrale/metrale.hpp"

namespace metrale {
namespace {

constexpr Exec kCpu{Backend::cpu};
constexpr bf16_bits kPoison = 0x7FC1;

std::vector<std::uint8_t> convert(const std::vector<std::uint8_t>& src, int n, int k,
                                  PrepackDir dir) {
  std::vector<std::uint8_t> dst(src.size(), 0xCD);
  const Result r = prepack_nvfp4(PrepackNvfp4{src.data(), dst.data(), n, k, dir}, kCpu);
  EXPECT_TRUE(r.ok()) << r.message;
  return dst;
}

// The expected prepacked bytes: each little-endian half through format::prepack_half.
std::vector<std::uint8_t> by_halves(const std::vector<std::uint8_t>& packed) {
  std::vector<std::uint8_t> out(packed.size());
  for (std::size_t i = 0; i < packed.size(); i += 2) {
    const auto half = static_cast<std::uint16_t>(packed[i] | packed[i + 1] << 8);
    const std::uint16_t moved = format::prepack_half(half);
    out[i] = static_cast<std::uint8_t>(moved & 0xFFu);
    out[i + 1] = static_cast<std::uint8_t>(moved >> 8);
  }
  return out;
}

TEST(CpuPrepack, EveryHalfAndBackAgain) {
  const check::ScopedVariable layout("METRALE_PREPACKED_LAYOUT", "halves");
  for (int n : {1, 3, 127, 300})
    for (int k : {16, 48, 2880}) {
      SCOPED_TRACE(testing::Message() << "N = " << n << ", K = " << k);
      const auto packed = test::random_bytes(static_cast<std::size_t>(n) * k / 2, 7u + n + k);
      const auto prepacked = convert(packed, n, k, PrepackDir::to_prepacked);
      EXPECT_EQ(prepacked, by_halves(packed));
      EXPECT_EQ(convert(prepacked, n, k, PrepackDir::to_packed), packed);
    }
}

// Both layouts; the fragment order's expected bytes are its conversion into another buffer
// (checked against the order's definition by tests/format's FragmentOrder tests).
TEST(CpuPrepack, InPlaceAndAtOddOffsets) {
  const int n = 5, k = 96;
  const auto packed = test::random_bytes(static_cast<std::size_t>(n) * k / 2, 11);
  for (const char* order : {"halves", "fragments"})
    for (std::size_t offset : {0, 1, 2, 3}) {
      SCOPED_TRACE(testing::Message() << order << ", byte offset " << offset);
      const check::ScopedVariable layout("METRALE_PREPACKED_LAYOUT", order);
      const auto want = std::string(order) == "halves"
                            ? by_halves(packed)
                            : convert(packed, n, k, PrepackDir::to_prepacked);
      std::vector<std::uint8_t> buffer(packed.size() + 4, 0xEE);
      std::uint8_t* at = buffer.data() + offset;
      std::memcpy(at, packed.data(), packed.size());
      ASSERT_TRUE(prepack_nvfp4({at, at, n, k, PrepackDir::to_prepacked}, kCpu).ok());
      EXPECT_EQ(std::vector<std::uint8_t>(at, at + packed.size()), want);
      ASSERT_TRUE(prepack_nvfp4({at, at, n, k, PrepackDir::to_packed}, kCpu).ok());
      EXPECT_EQ(std::vector<std::uint8_t>(at, at + packed.size()), packed);
      for (std::size_t i = 0; i < offset; ++i) EXPECT_EQ(buffer[i], 0xEE) << "byte before";
      for (std::size_t i = offset + packed.size(); i < buffer.size(); ++i)
        EXPECT_EQ(buffer[i], 0xEE) << "byte after";
    }
}

// One projection's experts in both weight layouts (the scales are shared).
struct BothLayouts {
  test::MoeProjection w;
  std::vector<std::vector<std::uint8_t>> prepacked;
  std::vector<std::uint64_t> prepacked_ptrs;

  BothLayouts(int experts, int n, int k, std::uint32_t seed) : w(experts, n, k, seed, 1.0f / 16) {
    for (const auto& packed : w.packed)
      prepacked.push_back(convert(packed, n, k, PrepackDir::to_prepacked));
    for (const auto& bytes : prepacked) prepacked_ptrs.push_back(test::ptr_bits(bytes.data()));
  }

  ExpertWeights weights(ScaleLayout scales, const std::vector<std::uint64_t>& packed_ptrs) const {
    ExpertWeights out = w.weights(scales);
    out.packed_ptrs = packed_ptrs.data();
    return out;
  }
};

// The three grouped operations of the seeds: gate_up, gate_up_fused, down.
struct GroupedOp {
  const char* name;
  int proj_count;
  ScaleLayout scales;
  bool gather;
};

constexpr GroupedOp kOps[] = {
    {"gate_up", 2, ScaleLayout::k16_by_n, false},
    {"gate_up_fused", 2, ScaleLayout::sfb, true},
    {"down", 1, ScaleLayout::sfb, false},
};

struct GroupedCase {
  static constexpr int kN = 48, kK = 64, kTokens = 9;
  std::vector<std::int32_t> offsets = {0, 3, 3, 10, 17};  // expert 1 has no rows
  std::vector<std::int32_t> ids = {4, 0, 8, 1, 1, 2, 7, 3, 5, 6, 0, 2, 8, 4, 3, 7, 6};
  BothLayouts proj[2] = {{4, kN, kK, 300}, {4, kN, kK, 400}};
  std::vector<bf16_bits> a = test::random_normal_bf16(17 * kK, 13, 1.0f);

  // Runs `op` on the packed or the prepacked bytes, read as `weights`.
  std::vector<std::vector<bf16_bits>> run(const GroupedOp& op, bool prepacked_bytes,
                                          WeightLayout weights) const {
    const std::int32_t m_total = offsets.back();
    std::vector<std::vector<bf16_bits>> out(
        2, std::vector<bf16_bits>(static_cast<std::size_t>(m_total) * kN, kPoison));
    GroupedNvfp4 args{};
    args.a = a.data();
    args.a_rows = op.gather ? kTokens : m_total;
    args.token_ids = op.gather ? ids.data() : nullptr;
    for (int p = 0; p < op.proj_count; ++p) {
      const BothLayouts& b = proj[p];
      args.proj[p] = b.weights(op.scales, prepacked_bytes ? b.prepacked_ptrs : b.w.packed_ptrs);
      args.out[p] = out[p].data();
    }
    args.proj_count = op.proj_count;
    args.scale_layout = op.scales;
    args.groups = ExpertGroups{offsets.data(), false, 4, m_total, 0};
    args.n = kN;
    args.k = kK;
    args.weight_layout = weights;
    const Result r = nvfp4_grouped(args, kCpu);
    EXPECT_TRUE(r.ok()) << r.message;
    return out;
  }
};

TEST(CpuPrepack, GroupedOpsEqualThePackedLayout) {
  const check::ScopedVariable layout("METRALE_PREPACKED_LAYOUT", "halves");
  const GroupedCase c;
  for (const GroupedOp& op : kOps) {
    SCOPED_TRACE(op.name);
    const auto packed = c.run(op, false, WeightLayout::packed);
    EXPECT_EQ(c.run(op, true, WeightLayout::prepacked), packed);
    EXPECT_NE(c.run(op, true, WeightLayout::packed), packed) << "prepacked bytes read as packed";
    for (int p = 0; p < op.proj_count; ++p)
      EXPECT_EQ(std::count(packed[p].begin(), packed[p].end(), kPoison), 0) << "every row written";
  }
}

// The fragment order (the default) moves codes within each 64-code group of a row
// (format/fragment_order.hpp): the CPU backend's conversion and its decode follow
// METRALE_PREPACKED_LAYOUT.
TEST(CpuPrepack, FragmentOrderGoesBackAndGroupedOpsEqualThePackedLayout) {
  const check::ScopedVariable layout("METRALE_PREPACKED_LAYOUT", "fragments");
  for (int k : {16, 96, 2880}) {
    SCOPED_TRACE(testing::Message() << "K = " << k);
    const auto packed = test::random_bytes(static_cast<std::size_t>(3) * k / 2, 5u + k);
    const auto ordered = convert(packed, 3, k, PrepackDir::to_prepacked);
    if (k >= 64) {
      EXPECT_NE(ordered, by_halves(packed)) << "codes move between halves";
    }
    EXPECT_EQ(convert(ordered, 3, k, PrepackDir::to_packed), packed);
  }
  const GroupedCase c;  // prepacks its weights in the fragment order
  for (const GroupedOp& op : kOps) {
    SCOPED_TRACE(op.name);
    const auto packed = c.run(op, false, WeightLayout::packed);
    EXPECT_EQ(c.run(op, true, WeightLayout::prepacked), packed);
  }
}

// The layer's three projections, prepacked.
struct PrepackedLayer {
  std::vector<std::vector<std::uint8_t>> bytes[3];
  std::vector<std::uint64_t> ptrs[3];

  explicit PrepackedLayer(const test::MoeFixture& f) {
    const test::MoeProjection* proj[3] = {&f.gate, &f.up, &f.down};
    for (int p = 0; p < 3; ++p) {
      for (const auto& packed : proj[p]->packed)
        bytes[p].push_back(convert(packed, proj[p]->n, proj[p]->k, PrepackDir::to_prepacked));
      for (const auto& b : bytes[p]) ptrs[p].push_back(test::ptr_bits(b.data()));
    }
  }

  MoeLayer apply(MoeLayer layer, WeightLayout weights) const {
    layer.gate.packed_ptrs = ptrs[0].data();
    layer.up.packed_ptrs = ptrs[1].data();
    layer.down.packed_ptrs = ptrs[2].data();
    layer.weight_layout = weights;
    return layer;
  }
};

std::vector<bf16_bits> run_layer(const test::MoeFixture& f, const MoeLayer& layer) {
  std::vector<bf16_bits> out = f.poisoned_out();
  MoeTokens t = f.with_logits();
  t.out = out.data();
  const Result r = moe_forward(layer, t, kCpu);
  EXPECT_TRUE(r.ok()) << r.message;
  return out;
}

TEST(CpuPrepack, MoeLayerEqualsThePackedLayout) {
  for (ScaleLayout scales : {ScaleLayout::k16_by_n, ScaleLayout::sfb})
    for (int tokens : {1, 64}) {
      SCOPED_TRACE(testing::Message()
                   << "scale layout " << static_cast<int>(scales) << ", T = " << tokens);
      test::MoeFixture f(8, 2, tokens);
      f.set_layout(scales);
      const PrepackedLayer prepacked(f);
      const auto packed = run_layer(f, f.layer);
      EXPECT_EQ(run_layer(f, prepacked.apply(f.layer, WeightLayout::prepacked)), packed);
      EXPECT_NE(run_layer(f, prepacked.apply(f.layer, WeightLayout::packed)), packed)
          << "prepacked bytes read as packed";
    }
}

TEST(CpuPrepack, MoeLayerWithBiasesClampAndMap) {
  test::MoeFixture f(8, 2, 16, 1.0f / 8, 6);
  f.add_biases();
  f.set_map({0, -1, 1, 2, -1, 3, 4, 5});
  f.layer.activation = MoeActivation::swiglu_clamped;
  const PrepackedLayer prepacked(f);
  EXPECT_EQ(run_layer(f, prepacked.apply(f.layer, WeightLayout::prepacked)), run_layer(f, f.layer));
}

}  // namespace
}  // namespace metrale
