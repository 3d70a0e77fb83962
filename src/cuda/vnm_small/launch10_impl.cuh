// sparsenm — cuda:vnm_gemv launch of variants 20 / 21 / 23 (kernel10.cuh, V:2:M lean paired): X -> Xt
// (kernel3.cuh transpose), then the kernel as a programmatic dependent of it; variant 20 with k splits
// launches the splits of a slab as one cluster (1, splits, 1) reduced in it, variant 21 sums them with
// the reduce kernel; variant 23 (direct gather from the X rows) is one plain launch, clusters as 20. Included only by the inst10_*.cu files (the instantiations, declared in
// launch10.cuh for launch.cuh).
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "cuda/common.cuh"
#include "cuda/vnm_small/kernel10.cuh"
#include "cuda/vnm_small/launch10.cuh"

namespace sparsenm::cuda::vnm_small {

template <class Tr>
const void* vlean_kernel(bool cluster, bool direct) {
  if (direct)
    return cluster ? reinterpret_cast<const void*>(&vnm_small_kernel_vlean<Tr, true, true>)
                   : reinterpret_cast<const void*>(&vnm_small_kernel_vlean<Tr, false, true>);
  return cluster ? reinterpret_cast<const void*>(&vnm_small_kernel_vlean<Tr, true>)
                 : reinterpret_cast<const void*>(&vnm_small_kernel_vlean<Tr, false>);
}

/// Lifts the variant's two instances' shared-memory limit to `bound` and returns the smaller occupancy.
template <class T, int NT>
int prepare_vlean(int variant, int threads, std::size_t smem_bytes, std::size_t bound) {
  using Tr = Traits<T, NT>;
  const bool direct = variant == sparsenm::vnm_small::kVnmDirectVariant;
  int best = 1 << 30;
  for (bool cluster : {false, true}) {
    const void* f = vlean_kernel<Tr>(cluster, direct);
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bound)));
    int b = 0;
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, f, threads, smem_bytes));
    best = std::min(best, b);
  }
  return best;
}

/// Variant 20 with splits: clusters of g.splits blocks resident at once.
template <class T, int NT>
int vlean_max_clusters(const sparsenm::vnm_small::Geometry& g) {
  using Tr = Traits<T, NT>;
  LaunchConfig cfg(dim3(unsigned(g.groups), unsigned(g.splits)), dim3(unsigned(32 * g.warps)), g.smem_bytes());
  cfg.cluster_y(g.splits);
  int n = 0;
  if (g.variant == sparsenm::vnm_small::kVnmDirectVariant)
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, vnm_small_kernel_vlean<Tr, true, true>, cfg.get()));
  else
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, vnm_small_kernel_vlean<Tr, true>, cfg.get()));
  return n;
}

template <class T, int NT>
void launch_vlean(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  namespace sv = sparsenm::vnm_small;
  using Tr = Traits<T, NT>;
  const bool direct = g.variant == sv::kVnmDirectVariant;
  if (g.warps != 4 || g.tiles_per_warp != 2 || p.tiles_per_group != 8 || p.sel == nullptr || (p.xt == nullptr && !direct) ||
      g.chunk_pairs != sv::lean_chunk_pairs(NT))
    throw std::logic_error("vnm_small: variant 20 / 21 / 23 geometry is not the V:2:M lean paired kernel's");
  const bool cluster = sv::lean2_cluster_variant(g.variant) && g.splits > 1;
  if (cluster && g.splits > sv::kStreamMaxSplits) throw std::logic_error("vnm_small: variant 20 / 23 cluster > 8 blocks");
  if (direct) {  // variant 23: X rows read in the kernel, no transpose, a plain launch (no PDL placement)
    LaunchConfig cfg(dim3(unsigned(groups), unsigned(g.splits)), dim3(128), g.smem_bytes(), stream);
    if (cluster) cfg.cluster_y(g.splits);
    if (cluster)
      SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), vnm_small_kernel_vlean<Tr, true, true>, p));
    else
      SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), vnm_small_kernel_vlean<Tr, false, true>, p));
    SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_vlean<direct>");
    return;
  }
  // X -> Xt (kernel3.cuh), as launch_transpose in launch.cuh
  const dim3 tgrid(unsigned(std::min<std::int64_t>(1024, (p.k + 255) / 256)), unsigned(NT));
  vnm_small_transpose_x<NT><<<tgrid, 256, 0, stream>>>(static_cast<const std::uint16_t*>(p.x), p.xt, p.m, p.k);
  SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_transpose_x");
  LaunchConfig cfg(dim3(unsigned(groups), unsigned(g.splits)), dim3(128), g.smem_bytes(), stream);
  cfg.dependent();
  if (cluster) cfg.cluster_y(g.splits);
  if (cluster)
    SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), vnm_small_kernel_vlean<Tr, true>, p));
  else
    SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), vnm_small_kernel_vlean<Tr, false>, p));
  SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_vlean");
  if (!cluster && g.splits > 1) launch_reduce(p, stream);
}

}  // namespace sparsenm::cuda::vnm_small

#define SPARSENM_VNM_SMALL_INSTANTIATE_VLEAN(T, NT)                                                          \
  template void sparsenm::cuda::vnm_small::launch_vlean<T, NT>(const sparsenm::cuda::vnm_small::Params&,     \
                                                                const sparsenm::vnm_small::Geometry&,        \
                                                                std::int64_t, cudaStream_t);                 \
  template int sparsenm::cuda::vnm_small::prepare_vlean<T, NT>(int, int, std::size_t, std::size_t);          \
  template int sparsenm::cuda::vnm_small::vlean_max_clusters<T, NT>(const sparsenm::vnm_small::Geometry&);
