// The tiled family forced at every tile (configuration), exact mode bit for bit against the
// oracle, each case run twice by the harness (determinism): grouped gate/up and down on host and
// device offsets with an expert wider than the widest token tile (300 rows: two 256-row tiles, a
// partial one last), N and K off the tile edges; the dense NVFP4 and bf16 GEMMs at M past each
// token width. The dispatcher reaches only some tiles for a given shape; this reaches them all.
#include <fmt/format.h>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "cuda/family.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

int tiled_configs() { return cuda::find_family("sm90-tiled")->config_count(); }

TEST(TiledFamily, EveryTileGroupedExact) {
  METRALE_SKIP_WITHOUT_GPU();
  const check::Routing routings[] = {{300, 4, 1, RoutingKind::one_expert},
                                     {97, 8, 2, RoutingKind::skew}};
  std::uint64_t seed = 9100;
  int failures = 0;
  for (int config = 0; config < tiled_configs(); ++config)
    for (Op op : {Op::grouped_gate_up_fused, Op::grouped_down})
      for (const check::Routing& routing : routings)
        for (bool device_offsets : {false, true}) {
          check::Case c = grouped_case(op, Mode::exact, 200, 1056, routing, ++seed);
          c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
          c.device_offsets = device_offsets;
          if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
        }
}

TEST(TiledFamily, EveryTileDenseExact) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  for (int config = 0; config < tiled_configs(); ++config)
    for (Op op : {Op::nvfp4_gemm, Op::bf16_gemm})
      for (int m : {1, 129, 300}) {
        check::Case c = gemm_case(op, Mode::exact, m, 65, 96, 9200 + config * 7 + m);
        c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
        if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
      }
}

#endif  // METRALE_HAS_CUDA

}  // namespace
}  // namespace metrale::cuda_test
