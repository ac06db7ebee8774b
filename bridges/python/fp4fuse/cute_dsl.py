"""fp4fuse's device functions in CuTe DSL kernels (`nvidia-cutlass-dsl`), through LLVM bitcode.

Every C ABI symbol of bridges/c_abi/fp4fuse_c.h is declared with `cute.extern` (a typed stub per
symbol and bitcode target) and exposed here under its name without the `fp4fuse_` prefix. Each call
picks the bitcode of the kernel's compile target (`CUTE_DSL_ARCH` or the GPU): the software E2M1
path for sm_80..sm_90a, the hardware `cvt` for sm_100a/f and sm_120a/f (see `fp4fuse.bitcode`). The
DSL links the file and inlines the call: no `call` is left in the PTX.

    import cutlass, cutlass.cute as cute
    from fp4fuse import cute_dsl as f4

    @cute.kernel
    def k(x: cute.Tensor, out: cute.Tensor):
        v = x[cute.arch.thread_idx()[0]]
        out[cute.arch.thread_idx()[0]] = f4.e2m1x8(v, v, v, v, v, v, v, v)   # packed word, Uint32

Pointers (packed words, scale bytes, fp32 inputs) may be given as a cute.Tensor (a register
fragment or a slice of global/shared memory: its base is used), a cute Pointer, or an `!llvm.ptr`
value. Scalars: Float32 / Uint32 / Int64 (Python numbers and the other integer widths are converted).

Supported DSL versions: SUPPORTED_DSL below; importing this module with another version fails
with a sentence (set FP4FUSE_CUTE_DSL_ANY_VERSION=1 to try anyway).
"""
import inspect
import os
import re

from . import bitcode as _bitcode
from ._abi import SYMBOLS as _SYMBOLS

#: nvidia-cutlass-dsl versions this module supports: (oldest, newest) inclusive, and the releases
#: tested (4.8.1: CI compile of every symbol and the H200 run; 4.7.1: the compile test only).
SUPPORTED_DSL = ((4, 7, 1), (4, 8, 99))
TESTED_DSL = ("4.7.1", "4.8.1")


def _dsl_version():
    import cutlass

    v = getattr(cutlass, "__version__", None)
    if v is None:
        try:
            from importlib.metadata import version

            v = version("nvidia-cutlass-dsl")
        except Exception:  # pragma: no cover
            v = "0"
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", v)
    return v, tuple(int(g or 0) for g in m.groups()) if m else (0, 0, 0)


try:
    import cutlass
    import cutlass.cute as cute
    from cutlass import Float32, Int64, Uint32
    from cutlass._mlir import ir
    from cutlass._mlir.dialects import llvm as _llvm
except ImportError as e:  # pragma: no cover
    raise ImportError(f"fp4fuse.cute_dsl needs nvidia-cutlass-dsl ({'/'.join(TESTED_DSL)} tested): {e}") from e

DSL_VERSION, _v = _dsl_version()
if not (SUPPORTED_DSL[0] <= _v <= SUPPORTED_DSL[1]) and not os.environ.get("FP4FUSE_CUTE_DSL_ANY_VERSION"):
    raise ImportError(
        f"fp4fuse.cute_dsl supports nvidia-cutlass-dsl {'.'.join(map(str, SUPPORTED_DSL[0]))} to "
        f"{SUPPORTED_DSL[1][0]}.{SUPPORTED_DSL[1][1]}.x (tested: {', '.join(TESTED_DSL)}); this is {DSL_VERSION}. "
        f"Install a supported release (pip install 'nvidia-cutlass-dsl>=4.7.1,<4.9') or set "
        f"FP4FUSE_CUTE_DSL_ANY_VERSION=1 to try this one")


class _GenericPtr:
    """`!llvm.ptr` (address space 0): the type of every pointer parameter of the C ABI."""

    @staticmethod
    def mlir_type():
        return ir.Type.parse("!llvm.ptr")

    @staticmethod
    def __get_mlir_types__():
        return [_GenericPtr.mlir_type()]

    @staticmethod
    def isinstance(x):
        return isinstance(x, ir.Value) and x.type == _GenericPtr.mlir_type()


_CTYPES = {"float": Float32, "uint32_t": Uint32, "int64_t": Int64}


def _annotation(ctype):
    if ctype.endswith("*"):
        return _GenericPtr
    return _CTYPES[ctype]


def _target_now():
    """The bitcode target of the kernel being compiled (from the DSL's compile arch)."""
    from cutlass.base_dsl import BaseDSL

    arch = str(BaseDSL._get_dsl().get_arch_enum())
    return arch, _bitcode.target_for_arch(arch)


_forced_target = None


def force_target(target):
    """Pin the bitcode target (one of fp4fuse.bitcode.TARGETS) instead of following the compile
    arch; None restores the default. A pinned hardware target that the compile arch cannot run
    still fails with a sentence at the first call."""
    global _forced_target
    if target is not None and target not in _bitcode.TARGETS:
        raise ValueError(f"fp4fuse.cute_dsl.force_target: target must be one of {_bitcode.TARGETS} or None, got {target!r}")
    _forced_target = target


_handlers = {}


def _handler(name, target):
    key = (name, target)
    h = _handlers.get(key)
    if h is None:
        ret, params = _SIGS[name]
        path = _bitcode.bitcode_path(target)  # FileNotFoundError with a sentence if missing

        def stub(*args):  # the typed stub: its signature is the C prototype
            ...

        stub.__name__ = stub.__qualname__ = name
        stub.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=_annotation(t)) for t, p in params],
            return_annotation=(inspect.Signature.empty if ret == "void" else _annotation(ret)))
        h = cute.extern(stub, name=name, source=cute.BitCode(path))
        _handlers[key] = h
    return h


def _select_target(name):
    arch, natural = _target_now()
    target = _forced_target or natural
    if _bitcode.uses_hardware_fp4(target) and not _bitcode.uses_hardware_fp4(natural):
        raise RuntimeError(
            f"fp4fuse.cute_dsl.{name[len('fp4fuse_'):]}: the {target} bitcode (hardware E2M1 cvt) cannot run on the "
            f"compile target {arch}; use the {natural} bitcode (force_target(None)) or compile for sm_100a/sm_120a")
    if target == "sm90a" and natural == "sm80":
        raise RuntimeError(
            f"fp4fuse.cute_dsl.{name[len('fp4fuse_'):]}: the sm90a bitcode uses the E4M3 cvt of sm_89+, not available "
            f"on the compile target {arch}; use force_target(None)")
    return target


def _to_ptr(x):
    """A C ABI pointer argument from a cute.Tensor, a cute Pointer or an !llvm.ptr value."""
    if hasattr(x, "iterator") and not hasattr(x, "to_llvm_ptr"):
        x = x.iterator
    if hasattr(x, "to_llvm_ptr"):
        x = x.to_llvm_ptr()
    if not isinstance(x, ir.Value) or not isinstance(x.type, _llvm.PointerType):
        raise TypeError(f"fp4fuse.cute_dsl: a pointer argument must be a cute.Tensor, a cute Pointer or an !llvm.ptr, got {type(x).__name__}")
    if x.type != _GenericPtr.mlir_type():
        x = _llvm.addrspacecast(_GenericPtr.mlir_type(), x)
    return x


def _elements_needed(name, pname):
    """How many elements the symbol reads or writes through pointer `pname` (None: not fixed, a
    bias array in global memory, read below bias_count)."""
    block = 32 if "_mxfp4_" in name else 16
    m = re.search(r"_o(\d+)$", name)
    if m:  # the row form
        out = int(m.group(1))
        return {"acc": 2 * out, "gate": out, "up": out, "packed": out // 8, "scales": out // block, "amax": 1}.get(pname)
    return {"x": block, "packed": block // 8, "scale": 1, "scales": 1, "amax": 1}.get(pname)


def _check_tensor(name, ctype, pname, x):
    """A cute.Tensor passed for pointer `pname`: a `float*` parameter's tensor must hold Float32
    (the symbol computes with the values); a `uint32_t*` or `uint8_t*` one may hold any element
    type (packed words or scale bytes typed Int32, Uint8, Float8E4M3FN, Float4E2M1FN, ...: only
    the bits count). Where its size is static it must hold the bits the symbol reads or writes.
    Raises at trace time: the symbol would otherwise read or write past the fragment (undefined
    in registers) or compute with misread values, silently."""
    et = getattr(x, "element_type", None)
    if et is None:
        return  # a Pointer or an !llvm.ptr: nothing to check
    base = ctype.replace("const ", "").rstrip("*").strip()
    short = name[len("fp4fuse_"):]
    width = getattr(et, "width", None)
    if base == "float" and (width != 32 or not getattr(et, "is_float", False)):
        raise TypeError(f"fp4fuse.cute_dsl.{short}: {pname} points to float, so its tensor must hold Float32, not {et}")
    need = _elements_needed(name, pname)
    if need is None or not isinstance(width, int):
        return
    try:
        have = cute.size(x)
    except Exception:  # pragma: no cover: a layout the DSL cannot size here
        return
    base_bits = {"float": 32, "uint32_t": 32, "uint8_t": 8}[base]
    if isinstance(have, int) and have * width < need * base_bits:
        raise ValueError(f"fp4fuse.cute_dsl.{short}: {pname} must hold at least {need} {base} values ({need * base_bits} bits), "
                         f"this tensor has {have} x {width} bits")


def _scalar(ctype, v):
    t = _CTYPES[ctype]
    if isinstance(v, t):
        return v
    return t(v)  # Python numbers; Uint8/Int32/... values are converted (zero/sign extension as the DSL does)


def _make(name):
    ret, params = _SIGS[name]
    short = name[len("fp4fuse_"):]

    def call(*args):
        if len(args) != len(params):
            raise TypeError(f"fp4fuse.cute_dsl.{short} takes {len(params)} arguments ({', '.join(p for _, p in params)}), got {len(args)}")
        for (t, p), a in zip(params, args):
            if t.endswith("*"):
                _check_tensor(name, t, p, a)
        conv = [(_to_ptr(a) if t.endswith("*") else _scalar(t, a)) for (t, _), a in zip(params, args)]
        r = _handler(name, _select_target(name))(*conv)
        if ret == "void":
            return None
        return _CTYPES[ret](r)

    call.__name__ = call.__qualname__ = short
    call.__doc__ = (f"`{ret} {name}({', '.join(t + ' ' + p for t, p in params)})` of fp4fuse_c.h, "
                    f"linked from the bitcode of the compile target.")
    return call


_SIGS = {name: (ret, params) for name, ret, params in _SYMBOLS}
#: Every exported function, by its C name.
FUNCTIONS = {name: _make(name) for name in _SIGS}
globals().update({name[len("fp4fuse_"):]: f for name, f in FUNCTIONS.items()})


# ---- conveniences over the flat symbols ---------------------------------------------------------
_NV_RECIPES = ("te_exact", "vllm")
_MX_RECIPES = ("mx_ocp", "mx_round_up")
_ACTS = ("swiglu", "swiglu_fast", "swiglu_clamped", "swiglu_clamped_fast")


def quantize_block(x, packed, scale, *, recipe="te_exact", S=None):
    """One block: NVFP4 (recipe te_exact/vllm, 16 fp32 at `x` -> 2 words, needs S) or MXFP4
    (mx_ocp/mx_round_up, 32 fp32 -> 4 words). `block_codec<F>(S).quantize(x)`."""
    if recipe in _NV_RECIPES:
        if S is None:
            raise TypeError(f"fp4fuse.cute_dsl.quantize_block: recipe {recipe!r} is NVFP4 and needs S (the global encode scale)")
        return FUNCTIONS[f"fp4fuse_nvfp4_{recipe}_quantize"](x, S, packed, scale)
    if recipe in _MX_RECIPES:
        if S is not None:
            raise TypeError(f"fp4fuse.cute_dsl.quantize_block: recipe {recipe!r} is MXFP4, which has no global scale; pass S=None")
        return FUNCTIONS[f"fp4fuse_mxfp4_{recipe}_quantize"](x, packed, scale)
    raise ValueError(f"fp4fuse.cute_dsl.quantize_block: recipe must be one of {_NV_RECIPES + _MX_RECIPES}, got {recipe!r}")


def swiglu_quantize_row(gate_up, packed, scales, amax, *, out, up=None, activation="swiglu", recipe="te_exact", S=None,
                        bias=None, up_bias=None, bias_count=None):
    """The fused row form (`fp4fuse::row_epilogue` with `sink::hand_back`): `out` output columns (NVFP4: 16 or 32,
    MXFP4: 32 or 64) from one thread's gate/up values -> whole quantized blocks and the amax partial.
    `up=None`: `gate_up` holds 2*out values interleaved by 8; else `gate_up` is the gate and `up` the
    up values (out each). Bias pointers are optional (None: no bias); a bias needs `bias_count` (its
    values are read below bias_count only: fp4fuse_c.h), and `up_bias` needs `up`."""
    if activation not in _ACTS:
        raise ValueError(f"fp4fuse.cute_dsl.swiglu_quantize_row: activation must be one of {_ACTS}, got {activation!r}")
    fmt = "nvfp4" if recipe in _NV_RECIPES else "mxfp4" if recipe in _MX_RECIPES else None
    if fmt is None:
        raise ValueError(f"fp4fuse.cute_dsl.swiglu_quantize_row: recipe must be one of {_NV_RECIPES + _MX_RECIPES}, got {recipe!r}")
    if (fmt == "nvfp4") != (S is not None):
        raise TypeError(f"fp4fuse.cute_dsl.swiglu_quantize_row: S is {'required' if fmt == 'nvfp4' else 'not taken'} for {fmt}")
    if up is None and up_bias is not None:
        raise TypeError("fp4fuse.cute_dsl.swiglu_quantize_row: up_bias is for separate gate and up arrays (pass up=...); "
                        "with gate/up interleaved in gate_up, `bias` holds both halves")
    if bias is None and up_bias is None:
        bias_count = 0 if bias_count is None else bias_count
    elif bias_count is None:
        raise ValueError("fp4fuse.cute_dsl.swiglu_quantize_row: a bias is given without bias_count, so no bias value would be read; "
                         "pass bias_count (how many bias values from the segment's first column lie inside the matrix)")
    layout = "i8" if up is None else "sep"
    name = f"fp4fuse_row_{activation}_{fmt}_{recipe}_{layout}_o{out}"
    if name not in FUNCTIONS:
        widths = "16 or 32" if fmt == "nvfp4" else "32 or 64"
        raise ValueError(f"fp4fuse.cute_dsl.swiglu_quantize_row: out must be {widths} for {fmt}, got {out!r}")
    null = _null_ptr()
    b = null if bias is None else bias
    s = () if S is None else (S,)
    if up is None:
        return FUNCTIONS[name](gate_up, b, bias_count, *s, packed, scales, amax)
    ub = null if up_bias is None else up_bias
    return FUNCTIONS[name](gate_up, up, b, ub, bias_count, *s, packed, scales, amax)


def _null_ptr():
    return _llvm.mlir_zero(_GenericPtr.mlir_type())


__all__ = ["FUNCTIONS", "SUPPORTED_DSL", "TESTED_DSL", "DSL_VERSION", "force_target", "quantize_block",
           "swiglu_quantize_row"] + [n[len("fp4fuse_"):] for n in _SIGS]
