// sparsenm — ew_spmv_tc_sp instances (bf16): the tc_sk tile on the sparse tensor cores (session 8b).
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSP_INSTANCE(__nv_bfloat16, 2, 8)
SPARSENM_EW_SPMV_TCSP_INSTANCE(__nv_bfloat16, 1, 8)
SPARSENM_EW_SPMV_TCSP_INSTANCE(__nv_bfloat16, 2, 16)
SPARSENM_EW_SPMV_TCSP_INSTANCE(__nv_bfloat16, 1, 16)
