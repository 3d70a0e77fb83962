// sparsenm — EW-N:M tensor-core SpMV launch template: problem -> grid, cluster, shared memory.
// Included by the instantiation files (spmv_tc_inst_*.cu) only.
#pragma once
#include <cuda_runtime.h>

#include "cuda/common.cuh"
#include "cuda/ew/spmv_tc.hpp"
#include "cuda/ew/spmv_tc_kernel.cuh"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_tc(const SpmvTcArgs& a, const SpmvTcConfig& cfg, cudaStream_t stream) {
  auto kernel = ew_spmv_tc_kernel<Tr>;
  if (cfg.smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg.smem_bytes));
  cudaLaunchConfig_t lc{};
  lc.gridDim = dim3(unsigned((a.row_blocks + Tr::kWarps - 1) / Tr::kWarps), unsigned(a.ksplit), 1);
  lc.blockDim = dim3(Tr::kThreads, 1, 1);
  lc.dynamicSmemBytes = std::size_t(cfg.smem_bytes);
  lc.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = unsigned(a.ksplit);
  attr[0].val.clusterDim.z = 1;
  lc.attrs = attr;
  lc.numAttrs = a.ksplit > 1 ? 1 : 0;
  SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(&lc, kernel, a));
}

template <class Tr>
int occupancy_spmv_tc(int smem_bytes) {
  auto kernel = ew_spmv_tc_kernel<Tr>;
  if (smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  int blocks = 0;
  SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, Tr::kThreads, std::size_t(smem_bytes)));
  return blocks;
}

}  // namespace sparsenm::cuda::ew

/// Explicit instantiation of one instance (T, N, M).
#define SPARSENM_EW_SPMV_TC_INSTANCE(T, NN, MM) \
  template void ::sparsenm::cuda::ew::launch_spmv_tc<::sparsenm::cuda::ew::SpmvTcTraits<T, NN, MM>>( \
      const ::sparsenm::cuda::ew::SpmvTcArgs&, const ::sparsenm::cuda::ew::SpmvTcConfig&, cudaStream_t); \
  template int ::sparsenm::cuda::ew::occupancy_spmv_tc<::sparsenm::cuda::ew::SpmvTcTraits<T, NN, MM>>(int);
