// sparsenm — ew_spmv_tc_sk instances (bf16): the PRMT-decode patterns.
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSK_INSTANCE(__nv_bfloat16, 2, 8)
SPARSENM_EW_SPMV_TCSK_INSTANCE(__nv_bfloat16, 1, 8)
SPARSENM_EW_SPMV_TCSK_INSTANCE(__nv_bfloat16, 2, 16)
SPARSENM_EW_SPMV_TCSK_INSTANCE(__nv_bfloat16, 1, 16)
