// Every tile of the CUTLASS dense bf16 GEMM (the seeds' 128x256, 256x128, 64x128, 128x64, 64x64
// test hooks) called directly through reference::cutlass::bf16_gemm, exact mode, bit for bit
// against cpu::bf16_gemm: M, N, K around each tile's edges (one tile, one row over, a partial
// k-tile), on a non-default stream, with the caller's workspace, into a NaN-poisoned output
// between guard bands, twice (identical bits). Also the refusal of an unaligned N, and that the
// automatic choice agrees with every explicit tile.
#include <gtest/gtest.h>

#ifdef METRALE_HAS_CUTLASS
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "check/buffers.hpp"
#include "check/compare.hpp"
#include "core/error.hpp"
#include "reference/cutlass/cutlass_backend.hpp"
#include "reference_test_util.hpp"

namespace metrale::reference_test {
namespace {

using reference::cutlass::Tile;

struct TileCase {
  Tile tile;
  const char* name;
  int tm, tn;
};

const TileCase kTileCases[] = {
    {Tile::m128n256, "m128n256", 128, 256}, {Tile::m256n128, "m256n128", 256, 128},
    {Tile::m64n128, "m64n128", 64, 128},    {Tile::m128n64, "m128n64", 128, 64},
    {Tile::m64n64, "m64n64", 64, 64},
};

// Runs `tile` on an exact-mode M x N x K product and compares with the CPU oracle; "" if equal.
std::string run_tile(Tile tile, int m, int n, int k, std::uint64_t seed) {
  ExactDenseGemm g(m, n, k, seed, reference::cutlass::gemm_workspace_size(m, n, k));
  const Stream stream;
  std::vector<bf16_bits> first;
  for (int run = 0; run < 2; ++run) {
    g.out.poison_bf16(check::kPoisonBf16);
    reference::cutlass::bf16_gemm(g.args, g.ws, stream.get(), tile);
    check::cuda_require(cudaStreamSynchronize(stream.get()), "bf16_gemm");
    const std::vector<bf16_bits> got = g.out.download<bf16_bits>();
    const check::Comparison cmp = check::compare_bf16_bits(got, g.want, n, {}, "out");
    if (cmp.mismatches > 0) {
      return std::to_string(cmp.mismatches) + " of " + std::to_string(cmp.compared) +
             " differ, first " + cmp.first_detail;
    }
    if (check::count_poison(got) > 0) return "some outputs were never written";
    if (run == 1 && got != first) return "the second run differs from the first";
    first = got;
  }
  const std::string guards = g.broken_guards();
  return guards.empty() ? std::string() : "guard band broken: " + guards;
}

TEST(CutlassTiles, EveryTileExactAroundItsEdges) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const TileCase& t : kTileCases) {
    // One row/column short of, exactly, and one over a tile; K below, at and off the k-tile (64).
    const int shapes[][3] = {
        {1, 8, 8},
        {t.tm - 1, t.tn - 8, 64},
        {t.tm, t.tn, 200},
        {t.tm + 1, t.tn + 8, 1024},
        {2 * t.tm + 3, 3 * t.tn + 16, 136},
        {600, 1032, 4096},
    };
    for (const auto& s : shapes) {
      SCOPED_TRACE(std::string(t.name) + " M=" + std::to_string(s[0]) +
                   " N=" + std::to_string(s[1]) + " K=" + std::to_string(s[2]));
      try {
        EXPECT_EQ(run_tile(t.tile, s[0], s[1], s[2], 17), "");
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
}

TEST(CutlassTiles, AutomaticAgreesWithTheOracle) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  const int shapes[][3] = {{1, 4096, 512}, {64, 2048, 256}, {300, 8192, 128}, {4096, 512, 64}};
  for (const auto& s : shapes) {
    SCOPED_TRACE("automatic M=" + std::to_string(s[0]) + " N=" + std::to_string(s[1]));
    EXPECT_EQ(run_tile(Tile::automatic, s[0], s[1], s[2], 23), "");
  }
}

TEST(CutlassTiles, UnalignedNIsUnsupportedWithTheValueNamed) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const TileCase& t : kTileCases) {
    expect_error([&] { run_tile(t.tile, 16, 30, 64, 1); }, Status::unsupported, "N = 30",
                 std::string(t.name) + ": N = 30");
  }
}

}  // namespace
}  // namespace metrale::reference_test

#endif  // METRALE_HAS_CUTLASS
