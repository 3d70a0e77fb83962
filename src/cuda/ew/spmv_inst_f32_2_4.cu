// sparsenm — EW SpMV instances: f32, pattern 2:4 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(float, 1, 2, 2, 4)
SPARSENM_EW_SPMV_INSTANCE(float, 4, 2, 2, 4)
SPARSENM_EW_SPMV_INSTANCE(float, 8, 2, 2, 4)
