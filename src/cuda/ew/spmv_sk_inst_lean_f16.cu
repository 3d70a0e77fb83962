// sparsenm — ew_spmv_sk lean-settle instances (END = kSkEndLean; docs/PERF.md "Session 10 (s10m1)"): the
// register form ("cuda:ew_spmv_sks") and the grid-ordered 3-stage ring ("cuda:ew_spmv_skrgs"), f16, the
// patterns of spmv_instances.def.
#include "cuda/ew/spmv_sk_launch.cuh"
#define SPEC(N, M)                                              \
  SPARSENM_EW_SPMV_SK_INSTANCE_L(__half, N, M, 0, false, 8, false) \
  SPARSENM_EW_SPMV_SK_INSTANCE_L(__half, N, M, 3, false, 8, true)
#include "cuda/ew/spmv_instances.def"
#undef SPEC
