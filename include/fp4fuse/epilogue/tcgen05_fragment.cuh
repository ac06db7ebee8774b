#pragma once
/// \file epilogue/tcgen05_fragment.cuh
/// Where each register of `tcgen05.ld.sync.aligned.32x32b.xN.b32` sits (Blackwell, sm_100a): the
/// row-per-thread form. A warp may access only TMEM lanes 32 * (warp % 4) .. 32 * (warp % 4) + 31
/// (PTX ISA, "tcgen05 data-path layout"), and with the 32x32b shape thread `lane` of the warp gets
/// TMEM lane (= accumulator row) 32 * (warp % 4) + lane, and `.xN` gives it N consecutive 32-bit
/// columns starting at the address's column:
/// \verbatim
///   row(t, r) = t            (t = 0..127: thread of the warpgroup, 32 * (warp % 4) + lane)
///   col(t, r) = r            (r = 0..N-1: register, column of the load's first column + r)
/// \endverbatim
/// So one thread holds N consecutive fp32 gate/up columns of one row: with `gate_up::interleaved<8>`,
/// 32 registers are 16 output columns, one whole NVFP4 block, and 64 registers one MXFP4 block, with
/// no data exchanged between threads (`row_epilogue`, epilogue/row.cuh). It is a layout, not an
/// instruction: any source that leaves a thread consecutive columns of one row (a CuTe
/// `partition_C` of a tcgen05 MMA copied with `SM100_TMEM_LOAD_32dp32b<N>x`, or a row read from
/// shared memory) uses the same form.
#include "fp4fuse/config.cuh"

namespace fp4fuse {

/// The register-to-element map of one `tcgen05.ld` 32x32b.xN load of f32 accumulators, for a
/// warpgroup's 128 x N slice of the accumulator (`N` = 1..128 registers per thread).
/// \code
/// using frag = fp4fuse::tcgen05_32x32b_fragment<32>;
/// static_assert(frag::row(37, 5) == 37 && frag::col(37, 5) == 5 && frag::registers == 32);
/// \endcode
template <int N>
struct tcgen05_32x32b_fragment {
  static_assert(N >= 1 && N <= 128 && (N & (N - 1)) == 0, "tcgen05.ld 32x32b.xN: N is a power of two, 1..128");
  /// Rows of the slice: 128 TMEM lanes, 32 per warp of the warpgroup.
  static constexpr int rows = 128;
  /// Columns of the slice.
  static constexpr int cols = N;
  /// Registers per thread.
  static constexpr int registers = N;
  /// Row of register `reg` of thread `thread` (0..127 within the warpgroup, 32 * (warp % 4) + lane).
  /// \code
  /// static_assert(fp4fuse::tcgen05_32x32b_fragment<64>::row(100, 63) == 100);  // a thread's registers are all of its row
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr int row(int thread, int /*reg*/) { return thread; }
  /// Column of register `reg` (0..N-1) of any thread.
  /// \code
  /// static_assert(fp4fuse::tcgen05_32x32b_fragment<64>::col(100, 63) == 63);
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr int col(int /*thread*/, int reg) { return reg; }
  /// The calling thread's row within the warpgroup's slice: 32 * (warp % 4) + lane, the TMEM lane its
  /// 32x32b load reads (the warp's linear index in the block, as `tcgen05.ld` sees it).
  /// \code
  /// __device__ std::int64_t my_row(std::int64_t m0) { return m0 + fp4fuse::tcgen05_32x32b_fragment<32>::thread_row(); }  // the GEMM row of its registers
  /// \endcode
  FP4FUSE_DEVICE static int thread_row() {
    const unsigned linear_thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    return static_cast<int>(linear_thread % 128);
  }
};

}  // namespace fp4fuse
