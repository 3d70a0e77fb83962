// sparsenm — EW SpMV generic instances (runtime N, M): f32, index bits 1..4, MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(float, 1, 1, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 4, 1, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 8, 1, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 1, 2, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 4, 2, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 8, 2, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 1, 3, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 4, 3, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 8, 3, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 1, 4, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 4, 4, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(float, 8, 4, 0, 0)
