// sparsenm — vnm_spmv_sk / vnm_spmv_skr instances (spmv_vnm_sk.hpp): bf16, M = 8 and 16, register
// ring (RING = 0) and 3-stage shared-memory ring.
#include "cuda/ew/spmv_sk_launch.cuh"
SPARSENM_VNM_SPMV_SK_INSTANCE(__nv_bfloat16, 8, 0)
SPARSENM_VNM_SPMV_SK_INSTANCE(__nv_bfloat16, 8, 3)
SPARSENM_VNM_SPMV_SK_INSTANCE(__nv_bfloat16, 16, 0)
SPARSENM_VNM_SPMV_SK_INSTANCE(__nv_bfloat16, 16, 3)
