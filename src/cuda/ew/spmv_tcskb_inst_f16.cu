// sparsenm — ew_spmv_tc_sk with the session-9b prologue / settle fixes at 16 warps x 3 stages (f16): prologue only
// (tc_skp), settle only (tc_sks), both (tc_skb); the PRMT-decode patterns.
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 8, 16, 3, 1)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 8, 16, 3, 1)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 16, 16, 3, 1)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 16, 16, 3, 1)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 8, 16, 3, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 8, 16, 3, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 16, 16, 3, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 16, 16, 3, 2)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 8, 16, 3, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 8, 16, 3, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 2, 16, 16, 3, 3)
SPARSENM_EW_SPMV_TCSKB_INSTANCE(__half, 1, 16, 16, 3, 3)
