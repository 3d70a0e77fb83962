// sparsenm — cuda:vnm_gemv variant 9 ("async gather + ring"): the X gather made asynchronous
// (cp.async global -> shared, double-buffered, the next chunk's copies in flight while the
// current chunk is consumed) and the weight streamed through variant 8's per-warp cp.async ring.
// Read kernel.cuh (records, tiling, mma.sp), kernel3.cuh (transposed X, ldmatrix) and kernel5.cuh
// (the ring) first; this kernel combines them.
//
// Status (H200 run dfdb555, PERF-vnm-small.md "Session 7b measured"): correct (every VnmSmallGpu
// test, each case twice); the default for V:2:M with M <= 8 at m > 24 only (1.04-1.08x of v4 on
// 128:2:8 at m = 32); 0.87-0.94x of v4 at m <= 8 (the transpose launch and the ring's per-record
// overhead); the m slope only ~35 % smaller than v4's on 128:2:8 (none on 128:2:16): the gather's
// latency chain was a third of the slope, the rest grows faster than linearly in NT (a throughput
// of the SM: per record and n8 tile 2 mma.sp + 2 ldmatrix.x4, repeated by every warp of the
// block). 2:4 was not measured in that run.
//
// Why (PERF-vnm-small.md "Look-back and the limiter found", session 7). Variant 4's time grows
// with ceil(m / 8) because its gather is a chain of serialised L2 round trips (8 LDG -> 8 STS ->
// branch, per staged word, NT batches) between two __syncthreads, during which the block requests
// no weight. A latency model (record batches + 0.5 x gather round trips) reproduces the growth.
// Variant 8 kept that gather and only changed the stream (refuted as a fix); variants 5/6 made the
// gather asynchronous but streamed in load-then-compute batches at 123 registers (2 blocks/SM).
//
// Gather. Every staged X element goes global -> shared by cp.async (no register round trip); a
// thread issues all its copies of a chunk back to back and commits them as ONE group G; the only
// wait is at the top of the chunk that consumes it (cp.async.wait_group + one __syncthreads, which
// also protects the other buffer: chunk c + 1's copies go into the buffer chunk c - 1 read).
//   - hw24, k % 8 == 0 and X 16-byte aligned ("direct"): X rows copied as they are, 16 bytes
//     (8 columns) per copy, into [row i][unit u] with row pitch U = chunk_pairs * 8 units and unit
//     u stored at u ^ (i % 8) (layout.hpp direct_unit). B fragments by ldmatrix.x4 (not
//     transposed): matrix j of a k32 step is units 4 h + j of the pair, lane l addresses row
//     8 nt + l % 8, so lane (g, t) gets X[8 nt + g][8 j + 2 t, +1] in register j — mma.m16n8k32's B
//     fragment (k rows 2t + 8j). A phase reads 8 rows at one unit: the xor puts them in 8 distinct
//     16-byte bank groups (the pitch is a multiple of 128 bytes). No transpose kernel.
//   - venom, and hw24 otherwise: variant 5/6's transposed X (Xt = one pre-kernel, this kernel its
//     programmatic dependent: ring prologue before griddepcontrol.wait), 16-byte copies of a
//     gathered column's NT units (xt_unit swizzle), B fragments by ldmatrix.x4.trans. A thread
//     first loads all its selection bytes of the chunk (independent loads, one round trip), then
//     issues all copies.
// Per thread and chunk (chunks of 16 / NT pairs, 256 threads): 4 copies either way, whatever m is.
//
// Stream. Variant 8's ring: kRingStages 1152-byte slots per warp; lane l copies and later reads
// back its own bytes; one group per record, kRingStages - 1 in flight across chunk boundaries.
// The gather's groups are interleaved in the same per-thread commit order, so the ring's wait
// counts account for them (layout.hpp ring_wait_newer / gather_wait_newer, replayed on the CPU):
// record q may be consumed when all but the newest D - 2 groups are complete, D - 1 when the
// latest gather group was committed after record q (it is then one of the newer groups). The
// chunk top waits for G with "all but the ring groups committed after it" (<= D - 1). So a
// gather never drains the ring and the ring never waits for a gather younger than its record.
//
// Resources: ring as variant 8 (one record in registers), accumulators 16 NT (kTiles = 1) or 32 NT
// (V = 256). Shared = 2 X buffers of ~16.5-18 KB + 8 warps x 4 x 1152 B = 70-74 KB: 3 blocks of
// 8 warps per SM with <= 80 registers (__launch_bounds__(256, 3)). Geometry: run-1 rule (splits,
// separate reduce kernel), chunks of 16 / NT pairs (layout.hpp choose_geometry).
#pragma once
#include "cuda/vnm_small/kernel3.cuh"
#include "cuda/vnm_small/kernel4.cuh"  // ldsm_x4
#include "cuda/vnm_small/kernel5.cuh"

namespace sparsenm::cuda::vnm_small {

/// cp.async.wait_group with a runtime count in [0, D - 1] (larger counts: D - 1 waits at least as
/// long as needed, see gather_wait_newer).
__device__ __forceinline__ void wait_newer(int newer) {
  static_assert(sparsenm::vnm_small::kRingStages == 4, "wait_newer covers counts 0..3");
  if (newer <= 0)
    ring_wait<0>();
  else if (newer == 1)
    ring_wait<1>();
  else if (newer == 2)
    ring_wait<2>();
  else
    ring_wait<3>();
}

/// Variant 11: the last block of `group` to finish sums the fp32 partials of all splits in split
/// order (the reduce kernel's order: bit-identical y) and writes y, then resets the group's
/// arrival counter (threadFenceReduction pattern, as kernel2.cuh). Partials are read with all of
/// a thread's loads first (float4 over 4 rows when n % 4 == 0), so the block pays ~splits L2
/// round trips, not one per output. Called by every thread of the block.
__device__ __forceinline__ void fused_split_reduce(const Params& p, std::int64_t group, std::int64_t tile0, int tiles_here) {
  __shared__ int s_last;
  __threadfence();  // this thread's partials are visible before the arrival below
  __syncthreads();
  if (threadIdx.x == 0) s_last = atomicAdd(p.counters + group, 1) == p.splits - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  const std::int64_t r0 = tile0 * 16;
  const int rows = int(min(std::int64_t(tiles_here) * 16, p.n - r0));
  const std::size_t plane = std::size_t(p.m) * std::size_t(p.n);
  constexpr int kU = 4;
  if (p.n % 4 == 0) {  // rows % 4 == 0 too (r0 and n are multiples of 4)
    const int q4 = rows / 4, total = p.m * q4;
    for (int base = threadIdx.x; base < total; base += kU * int(blockDim.x)) {
      float4 s[kU];
      std::size_t o[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int idx = min(base + u * int(blockDim.x), total - 1);  // clamped: loads stay in range
        const int i = idx / q4, r = (idx - i * q4) * 4;
        o[u] = std::size_t(i) * std::size_t(p.n) + std::size_t(r0 + r);
        s[u] = make_float4(0.f, 0.f, 0.f, 0.f);
      }
      for (int z = 0; z < p.splits; ++z) {
        float4 v[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) v[u] = __ldcg(reinterpret_cast<const float4*>(p.ws + std::size_t(z) * plane + o[u]));
#pragma unroll
        for (int u = 0; u < kU; ++u) s[u].x += v[u].x, s[u].y += v[u].y, s[u].z += v[u].z, s[u].w += v[u].w;
      }
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (base + u * int(blockDim.x) < total) {
          store_y(p.y, p.y_dtype, o[u], s[u].x);
          store_y(p.y, p.y_dtype, o[u] + 1, s[u].y);
          store_y(p.y, p.y_dtype, o[u] + 2, s[u].z);
          store_y(p.y, p.y_dtype, o[u] + 3, s[u].w);
        }
    }
  } else {
    const int total = p.m * rows;
    for (int base = threadIdx.x; base < total; base += kU * int(blockDim.x)) {
      float s[kU];
      std::size_t o[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int idx = min(base + u * int(blockDim.x), total - 1);
        const int i = idx / rows, r = idx - i * rows;
        o[u] = std::size_t(i) * std::size_t(p.n) + std::size_t(r0 + r);
        s[u] = 0.0f;
      }
      for (int z = 0; z < p.splits; ++z) {
        float v[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) v[u] = __ldcg(p.ws + std::size_t(z) * plane + o[u]);
#pragma unroll
        for (int u = 0; u < kU; ++u) s[u] += v[u];
      }
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (base + u * int(blockDim.x) < total) store_y(p.y, p.y_dtype, o[u], s[u]);
    }
  }
  if (threadIdx.x == 0) p.counters[group] = 0;  // ready for the next launch (stream order)
}

/// Per-lane ldmatrix offsets (bytes) within a k32 step of the staged X of variants 9 / 10 / 11:
/// direct: matrix j = lane / 8 (unit 4 h + j of the pair), row 8 nt + lane % 8; transposed: row
/// kk = step base + lane (xt_unit depends on kk % 8 only besides the base).
template <int NT, bool kDirect>
__device__ __forceinline__ void ldsm_lane_offsets(int lane, int U, std::uint32_t (&off)[NT]) {
  namespace sv = sparsenm::vnm_small;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    off[nt] = kDirect ? std::uint32_t(sv::direct_unit(nt * 8 + (lane & 7), lane >> 3, U)) * 16u
                      : std::uint32_t(sv::xt_unit(lane, nt, NT)) * 16u;
}

/// The asynchronous gather of variants 9 / 10 / 11: X of chunk [c0, c0 + npairs) into the staged
/// buffer at shared address dbase by cp.async only (no register round trip), committed as ONE group.
/// kDirect: hw24 X rows straight (16-byte units, row pitch U units); else the selected columns of
/// the transposed X (sel: the slab's selection bytes, null for hw24).
template <int NT, bool kDirect>
__device__ __forceinline__ void async_gather_chunk(const Params& p, const std::uint8_t* sel, std::int64_t c0, int npairs,
                                                   std::uint32_t dbase, int U) {
  namespace sv = sparsenm::vnm_small;
  if constexpr (kDirect) {
    const std::uint16_t* x = static_cast<const std::uint16_t*>(p.x);
    const int nu = npairs * 8;
    const std::int64_t cbase = c0 * 64;
    for (int idx = threadIdx.x; idx < p.m * nu; idx += blockDim.x) {
      const int i = idx / nu, u = idx - i * nu;
      const std::int64_t c = cbase + std::int64_t(u) * 8;
      const bool ok = c < p.k;  // k % 8 == 0: a unit is whole or past the end
      const std::uint16_t* src = x + (ok ? std::size_t(i) * std::size_t(p.k) + std::size_t(c) : 0);
      cp_async16_zfill(dbase + std::uint32_t(sv::direct_unit(i, u, U)) * 16u, src, ok ? 16 : 0);
    }
  } else {
    // 32-bit index math as kernel3.cuh (n, k < 2^31)
    constexpr int kPer = sv::async_gather_per(NT);  // gathered columns per thread per round
    const int nkk = npairs * 64;
    const unsigned wbase = unsigned(c0) * 16u, nwin = unsigned(p.windows), win = unsigned(p.window), kcols = unsigned(p.k);
    for (int kk0 = threadIdx.x; kk0 < nkk; kk0 += kPer * blockDim.x) {
      unsigned col[kPer];
#pragma unroll
      for (int s = 0; s < kPer; ++s) {  // all selection loads first (independent: one round trip)
        const int kk = kk0 + s * blockDim.x;
        const unsigned w = wbase + unsigned(kk >> 2), q = unsigned(kk & 3);
        col[s] = ~0u;
        if (kk < nkk && w < nwin) col[s] = sel ? w * win + unsigned(__ldg(sel + (w * 4u + q))) : w * 4u + q;
      }
#pragma unroll
      for (int s = 0; s < kPer; ++s) {
        const int kk = kk0 + s * blockDim.x;
        if (kk < nkk) {
          const bool ok = col[s] < kcols;
          const uint4* src = p.xt + (ok ? std::size_t(col[s]) * NT : 0);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
            cp_async16_zfill(dbase + std::uint32_t(sv::xt_unit(kk, nt, NT)) * 16u, src + nt, ok ? 16 : 0);
        }
      }
    }
  }
  cp_async_commit_group();
}

/// kFused: variant 11 (the split reduction in the kernel; a separate instance so that variant 9's
/// code is unchanged: inlined into the same function it cost 4-17 instructions per record of
/// register pressure at NT = 4, sm_90a).
template <class Tr, int kTiles, bool kDirect, bool kFused = false>
__global__ void __launch_bounds__(Tr::kMaxThreads, Tr::kRingMinBlocks) vnm_small_kernel_async(const Params p) {
  using T = typename Tr::T;
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  constexpr int D = sv::kRingStages;
  extern __shared__ uint4 smem_u4[];
  const std::uint32_t sbase = smem_addr(smem_u4);
  const std::uint32_t buf_bytes = std::uint32_t(NT * 8 * p.smem_words_per_row * 4);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const std::int64_t group = blockIdx.x;
  const std::int64_t tile0 = group * p.tiles_per_group;
  const int tiles_here = int(min(std::int64_t(p.tiles_per_group), p.row_tiles - tile0));
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const std::int64_t pair1 = min(p.pairs, pair0 + p.pairs_per_split);
  const std::uint8_t* sel = p.sel ? p.sel + group * p.windows_pad * 4 : nullptr;
  const int U = p.chunk_pairs * 8;  // direct: 16-byte units per staged row

  int ntile = 0;
#pragma unroll
  for (int tp = 0; tp < kTiles; ++tp)
    if (tp < p.tiles_per_warp && warp + tp * nwarps < tiles_here) ntile = tp + 1;

  // ---- the ring (kernel5.cuh), after the two X buffers ----
  const uint4* ring = smem_u4 + std::size_t(2) * (buf_bytes / 16) + std::size_t(warp) * D * kRecordU4;
  const std::uint32_t ring_s = smem_addr(ring);
  RingCursor prod;
  prod.start(pair0, pair1, p.chunk_pairs, ntile);
  int ni = 0;  // groups of ring records this thread has committed (record q is ring group q)
  auto issue = [&](int slot) {
    if (!prod.done) {
      const uint4* r =
          p.w + (std::size_t(tile0 + warp + prod.tp * nwarps) * std::size_t(p.pairs) + std::size_t(prod.c0 + prod.cp)) *
                    kRecordU4;
      const std::uint32_t d = ring_s + std::uint32_t(slot * kRecordU4 * 16);
      ring_cp16(d + std::uint32_t(lane) * 16u, r + lane);
      ring_cp16(d + 512u + std::uint32_t(lane) * 16u, r + 32 + lane);
      ring_cp4(d + 1024u + std::uint32_t(lane) * 4u, reinterpret_cast<const std::uint32_t*>(r + 64) + lane);
      prod.next();
    }
    ring_commit();
    ++ni;
  };
#pragma unroll
  for (int s = 0; s < D - 1; ++s) issue(s);  // the weight does not depend on the transpose

  // direct: rows m .. 8 NT - 1 of both buffers are never copied; zero them once
  if constexpr (kDirect) {
    std::uint32_t* xs = reinterpret_cast<std::uint32_t*>(smem_u4);
    const int per_buf = (NT * 8 - p.m) * U * 4, words_buf = int(buf_bytes / 4);
    for (int idx = threadIdx.x; idx < 2 * per_buf; idx += blockDim.x) {
      const int b = idx >= per_buf ? 1 : 0;
      xs[b * words_buf + p.m * U * 4 + (idx - b * per_buf)] = 0u;
    }
  }
  pdl_wait();  // transposed path: Xt is complete and visible from here on (no-op otherwise)

  // ---- the gather of chunk [c0, c0 + npairs) into buffer b: cp.async only, one group ----
  auto gather = [&](std::int64_t c0, int b) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    async_gather_chunk<NT, kDirect>(p, sel, c0, npairs, sbase + std::uint32_t(b) * buf_bytes, U);
  };

  float acc[kTiles][NT][4];
#pragma unroll
  for (int a = 0; a < kTiles; ++a)
#pragma unroll
    for (int b = 0; b < NT; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  std::uint32_t lane_off[NT];  // per-lane ldmatrix offsets within a k32 step (bytes)
  ldsm_lane_offsets<NT, kDirect>(lane, U, lane_off);

  int qg = 0;  // ni when the latest gather group was committed
  if (pair0 < pair1) {
    gather(pair0, 0);
    qg = ni;
  }
  int q = 0, buf = 0;
  for (std::int64_t c0 = pair0; c0 < pair1; c0 += p.chunk_pairs, buf ^= 1) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    wait_newer(sv::gather_wait_newer(ni, qg));  // this chunk's copies (this thread's) ...
    __syncthreads();                            // ... everyone's, and chunk c - 1's reads done
    const std::int64_t cn = c0 + p.chunk_pairs;
    if (cn < pair1) {  // the next chunk's copies into the buffer chunk c - 1 used
      gather(cn, buf ^ 1);
      qg = ni;
    }
    const std::uint32_t xb = sbase + std::uint32_t(buf) * buf_bytes;
#pragma unroll
    for (int tp = 0; tp < kTiles; ++tp) {
      if (tp < ntile) {
        for (int cp = 0; cp < npairs; ++cp, ++q) {
          if (sv::ring_wait_newer(q, qg) == D - 1)  // record q has landed (this thread's copies)
            ring_wait<D - 1>();
          else
            ring_wait<D - 2>();
          issue((q + D - 1) % D);  // refill the slot consumed by record q - 1
          const uint4* r = ring + (q % D) * kRecordU4;
          const uint4 a0 = r[lane];
          const uint4 a1 = r[32 + lane];
          const std::uint32_t e = reinterpret_cast<const std::uint32_t*>(r + 64)[lane];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              // direct: unit cp * 8 + ((4 h + j) ^ r) = (cp * 8 + (j ^ r)) ^ 4 h (row * U, cp * 8:
              // multiples of 8), i.e. the relative byte offset with bit 6 flipped for h = 1
              const uint4 bf = kDirect ? ldsm_x4(xb + ((std::uint32_t(cp * 128) + lane_off[nt]) ^ std::uint32_t(h * 64)))
                                       : ldsm_x4_trans(xb + std::uint32_t((cp * 64 + h * 32) * NT * 16) + lane_off[nt]);
              mma_sp<T>(acc[tp][nt], h ? a1 : a0, bf, e, h);
            }
          }
        }
      }
    }
  }
  ring_wait<0>();  // no copy may still target the block's shared memory at exit

  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int tp = 0; tp < kTiles; ++tp) {
    if (tp < ntile) {
      store_tile<Tr, NT>(p, acc[tp], (tile0 + warp + tp * nwarps) * 16 + g, t);
    }
  }
  if constexpr (kFused)
    if (p.splits > 1) fused_split_reduce(p, group, tile0, tiles_here);  // variant 11 (p.counters set)
}

}  // namespace sparsenm::cuda::vnm_small
