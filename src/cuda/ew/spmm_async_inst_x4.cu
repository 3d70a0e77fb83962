// sparsenm — EW SpMM "async_x4" instances (fp32, 8 warps, X transposed into 4-row planes, one
// LDS.128 per plane and slot): the specialised patterns with M <= 8.
#include "cuda/ew/spmm_async_kernel.cuh"
SPARSENM_EW_SPMM_ASYNC_X4_INSTANCE(2, 2, 4)
SPARSENM_EW_SPMM_ASYNC_X4_INSTANCE(3, 4, 8)
SPARSENM_EW_SPMM_ASYNC_X4_INSTANCE(3, 2, 8)
SPARSENM_EW_SPMM_ASYNC_X4_INSTANCE(3, 1, 8)
