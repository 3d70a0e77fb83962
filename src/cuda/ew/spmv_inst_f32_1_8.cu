// sparsenm — EW SpMV instances: f32, pattern 1:8 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(float, 1, 3, 1, 8)
SPARSENM_EW_SPMV_INSTANCE(float, 4, 3, 1, 8)
SPARSENM_EW_SPMV_INSTANCE(float, 8, 3, 1, 8)
