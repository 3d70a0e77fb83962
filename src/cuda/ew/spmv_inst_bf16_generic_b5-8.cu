// sparsenm — EW SpMV generic instances (runtime N, M): bf16, index bits 5..8, MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 5, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 5, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 5, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 6, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 6, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 6, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 7, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 7, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 7, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 1, 8, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 4, 8, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__nv_bfloat16, 8, 8, 0, 0)
