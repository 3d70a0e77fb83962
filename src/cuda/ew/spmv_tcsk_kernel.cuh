// sparsenm — EW-N:M SpMV / small batch (m = 1..8) on tensor cores, streamed as the m = 1 stream-K
// ring kernels stream: cuda:ew_spmv_tc_sk (docs/PERF.md, session 8).
//
// Why: the tensor-core kernels (spmv_tc_kernel.cuh) give each warp one row block and a fixed k range
// and, with the decode removed, still stream their tiles at only 2.9-3.4 TB/s on the H200 (session-4
// probe), while the m = 1 stream-K ring kernels (spmv_sk_kernel.cuh, RING) stream the same bytes at
// ~3.6 TB/s. This kernel keeps the tc tile (16 rows x 64 M / N columns, lane 4g + t decodes window t
// of every chunk for rows g and g + 8), its PRMT-table decode and mma.m16n8k16 products
// (tc_detail::compute_tile, unchanged), and takes the stream-K structure for everything else:
//  * Units: the (row block, tile) pairs, ordered chunk-major: k is cut into chunks of kc tiles; unit
//    order is (chunk, row block, tile of the chunk). Warp w of the grid takes units [w U / W,
//    (w + 1) U / W): every warp the same number of tiles (+-1), one CTA per SM. The weight is stored
//    in this unit order at plan time (reorder_spmv_tcsk), so a warp's range is contiguous bytes.
//  * Why chunks: at m = 8 X is 16 bytes per column (128 KiB at k = 8192): too big to hold whole per
//    CTA beside the rings. A CTA's range is contiguous in unit order, so it touches the columns of
//    one chunk, or of two where it crosses a chunk boundary; the CTA stages exactly those (8 rows x
//    span, cp.async, the tc pitch: conflict-free B-fragment reads), once, before its loop. The plan
//    picks the largest kc whose widest CTA span fits the shared memory left by the rings and the
//    selector table.
//  * Ring: every warp owns kTcSkRing stages of one tile (2048 value bytes + b x 128 index bytes, the
//    tc layout's own contiguous order) in shared memory, filled by per-lane 16-byte cp.async.cg (the
//    lane copies exactly the value vectors it reads back; index words as 16-byte chunks over the
//    lanes); tile q + 2 is requested before tile q's decode, so 2 tiles per warp are in flight
//    during every decode (32 per SM at 16 warps). One __syncwarp per tile publishes the other lanes'
//    index chunks and retires the stage read one step earlier before it is refilled (as skr).
//  * Split-k: a row block's tiles of one chunk are one segment. With one chunk, a segment that covers
//    the whole row is stored straight to Y. Every other segment is added to an fp32 workspace
//    [row][8] (RED, nothing waits) and remembered in a per-warp pending list (lane i holds entry i:
//    row block, tiles). The list is settled once at the warp's end (or when 32 entries are pending):
//    one fence, every pending counter bumped at once (one ATOM per lane), and the row blocks whose
//    counter reached `tiles` read back (atomicExch, which also resets the workspace), written to Y,
//    their counter reset. So the loop never waits on an L2 round trip; the end costs ~3. The
//    workspace and counters are zero between launches.
// Measured (H200, 7912d63, fp16 m = 8; docs/PERF.md session 8): 2:8 50.05 us (28672 x 8192) / 33.82 us
//   (12288^2), 0.72 / 0.74 of the byte ratio over cuBLAS in the same process (tc_ring 52.5 / 39.2); 2:16
//   40.1 / 29.9 (the fastest of ours); 1:8 and 1:16 slower than tc_bal / sk_mb. The weight streams at
//   ~2.8 TB/s, and 1:8 / 2:16 / 1:16 take the same ~40 us at 28672 x 8192 whatever their bytes: the
//   per-dense-column decode + mma work limits, not the stream.
// Sparse variant (TcSkTraits<..., true>, cuda:ew_spmv_tc_sp, session 8b): the same stored tiles, ring,
//   X staging (at its own pitch), split-k and settle; each tile multiplied by mma.sp m16n8k32 instead
//   (spmv_tcsp_decode.cuh): half the mma instructions and A registers per dense column.
// Shapes (session 8c, TcSkTraits WARPS / RING, cuda:ew_spmv_tc_sk24 / _sk24r2 / _sk16r4, opt-in): the same
//   loop at 24 warps per CTA with 3 or 2 ring stages, or at 16 warps with 4: more tiles in flight per SM
//   or more warps per scheduler, paid with a smaller X span (more k chunks) where the rings grow.
// (Session 9 tried deeper rings at 12 / 8 warps and an L2 prefetch beyond the ring: slower than tc_sk16r4 /
//   tc_sk24r2 / tc_sk in every bar case (H200, a35d9c4); removed in session 9b.)
// Limits: f16 / bf16, N:M in {2:8, 1:8, 2:16, 1:16} (the PRMT decode), m <= 8 (padded to the n8 of the
//   mma; the time is the same for every m), finite X (dense fragments: 0 x Inf at pruned positions,
//   as ew_spmv_tc), one tile of X (8 x 64 M / N columns) must fit beside the rings.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ew/spmv_tc_kernel.cuh"
#include "cuda/ew/spmv_tcsk.hpp"
#include "cuda/ew/spmv_tcsp_decode.cuh"

namespace sparsenm::cuda::ew {

/// The tc traits of the ring decode (kDecPrmt; kRing = 3 selects the 8-byte 2:8 selector entries) plus
/// the ring-stage geometry.
/// SP_ = true: cuda:ew_spmv_tc_sp, the same tile on the sparse tensor cores (spmv_tcsp_decode.cuh): its
/// own table, table copies and lane X offset; everything else is shared.
/// WARPS_ / RING_ (session 8c): warps per CTA (the launch bound) and ring stages per warp; the base's
/// kRing stays kTcSkRing (it only selects the 8-byte 2:8 selector entries).
/// FIX_ (session 9b, bits of kTcSkFix*): kTcSkFixPrologue stages X in pieces (one cp.async.bulk per piece row, one
/// mbarrier per piece) and lets each warp start on its first tile as soon as that tile and the X piece it needs have
/// landed (no CTA-wide wait for X or for the other warps' first tiles); kTcSkFixSettle adds each boundary partial as
/// one 16-byte RED per lane (4x fewer workspace atomics) and reads the completed row blocks back with plain L2 loads
/// and stores (no atomicExch per value).
/// Measured (H200, d721585, 28672 x 8192 m = 8): the settle fix alone 3.1 / 3.5 us faster at 2:8 / 1:8 (tc_sks 47.4 /
/// 38.7 us vs tc_sk 50.4 / 42.2); the prologue fix alone 0.9 us slower at 2:8, 1.8 faster at 1:8: the lanes of one
/// warp issue every piece's mbarrier init and bulk copies, uniform-datapath instructions that run once per lane (an
/// ELECT loop), and the other warps wait at the __syncthreads (ncu: 9.7 % of all samples). Next: one issuing lane per
/// warp (pieces spread over the warps), not built.
template <class T, int NN_, int MM_, bool SP_ = false, int WARPS_ = kTcSkMaxWarps, int RING_ = kTcSkRing, int FIX_ = 0>
struct TcSkTraits : SpmvTcTraits<T, NN_, MM_, kDecPrmt, kTcSkRing> {
  using Base = SpmvTcTraits<T, NN_, MM_, kDecPrmt, kTcSkRing>;
  static constexpr bool kSp = SP_;
  static constexpr int kTabBytes = SP_ ? tcsp::table_bytes(NN_, MM_) : Base::kTabBytes;
  static constexpr int kTabCopyBytes = SP_ ? tcsp::copy_bytes(NN_, MM_) : Base::kTabCopyBytes;
  static constexpr int kTabCopyMask = 128 / kTabCopyBytes - 1;
  static constexpr int kXLaneBytes = SP_ ? MM_ : MM_ * 2;  ///< staged X bytes before lane t's first B read, / t
  static_assert(SP_ || kTabCopyMask == Base::kTabCopyMask, "dense table copies unchanged");
  static constexpr int kR = RING_;
  static constexpr int kWarps = WARPS_;
  static constexpr int kFix = FIX_;
  static_assert(FIX_ >= 0 && FIX_ <= (kTcSkFixPrologue | kTcSkFixSettle | kTcSkFixSpread), "fix bits");
  static_assert(!(FIX_ & kTcSkFixSpread) || (FIX_ & kTcSkFixPrologue), "the spread issue is a form of the piece prologue");
  static_assert(RING_ >= 2 && WARPS_ >= 1 && WARPS_ * 32 <= 1024, "ring of >= 2 stages, <= 32 warps");
  static_assert(!SP_ || (WARPS_ == kTcSkMaxWarps && RING_ == kTcSkRing && FIX_ == 0), "tc_sp: the session-8 shape only");
  static constexpr int kValBytes = 4 * 32 * 16;           ///< a tile's value vectors
  static constexpr int kIdxBytes = Base::B * 32 * 4;      ///< a tile's index words
  static constexpr int kTileBytes = kValBytes + kIdxBytes;  ///< one ring stage
  static constexpr int kIdxChunks = kIdxBytes / 16;       ///< 16-byte copies of the index words (24 or 32)
  static_assert(kIdxChunks <= 32, "one index chunk per lane at most");
};

namespace tcsk {

/// The lane's cp.async copies of stored tile u into the stage at shared address st.
template <class Tr>
__device__ __forceinline__ void ring_issue(unsigned st, const TcSkArgs& a, long long u, int lane) {
  const char* gv = static_cast<const char*>(a.values) + std::size_t(u) * Tr::kValBytes;
  const char* gi = reinterpret_cast<const char*>(a.indices) + std::size_t(u) * Tr::kIdxBytes;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int o = (q * 32 + lane) * 16;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(st + unsigned(o)), "l"(gv + o) : "memory");
  }
  if (Tr::kIdxChunks == 32 || lane < Tr::kIdxChunks)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(st + unsigned(Tr::kValBytes + lane * 16)),
                 "l"(gi + lane * 16)
                 : "memory");
}
/// p[0..3] += v as one 16-byte global RED (sm_90: atomicAdd(float4*)); the sm_80 build never calls it (kV4 there is
/// false) but compiles four scalar adds.
__device__ __forceinline__ void red_v4(float* p, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(p), v);
#else
  atomicAdd(p, v.x), atomicAdd(p + 1, v.y), atomicAdd(p + 2, v.z), atomicAdd(p + 3, v.w);
#endif
}
__device__ __forceinline__ void ring_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void ring_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

/// A ring stage into the lane's registers, in load_stream_tile's order (tc_detail::Tile).
template <class Tr>
__device__ __forceinline__ void ring_read(tc_detail::Tile<Tr>& t, const unsigned char* st, int lane) {
  const uint4* vp = reinterpret_cast<const uint4*>(st) + lane;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint4 u = vp[q * 32];
    t.v[4 * q] = u.x, t.v[4 * q + 1] = u.y, t.v[4 * q + 2] = u.z, t.v[4 * q + 3] = u.w;
  }
  const std::uint32_t* ip = reinterpret_cast<const std::uint32_t*>(st + Tr::kValBytes) + lane * Tr::kIdxVec;
  read_stage_indices<Tr::kIdxLoads, Tr::kIdxVec>(t.i, ip);
}

/// Settles the warp's pending segments (lane i < np: row block prb, pcnt tiles, already added to the
/// workspace): one fence, every counter bumped at once, the completed row blocks read back to Y.
/// LEAN (session 9b): the read-back is one plain 16-byte L2 load and one zero store per lane and row block (lane l:
/// row l / 2, columns 4 (l % 2) .. + 3), not 4 atomicExch per lane; the counter is reset by a plain store.
template <bool LEAN = false>
__device__ __forceinline__ void settle(const TcSkArgs& a, int np, int prb, unsigned pcnt, int lane) {
  __threadfence();  // this lane's workspace adds before any counter bump of the warp
  __syncwarp();
  const bool mine = lane < np;
  unsigned prev = 0;
  if (mine) prev = atomicAdd(a.cnt + prb, pcnt);
  unsigned done = __ballot_sync(0xffffffffu, mine && prev + pcnt == unsigned(a.tiles));
  if (done == 0u) return;
  __threadfence();  // every contributor's adds before the read-back
  const int g = lane >> 2, tq = lane & 3;
  while (done) {
    const int i = __ffs(done) - 1;
    done &= done - 1u;
    const int rb = __shfl_sync(0xffffffffu, prb, i);
    if constexpr (LEAN) {
      // Every contributor's adds happened before its counter bump (fence), the bump before ours: a plain L2
      // load (.cg: not L1) after our fence sees the sums. Zeroed for the next launch by a plain store.
      const int row = rb * 16 + (lane >> 1), c4 = (lane & 1) * 4;
      float4* wp = reinterpret_cast<float4*>(a.ws + std::size_t(row) * 8 + c4);
      const float4 v = __ldcg(wp);
      __stcg(wp, make_float4(0.0f, 0.0f, 0.0f, 0.0f));
      if (row < a.n) {
        const float vv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (c4 + j < a.m) tc_detail::store_y(a.y, std::size_t(c4 + j) * a.n + row, vv[j], a.y_dtype);
      }
      if (lane == i) __stcg(a.cnt + rb, 0u);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = rb * 16 + g + (e >> 1) * 8, xr = 2 * tq + (e & 1);
        if (xr < a.m) {
          const float s = atomicExch(a.ws + std::size_t(row) * 8 + xr, 0.0f);
          if (row < a.n) tc_detail::store_y(a.y, std::size_t(xr) * a.n + row, s, a.y_dtype);
        }
      }
      if (lane == i) atomicExch(a.cnt + rb, 0u);
    }
  }
}

}  // namespace tcsk

template <class Tr>
__global__ void __launch_bounds__(Tr::kWarps * 32, 1) ew_spmv_tcsk_kernel(const __grid_constant__ TcSkArgs a) {
  extern __shared__ __align__(128) unsigned char tcsk_smem[];
  constexpr int R = Tr::kR, TB = Tr::kTileBytes;
  constexpr bool kLean = (Tr::kFix & kTcSkFixSettle) != 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  constexpr bool kV4 = false;  // the 16-byte float RED is sm_90
#else
  constexpr bool kV4 = kLean;
#endif
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const long long W = a.warps_total, U = a.units;
  const long long gw = (long long)blockIdx.x * a.cta_warps + warp;
  const long long u0 = gw * U / W, u1 = (gw + 1) * U / W;
  const int n_units = int(u1 - u0);
  const unsigned sm0 = unsigned(__cvta_generic_to_shared(tcsk_smem));
  const unsigned ring_sh = sm0 + unsigned(a.ring_off) + unsigned(warp * R * TB);
  const unsigned char* ring = tcsk_smem + a.ring_off + warp * R * TB;

  // The first R - 1 tiles in flight before anything else (one commit group each, empty past the range).
#pragma unroll
  for (int s = 0; s < R - 1; ++s) {
    if (s < n_units) tcsk::ring_issue<Tr>(ring_sh + unsigned(s * TB), a, u0 + s, lane);
    tcsk::ring_commit();
  }
  if constexpr (Tr::kSp) tcsp::fill_table<Tr>(tcsk_smem);  // published by the __syncthreads below
  else tc_detail::fill_table<Tr>(tcsk_smem);

  // The CTA's X span: the columns of the chunks its (contiguous) unit range touches.
  const long long rk = (long long)a.row_blocks * a.kc;
  int col0 = 0, ncols = 0;
  {
    const long long lo = (long long)blockIdx.x * a.cta_warps * U / W, hi = ((long long)blockIdx.x + 1) * a.cta_warps * U / W;
    if (lo < hi) {
      const int cf = int(lo / rk), cl = int((hi - 1) / rk);
      const int t0 = cf * a.kc, t1 = min(a.tiles, (cl + 1) * a.kc);
      col0 = t0 * Tr::kTileCols;
      ncols = (t1 - t0) * Tr::kTileCols;
    }
  }
  unsigned char* xs = tcsk_smem + a.x_off;
  // Session 9b prologue (kTcSkFixPrologue, sm_90: cp.async.bulk + mbarrier.try_wait; the sm_80 build of the same
  // instance takes the whole-span path below): X in pieces of 2^ps tiles (<= 32 pieces), piece p copied by thread p
  // (one bulk copy per X row, completing on mbarrier p); the zero padding (rows >= m, columns >= k) and the table
  // are written by the threads before the one __syncthreads, which then waits for no memory. `ready`: the pieces
  // this warp has seen complete (bit p).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  constexpr bool kPieces = false;
#else
  constexpr bool kPieces = (Tr::kFix & kTcSkFixPrologue) != 0;
#endif
  const bool pieces = kPieces && a.x_vec && ncols > 0;
  const int span_t0 = col0 / Tr::kTileCols;
  int ps = 0;
  unsigned ready = ~0u;
  if (pieces) {
    if constexpr (kPieces) {  // (no sm_90 instruction reaches the sm_80 build)
    const int span_tiles = ncols / Tr::kTileCols;
    while (((span_tiles + (1 << ps) - 1) >> ps) > 32) ++ps;
    const int npieces = (span_tiles + (1 << ps) - 1) >> ps;
    ready = npieces >= 32 ? 0u : ~0u << npieces;
    const int nv = ncols / 8, kv = (a.k - col0) / 8;  // 16-byte vectors per staged row; those before column k
    const unsigned base = sm0 + unsigned(a.x_off);
    // zeros: rows m..7 over the span, and columns k.. of rows < m (k % 8 == 0 on this path)
    for (int e = threadIdx.x; e < (8 - a.m) * nv; e += int(blockDim.x)) {
      const int r = e / nv, v = e - r * nv;
      asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(base + unsigned((a.m + r) * a.pitch + v * 16)), "r"(0u)
                   : "memory");
    }
    if (kv < nv) {
      const int nt = nv - kv;
      for (int e = threadIdx.x; e < a.m * nt; e += int(blockDim.x)) {
        const int r = e / nt, v = kv + (e - r * nt);
        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(base + unsigned(r * a.pitch + v * 16)), "r"(0u)
                     : "memory");
      }
    }
    // Who issues piece p: thread p (as measured at d721585: the lanes of warp 0, which run the uniform-datapath
    // mbarrier / bulk-copy instructions once per lane), or with kTcSkFixSpread lane 0 of warp p mod warps.
    constexpr bool kSpread = (Tr::kFix & kTcSkFixSpread) != 0;
    auto issue_piece = [&](int p) {
      const unsigned bar = sm0 + unsigned(a.bar_off) + unsigned(8 * p);
      const int tl = p << ps, th = min(span_tiles, (p + 1) << ps);
      const int cl = col0 + tl * Tr::kTileCols, ch = min(a.k, col0 + th * Tr::kTileCols);
      const unsigned bytes = unsigned(ch - cl) * 2u;  // > 0: every tile of the span starts before k
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes * unsigned(a.m)) : "memory");
      const unsigned short* x = static_cast<const unsigned short*>(a.x);
      for (int r = 0; r < a.m; ++r)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         base + unsigned(r * a.pitch + tl * Tr::kTileCols * 2)),
                     "l"(x + std::size_t(r) * a.k + cl), "r"(bytes), "r"(bar)
                     : "memory");
    };
    if constexpr (kSpread) {
      if (lane == 0)
        for (int p = warp; p < npieces; p += int(blockDim.x) >> 5) issue_piece(p);
    } else if (int(threadIdx.x) < npieces) {
      issue_piece(int(threadIdx.x));
    }
    }
    __syncthreads();  // the table, the zeros and the mbarrier inits
  } else {
    const unsigned short* x = static_cast<const unsigned short*>(a.x);
    if (a.x_vec) {  // k % 8 == 0 and x 16-byte aligned: a vector is wholly inside or past k
      const int nv = ncols / 8;  // ncols is a multiple of 64 M / N
      const unsigned base = sm0 + unsigned(a.x_off);
      for (int e = threadIdx.x; e < 8 * nv; e += int(blockDim.x)) {
        const int r = e / nv, v = e - r * nv, col = col0 + 8 * v;
        const unsigned dst = base + unsigned(r * a.pitch + v * 16);
        if (r < a.m && col < a.k) {
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(x + std::size_t(r) * a.k + col)
                       : "memory");
        } else {
          asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(dst), "r"(0u) : "memory");
        }
      }
    } else {
      for (int e = threadIdx.x; e < 8 * ncols; e += int(blockDim.x)) {
        const int r = e / ncols, cc = e - r * ncols, col = col0 + cc;
        unsigned short u = 0;
        if (r < a.m && col < a.k) u = x[std::size_t(r) * a.k + col];
        *reinterpret_cast<unsigned short*>(xs + r * a.pitch + cc * 2) = u;
      }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");  // X and the ring's first tiles
    __syncthreads();
  }

  const unsigned tab = sm0 + unsigned(Tr::kTabCopyBytes) * unsigned(lane & Tr::kTabCopyMask);
  const unsigned char* xw0 = xs + g * a.pitch + tq * Tr::kXLaneBytes;
  float acc[Tr::kAcc][4] = {};
  // Position of unit u0 + q: chunk c (tcn tiles per row block), row block rb, tile tt of the chunk.
  int c = 0, rb = 0, tt = 0, tcn = a.kc;
  if (n_units > 0) {
    c = int(u0 / rk);
    tcn = c == a.chunks - 1 ? a.tiles - c * a.kc : a.kc;
    const long long v = u0 - (long long)c * rk;
    rb = int(v / tcn);
    tt = int(v - (long long)rb * tcn);
  }
  int tstart = tt;          // first tile of the open segment
  int np = 0, prb = 0;      // pending segments (lane i: entry i)
  unsigned pcnt = 0;
  int stage = 0;
  for (int q = 0; q < n_units; ++q) {
    tcsk::ring_wait<R - 2>();  // this lane's copies of tile q have landed
    __syncwarp();              // ... and every lane's; stage q - 1 is no longer read
    const int refill = stage == 0 ? R - 1 : stage - 1;
    if (q + R - 1 < n_units) tcsk::ring_issue<Tr>(ring_sh + unsigned(refill * TB), a, u0 + q + R - 1, lane);
    tcsk::ring_commit();
    tc_detail::Tile<Tr> tile;
    tcsk::ring_read<Tr>(tile, ring + stage * TB, lane);
    const int t = c * a.kc + tt;  // tile along the row
    if constexpr (kPieces) {
      const int pc = (t - span_t0) >> ps;
      if (!((ready >> pc) & 1u)) {  // warp-uniform: first use of piece pc by this warp
        const unsigned bar = sm0 + unsigned(a.bar_off) + unsigned(8 * pc);
        unsigned done = 0;
        while (!done)
          asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                       : "=r"(done)
                       : "r"(bar)
                       : "memory");
        ready |= 1u << pc;
      }
    }
    if constexpr (Tr::kSp)
      tcsp::compute_tile<Tr>(tile, acc, xw0 + (t * Tr::kTileCols - col0) * 2, tcsk_smem,
                             unsigned(Tr::kTabCopyBytes) * unsigned(lane & Tr::kTabCopyMask), tq);
    else
      tc_detail::compute_tile<Tr>(tile, acc, xw0 + (t * Tr::kTileCols - col0) * 2, tab);
    stage = stage + 1 == R ? 0 : stage + 1;
    ++tt;
    if (tt == tcn || q + 1 == n_units) {  // the segment [tstart, tt) of row block rb closes
      float s[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[e] = acc[0][e];
#pragma unroll
        for (int p = 1; p < Tr::kAcc; ++p) s[e] += acc[p][e];
#pragma unroll
        for (int p = 0; p < Tr::kAcc; ++p) acc[p][e] = 0.0f;
      }
      const int ntile = tt - tstart;
      if (a.chunks == 1 && ntile == a.tiles) {  // the whole row in this warp: straight to Y
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = rb * 16 + g + (e >> 1) * 8, xr = 2 * tq + (e & 1);
          if (row < a.n && xr < a.m) tc_detail::store_y(a.y, std::size_t(xr) * a.n + row, s[e], a.y_dtype);
        }
      } else if constexpr (kV4) {
        // One 16-byte RED per lane: the quad pair (tq, tq ^ 1) swaps half its values so that the even lane
        // holds row g, columns 2 tq .. 2 tq + 3 and the odd one row g + 8, columns 2 (tq - 1) .. + 3. The
        // columns >= m are added too (0, or NaN from 0 x Inf in a padded X row): the read-back zeroes all 8.
        const bool odd = (tq & 1) != 0;
        const float o0 = __shfl_xor_sync(0xffffffffu, odd ? s[0] : s[2], 1);
        const float o1 = __shfl_xor_sync(0xffffffffu, odd ? s[1] : s[3], 1);
        const float4 v = odd ? make_float4(o0, o1, s[2], s[3]) : make_float4(s[0], s[1], o0, o1);
        const int row = rb * 16 + g + (odd ? 8 : 0);
        tcsk::red_v4(a.ws + std::size_t(row) * 8 + (tq & 2) * 2, v);  // RED.128
        if (lane == np) prb = rb, pcnt = unsigned(ntile);
        if (++np == 32) {
          tcsk::settle<kLean>(a, np, prb, pcnt, lane);
          np = 0;
        }
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = rb * 16 + g + (e >> 1) * 8, xr = 2 * tq + (e & 1);
          if (xr < a.m) atomicAdd(a.ws + std::size_t(row) * 8 + xr, s[e]);  // RED: nothing waits
        }
        if (lane == np) prb = rb, pcnt = unsigned(ntile);
        if (++np == 32) {
          tcsk::settle<kLean>(a, np, prb, pcnt, lane);
          np = 0;
        }
      }
      if (tt == tcn) {
        tt = 0;
        if (++rb == a.row_blocks) {
          rb = 0;
          ++c;
          tcn = c == a.chunks - 1 ? a.tiles - c * a.kc : a.kc;
        }
      }
      tstart = tt;
    }
  }
  if (np > 0) tcsk::settle<kLean>(a, np, prb, pcnt, lane);
}

}  // namespace sparsenm::cuda::ew
