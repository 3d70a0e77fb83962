// sparsenm — cuda:vnm_gemv variants 20 / 21 instantiation: f16, m <= 16 (kernel10.cuh).
#include "cuda/vnm_small/launch10_impl.cuh"
SPARSENM_VNM_SMALL_INSTANTIATE_VLEAN(__half, 2)
