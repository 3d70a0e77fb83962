// sparsenm — ew_spmv_sk instances: bf16, the compile-time patterns of spmv_sk_instances.def.
#include "cuda/ew/spmv_sk_launch.cuh"
#define SPEC(N, M) SPARSENM_EW_SPMV_SK_INSTANCE(__nv_bfloat16, N, M)
#include "cuda/ew/spmv_sk_instances.def"
#undef SPEC
