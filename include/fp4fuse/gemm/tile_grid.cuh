#pragma once
/// \file tile_grid.cuh
/// The GEMM engine's index type, its tile grid as an epilogue's `padding_beyond` sees it, and the
/// granules an epilogue asks of the tiles (padding, columns).
#include <cstdint>
#include <type_traits>

namespace fp4fuse::gemm {

/// Row and column indices of the GEMM's outputs (64-bit: rows x ld may exceed 2^31).
using index_t = std::int64_t;

/// The tile grid in output rows and gate/up columns: tiles of tile_rows x tile_cols, together
/// covering [0, covered_rows) x [0, covered_cols). An epilogue whose output is padded beyond that
/// extent (the NVFP4 scales' 128 x 4 blocks) writes the padding the grid does not cover.
/// \code
/// const fp4fuse::gemm::tile_grid grid{128, 128, 256, 4096};  // two row blocks of 128 x 128 tiles
/// \endcode
struct tile_grid {
  index_t tile_rows;     ///< rows of one tile
  index_t tile_cols;     ///< columns of one tile
  index_t covered_rows;  ///< rows the tiles cover together
  index_t covered_cols;  ///< columns the tiles cover together
};

/// The rows and columns in which an epilogue's output is padded (`Epilogue::padding_rows`,
/// `padding_cols`; the NVFP4 scales: 128 rows x 4 scale columns, 128 gate/up columns), 1 x 1 for
/// an output without padding. A kernel that writes no padding beyond its tiles needs tiles that
/// are whole multiples of it.
/// \code
/// struct padded_out { static constexpr fp4fuse::gemm::index_t padding_rows = 128, padding_cols = 128; };
/// static_assert(fp4fuse::gemm::padding_granule<padded_out>::rows == 128, "a 128-row granule");
/// \endcode
template <class Epilogue, class = void>
struct padding_granule {
  static constexpr index_t rows = 1;  ///< padding granule rows
  static constexpr index_t cols = 1;  ///< padding granule columns
};
/// An epilogue that states its padding granule.
template <class Epilogue>
struct padding_granule<Epilogue, std::void_t<decltype(Epilogue::padding_rows), decltype(Epilogue::padding_cols)>> {
  static constexpr index_t rows = Epilogue::padding_rows;  ///< padding granule rows
  static constexpr index_t cols = Epilogue::padding_cols;  ///< padding granule columns
};

/// The gate/up columns a consumer warpgroup's part of a tile must hold a whole number of for
/// `Epilogue` (`Epilogue::column_granule`): 8 for a store of D (one n8 tile), 16 for the SwiGLU
/// BF16 store (a gate granule and its up granule), 32 for NVFP4 (16 outputs per block). An
/// epilogue that states none gets 32, which every tile width but 64 x 48's holds: the planner
/// and the launcher never give it 64 x 48 tiles.
/// \code
/// struct bf16_out { static constexpr int column_granule = 8; };
/// static_assert(fp4fuse::gemm::column_granule<bf16_out> == 8, "48 % 8 == 0: 64 x 48 tiles allowed");
/// \endcode
template <class Epilogue, class = void>
inline constexpr int column_granule = 32;
/// An epilogue that states its column granule.
template <class Epilogue>
inline constexpr int column_granule<Epilogue, std::void_t<decltype(Epilogue::column_granule)>> = Epilogue::column_granule;

}  // namespace fp4fuse::gemm
