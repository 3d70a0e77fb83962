// sparsenm — ew_spmv_sk launch template (included by spmv_sk_inst_*.cu and the probe only).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/ew/spmv_sk.hpp"
#include "cuda/ew/spmv_sk_kernel.cuh"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_sk(const SkArgs& args, const SkConfig& cfg, cudaStream_t stream) {
  auto kernel = ew_spmv_sk_kernel<Tr>;
  allow_dynamic_smem(kernel, cfg.smem_bytes);
  SkArgs a = args;
  // The bulk copy needs a 16-byte aligned source and a multiple of 16 bytes.
  a.x_bulk = (reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0) ? (a.k * 2) / 16 * 16 : 0;
  kernel<<<cfg.grid, Tr::kThreads, std::size_t(cfg.smem_bytes), stream>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("ew_spmv_sk");
}

template <class Tr>
int occupancy_spmv_sk(int smem_bytes) {
  return resident_ctas(ew_spmv_sk_kernel<Tr>, Tr::kThreads, smem_bytes);
}

}  // namespace sparsenm::cuda::ew

#define SPARSENM_EW_SPMV_SK_INSTANCE_R(T, NN, MM, RING)                                                          \
  template void ::sparsenm::cuda::ew::launch_spmv_sk<::sparsenm::cuda::ew::SkTraits<                              \
      T, ::sparsenm::cuda::ew::spmv_bits(MM), NN, MM, ::sparsenm::cuda::ew::kSkXBulk, true,                        \
      ::sparsenm::cuda::ew::kSkEndSerial, RING>>(const ::sparsenm::cuda::ew::SkArgs&,                              \
                                                 const ::sparsenm::cuda::ew::SkConfig&, cudaStream_t);            \
  template int ::sparsenm::cuda::ew::occupancy_spmv_sk<::sparsenm::cuda::ew::SkTraits<                            \
      T, ::sparsenm::cuda::ew::spmv_bits(MM), NN, MM, ::sparsenm::cuda::ew::kSkXBulk, true,                        \
      ::sparsenm::cuda::ew::kSkEndSerial, RING>>(int);
#define SPARSENM_EW_SPMV_SK_INSTANCE(T, NN, MM) SPARSENM_EW_SPMV_SK_INSTANCE_R(T, NN, MM, 0)
/// Ring of value vectors only, index words through registers (IREG; "cuda:ew_spmv_skv" with 8 warps,
/// "cuda:ew_spmv_skw" with 32).
#define SPARSENM_EW_SPMV_SK_INSTANCE_V(T, NN, MM, RING, WARPS)                                                   \
  template void ::sparsenm::cuda::ew::launch_spmv_sk<::sparsenm::cuda::ew::SkTraits<                              \
      T, ::sparsenm::cuda::ew::spmv_bits(MM), NN, MM, ::sparsenm::cuda::ew::kSkXBulk, true,                        \
      ::sparsenm::cuda::ew::kSkEndSerial, RING, -1, 0, true, WARPS>>(const ::sparsenm::cuda::ew::SkArgs&,              \
                                                                 const ::sparsenm::cuda::ew::SkConfig&, cudaStream_t); \
  template int ::sparsenm::cuda::ew::occupancy_spmv_sk<::sparsenm::cuda::ew::SkTraits<                            \
      T, ::sparsenm::cuda::ew::spmv_bits(MM), NN, MM, ::sparsenm::cuda::ew::kSkXBulk, true,                        \
      ::sparsenm::cuda::ew::kSkEndSerial, RING, -1, 0, true, WARPS>>(int);
/// The grid-ordered forms (GRID; "cuda:ew_spmv_skg" / "_skrg" / "_skwg").
#define SPARSENM_EW_SPMV_SK_INSTANCE_G(T, NN, MM, RING, IREG, WARPS)                                            \
  template void ::sparsenm::cuda::ew::launch_spmv_sk<::sparsenm::cuda::ew::SkTraits<                              \
      T, ::sparsenm::cuda::ew::spmv_bits(MM), NN, MM, ::sparsenm::cuda::ew::kSkXBulk, true,                        \
      ::sparsenm::cuda::ew::kSkEndSerial, RING, -1, 0, IREG, WARPS, true>>(const ::sparsenm::cuda::ew::SkArgs&,        \
                                                                       const ::sparsenm::cuda::ew::SkConfig&, cudaStream_t); \
  template int ::sparsenm::cuda::ew::occupancy_spmv_sk<::sparsenm::cuda::ew::SkTraits<                            \
      T, ::sparsenm::cuda::ew::spmv_bits(MM), NN, MM, ::sparsenm::cuda::ew::kSkXBulk, true,                        \
      ::sparsenm::cuda::ew::kSkEndSerial, RING, -1, 0, IREG, WARPS, true>>(int);
// The native V:2:M form (spmv_vnm_sk.hpp): VnmSkTraits<T, M, RING>.
#define SPARSENM_VNM_SPMV_SK_INSTANCE(T, VM, RING)                                                                \
  template void ::sparsenm::cuda::ew::launch_spmv_sk<::sparsenm::cuda::ew::VnmSkTraits<T, VM, RING>>(            \
      const ::sparsenm::cuda::ew::SkArgs&, const ::sparsenm::cuda::ew::SkConfig&, cudaStream_t);                  \
  template int ::sparsenm::cuda::ew::occupancy_spmv_sk<::sparsenm::cuda::ew::VnmSkTraits<T, VM, RING>>(int);
