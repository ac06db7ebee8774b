"""fp4fuse from Python kernel languages.

Submodules: `fp4fuse.bitcode` (finds the per-target bitcode files), `fp4fuse.cute_dsl` (CuTe DSL
declarations, needs nvidia-cutlass-dsl) and `fp4fuse.triton_ext` (Triton, needs triton). Importing
this package imports neither kernel language.
"""

__version__ = "0.1.0"
