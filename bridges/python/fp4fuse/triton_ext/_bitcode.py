"""Which bitcode file a Triton compilation links: picked by the target's compute capability."""
import os

#: The library name under which kernels give the bitcode to Triton (`extern_libs={LIB_NAME: path}`).
LIB_NAME = "fp4fuse"

#: (lowest capability, highest capability, file): sm_80..sm_90a take the software E2M1 path;
#: sm_100a/103a/110a and sm_120a/121a (Triton compiles every capability >= 90 as its `a` target)
#: take the hardware `cvt` path.
_TARGETS = (
    (80, 99, "fp4fuse_sm90a.bc"),
    (100, 119, "fp4fuse_sm100a.bc"),
    (120, 129, "fp4fuse_sm120a.bc"),
)


def _directory() -> str:
    from fp4fuse import bitcode  # the shared finder (FP4FUSE_BITCODE_DIR overrides)
    return bitcode.directory()


def bitcode_file(capability: int) -> str:
    """The bitcode file for compute capability `capability` (e.g. 90 for the H200)."""
    for lo, hi, name in _TARGETS:
        if lo <= capability <= hi:
            path = os.path.join(_directory(), name)
            if not os.path.isfile(path):
                raise FileNotFoundError(
                    f"fp4fuse.triton_ext: the bitcode {name} for sm_{capability} is not at {path}: build it "
                    f"(meson compile -C build {name}) or point FP4FUSE_BITCODE_DIR at a directory holding it")
            return path
    raise ValueError(f"fp4fuse.triton_ext: no fp4fuse bitcode for compute capability {capability}; "
                     f"supported: sm_80 to sm_90a (software E2M1), sm_100a to sm_121a (hardware cvt)")


def missing_files():
    """The bitcode files of the target table that are not present (empty when all are)."""
    d = _directory()
    return [name for _, _, name in _TARGETS if not os.path.isfile(os.path.join(d, name))]


def lib_path() -> str:
    """The path recorded in `extern_elementwise` calls (informational: Triton links what
    `extern_libs` names at compile time)."""
    return os.path.join(_directory(), _TARGETS[0][2])


def extern_libs(target=None) -> dict:
    """`extern_libs` for a launch or `triton.compile`: {"fp4fuse": path of the target's bitcode}.

    `target`: a `triton.backends.compiler.GPUTarget`, a compute capability (int, 90 = H200), or
    None for the current device. Pass it to every launch of a kernel that uses this module:

        kernel[grid](..., extern_libs=fp4fuse.triton_ext.extern_libs())
    """
    if target is None:
        from triton.runtime import driver
        target = driver.active.get_current_target()
    capability = target if isinstance(target, int) else int(target.arch)
    return {LIB_NAME: bitcode_file(capability)}
