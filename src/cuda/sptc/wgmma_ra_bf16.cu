// sparsenm — instantiations of the register-A 2:4 kernel (wgmma_ra.cuh) for bf16 inputs.
#include "cuda/sptc/wgmma_ra.cuh"

namespace sparsenm::cuda::sptc {
SPARSENM_SPTC_RA_INSTANTIATE(__nv_bfloat16)
}  // namespace sparsenm::cuda::sptc
