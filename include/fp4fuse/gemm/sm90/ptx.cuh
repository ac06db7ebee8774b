#pragma once
// PTX that CCCL's cuda::ptx does not wrap (or not in the form used here), for the sm_90a GEMM:
// wgmma and its fences, the shared-memory matrix descriptors, setmaxnreg, mapa and the remote
// mbarrier arrive with the default semantics (cuda::ptx's takes a generic pointer and states
// .release.cluster or .relaxed.cluster; CUTLASS's ClusterBarrier arrives as here), named barriers,
// the tensor-map prefetch; and helpers as close to the hardware: the mbarrier parity wait (a
// loop on cuda::ptx's try_wait) and the warpgroup identities the compiler keeps in uniform
// registers, from which the mainloop derives its ring positions.
#include <cuda.h>  // CUtensorMap

#include <cuda/ptx>

#include <cstdint>

#include "fp4fuse/config.cuh"

namespace fp4fuse::gemm::sm90 {
namespace detail {

/// The high word of every shared-memory descriptor used here: stride byte offset 1024 bytes (8-row
/// groups of 128-byte rows, bits 32-45) and the 128-byte swizzle (layout type 1, bits 62-63).
constexpr std::uint32_t descriptor_high = (1024 >> 4) | (1u << 30);

// The wgmma wrappers spell out each accumulator register as an asm operand (the instruction takes
// them as a list): these macros hold the operand text once, in blocks of 8 registers
// (FP4FUSE_GEMM_R8_k, FP4FUSE_GEMM_O8_k), and the first B blocks together (FP4FUSE_GEMM_REGS_B,
// FP4FUSE_GEMM_OUTS_B) for a width of N = 16 B columns.
#define FP4FUSE_GEMM_R8_0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define FP4FUSE_GEMM_R8_1 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define FP4FUSE_GEMM_R8_2 ", %16, %17, %18, %19, %20, %21, %22, %23"
#define FP4FUSE_GEMM_R8_3 ", %24, %25, %26, %27, %28, %29, %30, %31"
#define FP4FUSE_GEMM_R8_4 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define FP4FUSE_GEMM_R8_5 ", %40, %41, %42, %43, %44, %45, %46, %47"
#define FP4FUSE_GEMM_R8_6 ", %48, %49, %50, %51, %52, %53, %54, %55"
#define FP4FUSE_GEMM_R8_7 ", %56, %57, %58, %59, %60, %61, %62, %63"
#define FP4FUSE_GEMM_R8_8 ", %64, %65, %66, %67, %68, %69, %70, %71"
#define FP4FUSE_GEMM_R8_9 ", %72, %73, %74, %75, %76, %77, %78, %79"
#define FP4FUSE_GEMM_R8_10 ", %80, %81, %82, %83, %84, %85, %86, %87"
#define FP4FUSE_GEMM_R8_11 ", %88, %89, %90, %91, %92, %93, %94, %95"
#define FP4FUSE_GEMM_R8_12 ", %96, %97, %98, %99, %100, %101, %102, %103"
#define FP4FUSE_GEMM_R8_13 ", %104, %105, %106, %107, %108, %109, %110, %111"
#define FP4FUSE_GEMM_R8_14 ", %112, %113, %114, %115, %116, %117, %118, %119"
#define FP4FUSE_GEMM_R8_15 ", %120, %121, %122, %123, %124, %125, %126, %127"
#define FP4FUSE_GEMM_O8_0(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define FP4FUSE_GEMM_O8_1(d) , "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define FP4FUSE_GEMM_O8_2(d) , "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define FP4FUSE_GEMM_O8_3(d) , "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define FP4FUSE_GEMM_O8_4(d) , "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
#define FP4FUSE_GEMM_O8_5(d) , "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define FP4FUSE_GEMM_O8_6(d) , "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
#define FP4FUSE_GEMM_O8_7(d) , "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define FP4FUSE_GEMM_O8_8(d) , "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
#define FP4FUSE_GEMM_O8_9(d) , "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define FP4FUSE_GEMM_O8_10(d) , "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define FP4FUSE_GEMM_O8_11(d) , "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define FP4FUSE_GEMM_O8_12(d) , "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
#define FP4FUSE_GEMM_O8_13(d) , "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define FP4FUSE_GEMM_O8_14(d) , "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119])
#define FP4FUSE_GEMM_O8_15(d) , "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define FP4FUSE_GEMM_REGS_1 FP4FUSE_GEMM_R8_0
#define FP4FUSE_GEMM_OUTS_1(d) FP4FUSE_GEMM_O8_0(d)
#define FP4FUSE_GEMM_REGS_2 FP4FUSE_GEMM_REGS_1 FP4FUSE_GEMM_R8_1
#define FP4FUSE_GEMM_OUTS_2(d) FP4FUSE_GEMM_OUTS_1(d) FP4FUSE_GEMM_O8_1(d)
#define FP4FUSE_GEMM_REGS_3 FP4FUSE_GEMM_REGS_2 FP4FUSE_GEMM_R8_2
#define FP4FUSE_GEMM_OUTS_3(d) FP4FUSE_GEMM_OUTS_2(d) FP4FUSE_GEMM_O8_2(d)
#define FP4FUSE_GEMM_REGS_4 FP4FUSE_GEMM_REGS_3 FP4FUSE_GEMM_R8_3
#define FP4FUSE_GEMM_OUTS_4(d) FP4FUSE_GEMM_OUTS_3(d) FP4FUSE_GEMM_O8_3(d)
#define FP4FUSE_GEMM_REGS_5 FP4FUSE_GEMM_REGS_4 FP4FUSE_GEMM_R8_4
#define FP4FUSE_GEMM_OUTS_5(d) FP4FUSE_GEMM_OUTS_4(d) FP4FUSE_GEMM_O8_4(d)
#define FP4FUSE_GEMM_REGS_6 FP4FUSE_GEMM_REGS_5 FP4FUSE_GEMM_R8_5
#define FP4FUSE_GEMM_OUTS_6(d) FP4FUSE_GEMM_OUTS_5(d) FP4FUSE_GEMM_O8_5(d)
#define FP4FUSE_GEMM_REGS_7 FP4FUSE_GEMM_REGS_6 FP4FUSE_GEMM_R8_6
#define FP4FUSE_GEMM_OUTS_7(d) FP4FUSE_GEMM_OUTS_6(d) FP4FUSE_GEMM_O8_6(d)
#define FP4FUSE_GEMM_REGS_8 FP4FUSE_GEMM_REGS_7 FP4FUSE_GEMM_R8_7
#define FP4FUSE_GEMM_OUTS_8(d) FP4FUSE_GEMM_OUTS_7(d) FP4FUSE_GEMM_O8_7(d)
#define FP4FUSE_GEMM_REGS_9 FP4FUSE_GEMM_REGS_8 FP4FUSE_GEMM_R8_8
#define FP4FUSE_GEMM_OUTS_9(d) FP4FUSE_GEMM_OUTS_8(d) FP4FUSE_GEMM_O8_8(d)
#define FP4FUSE_GEMM_REGS_10 FP4FUSE_GEMM_REGS_9 FP4FUSE_GEMM_R8_9
#define FP4FUSE_GEMM_OUTS_10(d) FP4FUSE_GEMM_OUTS_9(d) FP4FUSE_GEMM_O8_9(d)
#define FP4FUSE_GEMM_REGS_11 FP4FUSE_GEMM_REGS_10 FP4FUSE_GEMM_R8_10
#define FP4FUSE_GEMM_OUTS_11(d) FP4FUSE_GEMM_OUTS_10(d) FP4FUSE_GEMM_O8_10(d)
#define FP4FUSE_GEMM_REGS_12 FP4FUSE_GEMM_REGS_11 FP4FUSE_GEMM_R8_11
#define FP4FUSE_GEMM_OUTS_12(d) FP4FUSE_GEMM_OUTS_11(d) FP4FUSE_GEMM_O8_11(d)
#define FP4FUSE_GEMM_REGS_13 FP4FUSE_GEMM_REGS_12 FP4FUSE_GEMM_R8_12
#define FP4FUSE_GEMM_OUTS_13(d) FP4FUSE_GEMM_OUTS_12(d) FP4FUSE_GEMM_O8_12(d)
#define FP4FUSE_GEMM_REGS_14 FP4FUSE_GEMM_REGS_13 FP4FUSE_GEMM_R8_13
#define FP4FUSE_GEMM_OUTS_14(d) FP4FUSE_GEMM_OUTS_13(d) FP4FUSE_GEMM_O8_13(d)
#define FP4FUSE_GEMM_REGS_15 FP4FUSE_GEMM_REGS_14 FP4FUSE_GEMM_R8_14
#define FP4FUSE_GEMM_OUTS_15(d) FP4FUSE_GEMM_OUTS_14(d) FP4FUSE_GEMM_O8_14(d)
#define FP4FUSE_GEMM_REGS_16 FP4FUSE_GEMM_REGS_15 FP4FUSE_GEMM_R8_15
#define FP4FUSE_GEMM_OUTS_16(d) FP4FUSE_GEMM_OUTS_15(d) FP4FUSE_GEMM_O8_15(d)
/// Defines wgmma_m64n<N>k16_bf16: D[64 x N] += A[64 x 16] * B[16 x N], bf16 in, f32 accumulate, A
/// and B from shared memory, given by the low words of their descriptors (descriptor_low); the
/// high word is descriptor_high. REGS / OUTS: the accumulator operands; IA, IB, IH: the operand
/// numbers of desc_a, desc_b and descriptor_high (the first three after the accumulators).
#define FP4FUSE_GEMM_DEFINE_WGMMA(N, R, REGS, OUTS, IA, IB, IH)                                                   \
  FP4FUSE_DEVICE void wgmma_m64n##N##k16_bf16(float(&d)[R], std::uint32_t desc_a, std::uint32_t desc_b) { \
    asm volatile("{\n.reg .b64 da, db;\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"                               \
                 "mov.b64 da, {%" #IA ", %" #IH "};\nmov.b64 db, {%" #IB ", %" #IH "};\n"                    \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" REGS "}, da, db, p, 1, 1, 0, 0;\n}\n" \
                 : OUTS                                                                                       \
                 : "r"(desc_a), "r"(desc_b), "r"(descriptor_high));                                          \
  }
FP4FUSE_GEMM_DEFINE_WGMMA(256, 128, FP4FUSE_GEMM_REGS_16, FP4FUSE_GEMM_OUTS_16(d), 128, 129, 130)
FP4FUSE_GEMM_DEFINE_WGMMA(192, 96, FP4FUSE_GEMM_REGS_12, FP4FUSE_GEMM_OUTS_12(d), 96, 97, 98)
FP4FUSE_GEMM_DEFINE_WGMMA(128, 64, FP4FUSE_GEMM_REGS_8, FP4FUSE_GEMM_OUTS_8(d), 64, 65, 66)
FP4FUSE_GEMM_DEFINE_WGMMA(64, 32, FP4FUSE_GEMM_REGS_4, FP4FUSE_GEMM_OUTS_4(d), 32, 33, 34)
FP4FUSE_GEMM_DEFINE_WGMMA(48, 24, FP4FUSE_GEMM_REGS_3, FP4FUSE_GEMM_OUTS_3(d), 24, 25, 26)
FP4FUSE_GEMM_DEFINE_WGMMA(32, 16, FP4FUSE_GEMM_REGS_2, FP4FUSE_GEMM_OUTS_2(d), 16, 17, 18)
FP4FUSE_GEMM_DEFINE_WGMMA(16, 8, FP4FUSE_GEMM_REGS_1, FP4FUSE_GEMM_OUTS_1(d), 8, 9, 10)
FP4FUSE_GEMM_DEFINE_WGMMA(80, 40, FP4FUSE_GEMM_REGS_5, FP4FUSE_GEMM_OUTS_5(d), 40, 41, 42)
FP4FUSE_GEMM_DEFINE_WGMMA(96, 48, FP4FUSE_GEMM_REGS_6, FP4FUSE_GEMM_OUTS_6(d), 48, 49, 50)
FP4FUSE_GEMM_DEFINE_WGMMA(112, 56, FP4FUSE_GEMM_REGS_7, FP4FUSE_GEMM_OUTS_7(d), 56, 57, 58)
FP4FUSE_GEMM_DEFINE_WGMMA(144, 72, FP4FUSE_GEMM_REGS_9, FP4FUSE_GEMM_OUTS_9(d), 72, 73, 74)
FP4FUSE_GEMM_DEFINE_WGMMA(160, 80, FP4FUSE_GEMM_REGS_10, FP4FUSE_GEMM_OUTS_10(d), 80, 81, 82)
FP4FUSE_GEMM_DEFINE_WGMMA(176, 88, FP4FUSE_GEMM_REGS_11, FP4FUSE_GEMM_OUTS_11(d), 88, 89, 90)
FP4FUSE_GEMM_DEFINE_WGMMA(208, 104, FP4FUSE_GEMM_REGS_13, FP4FUSE_GEMM_OUTS_13(d), 104, 105, 106)
FP4FUSE_GEMM_DEFINE_WGMMA(224, 112, FP4FUSE_GEMM_REGS_14, FP4FUSE_GEMM_OUTS_14(d), 112, 113, 114)
FP4FUSE_GEMM_DEFINE_WGMMA(240, 120, FP4FUSE_GEMM_REGS_15, FP4FUSE_GEMM_OUTS_15(d), 120, 121, 122)
#undef FP4FUSE_GEMM_DEFINE_WGMMA
#undef FP4FUSE_GEMM_R8_0
#undef FP4FUSE_GEMM_O8_0
#undef FP4FUSE_GEMM_R8_1
#undef FP4FUSE_GEMM_O8_1
#undef FP4FUSE_GEMM_R8_2
#undef FP4FUSE_GEMM_O8_2
#undef FP4FUSE_GEMM_R8_3
#undef FP4FUSE_GEMM_O8_3
#undef FP4FUSE_GEMM_R8_4
#undef FP4FUSE_GEMM_O8_4
#undef FP4FUSE_GEMM_R8_5
#undef FP4FUSE_GEMM_O8_5
#undef FP4FUSE_GEMM_R8_6
#undef FP4FUSE_GEMM_O8_6
#undef FP4FUSE_GEMM_R8_7
#undef FP4FUSE_GEMM_O8_7
#undef FP4FUSE_GEMM_R8_8
#undef FP4FUSE_GEMM_O8_8
#undef FP4FUSE_GEMM_R8_9
#undef FP4FUSE_GEMM_O8_9
#undef FP4FUSE_GEMM_R8_10
#undef FP4FUSE_GEMM_O8_10
#undef FP4FUSE_GEMM_R8_11
#undef FP4FUSE_GEMM_O8_11
#undef FP4FUSE_GEMM_R8_12
#undef FP4FUSE_GEMM_O8_12
#undef FP4FUSE_GEMM_R8_13
#undef FP4FUSE_GEMM_O8_13
#undef FP4FUSE_GEMM_R8_14
#undef FP4FUSE_GEMM_O8_14
#undef FP4FUSE_GEMM_R8_15
#undef FP4FUSE_GEMM_O8_15
#undef FP4FUSE_GEMM_REGS_1
#undef FP4FUSE_GEMM_OUTS_1
#undef FP4FUSE_GEMM_REGS_2
#undef FP4FUSE_GEMM_OUTS_2
#undef FP4FUSE_GEMM_REGS_3
#undef FP4FUSE_GEMM_OUTS_3
#undef FP4FUSE_GEMM_REGS_4
#undef FP4FUSE_GEMM_OUTS_4
#undef FP4FUSE_GEMM_REGS_5
#undef FP4FUSE_GEMM_OUTS_5
#undef FP4FUSE_GEMM_REGS_6
#undef FP4FUSE_GEMM_OUTS_6
#undef FP4FUSE_GEMM_REGS_7
#undef FP4FUSE_GEMM_OUTS_7
#undef FP4FUSE_GEMM_REGS_8
#undef FP4FUSE_GEMM_OUTS_8
#undef FP4FUSE_GEMM_REGS_9
#undef FP4FUSE_GEMM_OUTS_9
#undef FP4FUSE_GEMM_REGS_10
#undef FP4FUSE_GEMM_OUTS_10
#undef FP4FUSE_GEMM_REGS_11
#undef FP4FUSE_GEMM_OUTS_11
#undef FP4FUSE_GEMM_REGS_12
#undef FP4FUSE_GEMM_OUTS_12
#undef FP4FUSE_GEMM_REGS_13
#undef FP4FUSE_GEMM_OUTS_13
#undef FP4FUSE_GEMM_REGS_14
#undef FP4FUSE_GEMM_OUTS_14
#undef FP4FUSE_GEMM_REGS_15
#undef FP4FUSE_GEMM_OUTS_15
#undef FP4FUSE_GEMM_REGS_16
#undef FP4FUSE_GEMM_OUTS_16

/// D[64 x N] += A[64 x 16] * B[16 x N] for N in {48} and the multiples of 16 from 16 to 256 (the
/// swap-AB kernel's token counts).
template <int N>
FP4FUSE_DEVICE void wgmma_bf16(float (&d)[N / 2], std::uint32_t desc_a, std::uint32_t desc_b) {
  static_assert(N == 48 || (N % 16 == 0 && N >= 16 && N <= 256), "wgmma widths of this GEMM");
  if constexpr (N == 256) {
    wgmma_m64n256k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 192) {
    wgmma_m64n192k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 128) {
    wgmma_m64n128k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 64) {
    wgmma_m64n64k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 48) {
    wgmma_m64n48k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 32) {
    wgmma_m64n32k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 240) {
    wgmma_m64n240k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 224) {
    wgmma_m64n224k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 208) {
    wgmma_m64n208k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 176) {
    wgmma_m64n176k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 160) {
    wgmma_m64n160k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 144) {
    wgmma_m64n144k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 112) {
    wgmma_m64n112k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 96) {
    wgmma_m64n96k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 80) {
    wgmma_m64n80k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 16) {
    wgmma_m64n16k16_bf16(d, desc_a, desc_b);
  }
}
FP4FUSE_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
FP4FUSE_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int Pending>
FP4FUSE_DEVICE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
/// Keeps the compiler from moving accumulator reads or writes across an asynchronous wgmma.
template <int Registers>
FP4FUSE_DEVICE void fence_accumulators(float (&acc)[Registers]) {
#pragma unroll
  for (int i = 0; i < Registers; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}
template <int Count>
FP4FUSE_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Count));
}
template <int Count>
FP4FUSE_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Count));
}
/// The shared::cluster address of `smem` in the CTA of cluster rank `rank` (cuda::ptx has no mapa).
FP4FUSE_DEVICE std::uint32_t cluster_address(const void* smem, std::uint32_t rank) {
  std::uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(out)
               : "r"(static_cast<std::uint32_t>(__cvta_generic_to_shared(smem))), "r"(rank));
  return out;
}
/// Arrives on an mbarrier of any CTA of the cluster, by its shared::cluster address (`mapa`'s), with
/// the instruction's default semantics (release, CTA scope), as CUTLASS's ClusterBarrier::arrive.
FP4FUSE_DEVICE void arrive_cluster(std::uint32_t barrier) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}
/// stmatrix .x4 (cuda::ptx has no wrapper): four 8 x 8 BF16 matrices from the mma.sync C-fragment
/// layout (thread t: row t / 4, columns 2 (t % 4) and + 1 of each) to shared memory; thread t gives
/// the address of row t % 8 of matrix t / 8.
FP4FUSE_DEVICE void stmatrix_x4(std::uint32_t address, const std::uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(r[0]), "r"(r[1]), "r"(r[2]),
               "r"(r[3])
               : "memory");
}

/// Synchronises the 128 threads of one consumer warpgroup (named barrier 1 + consumer).
FP4FUSE_DEVICE void warpgroup_sync(int consumer) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + consumer) : "memory");
}

/// Synchronises the `Threads` threads of all consumer warpgroups (named barrier 4: 1 .. 3 are
/// warpgroup_sync's).
template <int Threads>
FP4FUSE_DEVICE void consumers_sync() {
  static_assert(Threads % 128 == 0, "consumers_sync: whole warpgroups");
  asm volatile("bar.sync 4, %0;\n" ::"n"(Threads) : "memory");
}

/// The low word of the shared-memory matrix descriptor of a K-major operand tile written by TMA
/// with 128-byte swizzle: start address >> 4 (bits 0-13) and a leading byte offset of 1 (bits
/// 16-29, unused by this layout); the high word is descriptor_high. Adding 2 (32 bytes >> 4) steps
/// K by 16 within the swizzle atom, adding bytes >> 4 moves to another tile of the ring: shared
/// addresses stay below 256 KiB, so these 32-bit additions never carry into the high word, and the
/// mainloop does 32-bit arithmetic only (uniform registers, no 64-bit adds).
FP4FUSE_DEVICE std::uint32_t descriptor_low(const void* tile) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
  return ((addr & 0x3FFFF) >> 4) | (1u << 16);
}

/// The calling thread's warpgroup, as a value the compiler knows is the same across the warp (a
/// shuffle from lane 0), so that what the mainloop derives from it (ring positions, descriptors)
/// lives in uniform registers instead of being recomputed per thread and moved with R2UR.
FP4FUSE_DEVICE int warpgroup_index() {
  return __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x / 128), 0);
}

/// True in one thread of a warpgroup (lane 0 of its first warp); the other three warps skip the
/// guarded code by a uniform branch instead of issuing it predicated off.
FP4FUSE_DEVICE bool warpgroup_leader() {
  const bool first_warp = __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x / 32 % 4), 0) == 0;
  return first_warp && threadIdx.x % 32 == 0;
}

/// Fetches a tensor map into the TMA unit's descriptor cache ahead of its first use (cuda::ptx has
/// no prefetch.tensormap).
FP4FUSE_DEVICE void prefetch_tensor_map(const CUtensorMap& map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(&map)) : "memory");
}

FP4FUSE_DEVICE void wait_parity(std::uint64_t* barrier, std::uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(barrier, parity)) {
  }
}

/// Waits for phase `parity` of `barrier` with acquire semantics at cluster scope: for data that
/// another CTA's thread wrote before a release arrival at that scope (grouped_schedule.cuh's unit
/// queue).
FP4FUSE_DEVICE void wait_parity_cluster(std::uint64_t* barrier, std::uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster, barrier, parity)) {
  }
}

/// Arrives on `barrier` (in this CTA's shared memory) in the CTA of cluster rank `rank`, with
/// release semantics at cluster scope; `own`: this CTA's rank (its own barrier is arrived on by
/// its shared address, without mapping it).
template <int Cluster>
FP4FUSE_DEVICE void arrive_at_rank(std::uint64_t* barrier, int rank, int own) {
  if (Cluster == 1 || rank == own) {
    cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cluster, cuda::ptx::space_shared, barrier);
  } else {
    cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cluster, cuda::ptx::space_cluster,
                               static_cast<std::uint64_t*>(__cluster_map_shared_rank(barrier, static_cast<unsigned>(rank))));
  }
}

}  // namespace detail

}  // namespace fp4fuse::gemm::sm90
