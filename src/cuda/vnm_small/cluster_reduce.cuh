// The k-split reduction that the lean paired kernels share (variant 14 / 16 in kernel9.cuh, variant 19
// in kernel11.cuh, variant 20 in kernel10.cuh): the S blocks of one row group run as one thread-block
// cluster; each block stages its fp32 partial sums in its own shared memory, and after a cluster
// barrier block z sums rows [z ceil(R / S), ...) of the group over the S blocks' tables through
// distributed shared memory, in split order (the order the separate reduce kernel sums in), and
// stores y. One copy of this code instead of three (session 9).
//
// Table layout: [8 NT][R + 4] floats (output column i = n8 tile x 8 + lane pair, row within the
// group); the pitch R + 4 = 4 mod 32 words makes the staging stores of lanes (g, t) hit banks
// g + 8 t: conflict free.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "cuda/vnm_small/traits.cuh"

namespace sparsenm::cuda::vnm_small {

/// Partial-sum table pitch (floats) for kRows rows per group.
template <int kRows>
inline constexpr int kClusterPitch = kRows + 4;

/// One warp's two row tiles (2 warp, 2 warp + 1 of the group; mma m16n8 accumulator fragments of
/// NT n8 tiles) into the table. The caller has passed a block barrier after the last read of the
/// shared memory that `part` reuses.
template <int NT, int kRows>
__device__ __forceinline__ void stage_pair_partials(float* part, const float (&acc0)[NT][4], const float (&acc1)[NT][4],
                                                    int warp, int lane) {
  constexpr int kPitch = kClusterPitch<kRows>;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int a = 0; a < 2; ++a) {
    const int rl = (2 * warp + a) * 16 + g;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int i = nt * 8 + 2 * t;
      const float(&ac)[4] = a ? acc1[nt] : acc0[nt];
      part[i * kPitch + rl] = ac[0];
      part[(i + 1) * kPitch + rl] = ac[1];
      part[i * kPitch + rl + 8] = ac[2];
      part[(i + 1) * kPitch + rl + 8] = ac[3];
    }
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// Cluster barrier (every block's table staged), this block's slice of the group's rows summed over
/// the cluster's tables and stored to y (rows >= p.n skipped), cluster barrier (no block leaves while
/// another still reads its shared memory). row0: the group's first output row. kThreads: the threads
/// of the block that take part (tid < kThreads; every thread of the block reaches both barriers).
template <int kRows, int kThreads, class P>
__device__ __forceinline__ void cluster_sum_store(cooperative_groups::cluster_group& cluster, float* part, const P& p,
                                                  std::int64_t row0, int tid) {
  constexpr int kPitch = kClusterPitch<kRows>;
  cluster.sync();
  const int z = int(cluster.block_rank()), S = int(cluster.num_blocks());
  const int slice = (kRows + S - 1) / S, rbeg = z * slice, rend = min(kRows, rbeg + slice);
  const int span = max(0, rend - rbeg);
  // kU outputs per thread and round: all their distributed-shared-memory loads are issued before
  // any store (a store to y could alias them for the compiler), so the remote latencies overlap
  // instead of one round trip per output (s8c: at m = 32 a thread has up to 11 outputs).
  constexpr int kU = 4;
  const int total = p.m * span;
  for (int idx0 = tid; idx0 < total; idx0 += kU * kThreads) {
    float sum[kU];
    int off[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int idx = min(idx0 + u * kThreads, total - 1);  // a clamped duplicate is not stored
      const int i = idx / span;
      off[u] = i * kPitch + rbeg + (idx - i * span);
      sum[u] = 0.0f;
    }
    for (int q = 0; q < S; ++q) {  // split order, as the reduce kernel sums
      const float* rp = cluster.map_shared_rank(part, q);
#pragma unroll
      for (int u = 0; u < kU; ++u) sum[u] += rp[off[u]];
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int idx = idx0 + u * kThreads;
      if (idx >= total) break;
      const int i = idx / span, rl = rbeg + (idx - i * span);
      const std::int64_t r = row0 + rl;
      if (r < p.n) store_y(p.y, p.y_dtype, std::size_t(i) * std::size_t(p.n) + std::size_t(r), sum[u]);
    }
  }
  cluster.sync();
}
#endif

}  // namespace sparsenm::cuda::vnm_small
