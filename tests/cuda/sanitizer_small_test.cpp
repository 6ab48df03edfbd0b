// The small-shape subset that scripts/gpu_run.sh runs under compute-sanitizer (memcheck,
// racecheck, synccheck; gtest filter *Small*): each operation on a few shapes that cross a tile
// edge and an alignment, exact mode, so that a sanitizer finding is reproducible and quick.
#include <string_view>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "cuda/sm90/decode/decode_params.hpp"
#include "cuda/sm90/tiled/tiled_params.hpp"
#endif

namespace metrale::cuda_test {
namespace {

TEST(SanitizerSmall, Gemms) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::bf16_gemm, Op::nvfp4_gemm}) {
    expect_pass(gemm_case(op, Mode::exact, 1, 8, 32));
    expect_pass(gemm_case(op, Mode::exact, 65, 65, 96));
    expect_pass(gemm_case(op, Mode::exact, 129, 200, 64));
  }
}

// The stream family forced. bf16: each configuration with rows past its narrower neighbour's
// width, N off the 8-row CTA, K off an even split over its warps (some with no K). NVFP4 (prepacked
// in the fragment order): host and device offsets, an expert of 24 rows over 8-token tiles, each
// team size (a lone warp's direct stores, folds of 2, 4 and 8 warps on named barriers).
TEST(SanitizerSmall, StreamConfigurations) {
  METRALE_SKIP_WITHOUT_GPU();
  for (auto [config, m] : {std::pair{0, 5}, std::pair{1, 9}, std::pair{2, 17}, std::pair{3, 33}}) {
    check::Case c = gemm_case(Op::bf16_gemm, Mode::exact, m, 9, 264, 5200 + config);
    c.cuda_kernel = fmt::format("sm90-stream:{}", config);
    expect_pass(c);
  }
  for (Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down})
    for (bool device_offsets : {false, true})
      for (int warps : {1, 2, 4, 8}) {
        check::Case c = grouped_case(op, Mode::exact, 24, 192, {12, 8, 2, RoutingKind::one_expert});
        c.prepacked = true;
        c.device_offsets = device_offsets;
        c.cuda_kernel = fmt::format("sm90-stream:0:{}", warps);
        expect_pass(c);
      }
}

// The MoE layer on the stream family at each team size: gate/up's pairs (each group's gate and
// up stages in one ring, both sums folded together on the team's named barrier, the activation
// from the fold) and down's items, on device offsets.
TEST(SanitizerSmall, MoeLayerOnTheStreamFamily) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int warps : {1, 2, 4, 8}) {
    check::Case c = moe_case(Mode::exact, 128, 64, {3, 8, 2, RoutingKind::uniform}, {}, 960);
    c.prepacked = true;
    c.cuda_kernel = fmt::format("sm90-stream:0:{}", warps);
    expect_pass(c);
  }
}

// pack on both quantize kernels (the lean one stages tiles by cp.async: racecheck's case).
TEST(SanitizerSmall, Packing) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::pack, Op::sfb, Op::transpose}) {
    for (const char* quantizer : kQuantizers) {
      if (op != Op::pack && std::string_view(quantizer) == "lean") continue;
      for (int variant = 0; variant < 2; ++variant) {
        check::Case c = gemm_case(op, variant ? Mode::realistic : Mode::exact, 0, 65, 48);
        c.pack_scale_2 = variant == 0;
        c.sfb_src_n_major = variant == 0;
        c.transpose_dir = variant == 0 ? TransposeDir::k_to_n : TransposeDir::n_to_k;
        c.cuda_quantizer = quantizer;
        expect_pass(c);
        c.n = 129;
        c.k = 96;
        expect_pass(c);
      }
    }
  }
}

TEST(SanitizerSmall, Grouped) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down}) {
    expect_pass(grouped_case(op, Mode::exact, 65, 64, {9, 4, 2, RoutingKind::empty_expert}));
    expect_pass(grouped_case(op, Mode::exact, 8, 32, {3, 16, 2, RoutingKind::one_expert}));
  }
}

// Prepacked weights: the decode family's and the tiled family's own kernels for that layout.
TEST(SanitizerSmall, GroupedPrepacked) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down})
    for (const char* kernel : {"", "sm90-tiled"}) {
      check::Case c = grouped_case(op, Mode::exact, 65, 64, {9, 4, 2, RoutingKind::empty_expert});
      c.prepacked = true;
      c.cuda_kernel = kernel;
      expect_pass(c);
    }
}

#ifdef METRALE_HAS_CUDA
// The warp-specialised tiles, forced, several tiles a CTA back to back (16 to 24 row tiles x 16
// channel tiles x 2 projections on at most 132 CTAs) on one k-tile (K = 64): the consumer
// warpgroups share one staging tile, and with K inside the stage ring only store_tile_staged's
// first barrier keeps one from staging the next tile while the other still copies the last one
// out (racecheck's case).
TEST(SanitizerSmall, WarpSpecialisedTilesBackToBack) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int config = 0; config < cuda::sm90::kTileCount; ++config) {
    if (!cuda::sm90::kTiles[config].specialized) continue;
    check::Case c = grouped_case(Op::grouped_gate_up_fused, Mode::exact, 2048, 64,
                                 {1100, 8, 2, RoutingKind::uniform}, 9700 + config);
    c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
    expect_pass(c);
  }
  // The family's own wide tiles on prepacked weights in the fragment order (the default, named).
  for (int config : {4, 8}) {
    check::Case c = grouped_case(Op::grouped_gate_up_fused, Mode::exact, 2048, 64,
                                 {1100, 8, 2, RoutingKind::uniform}, 9720 + config);
    c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
    c.prepacked = true;
    c.prepacked_layout = "fragments";
    expect_pass(c);
  }
}

// The decode family's 128-row tiles forced (configurations kWidthCount and up): N = 65 and 200
// leave a tile's second half partly out of N, N = 8 wholly; K = 96 ends inside a stage; a split in
// two over K = 2048 leaves partials; host and device offsets; prepacked weights in the fragment
// order and the seeds' packed bytes.
TEST(SanitizerSmall, DecodeWideTiles) {
  METRALE_SKIP_WITHOUT_GPU();
  using cuda::sm90::decode::kConfigCount;
  using cuda::sm90::decode::kWidthCount;
  std::uint64_t seed = 9800;
  for (int config = kWidthCount; config < kConfigCount; ++config)
    for (auto [n, k, splits] :
         {std::tuple{65, 96, 1}, std::tuple{8, 64, 1}, std::tuple{200, 2048, 2}})
      for (bool device_offsets : {false, true})
        for (bool prepacked : {false, true}) {
          check::Case c = grouped_case(Op::grouped_gate_up_fused, Mode::exact, n, k,
                                       {24, 8, 2, RoutingKind::skew}, ++seed);
          c.cuda_kernel = fmt::format("sm90-decode:{}:{}", config, splits);
          c.device_offsets = device_offsets;
          c.prepacked = prepacked;
          if (prepacked) c.prepacked_layout = "fragments";
          expect_pass(c);
        }
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
