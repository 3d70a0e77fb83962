// sparsenm — ew_spmv_tc_sk launch template (included by spmv_tcsk_inst_*.cu only).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/common.cuh"
#include "cuda/ew/spmv_tcsk.hpp"
#include "cuda/ew/spmv_tcsk_kernel.cuh"
#include "sparsenm/error.hpp"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_tcsk(const TcSkArgs& a, const TcSkConfig& cfg, cudaStream_t stream) {
  if (a.cta_warps < 1 || a.cta_warps > Tr::kWarps)
    throw InvalidArgument("cta_warps", std::string(Tr::kSp ? "ew_spmv_tc_sp" : "ew_spmv_tc_sk") + ": got " + std::to_string(a.cta_warps) + ", must be 1.." +
                                           std::to_string(Tr::kWarps));
  if (cfg.grid < 1 || a.warps_total != cfg.grid * a.cta_warps)
    throw InvalidArgument("grid", "ew_spmv_tc_sk: warps_total must be grid x cta_warps (plan_spmv_tcsk)");
  auto kernel = ew_spmv_tcsk_kernel<Tr>;
  allow_dynamic_smem(kernel, cfg.smem_bytes);
  kernel<<<cfg.grid, 32 * a.cta_warps, std::size_t(cfg.smem_bytes), stream>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH(Tr::kSp ? "ew_spmv_tc_sp" : "ew_spmv_tc_sk");
}

}  // namespace sparsenm::cuda::ew

#define SPARSENM_EW_SPMV_TCSK_INSTANCE(T, NN, MM)                                                     \
  template void ::sparsenm::cuda::ew::launch_spmv_tcsk<::sparsenm::cuda::ew::TcSkTraits<T, NN, MM>>( \
      const ::sparsenm::cuda::ew::TcSkArgs&, const ::sparsenm::cuda::ew::TcSkConfig&, cudaStream_t);

// Session 8c: the dense kernel at W warps per CTA and R ring stages (TcSkShape w24r3 / w24r2).
#define SPARSENM_EW_SPMV_TCSKW_INSTANCE(T, NN, MM, W, R)                                                          \
  template void ::sparsenm::cuda::ew::launch_spmv_tcsk<::sparsenm::cuda::ew::TcSkTraits<T, NN, MM, false, W, R>>( \
      const ::sparsenm::cuda::ew::TcSkArgs&, const ::sparsenm::cuda::ew::TcSkConfig&, cudaStream_t);

// Session 9b: the dense kernel at W warps, R ring stages with the prologue / settle fixes FIX (TcSkShape w16r3s / w16r4b /
// w16r4s / w24r2s).
#define SPARSENM_EW_SPMV_TCSKB_INSTANCE(T, NN, MM, W, R, FIX)                                                           \
  template void ::sparsenm::cuda::ew::launch_spmv_tcsk<::sparsenm::cuda::ew::TcSkTraits<T, NN, MM, false, W, R, FIX>>( \
      const ::sparsenm::cuda::ew::TcSkArgs&, const ::sparsenm::cuda::ew::TcSkConfig&, cudaStream_t);

#define SPARSENM_EW_SPMV_TCSP_INSTANCE(T, NN, MM)                                                           \
  template void ::sparsenm::cuda::ew::launch_spmv_tcsk<::sparsenm::cuda::ew::TcSkTraits<T, NN, MM, true>>( \
      const ::sparsenm::cuda::ew::TcSkArgs&, const ::sparsenm::cuda::ew::TcSkConfig&, cudaStream_t);
