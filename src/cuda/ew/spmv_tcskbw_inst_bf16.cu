// sparsenm — ew_spmv_tc_sk16r4s / _sk24r2s (bf16): the session-9b settle fix on the 16 x 4 / 24 x 2 shapes, and
// tc_sk16r4c (tc_sk16r4b with the X-piece issue spread over the warps); opt-in; the PRMT-decode patterns.
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 8, 16, 4, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 8, 16, 4, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 16, 16, 4, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 16, 16, 4, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 8, 24, 2, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 8, 24, 2, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 16, 24, 2, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 16, 24, 2, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 8, 16, 4, 7)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 8, 16, 4, 7)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 2, 16, 16, 4, 7)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__nv_bfloat16, 1, 16, 16, 4, 7)
