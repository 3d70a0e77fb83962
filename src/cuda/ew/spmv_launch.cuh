// sparsenm — EW-N:M SpMV launch template: problem -> grid, cluster, shared memory. Included by
// the instantiation files (spmv_inst_*.cu) only.
#pragma once
#include <cuda_runtime.h>

#include "cuda/common.cuh"
#include "cuda/ew/spmv.hpp"
#include "cuda/ew/spmv_kernel.cuh"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv(const SpmvArgs& a, const SpmvConfig& cfg, cudaStream_t stream) {
  auto kernel = ew_spmv_kernel<Tr>;
  if (cfg.smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg.smem_bytes));
  LaunchConfig lc(dim3(unsigned((a.row_groups + Tr::kWarps - 1) / Tr::kWarps), unsigned(a.ksplit), 1),
                  dim3(Tr::kThreads, 1, 1), std::size_t(cfg.smem_bytes), stream);
  if (a.ksplit > 1) lc.cluster_y(a.ksplit);
  SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(lc.get(), kernel, a));
}

template <class Tr>
int occupancy_spmv(int smem_bytes) {
  auto kernel = ew_spmv_kernel<Tr>;
  if (smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  int blocks = 0;
  SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, Tr::kThreads, std::size_t(smem_bytes)));
  return blocks;
}

}  // namespace sparsenm::cuda::ew

/// Explicit instantiation of one kernel instance (T, MR, B, NN, MM) and its table entry.
#define SPARSENM_EW_SPMV_INSTANCE(T, MR, B, NN, MM) \
  template void ::sparsenm::cuda::ew::launch_spmv<::sparsenm::cuda::ew::SpmvTraits<T, MR, B, NN, MM>>( \
      const ::sparsenm::cuda::ew::SpmvArgs&, const ::sparsenm::cuda::ew::SpmvConfig&, cudaStream_t); \
  template int ::sparsenm::cuda::ew::occupancy_spmv<::sparsenm::cuda::ew::SpmvTraits<T, MR, B, NN, MM>>(int);
