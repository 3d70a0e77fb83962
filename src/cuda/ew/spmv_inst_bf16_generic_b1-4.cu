// sparsenm — EW SpMV generic instances (runtime N, M): bf16, index bits 1..4, MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 1, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 1, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 1, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 2, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 2, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 2, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 3, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 3, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 3, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 4, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 4, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 4, 0, 0)
