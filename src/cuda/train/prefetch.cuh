// sparsenm — pieces of the persistent, prefetching training kernels (session 3, second pass;
// docs/PERF-train.md "Session 3b"): cp.async copies into thread-private shared-memory slots
// (the next tile's input is in flight while the current one is computed, without costing
// registers), a walker over a 3-D tile grid for grid-stride loops, and the persistent grid size.
//
// Thread-private slots: thread t owns the 16-byte (8-byte, 4-byte) words at index j * threads + t
// of its buffers, so a warp's shared-memory reads of one j are consecutive (conflict-free) and no
// barrier is needed: cp.async.wait_group makes a thread's own copies visible to itself. Every
// loop iteration commits exactly one group (possibly empty), so wait_group<1> means "everything
// but the newest group has landed".
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "cuda/common.cuh"

namespace sparsenm::train::detail {

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
/// 16 bytes global -> shared, L1 bypassed (.cg).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(smem)), "l"(gmem) : "memory");
}
/// 4 bytes global -> shared (.ca: the only form for 4 bytes).
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_addr(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/// Position (x fastest, then y, then z) of a tile in an nx x ny x nz grid, advanced by a fixed
/// stride (the persistent grid size) without divisions: the stride's own decomposition
/// (dx, dy, dz) is computed once on the host (make_tile_walk).
struct TileWalk {
  unsigned nx = 1, ny = 1, nz = 1;  ///< grid of tiles
  unsigned dx = 0, dy = 0, dz = 0;  ///< stride = dx + nx (dy + ny dz)
};
inline TileWalk make_tile_walk(std::int64_t nx, std::int64_t ny, std::int64_t nz, std::int64_t stride) {
  TileWalk w;
  w.nx = unsigned(nx), w.ny = unsigned(ny), w.nz = unsigned(nz);
  w.dx = unsigned(stride % nx);
  w.dy = unsigned((stride / nx) % ny);
  w.dz = unsigned(stride / (nx * ny));
  return w;
}
struct TilePos {
  unsigned x, y, z;
  /// The tile `start` (< nx ny nz) of the walk.
  __device__ __forceinline__ static TilePos at(const TileWalk& w, unsigned start) {
    return {start % w.nx, (start / w.nx) % w.ny, start / (w.nx * w.ny)};
  }
  __device__ __forceinline__ bool valid(const TileWalk& w) const { return z < w.nz; }
  __device__ __forceinline__ void advance(const TileWalk& w) {
    x += w.dx;
    unsigned cy = 0;
    if (x >= w.nx) x -= w.nx, cy = 1;
    y += w.dy + cy;
    unsigned cz = 0;
    if (y >= w.ny) y -= w.ny, cz = 1;
    z += w.dz + cz;
  }
};

/// Persistent grid size of one kernel: resident CTAs per SM x SMs of the current device, capped
/// by the number of tiles. Queried once per device (a call site keeps one static instance per
/// kernel) together with the kernel's dynamic shared-memory limit (set above 48 KB).
struct ResidentCtas {
  static constexpr int kMaxDevices = 64;
  std::atomic<int> total[kMaxDevices] = {};  ///< 0: not queried yet

  template <class K>
  std::int64_t grid(K kernel, int threads, std::size_t dyn_smem, std::int64_t tiles) {
    int dev = 0;
    SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
    int n = dev < kMaxDevices ? total[dev].load(std::memory_order_relaxed) : 0;
    if (n == 0) {
      if (dyn_smem > 48 * 1024)
        SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dyn_smem)));
      int sms = 0, per_sm = 0;
      SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, dyn_smem));
      n = std::max(per_sm, 1) * std::max(sms, 1);
      if (dev < kMaxDevices) total[dev].store(n, std::memory_order_relaxed);
    }
    return std::max<std::int64_t>(1, std::min<std::int64_t>(tiles, n));
  }
};

/// Dynamic shared memory that pads a launch of `kernel` (`threads` per CTA) so that at most
/// `limit` CTAs are resident per SM: the occupancy control of docs/PERF-train.md "Session 4"
/// (bench and profiling only; Mask24Args / Mvue24Args::max_ctas_per_sm; a negative limit -k
/// means k fewer than the kernel's own occupancy). 0 when limit is 0 or when the kernel's
/// registers already allow no more than `limit`.
template <class K>
std::size_t occupancy_cap_smem(K kernel, int threads, int limit) {
  if (limit == 0) return 0;
  int dev = 0, per_sm = 0, reserved = 0, now = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&now, kernel, threads, 0));
  if (limit < 0) limit = std::max(1, now + limit);
  if (now <= limit) return 0;
  cudaFuncAttributes fa{};
  SPARSENM_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  const long dyn = long(per_sm / limit) - long(fa.sharedSizeBytes) - long(reserved);
  if (dyn <= 0) return 0;
  SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dyn)));
  return std::size_t(dyn);
}

}  // namespace sparsenm::train::detail
