// sparsenm — ew_spmv_tc_sk session-9 shapes (f16): 12 warps x 6 ring stages, 8 x 8, and the 16 x 4 / 24 x 2
// rings with 2 tiles prefetched into L2 beyond them (TcSkShape w12r6 / w8r8 / w16r4p / w24r2p).
#include "cuda/ew/spmv_tcsk_launch.cuh"
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 2, 8, 12, 6, 0)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 1, 8, 12, 6, 0)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 2, 16, 12, 6, 0)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 1, 16, 12, 6, 0)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 2, 8, 8, 8, 0)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 1, 8, 8, 8, 0)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 2, 16, 8, 8, 0)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 1, 16, 8, 8, 0)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 2, 8, 16, 4, 2)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 1, 8, 16, 4, 2)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 2, 16, 16, 4, 2)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 1, 16, 16, 4, 2)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 2, 8, 24, 2, 2)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 1, 8, 24, 2, 2)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 2, 16, 24, 2, 2)
SPARSENM_EW_SPMV_TCSK9_INSTANCE(__half, 1, 16, 24, 2, 2)
