// sparsenm — ew_spmv_sk_mb instances: f16, MB = 8, the compile-time patterns of spmv_instances.def.
#include "cuda/ew/spmv_skm_launch.cuh"
#define SPEC(N, M) SPARSENM_EW_SPMV_SKM_INSTANCE(__half, N, M, 8)
#include "cuda/ew/spmv_instances.def"
#undef SPEC
