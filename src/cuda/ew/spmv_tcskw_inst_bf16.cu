// sparsenm — ew_spmv_tc_sk at 24 warps per CTA with 3 and 2 ring stages, at 16 with 4 (session 8c; bf16): the PRMT-decode patterns.
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 2, 8, 24, 3)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 1, 8, 24, 3)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 2, 16, 24, 3)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 1, 16, 24, 3)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 2, 8, 24, 2)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 1, 8, 24, 2)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 2, 16, 24, 2)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 1, 16, 24, 2)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 2, 8, 16, 4)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 1, 8, 16, 4)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 2, 16, 16, 4)
SPARSENM_EW_SPMV_TCSKW_INSTANCE(__nv_bfloat16, 1, 16, 16, 4)
