// sparsenm — cuda:vnm_gemv variants 20 / 21 instantiation: bf16, m <= 8 (kernel10.cuh).
#include "cuda/vnm_small/launch10_impl.cuh"
SPARSENM_VNM_SMALL_INSTANTIATE_VLEAN(__nv_bfloat16, 1)
