// sparsenm — ew_spmv_sk grid-ordered value ring on one 32-warp CTA per SM (GRID, RING = 3, IREG,
// WARPS = 32: "cuda:ew_spmv_skwg"; docs/PERF.md session 7b): f16, the patterns of spmv_sk_instances.def.
#include "cuda/ew/spmv_sk_launch.cuh"
#define SPEC(N, M) SPARSENM_EW_SPMV_SK_INSTANCE_G(__half, N, M, 3, true, 32)
#include "cuda/ew/spmv_sk_instances.def"
#undef SPEC
