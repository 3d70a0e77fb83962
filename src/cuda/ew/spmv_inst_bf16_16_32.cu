// sparsenm — EW SpMV instances: bf16, pattern 16:32 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 5, 16, 32)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 5, 16, 32)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 5, 16, 32)
