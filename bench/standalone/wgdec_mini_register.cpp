// sparsenm — the CUDA candidates of scripts/wgdec10f-device: dense cuBLAS, cuda:vnm_gemv, the 2:4
// decode kernel cuda:sptc_24_wgmma_dec and (when built with it) cuSPARSELt: the small-m hardware 2:4
// race without the EW family and the other sparse tensor-core kernels (src/cuda/register.cpp also
// registers those; at hw24 m <= 32 they are slower, docs/PERF-vnm-small.md, but the full race is
// the library's). With WGDEC_SET_ROWS=1 it also registers the measurement rows
// cuda:sptc_24_wgmma_dec_s<1|2|4|8> (fixed accumulator-set counts) for VNM_SMALL_FORCE; the plan's
// race is run without it. Not part of the CMake build (bench/standalone is not globbed).
#include <cstdlib>
#include <string>

#include "plan/registry.hpp"

namespace sparsenm::detail {

void register_dense_kernels(KernelRegistry& r);
void register_vnm_small_kernels(KernelRegistry& r);
void register_sptc_dec_kernels(KernelRegistry& r);
void register_sptc_dec_set_rows(KernelRegistry& r);
void register_cusparselt_kernels(KernelRegistry& r);

void register_cuda_kernels(KernelRegistry& r) {
  register_dense_kernels(r);
  register_vnm_small_kernels(r);
  register_sptc_dec_kernels(r);
  if (const char* e = std::getenv("WGDEC_SET_ROWS"); e && std::string(e) == "1") register_sptc_dec_set_rows(r);
  register_cusparselt_kernels(r);
}

}  // namespace sparsenm::detail
