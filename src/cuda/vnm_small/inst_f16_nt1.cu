// sparsenm — cuda:vnm_gemv instantiation: f16, m <= 8 (one file per instantiation: parallel builds).
#include "cuda/vnm_small/launch.cuh"
SPARSENM_VNM_SMALL_INSTANTIATE(__half, 1)
