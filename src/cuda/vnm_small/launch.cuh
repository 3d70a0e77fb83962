// sparsenm — cuda:vnm_gemv launch: turns (params, geometry) into grid / block / shared memory.
// Included only by the small per-instantiation .cu files (inst_*.cu).
#pragma once
#include <algorithm>

#include "cuda/common.cuh"
#include "cuda/vnm_small/kernel.cuh"
#include "cuda/vnm_small/vnm_small.hpp"

namespace sparsenm::cuda::vnm_small {

template <class T, int NT>
void launch(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  using Tr = Traits<T, NT>;
  const dim3 grid(unsigned(groups), unsigned(g.splits));
  const dim3 block(unsigned(32 * g.warps));
  vnm_small_kernel<Tr><<<grid, block, g.smem_bytes(), stream>>>(p);
  SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel");
  if (g.splits > 1) launch_reduce(p, stream);
}

}  // namespace sparsenm::cuda::vnm_small

#define SPARSENM_VNM_SMALL_INSTANTIATE(T, NT)                                                       \
  template void sparsenm::cuda::vnm_small::launch<T, NT>(const sparsenm::cuda::vnm_small::Params&, \
                                                          const sparsenm::vnm_small::Geometry&,    \
                                                          std::int64_t, cudaStream_t);
