"""Which Triton releases this module was tested with, and the check made at import."""
import os

#: Triton releases whose code generation this module was compiled and run with (PTX checked in CI,
#: bits compared with the C++ library on an H200). Another release may lower `extern_elementwise`
#: or link bitcode differently, so the import refuses it unless FP4FUSE_TRITON_UNTESTED=1.
TESTED_TRITON_VERSIONS = ("3.6.0",)


def check_triton_version(version: str) -> None:
    """Raises ImportError with a sentence when `version` is not a tested Triton release."""
    base = version.split("+")[0]
    if base in TESTED_TRITON_VERSIONS or os.environ.get("FP4FUSE_TRITON_UNTESTED") == "1":
        return
    raise ImportError(
        f"fp4fuse.triton_ext was tested with Triton {', '.join(TESTED_TRITON_VERSIONS)}, not {version}: "
        f"install triton=={TESTED_TRITON_VERSIONS[-1]}, or set FP4FUSE_TRITON_UNTESTED=1 to try this one "
        f"(then run the module's tests: tests/bridges/triton/)")
