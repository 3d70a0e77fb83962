// sparsenm — the CUDA kernel families a plan can choose from. One line per family.
#include "plan/registry.hpp"

namespace sparsenm::detail {

// Each family defines its register function in its own folder under src/cuda/.
void register_ew_kernels(KernelRegistry& r);           // src/cuda/ew     (issue: EW-N:M)
void register_sptc_kernels(KernelRegistry& r);         // src/cuda/sptc   (issue: V:N:M + 2:4)
void register_dense_kernels(KernelRegistry& r);        // src/cuda/dense  (cuBLAS fallback)
void register_vnm_small_kernels(KernelRegistry& r);     // src/cuda/vnm_small (V:2:M + 2:4, m <= 32)
void register_cusparselt_kernels(KernelRegistry& r);    // src/cuda/cusparselt (optional: cuSPARSELt 2:4)

void register_cuda_kernels(KernelRegistry& r) {
  (void)r;
  register_dense_kernels(r);
  register_ew_kernels(r);
  register_sptc_kernels(r);
  register_vnm_small_kernels(r);
  register_cusparselt_kernels(r);
}

}  // namespace sparsenm::detail
