// gemm/tile_grid.cuh on the host: the granule traits an epilogue states or leaves to their
// defaults, which the planner and the launchers read (sm90/plan.cuh's holds_column_granule, the
// kernels' padding checks): stated values are taken as they are, a partial statement (only one of
// padding_rows / padding_cols) is no statement, and the library's three dense epilogues state the
// values their stores need.
#include <fp4fuse/gemm/tile_grid.cuh>
#include <fp4fuse/gemm/epilogues.cuh>

#include <type_traits>

#include "../test_support.hpp"

namespace {
struct states_nothing {};
struct states_padding {
  static constexpr fp4fuse::gemm::index_t padding_rows = 64, padding_cols = 96;
};
struct states_rows_only {
  static constexpr fp4fuse::gemm::index_t padding_rows = 128;
};
static_assert(states_rows_only::padding_rows == 128, "a statement of the rows alone (which the trait must not take)");
struct states_granule {
  static constexpr int column_granule = 24;
};
}  // namespace

TEST_CASE("tile_grid: an epilogue's padding and column granules, stated or the defaults", "[gemm]") {
  using fp4fuse::gemm::column_granule;
  using fp4fuse::gemm::padding_granule;
  CHECK(padding_granule<states_nothing>::rows == 1);
  CHECK(padding_granule<states_nothing>::cols == 1);
  CHECK(padding_granule<states_padding>::rows == 64);
  CHECK(padding_granule<states_padding>::cols == 96);
  CHECK(padding_granule<states_rows_only>::rows == 1);  // both or neither
  CHECK(padding_granule<states_rows_only>::cols == 1);
  CHECK(column_granule<states_nothing> == 32);
  CHECK(column_granule<states_granule> == 24);
  static_assert(std::is_same_v<fp4fuse::gemm::index_t, std::int64_t>, "64-bit output indices: rows x ld may exceed 2^31");
}

TEST_CASE("tile_grid: the library's dense epilogues state what their stores need", "[gemm]") {
  using fp4fuse::gemm::column_granule;
  using fp4fuse::gemm::padding_granule;
  using act = fp4fuse::activation::swiglu;
  // The BF16 store: whole n8 tiles, no padding.
  CHECK(column_granule<fp4fuse::gemm::store_bf16<>> == 8);
  CHECK(padding_granule<fp4fuse::gemm::store_bf16<fp4fuse::column_bias>>::rows == 1);
  CHECK(padding_granule<fp4fuse::gemm::store_bf16<fp4fuse::column_bias>>::cols == 1);
  // The SwiGLU BF16 store: a gate granule and its up granule.
  CHECK(column_granule<fp4fuse::gemm::swiglu_bf16<act>> == 16);  // 8 gate columns and their 8 up columns
  CHECK(padding_granule<fp4fuse::gemm::swiglu_bf16<act>>::rows == 1);
  // NVFP4: whole blocks (a block's outputs come from twice as many gate/up columns); the scales'
  // 128 x 4 swizzled blocks of padding, each scale column a block's gate/up columns.
  // Written out: an NVFP4 block of 16 outputs is 32 gate/up columns; a 128 x 4 scale block covers
  // 128 rows and 4 blocks (128 gate/up columns).
  using nvfp4 = fp4fuse::gemm::swiglu_nvfp4<act>;
  constexpr fp4fuse::gemm::index_t block_gate_up_cols = 32;
  CHECK(column_granule<nvfp4> == block_gate_up_cols);
  CHECK(padding_granule<nvfp4>::rows == 128);
  CHECK(padding_granule<nvfp4>::cols == 128);
  CHECK(column_granule<fp4fuse::gemm::swiglu_nvfp4<act, fp4fuse::intermediate::bf16, fp4fuse::recipe::vllm, fp4fuse::column_bias>> ==
        block_gate_up_cols);
}
