// sparsenm — ew_spmv_sk_mb instances: bf16, MB = 4, the compile-time patterns of spmv_instances.def.
#include "cuda/ew/spmv_skm_launch.cuh"
#define SPEC(N, M) SPARSENM_EW_SPMV_SKM_INSTANCE(__nv_bfloat16, N, M, 4)
#include "cuda/ew/spmv_instances.def"
#undef SPEC
