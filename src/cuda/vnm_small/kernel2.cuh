// sparsenm — cuda:vnm_gemv variants 1 (batched) and 2/3 (pipelined); variant 0 is kernel.cuh.
//
// Status: correct on the H200 (all VnmSmallGpu tests, racecheck and memcheck clean) but SLOWER
// than variant 0 (device run of ca6f7f6, docs/PERF-vnm-small.md "Run 2 measured"): the gather
// below is instruction bound (~180 SASS instructions per unit, recomputed per X row), not
// latency bound as assumed when it was written. Not the plan's choice; kept for the next attempt.
//
// Same records, tiling and mma.sp math as kernel.cuh (read its header first). What differs:
//
// Gather. Run 1's gather staged one word per loop trip with a dependent sel load, an integer
// division and two X loads in series: ~kRows * words / threads L2 round trips per chunk (32 at
// m = 32), the measured limiter. Here a thread owns the units u = tid + s * threads of the chunk
// (unit = X row i < m, gathered word j; UnitWalker in layout.hpp, no division per unit) and
// handles them in slices of kGatherUnits: all selection loads of the slice, then all X loads,
// then the shared stores: 1-2 L2 round trips per slice. Rows m..kRows-1 of the staged X are
// zeroed once per block (they only feed the padded columns of the n8 tiles).
//
// Pipelining (variants 2, 3). Two staged-X buffers. While a warp streams the records of chunk c
// from buffer c % 2, it gathers chunk c+1 into the other buffer, its slices spread evenly over its
// record batches, between issuing a batch's loads and its mma's (the last slice of a batch is
// stored after the mma's): the gather's L2 latency hides under the weight's HBM latency. Leftover slices (idle warps of a partial slab, more slices than batches) drain after
// the stream loop. One __syncthreads per chunk separates the writes of buffer b (chunk c) from
// its reads (chunk c+1) and the reads of chunk c from the overwrite in chunk c+1.
//
// Prefetch. Each batch also prefetches the warp's next batch of records into L2
// (prefetch.global.L2, no registers), doubling the weight bytes in flight per warp.
//
// k splits. The last block of a group to finish (atomic arrival counter per group, the
// threadFenceReduction pattern) sums the splits' fp32 partials in split order (deterministic)
// and writes y, then resets the counter: no second kernel launch.
#pragma once
#include "cuda/vnm_small/kernel.cuh"

namespace sparsenm::cuda::vnm_small {

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

__device__ __forceinline__ unsigned ldg_u16(const void* p) {
  return unsigned(__ldg(static_cast<const unsigned short*>(p)));
}

/// One gather slice, load half: up to kG units of the walker -> v (packed words) and off (shared
/// word offsets, -1: no unit). The stores are gather_store (after the caller's mma's).
template <int kG>
__device__ __forceinline__ void gather_load(const Params& p, sparsenm::vnm_small::UnitWalker& wk, std::int64_t wbase,
                                            int words, const std::uint8_t* sel, std::uint32_t (&v)[kG], int (&off)[kG]) {
  const std::uint16_t* x = static_cast<const std::uint16_t*>(p.x);
  unsigned s16[kG];
  int row[kG], wl[kG];
#pragma unroll
  for (int g = 0; g < kG; ++g) {
    off[g] = -1;
    row[g] = 0;
    wl[g] = 0;
    s16[g] = 0;
    if (wk.left > 0) {
      const int j = wk.j;
      row[g] = wk.i;
      wl[g] = j >> 1;
      off[g] = wk.i * p.smem_words_per_row + sparsenm::vnm_small::xs_slot(j);
      const std::int64_t w = wbase + (j >> 1);
      if (sel == nullptr)
        s16[g] = sparsenm::vnm_small::identity_sel16(j);
      else if (w < p.windows)
        s16[g] = ldg_u16(sel + w * 4 + 2 * (j & 1));
      wk.next(blockDim.x, words);
    }
  }
#pragma unroll
  for (int g = 0; g < kG; ++g) {
    v[g] = 0;
    if (off[g] >= 0) {
      std::int64_t c_lo, c_hi;
      sparsenm::vnm_small::word_columns(wbase + wl[g], s16[g], p.window, p.windows, p.k, c_lo, c_hi);
      const std::uint16_t* xr = x + std::size_t(row[g]) * std::size_t(p.k);
      if (c_lo >= 0 && c_hi == c_lo + 1 && ((reinterpret_cast<std::uintptr_t>(xr + c_lo) & 3u) == 0)) {
        v[g] = __ldg(reinterpret_cast<const unsigned int*>(xr + c_lo));  // adjacent pair (hw24, k even)
      } else {
        const std::uint32_t lo = c_lo >= 0 ? std::uint32_t(__ldg(xr + c_lo)) : 0u;
        const std::uint32_t hi = c_hi >= 0 ? std::uint32_t(__ldg(xr + c_hi)) : 0u;
        v[g] = lo | (hi << 16);
      }
    }
  }
}

template <int kG>
__device__ __forceinline__ void gather_store(std::uint32_t* xs, const std::uint32_t (&v)[kG], const int (&off)[kG]) {
#pragma unroll
  for (int g = 0; g < kG; ++g)
    if (off[g] >= 0) xs[off[g]] = v[g];
}

template <class Tr, bool kPipe>
__global__ void __launch_bounds__(Tr::kMaxThreads, Tr::kMinBlocks) vnm_small_kernel2(const Params p) {
  using T = typename Tr::T;
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  constexpr int kRows = NT * 8;
  constexpr int kG = Tr::kGatherUnits;
  constexpr int kBuffers = kPipe ? 2 : 1;
  extern __shared__ uint4 smem_u4[];
  __shared__ int s_last;
  std::uint32_t* const xs0 = reinterpret_cast<std::uint32_t*>(smem_u4);

  const int S = p.smem_words_per_row;
  const int buf_words = kRows * S;
  const int tid = threadIdx.x, nthreads = blockDim.x;
  const int lane = tid & 31, warp = tid >> 5, nwarps = nthreads >> 5;
  const int g = lane >> 2, t = lane & 3;
  const std::int64_t group = blockIdx.x;
  const std::int64_t tile0 = group * p.tiles_per_group;
  const int tiles_here = int(min(std::int64_t(p.tiles_per_group), p.row_tiles - tile0));
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const std::int64_t pair1 = min(p.pairs, pair0 + p.pairs_per_split);
  const std::uint8_t* sel = p.sel ? p.sel + group * p.windows_pad * 4 : nullptr;

  // Rows m..kRows-1 of every buffer: zero once (read by the padded n8 columns, never written).
  for (int idx = tid; idx < (kRows - p.m) * S * kBuffers; idx += nthreads) {
    const int b = idx / ((kRows - p.m) * S), r = idx - b * ((kRows - p.m) * S);
    xs0[b * buf_words + p.m * S + r] = 0u;
  }

  float acc[Tr::kMaxTilesPerWarp][NT][4];
#pragma unroll
  for (int a = 0; a < Tr::kMaxTilesPerWarp; ++a)
#pragma unroll
    for (int b = 0; b < NT; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  // Gathers a whole chunk into xs (not overlapped with anything but the L2 prefetches).
  auto gather_all = [&](std::int64_t c0, std::uint32_t* xs) {
    const int words = int(min(std::int64_t(p.chunk_pairs), pair1 - c0)) * 32;
    sv::UnitWalker wk;
    wk.start(tid, nthreads, p.m, words);
    while (wk.left > 0) {
      std::uint32_t v[kG];
      int off[kG];
      gather_load<kG>(p, wk, c0 * 16, words, sel, v, off);
      gather_store<kG>(xs, v, off);
    }
  };
  auto prefetch_records = [&](std::int64_t rt, std::int64_t from, std::int64_t to) {
    // records [from, to) of row tile rt (contiguous), clamped to this split
    to = min(to, pair1);
    if (from >= to) return;
    const char* base = reinterpret_cast<const char*>(p.w + (std::size_t(tile0 + rt) * std::size_t(p.pairs) + std::size_t(from)) * kRecordU4);
    const int bytes = int(to - from) * sv::kRecordBytes;
    for (int o = lane * 128; o < bytes; o += 32 * 128) prefetch_l2(base + o);
  };

  int buf = 0;
  if (kPipe && pair0 < pair1) {
    // the first records of each owned tile to L2 while the first chunk's X is gathered
#pragma unroll
    for (int tp = 0; tp < Tr::kMaxTilesPerWarp; ++tp) {
      const int rt = warp + tp * nwarps;
      if (tp < p.tiles_per_warp && rt < tiles_here) prefetch_records(rt, pair0, pair0 + Tr::kBatch2);
    }
    gather_all(pair0, xs0);
    __syncthreads();
  }
  for (std::int64_t c0 = pair0; c0 < pair1; c0 += p.chunk_pairs) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    std::uint32_t* const xs = xs0 + buf * buf_words;
    const std::int64_t c1 = c0 + p.chunk_pairs;
    const int nwords = kPipe && c1 < pair1 ? int(min(std::int64_t(p.chunk_pairs), pair1 - c1)) * 32 : 0;
    std::uint32_t* const xs_next = xs0 + (buf ^ 1) * buf_words;
    sv::UnitWalker wk;
    wk.start(tid, nthreads, nwords > 0 ? p.m : 0, nwords);
    if (!kPipe) {
      // first records of each owned tile to L2 while the chunk's X is gathered
#pragma unroll
      for (int tp = 0; tp < Tr::kMaxTilesPerWarp; ++tp) {
        const int rt = warp + tp * nwarps;
        if (tp < p.tiles_per_warp && rt < tiles_here) prefetch_records(rt, c0, c0 + Tr::kBatch2);
      }
      gather_all(c0, xs);
      __syncthreads();
    }

    // ---- stream the records of this chunk ----
    // Gather slices of the next chunk are spread evenly over this warp's record batches.
    int batches_left = 0;
#pragma unroll
    for (int tp = 0; tp < Tr::kMaxTilesPerWarp; ++tp)
      if (tp < p.tiles_per_warp && warp + tp * nwarps < tiles_here) batches_left += (npairs + Tr::kBatch2 - 1) / Tr::kBatch2;
#pragma unroll
    for (int tp = 0; tp < Tr::kMaxTilesPerWarp; ++tp) {
      const int rt = warp + tp * nwarps;
      if (tp < p.tiles_per_warp && rt < tiles_here) {
        const uint4* rec = p.w + (std::size_t(tile0 + rt) * std::size_t(p.pairs) + std::size_t(c0)) * kRecordU4;
        for (int cp = 0; cp < npairs; cp += Tr::kBatch2) {
          uint4 a[Tr::kBatch2][2];
          std::uint32_t e[Tr::kBatch2];
#pragma unroll
          for (int u = 0; u < Tr::kBatch2; ++u) {
            if (cp + u < npairs) {
              const uint4* r = rec + std::size_t(cp + u) * kRecordU4;
              a[u][0] = ldg_stream(r + lane);
              a[u][1] = ldg_stream(r + 32 + lane);
              e[u] = ldg_stream32(reinterpret_cast<const std::uint32_t*>(r + 64) + lane);
            }
          }
          prefetch_records(rt, c0 + cp + Tr::kBatch2, c0 + cp + 2 * Tr::kBatch2);
          std::uint32_t gv[kG];
          int goff[kG];
          const bool gather_here = kPipe && wk.left > 0;
          if (gather_here) {
            // this batch's share: all but the last slice stored at once, the last one after the mma's
            const int slices = ((wk.left + kG - 1) / kG + batches_left - 1) / batches_left;
            for (int sl = 1; sl < slices; ++sl) {
              gather_load<kG>(p, wk, c1 * 16, nwords, sel, gv, goff);
              gather_store<kG>(xs_next, gv, goff);
            }
            gather_load<kG>(p, wk, c1 * 16, nwords, sel, gv, goff);
          }
          --batches_left;
#pragma unroll
          for (int u = 0; u < Tr::kBatch2; ++u) {
            if (cp + u < npairs) {
#pragma unroll
              for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                  const uint4 b = *reinterpret_cast<const uint4*>(xs + (nt * 8 + g) * S + (cp + u) * 32 + h * 16 + 4 * t);
                  mma_sp<T>(acc[tp][nt], a[u][h], b, e[u], h);
                }
              }
            }
          }
          if (gather_here) gather_store<kG>(xs_next, gv, goff);
        }
      }
    }
    if (kPipe) {
      while (wk.left > 0) {  // slices left over (idle warps, more slices than batches)
        std::uint32_t v[kG];
        int off[kG];
        gather_load<kG>(p, wk, c1 * 16, nwords, sel, v, off);
        gather_store<kG>(xs_next, v, off);
      }
      buf ^= 1;
    }
    __syncthreads();
  }

  // ---- epilogue: D fragment c0,c1 = (row g, n 2t, 2t+1), c2,c3 = (row g+8, ...) ----
#pragma unroll
  for (int tp = 0; tp < Tr::kMaxTilesPerWarp; ++tp) {
    const int rt = warp + tp * nwarps;
    if (tp < p.tiles_per_warp && rt < tiles_here) {
      const std::int64_t r = (tile0 + rt) * 16 + g;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int i = nt * 8 + 2 * t;
        store_out<Tr>(p, i, r, acc[tp][nt][0]);
        store_out<Tr>(p, i + 1, r, acc[tp][nt][1]);
        store_out<Tr>(p, i, r + 8, acc[tp][nt][2]);
        store_out<Tr>(p, i + 1, r + 8, acc[tp][nt][3]);
      }
    }
  }
  if (p.splits > 1) {
    // Last block of this group to arrive sums the partials of all splits (split order).
    __threadfence();
    __syncthreads();
    if (tid == 0) s_last = atomicAdd(p.counters + group, 1) == p.splits - 1;
    __syncthreads();
    if (s_last) {
      __threadfence();
      const std::int64_t r0 = tile0 * 16, rows = min(std::int64_t(tiles_here) * 16, p.n - r0);
      const std::size_t plane = std::size_t(p.m) * std::size_t(p.n);
      for (std::int64_t idx = tid; idx < std::int64_t(p.m) * rows; idx += nthreads) {
        const std::int64_t i = idx / rows, r = r0 + (idx - i * rows);
        const std::size_t o = std::size_t(i) * std::size_t(p.n) + std::size_t(r);
        float s = 0.0f;
        for (int z = 0; z < p.splits; ++z) s += __ldcg(p.ws + std::size_t(z) * plane + o);
        store_y(p.y, p.y_dtype, o, s);
      }
      if (tid == 0) p.counters[group] = 0;
    }
  }
}

}  // namespace sparsenm::cuda::vnm_small
