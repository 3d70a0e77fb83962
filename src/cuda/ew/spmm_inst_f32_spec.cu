// sparsenm — EW SpMM instances: f32, the specialised patterns (compile-time N, M).
#include "cuda/ew/spmm_kernel.cuh"
SPARSENM_EW_SPMM_INSTANCE(float, 2, 2, 4)
SPARSENM_EW_SPMM_INSTANCE(float, 3, 4, 8)
SPARSENM_EW_SPMM_INSTANCE(float, 3, 2, 8)
SPARSENM_EW_SPMM_INSTANCE(float, 3, 1, 8)
SPARSENM_EW_SPMM_INSTANCE(float, 4, 2, 16)
SPARSENM_EW_SPMM_INSTANCE(float, 4, 1, 16)
SPARSENM_EW_SPMM_INSTANCE(float, 5, 8, 32)
SPARSENM_EW_SPMM_INSTANCE(float, 5, 16, 32)
SPARSENM_EW_SPMM_INSTANCE(float, 5, 4, 32)
SPARSENM_EW_SPMM_INSTANCE(float, 5, 3, 32)
