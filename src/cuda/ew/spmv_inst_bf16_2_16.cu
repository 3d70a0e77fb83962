// sparsenm — EW SpMV instances: bf16, pattern 2:16 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 4, 2, 16)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 4, 2, 16)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 4, 2, 16)
