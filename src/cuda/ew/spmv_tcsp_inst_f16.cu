// sparsenm — ew_spmv_tc_sp instances (f16): the tc_sk tile on the sparse tensor cores (session 8b).
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSP_INSTANCE(__half, 2, 8)
SPARSENM_EW_SPMV_TCSP_INSTANCE(__half, 1, 8)
SPARSENM_EW_SPMV_TCSP_INSTANCE(__half, 2, 16)
SPARSENM_EW_SPMV_TCSP_INSTANCE(__half, 1, 16)
