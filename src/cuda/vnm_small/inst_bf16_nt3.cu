// sparsenm — cuda:vnm_gemv instantiation: bf16, m <= 24 (one file per instantiation: parallel builds).
#include "cuda/vnm_small/launch.cuh"
SPARSENM_VNM_SMALL_INSTANTIATE(__nv_bfloat16, 3)
