// sparsenm — EW SpMV instances: f16, pattern 2:8 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__half, 1, 3, 2, 8)
SPARSENM_EW_SPMV_INSTANCE(__half, 4, 3, 2, 8)
SPARSENM_EW_SPMV_INSTANCE(__half, 8, 3, 2, 8)
