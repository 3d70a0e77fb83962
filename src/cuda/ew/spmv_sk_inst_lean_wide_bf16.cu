// sparsenm — ew_spmv_sk lean-settle instances (END = kSkEndLean; docs/PERF.md "Session 10 (s10m1)"): the
// grid-ordered value ring on one 32-warp CTA per SM ("cuda:ew_spmv_skwgs"), bf16, the patterns of
// spmv_instances.def.
#include "cuda/ew/spmv_sk_launch.cuh"
#define SPEC(N, M) SPARSENM_EW_SPMV_SK_INSTANCE_L(__nv_bfloat16, N, M, 3, true, 32, true)
#include "cuda/ew/spmv_instances.def"
#undef SPEC
