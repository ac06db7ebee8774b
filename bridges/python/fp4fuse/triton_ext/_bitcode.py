"""Which bitcode file a Triton compilation links: picked by the target's compute capability through
the shared finder `fp4fuse.bitcode` (FP4FUSE_BITCODE_DIR overrides its directory)."""
from fp4fuse import bitcode

#: The library name under which kernels give the bitcode to Triton (`extern_libs={LIB_NAME: path}`).
LIB_NAME = "fp4fuse"

#: The bitcode targets a Triton kernel can link. Triton compiles every capability >= 90 as its
#: arch-specific `a` target, so sm_90 takes the software E2M1 path (sm90a), capabilities 100-119
#: the hardware `cvt` (sm100a), 120-129 likewise (sm120a); sm_80-sm_89 take sm80 / sm90a.
TARGETS = bitcode.TARGETS


def bitcode_file(capability: int) -> str:
    """The bitcode file for compute capability `capability` (an int as Triton spells it: 90 for
    the H200, 100 for B200); ValueError / FileNotFoundError with a sentence otherwise."""
    return bitcode.bitcode_path(bitcode.target_for_arch(int(capability)))


def missing_files():
    """The bitcode files this module can link that are not present (empty when all are)."""
    missing = []
    for t in TARGETS:
        try:
            bitcode.bitcode_path(t)
        except FileNotFoundError:
            missing.append(f"fp4fuse_{t}.bc")
    return missing


def directory() -> str:
    """The directory the bitcode is read from."""
    return str(bitcode.bitcode_dir())


def lib_path() -> str:
    """The path recorded in `extern_elementwise` calls. Informational: Triton links the file that
    `extern_libs` names when the kernel is compiled, which `extern_libs()` picks per target."""
    return str(bitcode.bitcode_dir() / "fp4fuse_sm90a.bc")


def extern_libs(target=None) -> dict:
    """`extern_libs` for a launch or `triton.compile`: {"fp4fuse": path of the target's bitcode}.

    `target`: a `triton.backends.compiler.GPUTarget`, a compute capability (int, 90 = H200), or
    None for the current device. Pass it to every launch of a kernel that uses this module:

        kernel[grid](..., extern_libs=fp4fuse.triton_ext.extern_libs())

    (Without it ptxas fails with "Unresolved extern function 'fp4fuse_...'".)
    """
    if target is None:
        from triton.runtime import driver
        target = driver.active.get_current_target()
    capability = target if isinstance(target, int) else int(target.arch)
    return {LIB_NAME: bitcode_file(capability)}
