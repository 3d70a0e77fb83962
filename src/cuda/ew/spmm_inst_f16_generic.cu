// sparsenm — EW SpMM generic instances (runtime N, M): f16, index bits 1..8.
#include "cuda/ew/spmm_kernel.cuh"
SPARSENM_EW_SPMM_INSTANCE(__half, 1, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__half, 2, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__half, 3, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__half, 4, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__half, 5, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__half, 6, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__half, 7, 0, 0)
SPARSENM_EW_SPMM_INSTANCE(__half, 8, 0, 0)
