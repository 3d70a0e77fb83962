// sparsenm — ew_spmv_sk grid-ordered instances (GRID; docs/PERF.md session 7b): the register form
// ("cuda:ew_spmv_skg") and the 3-stage ring ("cuda:ew_spmv_skrg"), f16, the patterns of spmv_sk_instances.def.
#include "cuda/ew/spmv_sk_launch.cuh"
#define SPEC(N, M)                                     \
  SPARSENM_EW_SPMV_SK_INSTANCE_G(__half, N, M, 0, false, 8) \
  SPARSENM_EW_SPMV_SK_INSTANCE_G(__half, N, M, 3, false, 8)
#include "cuda/ew/spmv_sk_instances.def"
#undef SPEC
