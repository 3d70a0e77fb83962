// sparsenm — EW SpMM generic instances (runtime N, M): bf16, index bits 1..8.
#include "cuda/ew/spmm_kernel.cuh"
SPARSENM_EW_SPMM_INSTANCE(__nv_bfloat16, 1, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__nv_bfloat16, 2, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__nv_bfloat16, 3, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__nv_bfloat16, 4, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__nv_bfloat16, 5, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__nv_bfloat16, 6, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__nv_bfloat16, 7, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__nv_bfloat16, 8, 0, 0)
