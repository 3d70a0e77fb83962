// sparsenm — EW SpMV instances: f16, pattern 2:16 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__half, 1, 4, 2, 16)
SPARSENM_EW_SPMV_INSTANCE(__half, 4, 4, 2, 16)
SPARSENM_EW_SPMV_INSTANCE(__half, 8, 4, 2, 16)
