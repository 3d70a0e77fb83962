// sparsenm — cuda:vnm_gemv variant 7 ("streamed"): register-pipelined weight stream, two row
// tiles per warp sharing every B fragment, X staged by plain copies, k splits reduced inside a
// thread-block cluster (sm_90). Same records, mma.sp math and metadata as variants 0-6
// (kernel.cuh: read its header first).
//
// Status (H200 run dd6d33a, PERF-vnm-small.md "Session 3 measured"): correct (every VnmSmallGpu
// test, racecheck and memcheck clean) but SLOWER than variants 4/6 (m = 1: 12-16 %; m = 32: tie
// with v6), so opt-in only. Its m slope is v6's or better without a transpose launch; its weight
// stream is the limit: the register ring costs resident warps (2 blocks of 8 per SM, 113-128
// registers) and bytes in flight per SM did not grow (ncu: 52 % long-scoreboard stalls).
//
// Why (PERF-vnm-small.md, session 3). Variants 4-6 lose to cuSPARSELt at m = 16..32 and sit at
// 81-95 % of the copy floor at m = 1..8. What they pay besides the weight: (a) for hw24 a
// gather that recomputes index math per staged word (v4) or a transpose launch (v5/v6), (b) a
// record batch that is loaded and then waited for before the next batch is issued (no loads in
// flight while a warp computes), (c) one B fragment load per (row tile, k step, n8 tile): the
// staged X is re-read by every warp, (d) the k-split partials written to a global workspace and
// summed by a second kernel launch (a launch gap of ~1.5-2.5 us and splits * m * n * 8 bytes of
// traffic: 11 % of the weight bytes at m = 32).
//
// What this kernel does instead:
//   * hw24 (identity selection): X is staged as it is in memory, rows i < m, columns of the
//     chunk, [row][column] with a row pitch of 16 mod 128 bytes, by 16-byte cp.async (k % 8 == 0
//     and X 16-byte aligned; else a scalar fallback, zero past k). No index math, no transpose
//     launch. B fragments: ldmatrix.x4 (non-transposed): lane l addresses X row 8 nt + l % 8,
//     columns kbase + 8 (l / 8) .. +7; lane (g, t) receives register q = X[8 nt + g][kbase + 8 q +
//     2 t, +1], exactly mma.m16n8k32's B register q. The pitch makes the 8 rows of a phase hit 8
//     distinct 16-byte bank groups: conflict free.
//   * venom (V:2:M): the gathered columns of a slab are not contiguous, so it stages from the
//     transposed X of variants 5/6 (one transpose launch per call; kernel3.cuh) with the same
//     swizzled units and ldmatrix.trans.
//   * Each warp owns kTw = 2 row tiles (32 rows); a B fragment is loaded once per (k step, n8
//     tile) and feeds both tiles' mma.sp. Block = ceil(tiles per group / 2) warps; hw24 group =
//     256 rows (8 warps), venom group = one slab of V rows.
//   * Weight stream: batches of one pair x 2 tiles (2 records, 2.3 KB per warp) in a register
//     ring of depth 3: the loads of batch j + 2 are issued before batch j is consumed, so a warp
//     keeps 2 batches = 4.6 KB in flight while it computes (16 warps per SM: ~74 KB). Depth 4
//     spilled (48-56 bytes at NT = 1, 2) under the 128-register cap of 2 blocks per SM.
//   * X chunks of chunk_pairs pairs, two buffers; the copies of chunk c + 1 are issued right
//     after the barrier that opens chunk c (one __syncthreads per chunk; the weight loads of the
//     next batch are already in flight across it).
//   * k splits (grid.y = splits <= 8) form one cluster (1, splits, 1): at the end each block
//     writes its fp32 partial tile [8 NT][rows + 4] into its own shared memory (the X buffers),
//     cluster.sync, then block z sums rows [z rows / splits, ...) over the cluster's blocks in
//     rank order through distributed shared memory (deterministic) and stores y. No workspace,
//     no second kernel, no global partial traffic.
//
// Tails: rows past n read padded records (zero values) and are not stored; tiles past the group
// are skipped; columns >= k stage 0 (cp.async zero fill / scalar path); X rows m..8 NT-1 are
// zeroed once per block (hw24) or are zero in the transposed workspace (venom).
#pragma once
#include <cooperative_groups.h>

#include "cuda/vnm_small/kernel3.cuh"

namespace sparsenm::cuda::vnm_small {

inline constexpr int kStreamTw = 2;  ///< row tiles per warp (variant 7)
inline constexpr int kStreamU = 1;   ///< pairs per register batch (variant 7)
/// Register ring depth of variant 7: kD - 1 batches (of kStreamU pairs x kStreamTw tiles) stay in
/// flight while one is consumed. 3 at every NT (ptxas sm_90a: 94-128 registers, no spills; 4
/// spilled at NT = 1, 2).
template <int NT>
inline constexpr int kStreamDepth = 3;

__device__ __forceinline__ uint4 ldsm_x4(std::uint32_t addr) {
  uint4 v;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

/// One register batch: kStreamU pairs x kStreamTw row tiles of records.
struct StreamBatch {
  uint4 a[kStreamU][kStreamTw][2];
  std::uint32_t e[kStreamU][kStreamTw];
};

template <class Tr, bool kVenom>
__global__ void __launch_bounds__(256, 2) vnm_small_kernel_stream(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using T = typename Tr::T;
  constexpr int NT = Tr::kNTiles;
  constexpr int kRows = NT * 8;
  extern __shared__ uint4 smem_u4[];
  const std::uint32_t sbase = smem_addr(smem_u4);
  const std::uint32_t pitch = std::uint32_t(p.smem_words_per_row) * 4u;  // hw24: bytes per staged X row
  const std::uint32_t buf_bytes = std::uint32_t(kRows) * pitch;

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t group = blockIdx.x;
  const std::int64_t tile0 = group * p.tiles_per_group;
  const int tiles_here = int(min(std::int64_t(p.tiles_per_group), p.row_tiles - tile0));
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const std::int64_t pair1 = min(p.pairs, pair0 + p.pairs_per_split);
  const int C = p.chunk_pairs;  // even (a multiple of kStreamU)

  const uint4* rec[kStreamTw];
  bool valid[kStreamTw];
#pragma unroll
  for (int tw = 0; tw < kStreamTw; ++tw) {
    const int rt = warp * kStreamTw + tw;
    valid[tw] = rt < tiles_here;
    rec[tw] = p.w + std::size_t(tile0 + (valid[tw] ? rt : 0)) * std::size_t(p.pairs) * kRecordU4;
  }

  auto load_batch = [&](StreamBatch& b, std::int64_t cp) {
#pragma unroll
    for (int u = 0; u < kStreamU; ++u)
#pragma unroll
      for (int tw = 0; tw < kStreamTw; ++tw)
        if (valid[tw] && cp + u < pair1) {
          const uint4* r = rec[tw] + std::size_t(cp + u) * kRecordU4;
          b.a[u][tw][0] = ldg_stream(r + lane);
          b.a[u][tw][1] = ldg_stream(r + 32 + lane);
          b.e[u][tw] = ldg_stream32(reinterpret_cast<const std::uint32_t*>(r + 64) + lane);
        }
  };

  // ---- staging of chunk c (pairs [pair0 + c C, +C)) into buffer c & 1; commits one group ----
  const std::uint8_t* sel = kVenom ? p.sel + group * p.windows_pad * 4 : nullptr;
  auto stage = [&](std::int64_t c0, int buf) {
    const int npairs = int(min(std::int64_t(C), pair1 - c0));
    const std::uint32_t dbase = sbase + std::uint32_t(buf) * buf_bytes;
    if constexpr (kVenom) {
      const int nkk = npairs * 64;
      const unsigned wbase = unsigned(c0) * 16u, nwin = unsigned(p.windows), win = unsigned(p.window), kcols = unsigned(p.k);
      for (int kk = threadIdx.x; kk < nkk; kk += blockDim.x) {
        const unsigned w = wbase + unsigned(kk >> 2), q = unsigned(kk & 3);
        unsigned c = ~0u;
        if (w < nwin) c = w * win + unsigned(__ldg(sel + (w * 4u + q)));
        const bool ok = c < kcols;
        const uint4* src = p.xt + (ok ? std::size_t(c) * NT : 0);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          cp_async16_zfill(dbase + std::uint32_t(sparsenm::vnm_small::xt_unit(kk, nt, NT)) * 16u, src + nt, ok ? 16 : 0);
      }
    } else {
      const std::uint16_t* x = static_cast<const std::uint16_t*>(p.x);
      const int upr = npairs * 8;  // 16-byte units per staged row
      const std::int64_t col0 = c0 * 64;
      const bool fast = (p.k & 7) == 0 && (reinterpret_cast<std::uintptr_t>(x) & 15) == 0;
      for (int u = threadIdx.x; u < p.m * upr; u += blockDim.x) {
        const int i = u / upr, cu = u - i * upr;
        const std::int64_t col = col0 + std::int64_t(cu) * 8;
        const std::uint32_t dst = dbase + std::uint32_t(i) * pitch + std::uint32_t(cu) * 16u;
        const std::uint16_t* src = x + std::size_t(i) * std::size_t(p.k) + std::size_t(col);
        if (fast) {
          cp_async16_zfill(dst, col < p.k ? src : x, col < p.k ? 16 : 0);
        } else {
          std::uint32_t v[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const std::uint32_t lo = col + 2 * e < p.k ? std::uint32_t(__ldg(src + 2 * e)) : 0u;
            const std::uint32_t hi = col + 2 * e + 1 < p.k ? std::uint32_t(__ldg(src + 2 * e + 1)) : 0u;
            v[e] = lo | (hi << 16);
          }
          asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(dst), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
                       : "memory");
        }
      }
    }
    cp_async_commit_group();
  };

  float acc[kStreamTw][NT][4];
#pragma unroll
  for (int a = 0; a < kStreamTw; ++a)
#pragma unroll
    for (int b = 0; b < NT; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  // B-fragment lane offsets (bytes within a buffer), per n8 tile
  std::uint32_t lane_off[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    lane_off[nt] = kVenom ? std::uint32_t(sparsenm::vnm_small::xt_unit(lane, nt, NT)) * 16u
                          : std::uint32_t(8 * nt + (lane & 7)) * pitch + std::uint32_t(lane >> 3) * 16u;

  // pairs cp, cp + 1 = local pairs lp0, lp0 + 1 of the chunk in buffer buf
  auto compute = [&](const StreamBatch& b, std::int64_t cp, int lp0, int buf) {
    const std::uint32_t xb = sbase + std::uint32_t(buf) * buf_bytes;
#pragma unroll
    for (int u = 0; u < kStreamU; ++u) {
      if (cp + u < pair1) {
        const int lp = lp0 + u;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const std::uint32_t step = kVenom ? xb + std::uint32_t((lp * 64 + h * 32) * NT * 16) : xb + std::uint32_t(lp * 128 + h * 64);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const uint4 bf = kVenom ? ldsm_x4_trans(step + lane_off[nt]) : ldsm_x4(step + lane_off[nt]);
#pragma unroll
            for (int tw = 0; tw < kStreamTw; ++tw)
              if (valid[tw]) mma_sp<T>(acc[tw][nt], b.a[u][tw][h], bf, b.e[u][tw], h);
          }
        }
      }
    }
  };

  constexpr int kD = kStreamDepth<NT>;
  StreamBatch ring[kD];
#pragma unroll
  for (int j = 0; j + 1 < kD; ++j) load_batch(ring[j], pair0 + j * kStreamU);  // the weight stream starts first
  if constexpr (!kVenom) {
    // rows m..kRows-1 of both buffers read as zero (never written by stage)
    const int per = (kRows - p.m) * int(pitch / 16u);
    for (int idx = threadIdx.x; idx < 2 * per; idx += blockDim.x) {
      const int bsel = idx >= per ? 1 : 0, rem = idx - bsel * per;
      const std::uint32_t dst = sbase + std::uint32_t(bsel) * buf_bytes + std::uint32_t(p.m) * pitch + std::uint32_t(rem) * 16u;
      asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};" ::"r"(dst), "r"(0u) : "memory");
    }
  }
  stage(pair0, 0);
  // One batch: issue the loads of the batch kD - 1 ahead, then (at a chunk start) wait for the chunk's copies,
  // make them and the zero rows visible, and issue the following chunk's copies into the other
  // buffer (read last in the previous chunk, which every warp has finished: the barrier); then
  // consume the current batch. Batches never straddle a chunk (chunk_pairs is a multiple of kU).
  int lp = 0, buf = 0;
  auto step = [&](const StreamBatch& cur, StreamBatch& ahead, std::int64_t cp) {
    load_batch(ahead, cp + (kD - 1) * kStreamU);
    if (lp == 0) {
      cp_async_wait_all();
      __syncthreads();
      if (cp + C < pair1) stage(cp + C, buf ^ 1);
    }
    compute(cur, cp, lp, buf);
    lp += kStreamU;
    if (lp == C) lp = 0, buf ^= 1;
  };
  for (std::int64_t cp = pair0; cp < pair1; cp += kD * kStreamU) {
#pragma unroll
    for (int j = 0; j < kD; ++j)
      if (cp + j * kStreamU < pair1) step(ring[j], ring[(j + kD - 1) % kD], cp + j * kStreamU);
  }

  // ---- epilogue: D fragment c0,c1 = (row g, n 2t, 2t+1), c2,c3 = (row g+8, ...) ----
  const int g = lane >> 2, t = lane & 3;
  const int grows = p.tiles_per_group * 16;
  if (p.splits == 1) {
#pragma unroll
    for (int tw = 0; tw < kStreamTw; ++tw) {
      if (!valid[tw]) continue;
      const std::int64_t r = (tile0 + warp * kStreamTw + tw) * 16 + g;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int i = nt * 8 + 2 * t;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int ii = i + (c & 1);
          const std::int64_t rr = r + 8 * (c >> 1);
          if (ii < p.m && rr < p.n) store_y(p.y, p.y_dtype, std::size_t(ii) * std::size_t(p.n) + std::size_t(rr), acc[tw][nt][c]);
        }
      }
    }
    return;
  }
  // k splits: the cluster (1, splits, 1) holds every split of this group.
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int ppitch = grows + 4;  // floats per partial row: lanes (g, t) hit banks g + 8 t
  float* part = reinterpret_cast<float*>(smem_u4);
  __syncthreads();  // every warp is done with the X buffers (no copies outstanding)
#pragma unroll
  for (int tw = 0; tw < kStreamTw; ++tw) {
    const int rl = (warp * kStreamTw + tw) * 16 + g;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int i = nt * 8 + 2 * t;
      part[i * ppitch + rl] = acc[tw][nt][0];
      part[(i + 1) * ppitch + rl] = acc[tw][nt][1];
      part[i * ppitch + rl + 8] = acc[tw][nt][2];
      part[(i + 1) * ppitch + rl + 8] = acc[tw][nt][3];
    }
  }
  cluster.sync();
  const int z = int(cluster.block_rank()), S = p.splits;
  const int slice = (grows + S - 1) / S, rbeg = z * slice, rend = min(grows, rbeg + slice);
  const int span = max(0, rend - rbeg);
  for (int idx = threadIdx.x; idx < p.m * span; idx += blockDim.x) {
    const int i = idx / span, rl = rbeg + (idx - i * span);
    const std::int64_t r = tile0 * 16 + rl;
    float s = 0.0f;
    for (int q = 0; q < S; ++q) s += cluster.map_shared_rank(part, q)[i * ppitch + rl];
    if (r < p.n) store_y(p.y, p.y_dtype, std::size_t(i) * std::size_t(p.n) + std::size_t(r), s);
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
#else
  __trap();  // sm_90+ only (clusters); the plan maps variant 7 to 4 below sm_90 (geometry_for)
#endif
}

}  // namespace sparsenm::cuda::vnm_small
