// gemm/sm90/plan.cuh on the host: the dense planner's choices and their invariants over the
// models' shapes and decode to prefill sizes, the grouped planner's bands and the plans it
// refuses, and where X's TMA box stops at M. Host-only (no kernel is instantiated), so it builds in
// seconds; the kernels these plans name run in tests/gemm/dense.cu and tests/gemm/grouped.cu.
#include <fp4fuse/gemm/epilogues.cuh>
#include <fp4fuse/gemm/sm90/plan.cuh>

#include <algorithm>
#include <utility>
#include <vector>

#include "../../test_support.hpp"

using act_t = fp4fuse::activation::swiglu;
using fp4fuse::gemm::sm90::grouped_plan;

TEST_CASE("plan: the dense launch plans", "[gemm][plan]") {
  using fp4fuse::gemm::sm90::plan;
  constexpr int sms = 132;  // H200
  for (int T : {1, 64, 512, 4096, 16384, 100000}) {
    for (auto [H, N] : {std::pair{7168, 4096}, {2880, 5760}, {64, 32}}) {
      for (const bool staged : {false, true}) {
      for (const int granule : {32, 8}) {
        const fp4fuse::gemm::sm90::launch_plan p = plan(T, N, H, sms, staged, granule);
        INFO("T=" << T << " H=" << H << " N=" << N << " staged store " << staged << " column granule " << granule);
        // The staged store changes only the choice of the ping-pong for the cooperative tile.
        const fp4fuse::gemm::sm90::launch_plan unstaged = plan(T, N, H, sms, false, granule);
        if (staged && p.pingpong != unstaged.pingpong) {
          CHECK((unstaged.pingpong == 1 && H >= 4096 && p.block_m == 128 && p.block_n == 256 && p.splits == 1));
        } else if (staged) {
          CHECK((p.block_n == unstaged.block_n && p.splits == unstaged.splits && p.block_m == unstaged.block_m));
        }
        CHECK(fp4fuse::gemm::sm90::validate_plan(&p));
        CHECK(p.splits >= 1);
        CHECK(p.splits <= (H + 63) / 64);  // every split has K blocks
        const int tiles = ((T + p.block_m - 1) / p.block_m) * ((N + p.block_n - 1) / p.block_n);
        CHECK(p.units == tiles * p.splits);
        if (p.pingpong == 1) {
          CHECK(p.splits == 1);
          CHECK(p.in_flight == 1);  // one K step of MMAs in flight (bench/results/engine8.md, call G)
          CHECK((p.block_m == 128 && p.block_n == 128));
          CHECK(tiles >= 2 * sms);  // two tiles per CTA, one per consumer
        }
        // 64-row tiles only where 128-row ones leave SMs idle (small T, or N narrower than a tile)
        if (p.block_m == 64) CHECK((T <= 1024 || N < 128));
        const int cluster = fp4fuse::gemm::sm90::cluster_for(p, T);
        CHECK((cluster == 1 || cluster == 2));
        if (cluster == 2) CHECK((p.splits == 1 && T > p.block_m));
        // 64 x 48 only for one row block, unsplit, in one wave, and for an epilogue that takes it.
        if (p.block_n == 48) CHECK((granule == 8 && T <= 64 && p.block_m == 64 && p.splits == 1 && p.units <= sms && cluster == 1));
      }
      }
    }
  }
  // Decode-sized T fills the chip with narrow tiles or a K split; large T does not split.
  CHECK((plan(64, 4096, 7168, sms).block_n == 32 && plan(64, 4096, 7168, sms).splits == 1));  // 128 tiles, one wave
  CHECK(plan(64, 4096, 7168, sms).units >= sms / 2);
  CHECK((plan(64, 5760, 2880, sms).block_n == 64 && plan(64, 5760, 2880, sms).splits == 1));  // 90 tiles (64 x 32: 180)
  // An epilogue whose column granule divides 48 (the BF16 stores: 8, 16) gets 120 tiles of 64 x 48
  // there; NVFP4's 32 (the default) keeps 64 x 64; DeepSeek-V3's 64 x 32 (128 tiles) stays.
  for (int T : {1, 8, 37, 64}) {
    INFO("T=" << T);
    for (int granule : {8, 16}) {
      CHECK((plan(T, 5760, 2880, sms, false, granule).block_n == 48 && plan(T, 5760, 2880, sms, false, granule).splits == 1 &&
             plan(T, 5760, 2880, sms, false, granule).units == 120 && plan(T, 5760, 2880, sms, false, granule).block_m == 64));
      CHECK(plan(T, 5760, 2880, sms, true, granule).block_n == 48);
      CHECK(plan(T, 4096, 7168, sms, false, granule).block_n == 32);
    }
    CHECK(plan(T, 5760, 2880, sms, false, 32).block_n == 64);
  }
  CHECK(plan(65, 5760, 2880, sms, false, 8).block_n != 48);  // two row blocks: not measured, not chosen
  CHECK(fp4fuse::gemm::sm90::cluster_for(fp4fuse::gemm::sm90::launch_plan{48, 1, 0, 0, -1, 0, 64}, 200) == 1);
  const fp4fuse::gemm::sm90::launch_plan clustered48{48, 1, 0, 2, -1, 0, 64}, split48{48, 3, 0, 1, -1, 0, 64};
  CHECK_FALSE(fp4fuse::gemm::sm90::validate_plan(&clustered48));
  CHECK(fp4fuse::gemm::sm90::validate_plan(&split48));
  static_assert(fp4fuse::gemm::column_granule<fp4fuse::gemm::store_bf16<>> == 8);
  static_assert(fp4fuse::gemm::column_granule<fp4fuse::gemm::swiglu_bf16<act_t>> == 16);
  static_assert(fp4fuse::gemm::column_granule<fp4fuse::gemm::swiglu_nvfp4<act_t>> == 32);
  static_assert(fp4fuse::gemm::column_granule<int> == 32);  // an epilogue that states none
  CHECK(plan(64, 1024, 7168, sms).splits > 1);  // 64 x 32 would leave 100 SMs idle: split K instead
  CHECK(plan(16384, 4096, 7168, sms).splits == 1);
  CHECK(plan(16384, 4096, 7168, sms).pingpong == 1);
  // A staged BF16 store keeps the cooperative 128 x 256 over a long K (DeepSeek-V3), the ping-pong
  // over a short one (GPT-OSS).
  for (int T : {4096, 16384}) {
    INFO("T=" << T);
    CHECK((plan(T, 4096, 7168, sms, true).pingpong != 1 && plan(T, 4096, 7168, sms, true).block_n == 256));
    CHECK(plan(T, 5760, 2880, sms, true).pingpong == 1);
  }
  CHECK(plan(64, 4096, 7168, sms).block_m == 64);  // decode: no MMA rows wasted on rows beyond T
  CHECK(plan(64, 5760, 2880, sms).block_m == 64);
  // GPT-OSS T = 512: 120 tiles of 128 x 192 fill one wave (128 x 256: 92 tiles, 128 x 128: 180).
  CHECK((plan(512, 5760, 2880, sms).block_m == 128 && plan(512, 5760, 2880, sms).block_n == 192));
  // ... unclustered (its 4-stage ring: clusters of 2 measured 1.04-1.09x slower there), where
  // DeepSeek-V3's 128 x 128 tiles pair along M.
  CHECK(fp4fuse::gemm::sm90::cluster_for(plan(512, 5760, 2880, sms), 512) == 1);
  CHECK(fp4fuse::gemm::sm90::cluster_for(plan(512, 4096, 7168, sms), 512) == 2);
  CHECK(plan(512, 4096, 7168, sms).block_n == 128);  // DeepSeek-V3: 128 tiles of 128 x 128
}

TEST_CASE("dense_units: the work units of a plan, in 64 bits", "[gemm][plan]") {
  using fp4fuse::gemm::sm90::dense_units;
  using fp4fuse::gemm::sm90::launch_plan;
  // Column tiles x clusters of row tiles x K splits, the values worked by hand.
  CHECK(dense_units(launch_plan{256, 1, 0, 2, 0}, 300, 512) == 2 * 2 * 1);         // 3 row tiles in 2 clusters, 2 column tiles
  CHECK(dense_units(launch_plan{128, 4, 0, 1, 0}, 1, 1000) == 8 * 1 * 4);         // one row tile, 8 column tiles, 4 splits
  CHECK(dense_units(launch_plan{48, 1, 0, 1, 0, 0, 64}, 8, 5760) == 120);          // the decode tile: 120 column tiles
  CHECK(dense_units(launch_plan{128, 1, 0, 1, 1, 1}, 4096, 5760) == 45 * 32);     // ping-pong 128 x 128
  // Past int: 64 x 32 tiles split 16 ways over M = 2^19, N = 2^20, a shape the GEMM's own checks
  // pass; launch refuses more than 2^30 (tests/gemm/dense.cu, on a GPU).
  CHECK(dense_units(launch_plan{32, 16, 0, 1, 0, 0, 64}, 1 << 19, 1 << 20) == (std::int64_t{1} << 32));
}

TEST_CASE("x_box_rows: X's TMA box stops at M only for a lone 64-row tile without a cluster", "[gemm][plan]") {
  using fp4fuse::gemm::sm90::config;
  using fp4fuse::gemm::sm90::x_box_rows;
  for (int M : {1, 8, 37, 63}) {
    INFO("M=" << M);
    CHECK(x_box_rows<config<64, 64>, 1>(M) == M);
    CHECK(x_box_rows<config<32, 64>, 1>(M) == M);
    CHECK(x_box_rows<config<256, 64>, 1>(M) == M);
    CHECK(x_box_rows<config<64, 64>, 2>(M) == 64);  // a cluster along M: its peer's rows lie beyond M
    CHECK(x_box_rows<config<256>, 1>(M) == 128);  // 128- and 192-row tiles keep their box
    CHECK(x_box_rows<config<128, 192>, 2>(M) == 192);
  }
  for (int M : {64, 65, 100, 4096}) {
    INFO("M=" << M);
    CHECK(x_box_rows<config<64, 64>, 1>(M) == 64);
  }
  static_assert(fp4fuse::gemm::sm90::x_box_may_be_short<config<64, 64>, 1>);
  static_assert(!fp4fuse::gemm::sm90::x_box_may_be_short<config<64, 64>, 2>);
  static_assert(!fp4fuse::gemm::sm90::x_box_may_be_short<config<128>, 1>);
}

TEST_CASE("plan_grouped: the grouped plans name kernels that exist", "[gemm][plan]") {
  for (int rows : {1, 512, 4096, 32768, 262144})
    for (int experts : {1, 8, 128, 256}) CHECK(fp4fuse::gemm::sm90::valid(fp4fuse::gemm::sm90::plan_grouped(rows, experts)));
  CHECK(fp4fuse::gemm::sm90::plan_grouped(4096, 256).block_m == 64);     // DeepSeek-V3 T = 512: 16 rows per expert
  CHECK((fp4fuse::gemm::sm90::plan_grouped(32768, 256).pingpong && fp4fuse::gemm::sm90::plan_grouped(32768, 256).cluster == 2 &&
         fp4fuse::gemm::sm90::plan_grouped(32768, 256).along_n));  // T = 4096: 128 per expert, clusters along N (K not given)
  CHECK((fp4fuse::gemm::sm90::plan_grouped(262144, 256).pingpong && fp4fuse::gemm::sm90::plan_grouped(262144, 256).along_n));  // T = 32768
  // Experts of mostly 129-176 rows: 192 x 128 cooperative tiles, from 121 to 184 with a long K
  // (beyond that a uniform routing sends many experts past 192 rows: the ping-pong,
  // bench/results/engine5.md, engine20.md). The rows per expert that get the 192 x 128 tile,
  // written out (not the planner's rule again).
  const std::vector<int> short_k_192{129, 176}, long_k_192{121, 128, 129, 176, 177, 184};
  for (int k : {0, 2880, 7168})
    for (int e : {128, 256}) {
      const int rows_per_expert[] = {64, 65, 96, 120, 121, 128, 129, 176, 177, 184, 185, 192, 208, 209, 1024};
      for (int r : rows_per_expert) {
        const grouped_plan p = fp4fuse::gemm::sm90::plan_grouped(r * e, e, 4096, k);
        INFO("rows per expert " << r << ", K " << k);
        CHECK(fp4fuse::gemm::sm90::valid(p));
        const std::vector<int>& want = k == 7168 ? long_k_192 : short_k_192;
        const bool want_192 = std::find(want.begin(), want.end(), r) != want.end();
        CHECK((p.block_m == 192) == want_192);
        CHECK((p.block_m == 192) == (!p.pingpong && p.block_m != 64 && p.cluster == 2 && p.along_n));
      }
    }
  CHECK(fp4fuse::gemm::sm90::plan_grouped(32768, 256, 4096, 7168).block_m == 192);  // DeepSeek-V3 T = 4096
  CHECK(fp4fuse::gemm::sm90::plan_grouped(16384, 128, 5760, 2880).pingpong);        // GPT-OSS T = 4096
  CHECK(fp4fuse::gemm::sm90::plan_grouped(20480, 128, 5760, 2880).block_m == 192);  // GPT-OSS T = 5120
  CHECK(fp4fuse::gemm::sm90::plan_grouped(49152, 256, 4096, 7168).pingpong);         // DeepSeek-V3 T = 6144: 192 per expert
  CHECK(fp4fuse::gemm::sm90::plan_grouped(47104, 256, 4096, 7168).block_m == 192);  // DeepSeek-V3 T = 5888: 184 per expert
  CHECK(fp4fuse::gemm::sm90::plan_grouped(23552, 128, 5760, 2880).pingpong);        // GPT-OSS T = 5888: 184 per expert
  // Decode: 64 x 128 tiles where the last 256-wide column tile would be at most half full (its box
  // would read the next expert's W rows), 64 x 256 otherwise or when N is not given.
  CHECK(fp4fuse::gemm::sm90::plan_grouped(256, 128, 5760).block_n == 128);  // GPT-OSS T = 64: 2I = 5760 = 22.5 x 256
  CHECK(fp4fuse::gemm::sm90::plan_grouped(2048, 128, 5760).block_n == 128);  // GPT-OSS T = 512
  CHECK(fp4fuse::gemm::sm90::plan_grouped(512, 256, 4096).block_n == 256);   // DeepSeek-V3 T = 64: 16 full tiles
  CHECK(fp4fuse::gemm::sm90::plan_grouped(512, 256, 4096 + 192).block_n == 256);  // last tile 3/4 full: 128-wide tiles read as much
  CHECK(fp4fuse::gemm::sm90::plan_grouped(256, 128).block_n == 256);
  for (int n : {64, 128, 200, 256, 320, 5760})
    CHECK(fp4fuse::gemm::sm90::valid(fp4fuse::gemm::sm90::plan_grouped(256, 128, n)));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{64, 64, 1, false}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{128, 256, 1, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{128, 256, 3, false}));
  CHECK(fp4fuse::gemm::sm90::valid(grouped_plan{128, 128, 2, true, true}));         // ping-pong, cluster of 2 along N
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{128, 256, 2, false, true}));  // along N: the ping-pong 128 x 128 and the 192 x 128 only
  CHECK(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 2, false, true}));         // three consumer warpgroups, clusters of 2 along N
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 1, false}));         // ... only so
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 2, false}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 256, 2, false, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 2, true, true}));    // the ping-pong's tiles are 128 x 128
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{128, 128, 4, true, true}));    // clusters of 1 or 2
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{128, 128, 1, true, true}));   // along N needs a cluster of 2
  CHECK(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 1, false, false, true}));  // swap-AB: up to 192 tokens x 128 W rows
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{256, 128, 1, false, false, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 256, 1, false, false, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 2, false, false, true}));  // a cluster of 2 along N only
  CHECK(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 2, false, true, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{160, 128, 2, true, true, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 1, true, false, true}));  // no swap-AB ping-pong (removed, engine13.md)
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 128, 2, true, true, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 64, 1, true, false, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 64, 2, true, true, true}));
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{192, 64, 1, false, false, true}));  // its units are 128 W rows
  CHECK_FALSE(fp4fuse::gemm::sm90::valid(grouped_plan{160, 128, 1, false, false, true}));
}

TEST_CASE("planned_grouped_kernels: what a launch compiles by default is exactly what plan_grouped chooses", "[gemm][plan]") {
  using fp4fuse::gemm::sm90::compiles;
  using fp4fuse::gemm::sm90::experimental_kernels;
  using fp4fuse::gemm::sm90::planned_kernels;
  // Every plan over rows, experts, N and K (decode to prefill, both models' shapes, N not given)
  // names a planned kernel; and every planned kernel is chosen somewhere (none compiled for nothing).
  std::vector<fp4fuse::gemm::sm90::kernel_key> chosen;
  for (int experts : {1, 8, 32, 128, 256})
    for (int per_expert : {1, 16, 63, 64, 65, 96, 120, 121, 128, 129, 150, 176, 177, 192, 200, 1024, 4096})
      for (int n : {0, 256, 4096, 4096 + 128, 5760})
        for (int k : {0, 2880, 4096, 7168}) {
          const grouped_plan p = fp4fuse::gemm::sm90::plan_grouped(per_expert * experts, experts, n, k);
          INFO("rows " << per_expert * experts << " experts " << experts << " N " << n << " K " << k);
          CHECK(compiles<planned_kernels>(p));
          CHECK(compiles<experimental_kernels>(p));
          const auto key = p.key();
          const auto same = [&](const fp4fuse::gemm::sm90::kernel_key& c) {
            return c.block_m == key.block_m && c.block_n == key.block_n && c.cluster == key.cluster && c.along_n == key.along_n &&
                   c.pingpong == key.pingpong;
          };
          if (std::none_of(chosen.begin(), chosen.end(), same)) chosen.push_back(key);
        }
  // Each chosen shape is one planned instance (contains), distinct (chosen keeps each once): as
  // many as the list has, each of them chosen.
  for (const auto& key : chosen) CHECK(fp4fuse::gemm::sm90::planned_grouped_kernels::contains(key));
  CHECK(static_cast<int>(chosen.size()) == fp4fuse::gemm::sm90::planned_grouped_kernels::size);
  // The other grouped kernels and the swap-AB kernel only with experimental_kernels.
  for (const grouped_plan& p : {grouped_plan{64, 256, 2, false}, grouped_plan{64, 128, 2, false}, grouped_plan{128, 256, 1, false},
                                grouped_plan{128, 256, 2, false}, grouped_plan{128, 128, 1, false}, grouped_plan{128, 128, 2, false},
                                grouped_plan{128, 128, 1, true}, grouped_plan{128, 128, 2, true}, grouped_plan{192, 128, 1, false, false, true},
                                grouped_plan{192, 128, 2, false, true, true}}) {
    INFO("plan " << p.block_m << "x" << p.block_n << " cluster " << p.cluster << (p.pingpong ? " ping-pong" : "") << (p.swap_ab ? " swap-AB" : ""));
    CHECK(fp4fuse::gemm::sm90::valid(p));
    CHECK_FALSE(compiles<planned_kernels>(p));
    CHECK(compiles<experimental_kernels>(p));
  }
  CHECK_FALSE(compiles<experimental_kernels>(grouped_plan{64, 64, 1, false}));  // no kernel at all
}
