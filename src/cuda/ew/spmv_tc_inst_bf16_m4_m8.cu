// sparsenm — EW tensor-core SpMV instances: bf16, M = 4 and 8.
#include "cuda/ew/spmv_tc_launch.cuh"
SPARSENM_EW_SPMV_TC_INSTANCE(__nv_bfloat16, 2, 4)
SPARSENM_EW_SPMV_TC_INSTANCE(__nv_bfloat16, 4, 8)
SPARSENM_EW_SPMV_TC_INSTANCE(__nv_bfloat16, 2, 8)
SPARSENM_EW_SPMV_TC_INSTANCE(__nv_bfloat16, 1, 8)
