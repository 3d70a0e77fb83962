// sparsenm — ew_spmv_sk shared-memory ring instances (RING = 3, 4; docs/PERF.md session 6): f16, the
// compile-time patterns of spmv_instances.def.
#include "cuda/ew/spmv_sk_launch.cuh"
#define SPEC(N, M)                                    \
  SPARSENM_EW_SPMV_SK_INSTANCE_R(__half, N, M, 3)   \
  SPARSENM_EW_SPMV_SK_INSTANCE_R(__half, N, M, 4)
#include "cuda/ew/spmv_sk_instances.def"
#undef SPEC
