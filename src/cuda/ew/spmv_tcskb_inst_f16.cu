// sparsenm — ew_spmv_tc_sk session-9b forms raced by the plan (f16): the settle fix at 16 warps x 3 stages (tc_sks)
// and both fixes at 16 x 4 (tc_sk16r4b); the PRMT-decode patterns.
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 8, 16, 3, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 8, 16, 3, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 16, 16, 3, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 16, 16, 3, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 8, 16, 4, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 8, 16, 4, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 16, 16, 4, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 16, 16, 4, 3)
