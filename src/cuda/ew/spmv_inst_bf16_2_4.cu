// sparsenm — EW SpMV instances: bf16, pattern 2:4 (compile-time N, M), MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 2, 2, 4)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 2, 2, 4)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 2, 2, 4)
