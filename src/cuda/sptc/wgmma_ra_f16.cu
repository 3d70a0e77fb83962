// sparsenm — instantiations of the register-A 2:4 kernel (wgmma_ra.cuh) for f16 inputs.
#include "cuda/sptc/wgmma_ra.cuh"

namespace sparsenm::cuda::sptc {
SPARSENM_SPTC_RA_INSTANTIATE(__half)
}  // namespace sparsenm::cuda::sptc
