// The quantize kernels' CTA tile (quantize.cu, quantize_lean.cu; quantize.cu says why this
// shape): 32 rows x 256 elements (16 blocks of 16); warp w takes rows 4w..4w+3, lane l elements
// [8l, 8l + 8) of each. A plain header, so that host tests can walk the same tile.
#pragma once

#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda {

constexpr int kTileRows = 32;
constexpr int kTileCols = 256;  // elements along K
constexpr int kTileBlocks = kTileCols / format::kBlockSize;
constexpr int kQuantThreads = 256;
constexpr int kRowsPerWarp = kTileRows / (kQuantThreads / 32);
static_assert(kTileCols == 32 * 8, "a lane takes 8 elements (16 bytes) of each of its rows");
static_assert(kRowsPerWarp == 4, "the scale split below gives each lane of a pair two rows");
static_assert(kTileBlocks * kTileRows == 2 * kQuantThreads, "each thread stores two scale bytes");

}  // namespace metrale::cuda
