"""Finds fp4fuse's LLVM bitcode files (the C ABI of bridges/c_abi/fp4fuse_c.h).

One file per target family, the same symbols in each:

| file | E2M1 / UE8M0 path | E4M3 path | for |
|---|---|---|---|
| `fp4fuse_sm80.bc`  | software | software | sm_80, sm_86, sm_87 |
| `fp4fuse_sm90a.bc` | software | `cvt` (sm_89+) | sm_89, sm_90, sm_90a, and plain sm_100/sm_120 (no `a`/`f`) |
| `fp4fuse_sm100a.bc` | hardware `cvt` | `cvt` | sm_100a/f, sm_103a/f, sm_110a/f |
| `fp4fuse_sm120a.bc` | hardware `cvt` | `cvt` | sm_120a/f, sm_121a/f |

Where: the directory in `FP4FUSE_BITCODE_DIR` if set, else this package's own directory (files
copied here before `pip install`). Build them with `meson compile -C <build> fp4fuse_bitcode`
(needs clang with CUDA support); they land in `<build>/bridges/c_abi/`.

    >>> from fp4fuse import bitcode
    >>> bitcode.target_for_arch("sm_90a"), bitcode.target_for_arch(100)
    ('sm90a', 'sm100a')
    >>> path = bitcode.bitcode_path("sm_90a")   # raises FileNotFoundError with a sentence if absent
"""
import os
import re
from pathlib import Path

from .._abi import SYMBOLS

__all__ = ["TARGETS", "ENV_VAR", "target_for_arch", "bitcode_dir", "bitcode_path", "symbols", "uses_hardware_fp4"]

#: The bitcode targets, in the order of the table above.
TARGETS = ("sm80", "sm90a", "sm100a", "sm120a")
#: The environment variable that overrides the bitcode directory.
ENV_VAR = "FP4FUSE_BITCODE_DIR"

_ARCH = re.compile(r"^(?:sm_?|compute_?)?(\d+)([af]?)$")


def target_for_arch(arch):
    """The bitcode target for a GPU architecture.

    `arch`: a string such as "sm_90a", "sm_100f", "sm90a", "compute_120a", or an integer compute
    capability as Triton spells it (90, 100, 120: taken as the arch-specific target, which is what
    Triton compiles for). The E2M1 hardware path needs a family- or arch-specific target of compute
    capability 10.0+; plain "sm_100" or "sm_120" get the software bitcode.
    """
    if isinstance(arch, int):
        cc, suffix = arch, ("a" if arch >= 90 else "")
    else:
        m = _ARCH.match(str(arch).strip().lower())
        if not m:
            raise ValueError(f"fp4fuse.bitcode: arch must look like 'sm_90a', 'sm_100a' or 90/100, got {arch!r}")
        cc, suffix = int(m.group(1)), m.group(2)
    if cc < 80:
        raise ValueError(f"fp4fuse.bitcode: arch {arch!r} is below sm_80; the fp4fuse bitcode needs sm_80 or newer")
    if cc < 89:
        return "sm80"
    if cc < 100 or not suffix:
        return "sm90a"
    if cc < 120:
        return "sm100a"
    if cc < 130:
        return "sm120a"
    raise ValueError(f"fp4fuse.bitcode: arch {arch!r} is newer than the targets fp4fuse's bitcode was built for (up to sm_12x)")


def uses_hardware_fp4(target):
    """True for the bitcode targets whose E2M1/UE8M0 conversions are the hardware `cvt`."""
    return target in ("sm100a", "sm120a")


def bitcode_dir():
    """The directory the bitcode is read from: `$FP4FUSE_BITCODE_DIR`, else this package's directory."""
    env = os.environ.get(ENV_VAR)
    if env:
        d = Path(env).expanduser()
        if not d.is_dir():
            raise FileNotFoundError(f"fp4fuse.bitcode: {ENV_VAR}={env!r} is not a directory")
        return d
    return Path(__file__).resolve().parent


def bitcode_path(arch="sm_90a"):
    """The absolute path of the bitcode file for `arch` (see `target_for_arch`); raises
    FileNotFoundError with a sentence naming the file and how to build it when it is missing."""
    target = arch if arch in TARGETS else target_for_arch(arch)
    d = bitcode_dir()
    p = d / f"fp4fuse_{target}.bc"
    if not p.is_file():
        where = f"{ENV_VAR}={os.environ[ENV_VAR]!r}" if os.environ.get(ENV_VAR) else f"the package directory {d}"
        raise FileNotFoundError(
            f"fp4fuse.bitcode: {p.name} (for {arch}) is not in {where}; build it with "
            f"`meson compile -C <build> fp4fuse_bitcode` (needs clang with CUDA support) and set "
            f"{ENV_VAR}=<build>/bridges/c_abi")
    return str(p)


def symbols():
    """The names of every function the bitcode exports (the C ABI of fp4fuse_c.h), in header order."""
    return tuple(s[0] for s in SYMBOLS)
