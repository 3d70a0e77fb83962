// sparsenm — EW tensor-core SpMV instances: f16, M = 16.
#include "cuda/ew/spmv_tc_launch.cuh"
SPARSENM_EW_SPMV_TC_INSTANCE(__half, 2, 16)
SPARSENM_EW_SPMV_TC_INSTANCE(__half, 1, 16)
