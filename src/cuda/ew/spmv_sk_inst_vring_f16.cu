// sparsenm — ew_spmv_sk value-ring instances (RING = 3, index words through registers: IREG, 8 warps,
// "cuda:ew_spmv_skv"; docs/PERF.md session 7): f16, the compile-time patterns of spmv_sk_instances.def.
#include "cuda/ew/spmv_sk_launch.cuh"
#define SPEC(N, M) SPARSENM_EW_SPMV_SK_INSTANCE_V(__half, N, M, 3, 8)
#include "cuda/ew/spmv_sk_instances.def"
#undef SPEC
