"""One CuTe DSL kernel per C ABI symbol, with a uniform per-thread data layout shared with the nvcc
reference (ref_harness.py), so that every exported function can be compiled (sm_90a, sm_100a,
no GPU) and bit-compared on the GPU.

Per symbol s and thread t (T threads):
  fsc[s, t, 0:16]        float scalar arguments, in parameter order (S included)
  usc[s, t, 0:16]        integer scalar arguments, int32 bits (uint32_t; int64_t bias_count as its value)
  fvec[s, t, k, 0:128]   the k-th `const float*` argument (x, acc, gate, up: copied into a register
                         fragment first, as a DSL epilogue holds them; bias, gate_bias, up_bias:
                         passed as global-memory pointers)
  uout[s, t, 0]          a uint32_t result, int32 bits; [1:9] packed words; [9:13] scale bytes (zero-extended)
  fout[s, t, 0]          a float result; [1] the row form's amax
Outputs not written by a symbol keep their poison, identically on both sides.
"""
import re

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64, Uint8, Uint32

from fp4fuse import cute_dsl as f4
from fp4fuse._abi import SYMBOLS

NAMES = tuple(s[0] for s in SYMBOLS)
SIGS = {n: (r, p) for n, r, p in SYMBOLS}
NF, NU, NV, VLEN, NUO, NFO = 16, 16, 4, 128, 16, 4
GMEM_INPUTS = ("bias", "gate_bias", "up_bias")


def row_out(name):
    """The output columns of a row-form symbol (`..._o16`), else None."""
    m = re.search(r"_o(\d+)$", name)
    return int(m.group(1)) if m else None


def vec_len(name, pname):
    """How many floats of the k-th vector input the symbol reads (for copying into registers)."""
    out = row_out(name)
    if out:
        return 2 * out if pname == "acc" else out
    return 32 if "mxfp4" in name else 16


def out_words(name):
    """Packed words a symbol writes: Out / 8 for the row form, 2 (NVFP4) or 4 (MXFP4) for a block."""
    if row_out(name):
        return row_out(name) // 8
    return 4 if "mxfp4" in name else 2


def out_blocks(name):
    """Scale bytes a symbol writes."""
    if row_out(name):
        return row_out(name) // (32 if "mxfp4" in name else 16)
    return 1


def _body(name, s, t, fsc, usc, fvec, uout, fout):
    # Plain Python (the DSL does not stage it): runs at trace time and emits the symbol's call.
    ret, params = SIGS[name]
    packed = cute.make_rmem_tensor(cute.make_layout(8), Uint32)
    scales = cute.make_rmem_tensor(cute.make_layout(4), Uint8)
    amax = cute.make_rmem_tensor(cute.make_layout(1), Float32)
    args = []
    fi = ui = vi = 0
    for ctype, pname in params:
        if ctype == "float":
            args.append(fsc[s, t, fi])
            fi += 1
        elif ctype == "uint32_t":
            args.append(Uint32(usc[s, t, ui]))
            ui += 1
        elif ctype == "int64_t":
            args.append(Int64(Uint32(usc[s, t, ui])))
            ui += 1
        elif ctype == "const float*":
            if pname in GMEM_INPUTS:
                args.append(fvec.iterator + cute.crd2idx((s, t, vi, 0), fvec.layout))
            else:
                n = vec_len(name, pname)
                frag = cute.make_rmem_tensor(cute.make_layout(n), Float32)
                for j in range(n):
                    frag[j] = fvec[s, t, vi, j]
                args.append(frag)
            vi += 1
        elif ctype == "uint32_t*":
            args.append(packed)
        elif ctype == "uint8_t*":
            args.append(scales)
        elif ctype == "float*":
            args.append(amax)
        else:
            raise TypeError(f"cute_harness: no rule for parameter type {ctype}")
    r = f4.FUNCTIONS[name](*args)
    if ret == "uint32_t":
        uout[s, t, 0] = Int32(r)
    elif ret == "float":
        fout[s, t, 0] = r
    has = {c for c, _ in params}
    if "uint32_t*" in has:
        for w in range(out_words(name)):
            uout[s, t, 1 + w] = Int32(packed[w])
    if "uint8_t*" in has:
        for b in range(out_blocks(name)):
            uout[s, t, 9 + b] = Int32(scales[b])
    if "float*" in has:
        fout[s, t, 1] = amax[0]


@cute.kernel
def symbol_kernel(fsc: cute.Tensor, usc: cute.Tensor, fvec: cute.Tensor, uout: cute.Tensor, fout: cute.Tensor,
                  s: cutlass.Constexpr, name: cutlass.Constexpr, threads: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    t = bidx * bdim + tidx
    if t < threads:
        _body(name, s, t, fsc, usc, fvec, uout, fout)


def make_host(names, threads, block=128):
    """A @cute.jit function launching one kernel per symbol of `names` (symbol index = position)."""

    @cute.jit
    def host(fsc: cute.Tensor, usc: cute.Tensor, fvec: cute.Tensor, uout: cute.Tensor, fout: cute.Tensor):
        for i in cutlass.range_constexpr(len(names)):
            symbol_kernel(fsc, usc, fvec, uout, fout, i, names[i], threads).launch(
                grid=[(threads + block - 1) // block, 1, 1], block=[block, 1, 1])

    return host


def fake_tensors(nsym, threads):
    mk = cute.runtime.make_fake_compact_tensor
    order3 = (2, 1, 0)
    return (mk(Float32, (nsym, threads, NF), stride_order=order3, assumed_align=16),
            mk(Int32, (nsym, threads, NU), stride_order=order3, assumed_align=16),
            mk(Float32, (nsym, threads, NV, VLEN), stride_order=(3, 2, 1, 0), assumed_align=16),
            mk(Int32, (nsym, threads, NUO), stride_order=order3, assumed_align=16),
            mk(Float32, (nsym, threads, NFO), stride_order=order3, assumed_align=16))
