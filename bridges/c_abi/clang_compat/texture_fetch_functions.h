/* Empty on purpose. clang's CUDA wrapper (__clang_cuda_runtime_wrapper.h) includes this header,
 * which CUDA 13 removed; fp4fuse uses no texture references. With CUDA 12 the toolkit's own header
 * comes first on the include path and this one is not read. */
