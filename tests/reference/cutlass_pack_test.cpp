// The CUTLASS reference arm's packing operations through the public C++ API (Backend::cutlass),
// bit for bit against the CPU oracle. They are a second implementation of our format code, built
// from CUTLASS's own converters (float_e2m1_t, float_e4m3_t) and its SFB layout
// (Sm1xxBlockScaledConfig::tile_atom_to_shape_SFB), so agreement here checks src/format and
// src/cpu against an independent reading of NVFP4.md:
//   pack       the ModelOpt recipe (scale_2 chosen and returned) and the seeds' scale_2 = 1, on
//              the quantizer stress tensor (ties, zero blocks, clamped scales, subnormals)
//   sfb        both source layouts; N and K off the 128-row and 64-element tiles (zero padding)
//   transpose  both directions, N and K unaligned
#include <gtest/gtest.h>

#include "reference_test_util.hpp"

namespace metrale::reference_test {
namespace {

// N x K: one block, tile edges (128 rows, 64 elements per scale tile), and real projections.
const int kPackShapes[][2] = {{1, 16},    {3, 48},     {127, 64},   {128, 80},
                              {129, 272}, {300, 1040}, {2048, 768}, {7168, 2048}};

TEST(CutlassPack, QuantizerMatchesTheOracleBitForBit) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const auto& s : kPackShapes) {
    for (const bool recipe : {true, false}) {
      for (const Mode mode : {Mode::exact, Mode::realistic}) {
        check::Case c = gemm_case(Backend::cutlass, Op::pack, mode, 0, s[0], s[1], 3);
        c.pack_scale_2 = recipe;
        expect_pass(c);
      }
    }
  }
}

TEST(CutlassPack, SfbSwizzleMatchesTheOracleBitForBit) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const auto& s : kPackShapes) {
    for (const bool n_major : {true, false}) {
      check::Case c = gemm_case(Backend::cutlass, Op::sfb, Mode::exact, 0, s[0], s[1], 4);
      c.sfb_src_n_major = n_major;
      expect_pass(c);
    }
  }
}

TEST(CutlassPack, TransposeMatchesTheOracleBitForBit) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const auto& s : kPackShapes) {
    for (const TransposeDir dir : {TransposeDir::k_to_n, TransposeDir::n_to_k}) {
      check::Case c = gemm_case(Backend::cutlass, Op::transpose, Mode::exact, 0, s[0], s[1], 5);
      c.transpose_dir = dir;
      expect_pass(c);
    }
  }
}

}  // namespace
}  // namespace metrale::reference_test
