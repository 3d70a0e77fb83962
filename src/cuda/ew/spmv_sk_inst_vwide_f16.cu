// sparsenm — ew_spmv_sk value-ring instances on one 32-warp CTA per SM (RING = 3, IREG, WARPS = 32:
// "cuda:ew_spmv_skw"; docs/PERF.md session 7): f16, the compile-time patterns of spmv_sk_instances.def.
#include "cuda/ew/spmv_sk_launch.cuh"
#define SPEC(N, M) SPARSENM_EW_SPMV_SK_INSTANCE_V(__half, N, M, 3, 32)
#include "cuda/ew/spmv_sk_instances.def"
#undef SPEC
