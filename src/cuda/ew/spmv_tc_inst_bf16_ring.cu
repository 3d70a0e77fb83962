// sparsenm — EW tensor-core SpMV instances: bf16, the PRMT-table decode with the register ring
// (kDecPrmt, kTcRing tiles per warp; cuda:ew_spmv_tc_ring).
#include "cuda/ew/spmv_tc_launch.cuh"
SPARSENM_EW_SPMV_TC_INSTANCE_RING(__nv_bfloat16, 2, 8)
SPARSENM_EW_SPMV_TC_INSTANCE_RING(__nv_bfloat16, 1, 8)
SPARSENM_EW_SPMV_TC_INSTANCE_RING(__nv_bfloat16, 2, 16)
SPARSENM_EW_SPMV_TC_INSTANCE_RING(__nv_bfloat16, 1, 16)
