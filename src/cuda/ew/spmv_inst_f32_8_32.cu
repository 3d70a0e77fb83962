// sparsenm — EW SpMV instances: f32, pattern 8:32 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(float, 1, 5, 8, 32)
SPARSENM_EW_SPMV_INSTANCE(float, 4, 5, 8, 32)
SPARSENM_EW_SPMV_INSTANCE(float, 8, 5, 8, 32)
