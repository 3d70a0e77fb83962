// sparsenm — ew_spmv_tc_sk16r4 / _sk24r2 with both session-9b fixes (bf16; tc_sk16r4b, tc_sk24r2b): the PRMT-decode patterns.
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 8, 16, 4, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 8, 16, 4, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 16, 16, 4, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 16, 16, 4, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 8, 24, 2, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 8, 24, 2, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 16, 24, 2, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 16, 24, 2, 3)
