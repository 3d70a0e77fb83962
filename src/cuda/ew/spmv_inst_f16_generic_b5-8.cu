// sparsenm — EW SpMV generic instances (runtime N, M): f16, index bits 5..8, MR 1/4/8.
#include "cuda/ew/spmv_launch.cuh"
SPARSENM_EW_SPMV_INSTANCE(__half, 1, 5, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 4, 5, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 8, 5, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 1, 6, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 4, 6, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 8, 6, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 1, 7, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 4, 7, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 8, 7, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 1, 8, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 4, 8, 0, 0)
SPARSENM_EW_SPMV_INSTANCE(__half, 8, 8, 0, 0)
