// sparsenm — EW SpMM generic instances (runtime N, M): f32, index bits 1..8.
#include "cuda/ew/spmm_kernel.cuh"
SPARSENM_EW_SPMM_INSTANCE(float, 1, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(float, 2, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(float, 3, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(float, 4, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(float, 5, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(float, 6, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(float, 7, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(float, 8, 0, 0)
