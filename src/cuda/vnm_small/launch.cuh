// sparsenm — cuda:vnm_gemv launch: turns (params, geometry) into grid / block / shared memory for
// the variant in the geometry. Included only by the small per-instantiation .cu files (inst_*.cu).
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/common.cuh"
#include "cuda/vnm_small/kernel.cuh"
#include "cuda/vnm_small/kernel2.cuh"
#include "cuda/vnm_small/kernel3.cuh"
#include "cuda/vnm_small/kernel4.cuh"
#include "cuda/vnm_small/kernel5.cuh"
#include "cuda/vnm_small/kernel6.cuh"
#include "cuda/vnm_small/kernel7.cuh"
#include "cuda/vnm_small/kernel8.cuh"
#include "cuda/vnm_small/kernel9.cuh"
#include "cuda/vnm_small/launch10.cuh"  // variants 20 / 21
#include "cuda/vnm_small/kernel11.cuh"  // variant 19
#include "cuda/vnm_small/vnm_small.hpp"

namespace sparsenm::cuda::vnm_small {

template <class Tr>
const void* kernel_of(int variant) {
  switch (variant) {
    case 0: return reinterpret_cast<const void*>(&vnm_small_kernel<Tr, false>);
    case 4: return reinterpret_cast<const void*>(&vnm_small_kernel<Tr, true>);
    case 5:
    case 6: return reinterpret_cast<const void*>(&vnm_small_kernel_xt<Tr>);
    case 7: return reinterpret_cast<const void*>(&vnm_small_kernel_stream<Tr, false>);  // venom: same resources
    case 8: return reinterpret_cast<const void*>(&vnm_small_kernel_ring<Tr, 2>);  // the larger of the two
    case 9:
    case 11:
    case 12:
    case 13:
    case 14:
    case 15:
    case 16:
    case 19: return reinterpret_cast<const void*>(&vnm_small_kernel_async<Tr, 2, false>);  // the largest of three
    case 10: return reinterpret_cast<const void*>(&vnm_small_kernel_pair<Tr, false>);
    case 1: return reinterpret_cast<const void*>(&vnm_small_kernel2<Tr, false>);
    default: return reinterpret_cast<const void*>(&vnm_small_kernel2<Tr, true>);
  }
}

template <class T, int NT>
int prepare(int variant, int threads, std::size_t smem_bytes) {
  using Tr = Traits<T, NT>;
  if (sparsenm::vnm_small::vlean_variant(variant)) {  // 20 / 21 / 23: their own two instances (launch10.cuh)
    if (smem_bytes > sparsenm::vnm_small::max_smem_bytes(NT)) throw std::logic_error("vnm_small: geometry exceeds max_smem_bytes");
    return prepare_vlean<T, NT>(variant, threads, smem_bytes, sparsenm::vnm_small::max_smem_bytes(NT));
  }
  const void* k = kernel_of<Tr>(variant);
  // The limit is per function and shared by every instance: always the bound of any geometry of
  // this instantiation, never this geometry's size (device run of ca6f7f6: a limit set from one
  // geometry made a later, larger launch fail with cudaErrorInvalidValue).
  constexpr std::size_t kBound = sparsenm::vnm_small::max_smem_bytes(NT);
  static_assert(kBound <= 227u * 1024u, "staged X exceeds the sm_90 shared-memory opt-in");
  if (smem_bytes > kBound) throw std::logic_error("vnm_small: geometry exceeds max_smem_bytes");
  if (sparsenm::vnm_small::large_smem_variant(variant))  // the others stay <= 48 KB
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBound)));
  if (sparsenm::vnm_small::async_variant(variant)) {  // three instances: occupancy of the smallest
    const void* ks[6] = {k, reinterpret_cast<const void*>(&vnm_small_kernel_async<Tr, 1, false>),
                         reinterpret_cast<const void*>(&vnm_small_kernel_async<Tr, 1, true>),
                         reinterpret_cast<const void*>(&vnm_small_kernel_async<Tr, 2, false, true>),
                         reinterpret_cast<const void*>(&vnm_small_kernel_async<Tr, 1, false, true>),
                         reinterpret_cast<const void*>(&vnm_small_kernel_async<Tr, 1, true, true>)};
    const int nk = variant == sparsenm::vnm_small::kFusedVariant ? 6 : 3;  // 11: its own instances too
    int best = 1 << 30;
    if (variant == sparsenm::vnm_small::kLeanVariant) {  // 12: the lean kernel besides variant 9's
      const void* f = reinterpret_cast<const void*>(&vnm_small_kernel_lean<Tr>);
      SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBound)));
      SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&best, f, threads, smem_bytes));
    }
    if (variant == sparsenm::vnm_small::kLean2WsVariant) {  // 19: its own kernels, 160 threads (a producer warp)
      for (const void* f : {reinterpret_cast<const void*>(&vnm_small_kernel_ws<Tr, false>), reinterpret_cast<const void*>(&vnm_small_kernel_ws<Tr, true>)}) {
        SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBound)));
        int b = 0;
        SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, f, kWsThreads, smem_bytes));
        best = std::min(best, b);
      }
    } else if (sparsenm::vnm_small::lean2_variant(variant)) {  // 13 .. 16: the lean paired kernels besides variant 9's
      const bool wide = variant == sparsenm::vnm_small::kLean2WideVariant;  // 8 warps, 256-row groups
      const bool lng = variant == sparsenm::vnm_small::kLean2LongVariant;   // long chunks (cluster kernel only)
      const void* fs[2] = {wide ? reinterpret_cast<const void*>(&vnm_small_kernel_lean2<Tr, false, 8>)
                           : lng ? reinterpret_cast<const void*>(&vnm_small_kernel_lean2<Tr, false, 4, true>)
                                 : reinterpret_cast<const void*>(&vnm_small_kernel_lean2<Tr, false>),
                           wide ? reinterpret_cast<const void*>(&vnm_small_kernel_lean2<Tr, true, 8>)
                           : lng ? reinterpret_cast<const void*>(&vnm_small_kernel_lean2<Tr, true, 4, true>)
                                 : reinterpret_cast<const void*>(&vnm_small_kernel_lean2<Tr, true>)};
      for (const void* f : fs) {
        SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBound)));
        int b = 0;
        SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, f, threads, smem_bytes));
        best = std::min(best, b);
      }
    }
    for (int i = 0; i < nk; ++i) {
      const void* f = ks[i];
      if (f != k) SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBound)));
      int b = 0;
      SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, f, threads, smem_bytes));
      best = std::min(best, b);
    }
    return best;
  }
  if (variant == sparsenm::vnm_small::kPairVariant) {  // direct and transposed instances
    const void* k1 = reinterpret_cast<const void*>(&vnm_small_kernel_pair<Tr, true>);
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBound)));
    int b1 = 0, b2 = 0;
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b1, k1, threads, smem_bytes));
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b2, k, threads, smem_bytes));
    return std::min(b1, b2);
  }
  if (variant == sparsenm::vnm_small::kRingVariant) {  // one row tile per warp: its own instance
    const void* k1 = reinterpret_cast<const void*>(&vnm_small_kernel_ring<Tr, 1>);
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBound)));
    int b1 = 0, b2 = 0;
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b1, k1, threads, smem_bytes));
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b2, k, threads, smem_bytes));
    return std::min(b1, b2);
  }
  if (variant == sparsenm::vnm_small::kStreamVariant)  // the venom instance of variant 7 too
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&vnm_small_kernel_stream<Tr, true>),
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBound)));
  int blocks = 0;
  SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, threads, smem_bytes));
  return blocks;
}

/// X [m][k] -> Xt (p.xt), the layout the transposed-X variants (5, 6, 7, 9, 10, 11) stage from.
template <int NT>
void launch_transpose(const Params& p, cudaStream_t stream) {
  const dim3 tgrid(unsigned(std::min<std::int64_t>(1024, (p.k + 255) / 256)), unsigned(NT));
  vnm_small_transpose_x<NT><<<tgrid, 256, 0, stream>>>(static_cast<const std::uint16_t*>(p.x), p.xt, p.m, p.k);
  SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_transpose_x");
}

/// `kernel` as a programmatic dependent of the stream's previous launch (the transpose): its blocks
/// may start before the transpose ends and wait for it with griddepcontrol.
template <class Kernel>
void launch_dependent(Kernel kernel, dim3 grid, dim3 block, const sparsenm::vnm_small::Geometry& g, const Params& p,
                      cudaStream_t stream) {
  LaunchConfig cfg(grid, block, g.smem_bytes(), stream);
  cfg.dependent();
  SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), kernel, p));
}

/// hw24 with k % 8 == 0 and 16-byte aligned X: variants 9 / 10 / 11 stage X rows directly.
inline bool direct_x(const Params& p) {
  return p.sel == nullptr && p.k % 8 == 0 && (reinterpret_cast<std::uintptr_t>(p.x) & 15u) == 0;
}

/// Variant 7: [transpose (venom)], then the streamed kernel; k splits as one cluster (1, splits, 1).
template <class Tr>
void launch_stream(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  constexpr int NT = Tr::kNTiles;
  const bool venom = p.sel != nullptr;
  if (venom) launch_transpose<NT>(p, stream);
  LaunchConfig cfg(dim3(unsigned(groups), unsigned(g.splits)), dim3(unsigned(32 * g.warps)), g.smem_bytes(), stream);
  if (g.splits > 1) cfg.cluster_y(g.splits);
  if (venom)
    SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), vnm_small_kernel_stream<Tr, true>, p));
  else
    SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), vnm_small_kernel_stream<Tr, false>, p));
  SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_stream");
}

/// Variants 9 / 11 (kFused), see launch_async.
template <class Tr, bool kFused>
void launch_async_impl(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  constexpr int NT = Tr::kNTiles;
  const dim3 grid(unsigned(groups), unsigned(g.splits));
  const dim3 block(unsigned(32 * g.warps));
  if (direct_x(p)) {
    vnm_small_kernel_async<Tr, 1, true, kFused><<<grid, block, g.smem_bytes(), stream>>>(p);
  } else {
    launch_transpose<NT>(p, stream);
    if (g.tiles_per_warp > 1)
      launch_dependent(vnm_small_kernel_async<Tr, 2, false, kFused>, grid, block, g, p, stream);
    else
      launch_dependent(vnm_small_kernel_async<Tr, 1, false, kFused>, grid, block, g, p, stream);
  }
  SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_async");
  if (g.splits > 1 && !kFused) launch_reduce(p, stream);  // variant 11: the kernel's last block per group
}

/// Variant 9: hw24 with k % 8 == 0 and 16-byte aligned X stages X rows directly (no transpose);
/// otherwise X -> Xt, then the kernel as a programmatic dependent of the transpose (variant 6).
/// Variant 11: the same with the split reduction fused into the kernel (p.counters: [groups]).
template <class Tr>
void launch_async(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  if (g.variant == sparsenm::vnm_small::kFusedVariant && g.splits > 1) {
    if (p.counters == nullptr) throw std::logic_error("vnm_small: variant 11 with splits needs the arrival counters");
    launch_async_impl<Tr, true>(p, g, groups, stream);
  } else {
    launch_async_impl<Tr, false>(p, g, groups, stream);
  }
}

/// Variant 12: the lean kernel (kernel8.cuh) where it applies — direct X (hw24, k % 8 == 0, aligned
/// X), 8 warps of one row tile each, the kernel's compile-time chunk — otherwise variant 9.
template <class Tr>
void launch_lean(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  constexpr int NT = Tr::kNTiles;
  if (direct_x(p) && g.warps == 8 && g.tiles_per_warp == 1 && p.tiles_per_group == 8 &&
      g.chunk_pairs == sparsenm::vnm_small::lean_chunk_pairs(NT)) {
    vnm_small_kernel_lean<Tr><<<dim3(unsigned(groups), unsigned(g.splits)), dim3(256), g.smem_bytes(), stream>>>(p);
    SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_lean");
    if (g.splits > 1) launch_reduce(p, stream);
  } else {
    launch_async_impl<Tr, false>(p, g, groups, stream);
  }
}

/// Variants 13 .. 16: the lean paired kernel (kernel9.cuh) — kWarps warps of two row tiles each
/// (4: 128-row groups, 13 / 14; 8: 256-row groups, 15), the kernel's compile-time chunk — when X is
/// 16-byte aligned (14 / 15 with splits: one cluster per group, reduced in it); otherwise X -> Xt and
/// variant 9's transposed kernel with two tiles per warp in this geometry, splits summed by the
/// reduce kernel (geometry_for sends every other shape to 12).
template <class Tr, int kWarps, bool kLong = false>
void launch_lean2_impl(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  constexpr int NT = Tr::kNTiles;
  if (g.warps != kWarps || g.tiles_per_warp != 2 || p.tiles_per_group != 2 * kWarps || p.sel != nullptr ||
      g.chunk_pairs != (kLong ? sparsenm::vnm_small::lean_long_chunk_pairs(NT) : sparsenm::vnm_small::lean_chunk_pairs(NT)))
    throw std::logic_error("vnm_small: variant 13 / 14 / 15 / 16 geometry is not the lean paired kernel's");
  const dim3 grid(unsigned(groups), unsigned(g.splits));
  const dim3 block(unsigned(32 * kWarps));
  const bool cluster = sparsenm::vnm_small::lean2_cluster_variant(g.variant) && g.splits > 1;
  if (direct_x(p) && cluster) {  // variants 14 / 15: the splits of a group are one cluster, reduced in it
    if (g.splits > sparsenm::vnm_small::kStreamMaxSplits) throw std::logic_error("vnm_small: variant 14 / 15 cluster > 8 blocks");
    LaunchConfig cfg(grid, block, g.smem_bytes(), stream);
    cfg.cluster_y(g.splits);
    SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), vnm_small_kernel_lean2<Tr, true, kWarps, kLong>, p));
    SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_lean2<cluster>");
    return;
  }
  if (direct_x(p)) {
    vnm_small_kernel_lean2<Tr, false, kWarps, kLong><<<grid, block, g.smem_bytes(), stream>>>(p);
    SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_lean2");
  } else {
    launch_transpose<NT>(p, stream);
    launch_dependent(vnm_small_kernel_async<Tr, 2, false, false>, grid, block, g, p, stream);
    SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_async");
  }
  if (g.splits > 1) launch_reduce(p, stream);
}

template <class Tr>
void launch_lean2(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  if (g.variant == sparsenm::vnm_small::kLean2WideVariant)
    launch_lean2_impl<Tr, 8>(p, g, groups, stream);
  else if (g.variant == sparsenm::vnm_small::kLean2LongVariant)
    launch_lean2_impl<Tr, 4, true>(p, g, groups, stream);
  else
    launch_lean2_impl<Tr, 4>(p, g, groups, stream);
}

/// Variant 19 (kernel11.cuh): variant 14's geometry with a producer warp (160 threads per block) when X is
/// 16-byte aligned (splits: one cluster per group, reduced in it); otherwise X -> Xt and variant 9's
/// transposed kernel with two tiles per warp (128 threads) in this geometry, splits by the reduce kernel.
template <class Tr>
void launch_ws(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  if (g.warps != kWsConsumerWarps || g.tiles_per_warp != 2 || p.tiles_per_group != 2 * kWsConsumerWarps || p.sel != nullptr ||
      g.chunk_pairs != sv::lean_chunk_pairs(NT) || g.ring_bytes != std::size_t(kWsConsumerWarps) * sv::ring_stages(sv::kLean2WsVariant) * sv::kRecordBytes)
    throw std::logic_error("vnm_small: variant 19 geometry is not the warp-specialized kernel's");
  const dim3 grid(unsigned(groups), unsigned(g.splits));
  if (!direct_x(p)) {
    launch_transpose<NT>(p, stream);
    launch_dependent(vnm_small_kernel_async<Tr, 2, false, false>, grid, dim3(unsigned(32 * g.warps)), g, p, stream);
    SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_async");
    if (g.splits > 1) launch_reduce(p, stream);
    return;
  }
  if (g.splits > 1) {
    if (g.splits > sv::kStreamMaxSplits) throw std::logic_error("vnm_small: variant 19 cluster > 8 blocks");
    LaunchConfig cfg(grid, dim3(unsigned(kWsThreads)), g.smem_bytes(), stream);
    cfg.cluster_y(g.splits);
    SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), vnm_small_kernel_ws<Tr, true>, p));
    SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_ws<cluster>");
  } else {
    vnm_small_kernel_ws<Tr, false><<<grid, dim3(unsigned(kWsThreads)), g.smem_bytes(), stream>>>(p);
    SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_ws");
  }
}

/// Variant 10 (paired tiles): the staging choice of variant 9.
template <class Tr>
void launch_pair(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  constexpr int NT = Tr::kNTiles;
  const dim3 grid(unsigned(groups), unsigned(g.splits));
  const dim3 block(unsigned(32 * g.warps));
  if (direct_x(p)) {
    vnm_small_kernel_pair<Tr, true><<<grid, block, g.smem_bytes(), stream>>>(p);
  } else {
    launch_transpose<NT>(p, stream);
    launch_dependent(vnm_small_kernel_pair<Tr, false>, grid, block, g, p, stream);
  }
  SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_pair");
  if (g.splits > 1) launch_reduce(p, stream);
}

/// Variants 7 / 14 / 15 / 16 / 19: how many clusters of g.splits blocks of this geometry can be resident at once
/// (cudaOccupancyMaxActiveClusters); 0 when splits <= 1 (no clusters).
template <class T, int NT>
int max_active_clusters(const sparsenm::vnm_small::Geometry& g) {
  using Tr = Traits<T, NT>;
  if (g.splits <= 1) return 0;
  LaunchConfig cfg(dim3(unsigned(g.groups), unsigned(g.splits)),
                   dim3(unsigned(g.variant == sparsenm::vnm_small::kLean2WsVariant ? kWsThreads : 32 * g.warps)),  // 19: + producer warp
                   g.smem_bytes());
  cfg.cluster_y(g.splits);
  if (g.variant == sparsenm::vnm_small::kVnmLeanVariant || g.variant == sparsenm::vnm_small::kVnmDirectVariant)
    return vlean_max_clusters<T, NT>(g);  // launch10.cuh
  int n = 0;
  if (g.variant == sparsenm::vnm_small::kLean2ClusterVariant)
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, vnm_small_kernel_lean2<Tr, true>, cfg.get()));
  else if (g.variant == sparsenm::vnm_small::kLean2WideVariant)
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, vnm_small_kernel_lean2<Tr, true, 8>, cfg.get()));
  else if (g.variant == sparsenm::vnm_small::kLean2LongVariant)
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, vnm_small_kernel_lean2<Tr, true, 4, true>, cfg.get()));
  else if (g.variant == sparsenm::vnm_small::kLean2WsVariant)
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, vnm_small_kernel_ws<Tr, true>, cfg.get()));
  else
    SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, vnm_small_kernel_stream<Tr, false>, cfg.get()));
  return n;
}

template <class T, int NT>
void launch(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream) {
  using Tr = Traits<T, NT>;
  const dim3 grid(unsigned(groups), unsigned(g.splits));
  const dim3 block(unsigned(32 * g.warps));
  // Every V:2:M lean variant (layout.hpp vlean_variant: 20 / 21 / 23) goes to its own launcher, by the same
  // predicate that gave it its geometry: a number missing from a case list here sent variant 26 (session 10d) and
  // variant 24 (session 10g) to the default branch (kernel2 in a foreign geometry: cudaErrorInvalidValue, then an
  // illegal address) on their only device call.
  if (sparsenm::vnm_small::vlean_variant(g.variant)) {
    launch_vlean<T, NT>(p, g, groups, stream);  // launch10.cuh (inst10_*.cu)
    return;
  }
  switch (g.variant) {
    case 0:
      vnm_small_kernel<Tr, false><<<grid, block, g.smem_bytes(), stream>>>(p);
      SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel");
      if (g.splits > 1) launch_reduce(p, stream);
      break;
    case 4:
      vnm_small_kernel<Tr, true><<<grid, block, g.smem_bytes(), stream>>>(p);
      SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel<row gather>");
      if (g.splits > 1) launch_reduce(p, stream);
      break;
    case 5:
    case 6: {
      // X -> Xt (workspace), then the main kernel; 6: as a programmatic dependent of the transpose
      launch_transpose<NT>(p, stream);
      if (g.variant == 5)
        vnm_small_kernel_xt<Tr><<<grid, block, g.smem_bytes(), stream>>>(p);
      else
        launch_dependent(vnm_small_kernel_xt<Tr>, grid, block, g, p, stream);
      SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_xt");
      if (g.splits > 1) launch_reduce(p, stream);
      break;
    }
    case 7:
      launch_stream<Tr>(p, g, groups, stream);
      break;
    case 8:
      if (g.tiles_per_warp > 1)
        vnm_small_kernel_ring<Tr, 2><<<grid, block, g.smem_bytes(), stream>>>(p);
      else
        vnm_small_kernel_ring<Tr, 1><<<grid, block, g.smem_bytes(), stream>>>(p);
      SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel_ring");
      if (g.splits > 1) launch_reduce(p, stream);
      break;
    case 9:
    case 11:
      launch_async<Tr>(p, g, groups, stream);
      break;
    case 12:
      launch_lean<Tr>(p, g, groups, stream);
      break;
    case 13:
    case 14:
    case 15:
    case 16:
      launch_lean2<Tr>(p, g, groups, stream);
      break;
    case 19:
      launch_ws<Tr>(p, g, groups, stream);
      break;
    case 10:
      launch_pair<Tr>(p, g, groups, stream);
      break;
    case 1:
      vnm_small_kernel2<Tr, false><<<grid, block, g.smem_bytes(), stream>>>(p);
      SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel2<batched>");
      break;
    case 2:
    case 3:
      vnm_small_kernel2<Tr, true><<<grid, block, g.smem_bytes(), stream>>>(p);
      SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_kernel2<pipelined>");
      break;
    default:  // a variant with a geometry but no launcher here: never launch a foreign kernel
      throw std::logic_error("vnm_small: no launcher for variant " + std::to_string(g.variant));
  }
}

}  // namespace sparsenm::cuda::vnm_small

#define SPARSENM_VNM_SMALL_INSTANTIATE(T, NT)                                                       \
  template void sparsenm::cuda::vnm_small::launch<T, NT>(const sparsenm::cuda::vnm_small::Params&, \
                                                          const sparsenm::vnm_small::Geometry&,    \
                                                          std::int64_t, cudaStream_t);             \
  template int sparsenm::cuda::vnm_small::prepare<T, NT>(int, int, std::size_t);                 \
  template int sparsenm::cuda::vnm_small::max_active_clusters<T, NT>(const sparsenm::vnm_small::Geometry&);
