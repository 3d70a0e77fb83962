// sparsenm — EW SpMV instances: f16, pattern 16:32 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__half, 1, 5, 16, 32)
SPARSENM_EW_SPMV_INSTANCE(__half, 4, 5, 16, 32)
SPARSENM_EW_SPMV_INSTANCE(__half, 8, 5, 16, 32)
