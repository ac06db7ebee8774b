#!/usr/bin/env python3
"""GPU bit comparison: every exported fp4fuse symbol called from a CuTe DSL kernel (clang bitcode,
linked by the DSL) against the same C ABI compiled by nvcc (ref_harness.py), on random and
adversarial inputs (NaN, +-Inf, -0, subnormals, values past the largest codes, rounding
boundaries and their neighbours, zero / underflowing / NaN blocks). Outputs are poisoned first;
every 32-bit word of both sides is compared, including the words a symbol must not write.

    FP4FUSE_BITCODE_DIR=<build>/bridges/c_abi python3 test_cute_dsl_gpu.py [--ref ref.so] [--threads N]

A fresh seed is drawn and printed each run (FP4FUSE_SEED=<n> repeats one). SKIP (77) without a
CUDA GPU, torch, nvidia-cutlass-dsl or the bitcode.
"""
import argparse
import ctypes
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
POISON_U = 0xA5A5A5A5
POISON_F = 0x7FA5A5A5  # a NaN bit pattern no symbol produces


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


try:
    import numpy as np
except ImportError:
    skip("numpy is not installed (the comparison moves data with numpy arrays)")


def f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def special_floats(rng, n):
    """n float32: a mixture of normal data at many scales and every kind of edge case."""
    u = rng.random(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2.7, n)).astype(np.float32)

    def put(mask, vals):
        vals = np.asarray(vals, dtype=np.float32)
        v = vals[rng.integers(0, len(vals), n)] * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float32)
        x[mask] = v[mask]

    # E2M1 thresholds and codes, with their float neighbours
    b = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 7.0, 12.0], np.float32)
    bi = b.view(np.uint32)
    nb = np.concatenate([b, (bi - 1).view(np.float32), (bi + 1).view(np.float32)])
    put((u >= 0.40) & (u < 0.50), nb)
    # E4M3 / UE8M0 edges, some scaled by powers of two
    put((u >= 0.50) & (u < 0.58), [448.0, 464.0, 480.0, 2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10, 240.0,
                                   256.0, 2688.0, 2.0 ** 127, 2.0 ** -126])
    m = (u >= 0.50) & (u < 0.54)
    x[m] = x[m] * np.float32(2.0) ** rng.integers(-8, 9, n).astype(np.float32)[m]
    put((u >= 0.58) & (u < 0.63), [0.0])                                    # +-0
    put((u >= 0.63) & (u < 0.67), [np.inf])                                 # +-Inf
    x[(u >= 0.67) & (u < 0.71)] = np.nan                                    # NaN
    sub = (rng.integers(1, 0x7FFFFF, n).astype(np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << 31)).view(np.float32)
    m = (u >= 0.71) & (u < 0.76)
    x[m] = sub[m]                                                           # subnormals
    put((u >= 0.76) & (u < 0.80), [1e30, 3.4e38, 1e10, 65504.0, 1e20])      # past every largest code
    raw = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    m = (u >= 0.80) & (u < 0.90)
    x[m] = raw[m]                                                           # any bit pattern
    return x


def block_vectors(rng, rows, width):
    """rows x width block data: per row a scale over 12 decades, edge cases injected, and whole
    rows of zeros, -0, underflow, one Inf, one NaN."""
    x = (rng.standard_normal((rows, width)) * 10.0 ** rng.uniform(-6, 6, (rows, 1))).astype(np.float32)
    sp = special_floats(rng, rows * width).reshape(rows, width)
    inject = rng.random((rows, width)) < 0.03
    x[inject] = sp[inject]
    kind = rng.integers(0, 40, rows)
    x[kind == 0] = 0.0
    x[kind == 1] = -0.0
    x[kind == 2] *= np.float32(1e-38)
    x[kind == 3, 5] = np.inf
    x[kind == 4, 9] = np.nan
    x[kind == 5] *= np.float32(1e-4)
    return x


def global_scales(rng, n):
    s = (2688.0 / 10.0 ** rng.uniform(-4, 5, n)).astype(np.float32)
    k = rng.integers(0, 20, n)
    s[k == 0] = 1.0
    s[k == 1] = 3.4e38
    s[k == 2] = 1e-30
    return s


def make_inputs(rng, names, sigs, T, NF, NU, NV, VLEN):
    S = len(names)
    fsc = special_floats(rng, S * T * NF).reshape(S, T, NF)
    usc = rng.integers(0, 2 ** 32, (S, T, NU), dtype=np.uint64).astype(np.uint32)
    fvec = np.zeros((S, T, NV, VLEN), np.float32)
    for i, name in enumerate(names):
        m = re.search(r"_o(\d+)$", name)
        if name.endswith("_decode"):
            usc[i, :, 0] = (np.arange(T, dtype=np.uint32) % 256) | (usc[i, :, 0] & np.uint32(0xFFFFFF00))
        if "scale_code" in name or "multiplier" in name or name == "fp4fuse_nvfp4_global_encode_scale":
            amax = np.abs(special_floats(rng, T))
            blocky = (np.abs(rng.standard_normal(T)) * 10.0 ** rng.uniform(-8, 6, T)).astype(np.float32)
            fsc[i, :, 0] = np.where(rng.random(T) < 0.5, amax, blocky)
            fsc[i, :, 1] = global_scales(rng, T)
        if name.endswith("_quantize") or m:
            fsc[i, :, 0] = global_scales(rng, T)
        vecs = [p for c, p in sigs[name][1] if c == "const float*"]
        for k, pname in enumerate(vecs):
            if pname not in ("bias", "gate_bias", "up_bias"):
                fvec[i, :, k, :] = block_vectors(rng, T, VLEN)
        if m:
            out = int(m.group(1))
            k0 = 1 if "_i8_" in name else 2
            for k in range(k0, NV):
                fvec[i, :, k, :] = (rng.standard_normal((T, VLEN)) * 0.5).astype(np.float32)
            usc[i, :, 0] = rng.integers(0, 2 * out + 2, T)  # bias_count: no bias .. all columns
            if "clamped" in name:  # gate/up around the clamp limits
                near = rng.uniform(-9, 9, (T, VLEN)).astype(np.float32)
                pick = rng.random((T, VLEN)) < 0.3
                for k in range(k0):
                    fvec[i, :, k, :][pick] = near[pick]
        if name in ("fp4fuse_swiglu", "fp4fuse_swiglu_fast", "fp4fuse_swiglu_clamped", "fp4fuse_swiglu_clamped_fast",
                    "fp4fuse_geglu_tanh"):
            mild = (rng.standard_normal((T, 2)) * np.array([4.0, 3.0])).astype(np.float32)
            big = rng.uniform(-120, 120, (T, 2)).astype(np.float32)
            k = rng.random((T, 1))
            fsc[i, :, 0:2] = np.where(k < 0.4, mild, np.where(k < 0.55, big, fsc[i, :, 0:2]))
    return fsc, usc, fvec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default=os.environ.get("FP4FUSE_REF_SO"))
    ap.add_argument("--threads", type=int, default=4096)
    ap.add_argument("--only", default=None, help="a regular expression on the symbol names")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        skip("torch is not installed (the test allocates and compares through it)")
    if not torch.cuda.is_available():
        skip("no CUDA GPU")
    try:
        import cutlass  # noqa: F401
        import cutlass.cute as cute
    except ImportError:
        skip("nvidia-cutlass-dsl is not installed for this Python")
    from fp4fuse import bitcode

    cc = torch.cuda.get_device_capability()
    arch = f"sm_{cc[0]}{cc[1]}{'a' if cc[0] >= 9 else ''}"
    try:
        bitcode.bitcode_path(arch)
    except FileNotFoundError as e:
        skip(str(e))
    sys.path.insert(0, HERE)
    import cute_harness as h

    seed = int(os.environ.get("FP4FUSE_SEED", int.from_bytes(os.urandom(4), "little")))
    print(f"seed {seed} (FP4FUSE_SEED={seed} repeats this run); GPU {torch.cuda.get_device_name()} ({arch}); "
          f"nvidia-cutlass-dsl {cutlass.__version__}; bitcode {bitcode.bitcode_path(arch)}")
    names = [n for n in h.NAMES if not args.only or re.search(args.only, n)]
    idx = {n: i for i, n in enumerate(h.NAMES)}
    T = args.threads

    ref = args.ref
    if ref is None:
        ref = os.path.join(tempfile.mkdtemp(), "fp4fuse_ref.so")
        gencode = f"arch=compute_{cc[0]}{cc[1]}{'a' if cc[0] >= 9 else ''},code={arch}"
        t0 = time.time()
        r = subprocess.run([sys.executable, os.path.join(HERE, "ref_harness.py"), "--out", ref, "--gencode", gencode])
        if r.returncode != 0:
            print("FAIL: the nvcc reference did not build")
            return 1
        print(f"nvcc reference built in {time.time() - t0:.0f} s")
    lib = ctypes.CDLL(ref)
    lib.fp4fuse_ref_launch.restype = ctypes.c_int
    lib.fp4fuse_ref_launch.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int, ctypes.c_int]

    rng = np.random.default_rng(seed)
    t0 = time.time()
    with np.errstate(over="ignore", invalid="ignore"):  # Inf and NaN inputs are made on purpose
        fsc, usc, fvec = make_inputs(rng, list(h.NAMES), h.SIGS, T, h.NF, h.NU, h.NV, h.VLEN)
    dev = torch.device("cuda")
    fsc = torch.from_numpy(fsc).to(dev)
    usc = torch.from_numpy(usc.view(np.int32)).to(dev)
    fvec = torch.from_numpy(fvec).to(dev)
    print(f"inputs generated in {time.time() - t0:.0f} s")
    S = len(h.NAMES)

    def poisoned():
        uo = torch.full((S, T, h.NUO), POISON_U - 2 ** 32, dtype=torch.int32, device=dev)
        fo = torch.full((S, T, h.NFO), POISON_F, dtype=torch.int32, device=dev)
        return uo, fo

    # nvcc side
    uo_ref, fo_ref = poisoned()
    for n in names:
        err = lib.fp4fuse_ref_launch(idx[n], fsc.data_ptr(), usc.data_ptr(), fvec.data_ptr(), uo_ref.data_ptr(),
                                     fo_ref.data_ptr(), S, T)
        if err != 0:
            print(f"FAIL: reference launch of {n}: cudaError {err}")
            return 1
    torch.cuda.synchronize()

    # DSL side: one kernel per symbol at the symbol's index
    uo_dsl, fo_dsl = poisoned()
    from cutlass.cute.runtime import from_dlpack

    @cute.jit
    def host(fsc_t: cute.Tensor, usc_t: cute.Tensor, fvec_t: cute.Tensor, uo_t: cute.Tensor, fo_t: cute.Tensor):
        for j in cutlass.range_constexpr(len(names)):
            h.symbol_kernel(fsc_t, usc_t, fvec_t, uo_t, fo_t, idx[names[j]], names[j], T).launch(
                grid=[(T + 127) // 128, 1, 1], block=[128, 1, 1])

    t0 = time.time()
    targs = [from_dlpack(x) for x in (fsc, usc, fvec, uo_dsl, fo_dsl.view(torch.float32))]
    compiled = cute.compile(host, *targs)
    print(f"DSL: {len(names)} kernels compiled in {time.time() - t0:.0f} s")
    compiled(*targs)
    torch.cuda.synchronize()

    failures = 0
    checked = 0
    rows = []
    for n in names:
        i = idx[n]
        du = (uo_dsl[i] != uo_ref[i]).sum().item()
        df = (fo_dsl[i] != fo_ref[i]).sum().item()
        ret, params = h.SIGS[n]
        kinds = {c for c, _ in params}
        slots_u = ([0] if ret == "uint32_t" else []) + (list(range(1, 1 + h.out_words(n))) if "uint32_t*" in kinds else []) + \
                  (list(range(9, 9 + h.out_blocks(n))) if "uint8_t*" in kinds else [])
        slots_f = ([0] if ret == "float" else []) + ([1] if "float*" in kinds else [])
        # written words must be written (scale bytes and amax can never equal the poison), the
        # others must keep the poison on both sides
        unwritten_ok = True
        for side_u, side_f in ((uo_ref[i], fo_ref[i]), (uo_dsl[i], fo_dsl[i])):
            other_u = [k for k in range(h.NUO) if k not in slots_u]
            other_f = [k for k in range(h.NFO) if k not in slots_f]
            if other_u and not bool((side_u[:, other_u] == POISON_U - 2 ** 32).all()):
                unwritten_ok = False
            if other_f and not bool((side_f[:, other_f] == POISON_F).all()):
                unwritten_ok = False
            for k in slots_u:
                if k >= 9 and bool((side_u[:, k] == POISON_U - 2 ** 32).any()):
                    unwritten_ok = False
            for k in slots_f:
                if k == 1 and bool((side_f[:, k] == POISON_F).any()):
                    unwritten_ok = False
        checked += T * (len(slots_u) + len(slots_f))
        bad = du + df
        if bad or not unwritten_ok:
            failures += 1
            j = int(((uo_dsl[i] != uo_ref[i]).any(1) | (fo_dsl[i] != fo_ref[i]).any(1)).nonzero()[0].item()) if bad else 0
            print(f"FAIL: {n}: {du} uint32 and {df} float words differ, writes {'ok' if unwritten_ok else 'WRONG'}; "
                  f"first thread {j}: inputs f={fsc[i, j, :4].tolist()} u={usc[i, j, :2].tolist()} "
                  f"v0={fvec[i, j, 0, :8].tolist()}; nvcc u={[hex(v & 0xFFFFFFFF) for v in uo_ref[i, j, :13].tolist()]} "
                  f"f={[hex(v & 0xFFFFFFFF) for v in fo_ref[i, j, :2].tolist()]}; dsl u={[hex(v & 0xFFFFFFFF) for v in uo_dsl[i, j, :13].tolist()]} "
                  f"f={[hex(v & 0xFFFFFFFF) for v in fo_dsl[i, j, :2].tolist()]}")
        rows.append((n, len(slots_u) + len(slots_f), bad))
    nan_in = int(torch.isnan(fvec).sum().item() + torch.isnan(fsc).sum().item())
    print(f"{len(names)} symbols x {T} threads: {checked} output words compared bit for bit "
          f"({nan_in} NaN inputs among {fvec.numel() + fsc.numel()} floats); {failures} symbol(s) differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
