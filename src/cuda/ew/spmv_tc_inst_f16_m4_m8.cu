// sparsenm — EW tensor-core SpMV instances: f16, M = 4 and 8.
#include "cuda/ew/spmv_tc_launch.cuh"
SPARSENM_EW_SPMV_TC_INSTANCE(__half, 2, 4)
SPARSENM_EW_SPMV_TC_INSTANCE(__half, 4, 8)
SPARSENM_EW_SPMV_TC_INSTANCE(__half, 2, 8)
SPARSENM_EW_SPMV_TC_INSTANCE(__half, 1, 8)
