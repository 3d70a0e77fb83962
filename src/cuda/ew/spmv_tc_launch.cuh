// sparsenm — EW-N:M tensor-core SpMV launch template: problem -> grid, cluster, shared memory.
// Included by the instantiation files (spmv_tc_inst_*.cu) only.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/common.cuh"
#include "cuda/ew/spmv_tc.hpp"
#include "cuda/ew/spmv_tc_kernel.cuh"
#include "sparsenm/error.hpp"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_tc(const SpmvTcArgs& a, const SpmvTcConfig& cfg, cudaStream_t stream) {
  if constexpr (Tr::kRing > 2) {  // the ring's slots are compile-time: every phase starts at slot 0
    if (a.tiles_per_phase < 1 || (a.tiles_per_phase < a.tiles_per_split && a.tiles_per_phase % Tr::kRing != 0))
      throw InvalidArgument("tiles_per_phase", "ew_spmv_tc_ring: got " + std::to_string(a.tiles_per_phase) +
                                                   ", must be a multiple of the ring (" + std::to_string(Tr::kRing) +
                                                   ") or cover the split (" + std::to_string(a.tiles_per_split) + " tiles)");
  }
  auto kernel = ew_spmv_tc_kernel<Tr>;
  if (cfg.smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg.smem_bytes));
  LaunchConfig lc(dim3(unsigned((a.row_blocks + a.cta_warps - 1) / a.cta_warps), unsigned(a.ksplit), 1),
                  dim3(unsigned(32 * a.cta_warps), 1, 1), std::size_t(cfg.smem_bytes), stream);
  if (a.ksplit > 1) lc.cluster_y(a.ksplit);
  SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(lc.get(), kernel, a));
}

template <class Tr>
int occupancy_spmv_tc(int smem_bytes, int threads, int ksplit, int sms) {
  auto kernel = ew_spmv_tc_kernel<Tr>;
  if (smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  if (ksplit <= 1) {
    int blocks = 0;
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, std::size_t(smem_bytes)));
    return blocks * sms;
  }
  LaunchConfig lc(dim3(1, unsigned(ksplit), 1), dim3(unsigned(threads), 1, 1), std::size_t(smem_bytes));
  lc.cluster_y(ksplit);
  int clusters = 0;
  SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, lc.get()));
  return clusters * ksplit;
}

}  // namespace sparsenm::cuda::ew

/// Explicit instantiation of one instance (T, N, M, decode).
#define SPARSENM_EW_SPMV_TC_INSTANCE_RD(T, NN, MM, DEC, RING) \
  template void ::sparsenm::cuda::ew::launch_spmv_tc<::sparsenm::cuda::ew::SpmvTcTraits<T, NN, MM, DEC, RING>>( \
      const ::sparsenm::cuda::ew::SpmvTcArgs&, const ::sparsenm::cuda::ew::SpmvTcConfig&, cudaStream_t); \
  template int ::sparsenm::cuda::ew::occupancy_spmv_tc<::sparsenm::cuda::ew::SpmvTcTraits<T, NN, MM, DEC, RING>>( \
      int, int, int, int);
#define SPARSENM_EW_SPMV_TC_INSTANCE_DEC(T, NN, MM, DEC) SPARSENM_EW_SPMV_TC_INSTANCE_RD(T, NN, MM, DEC, 2)
#define SPARSENM_EW_SPMV_TC_INSTANCE_RING(T, NN, MM) \
  SPARSENM_EW_SPMV_TC_INSTANCE_RD(T, NN, MM, ::sparsenm::cuda::ew::kDecPrmt, ::sparsenm::cuda::ew::kTcRing)
#define SPARSENM_EW_SPMV_TC_INSTANCE(T, NN, MM) SPARSENM_EW_SPMV_TC_INSTANCE_DEC(T, NN, MM, ::sparsenm::cuda::ew::kDecShift)
