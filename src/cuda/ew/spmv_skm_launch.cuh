// sparsenm — ew_spmv_sk_mb launch template (included by spmv_skm_inst_*.cu only).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/ew/spmv_skm.hpp"
#include "cuda/ew/spmv_skm_kernel.cuh"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_skm(const SkmArgs& args, const SkmConfig& cfg, cudaStream_t stream) {
  static_assert(Tr::kXAlign == kSkmXAlign, "the plan's slack must match the kernel's alignment");
  auto kernel = ew_spmv_skm_kernel<Tr>;
  allow_dynamic_smem(kernel, cfg.smem_bytes);
  SkmArgs a = args;
  // 32-bit column-pair reads of X need a 4-byte aligned X and an even k (every row then starts aligned).
  a.x_pairs = (reinterpret_cast<std::uintptr_t>(a.x) % 4 == 0 && a.k % 2 == 0) ? 1 : 0;
  kernel<<<cfg.grid, Tr::kThreads, std::size_t(cfg.smem_bytes), stream>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("ew_spmv_sk_mb");
}

template <class Tr>
int occupancy_spmv_skm(int smem_bytes) {
  return resident_ctas(ew_spmv_skm_kernel<Tr>, Tr::kThreads, smem_bytes);
}

}  // namespace sparsenm::cuda::ew

#define SPARSENM_EW_SPMV_SKM_INSTANCE(T, NN, MM, MB)                                                            \
  template void ::sparsenm::cuda::ew::launch_spmv_skm<                                                          \
      ::sparsenm::cuda::ew::SkmTraits<T, ::sparsenm::cuda::ew::spmv_bits(MM), NN, MM, MB>>(                    \
      const ::sparsenm::cuda::ew::SkmArgs&, const ::sparsenm::cuda::ew::SkmConfig&, cudaStream_t);             \
  template int ::sparsenm::cuda::ew::occupancy_spmv_skm<                                                        \
      ::sparsenm::cuda::ew::SkmTraits<T, ::sparsenm::cuda::ew::spmv_bits(MM), NN, MM, MB>>(int);
