// sparsenm — EW tensor-core SpMV instances: bf16, M = 16.
#include "cuda/ew/spmv_tc_launch.cuh"
SPARSENM_EW_SPMV_TC_INSTANCE(__nv_bfloat16, 2, 16)
SPARSENM_EW_SPMV_TC_INSTANCE(__nv_bfloat16, 1, 16)
