// sparsenm — EW-N:M SpMV for m = 2..8 on CUDA cores, stream-K form: cuda:ew_spmv_sk_mb (docs/PERF.md,
// "Session 6: ew_spmv_sk_mb"). The m = 1 kernel ew_spmv_sk (spmv_sk_kernel.cuh) widened to MB = 4 or 8
// activation rows (m = 2..4 run as MB = 4, m = 5..8 as MB = 8; the missing rows are zeros in shared
// memory and are neither reduced nor stored). Same packed weight as ew_spmv (spmv_layout.hpp: 32-row
// groups, lane = row, 32-slot tiles of 16-byte value vectors + b-bit index words, two tiles in flight
// per warp in registers) and the same work split: the (row group, tile) units are one flattened
// sequence, every warp of the grid streams an equal contiguous share, partial groups are summed
// through a self-resetting fp32 workspace + per-group counters (no cluster, no fence in the loop).
//
// Why (the argument; the tensor-core kernels ew_spmv_tc* decode every stored value into a dense
// fragment, so their cost grows with the DENSE element count: 0.44 / 0.42 / 0.29 of the byte ratio at
// 1:8 / 2:16 / 1:16, m = 8; this kernel's cost per stored value is the same at every sparsity):
//  * Work per stored value and lane (SASS of the unrolled two-tile body, see the PERF section):
//    index field -> byte offset (one shift + one LOP3 that also ORs the tile's window base: the
//    window base is a multiple of M x column bytes, so OR = add), one LDS (LDS.128 at MB = 8: the
//    lane's 8 activations of that column), MB conversions to fp32 (fp16: HADD2.F32; bf16: shift /
//    mask), one weight conversion, MB FFMA (fp32 accumulation, as cuBLAS). ~20 instructions at
//    MB = 8: the kernel is issue-bound by design, and the count per value is the design metric.
//  * X in shared memory in the weight dtype, transposed to [column][MB] (16 B per column at MB = 8):
//    the L1 / shared return path delivers one 32-bit register per lane per clock, so fp32 X (8
//    registers per value) would cap m = 8 at 4 values / clock / SM, below the ~4.5-5 the bar needs;
//    16-bit X returns 4 registers per value (cap 8 / clock / SM) and pays the conversions instead.
//  * Banks: all lanes read slot j of their rows, inside one M-window: at most M distinct 16-byte
//    columns in M x 16 contiguous bytes (M = 8: one 128-byte line), equal columns broadcast.
//  * X staging: the whole X ([k][MB] x 2 B: 128 KB at k = 8192, 192 KB at k = 12288) per CTA, one
//    CTA of 16 warps per SM; the threads transpose X[m][k] (32-bit column pairs where X is 4-byte
//    aligned and k even, 16-bit loads otherwise) after requesting their first two weight tiles.
//    When X does not fit the shared-memory budget (or a plan asks for it), the k range is cut into
//    `chunks` of whole tiles: unit order chunk-major, CTA b serves chunk b / ctas_per_chunk and
//    stages only that chunk's columns; every group then gets at least `chunks` partial sums.
// Measured (H200, b6c5e5f, fp16; docs/PERF.md "Session 6 measured"): SASS 20 instructions per stored
//   value in the loop (1 SHF, 1 LOP3, 1 LDS.128, 9 HADD2.F32, 8 FFMA), ncu 24.0 over the whole kernel;
//   streams at 82-90 % issue (4.4-4.8 values / clock / SM) plus a fixed 13 us (k = 8192) / 17 us
//   (k = 12288) that is not decomposed yet (X staging behind the weight flood, 8-way conflicted
//   staging stores, launch). m = 8, 28672 x 8192: 2:8 / 1:8 / 2:16 / 1:16 65.6 / 39.4 / 41.5 / 29.2 us
//   (the plan's pick at 2:16 / 1:16, 1.05-1.14x over the tensor-core kernels; they stay faster at
//   2:8 / 1:8); m = 4 (MB = 4): 45.8 / 28.8 / 29.3 us at 2:8 / 1:8 / 2:16, the plan's pick (1.15-1.51x).
// Limits: issue-bound at m = 8 (9 of the 24 instructions per value are fp16 -> fp32 conversions);
//   patterns with N | 32 compiled (N, M folded in), f16 / bf16, MB in {4, 8}; rows, cols < 2^30;
//   one 16-warp CTA per SM (128 registers).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ew/spmv_kernel.cuh"
#include "cuda/ew/stream_tile.cuh"

namespace sparsenm::cuda::ew {

/// Arguments of one launch (sizes in elements).
struct SkmArgs {
  const void* values = nullptr;
  const std::uint32_t* indices = nullptr;
  const void* x = nullptr;  ///< [m][k], weight dtype
  void* y = nullptr;        ///< [m][n], y_dtype
  float* ws = nullptr;      ///< [MB][row_groups * 32] fp32, zero between launches
  unsigned* cnt = nullptr;  ///< [row_groups], zero between launches
  int n = 0, k = 0, m = 0;
  int tiles = 0, row_groups = 0;
  int chunks = 1;           ///< k ranges of whole tiles (chunk-major unit order)
  int chunk_tiles = 0;      ///< tiles per chunk (the last may hold fewer)
  int ctas_per_chunk = 0;   ///< grid = chunks x ctas_per_chunk
  int x_cols = 0;           ///< columns up to the last tile's window end (zeros past k)
  int chunk_cols = 0;       ///< columns per chunk (chunk_tiles x 32 / N x M)
  int x_pairs = 0;          ///< 1: X read as 32-bit column pairs (4-byte aligned X, k even)
  int y_dtype = 0;          ///< 0 f32, 1 f16, 2 bf16
};

template <class T, int B_, int NN_, int MM_, int MB_>
struct SkmTraits {
  using Elem = T;
  static constexpr int B = B_, NN = NN_, MM = MM_, MB = MB_;
  static constexpr int kWarps = 16, kThreads = 512, kSlots = 32;
  static constexpr int kVecs = kSlots * int(sizeof(T)) / 16;
  static constexpr int kIdxVec = B % 4 == 0 ? 4 : (B % 2 == 0 ? 2 : 1);
  static constexpr int kIdxLoads = B / kIdxVec;
  static constexpr int kColShift = MB == 8 ? 4 : 3;  ///< log2 of the bytes of one staged column
  static constexpr int kColBytes = 1 << kColShift;
  static constexpr int kWinBytes = MM * kColBytes;
  static constexpr int kTileCols = kSlots / NN * MM;  ///< X columns one tile spans
  static constexpr int kXAlign = 512;  ///< >= kWinBytes for every compiled M (<= 32) and MB
  static_assert(kWinBytes <= kXAlign, "the window base must be aligned to the window bytes");
  // compute() ORs a field (< 2^B columns, shifted to bytes) into a tile base that is a multiple of
  // kTileCols column bytes past the 512-byte-aligned X: OR = add needs 2^B | kTileCols and
  // 2^B * kColBytes <= kXAlign (true for power-of-two M; a pattern like 16:24 would break it).
  static_assert(kTileCols % (1 << B) == 0 && (1 << B) * kColBytes <= kXAlign,
                "tile base must be a multiple of 2^B column bytes (OR-ed index fields)");
  static_assert(sizeof(T) == 2, "ew_spmv_sk_mb serves f16 / bf16");
  static_assert(MB == 4 || MB == 8, "MB is 4 or 8");
  static_assert(NN > 0 && kSlots % NN == 0, "N must divide the 32-slot tile");
};

namespace skm {

template <class Tr>
struct Tile {
  std::uint32_t v[Tr::kVecs * 4];
  std::uint32_t i[Tr::B];
};

template <class Tr>
__device__ __forceinline__ void load(Tile<Tr>& t, const SkmArgs& a, std::size_t gt, int lane) {
  load_stream_tile<Tr::kVecs, Tr::kIdxLoads, Tr::kIdxVec>(t.v, t.i, a.values, a.indices, gt, lane);
}

/// Field j of the lane's b-bit index stream, already multiplied by 2^S (a byte offset).
template <int B, int S, int W>
__device__ __forceinline__ unsigned field_shifted(const std::uint32_t (&iw)[W], int j) {
  const int bit = j * B, w = bit >> 5, s = bit & 31;
  constexpr unsigned mask = ((1u << B) - 1u) << S;
  if (s + B <= 32) {
    if (s >= S) return (iw[w] >> (s - S)) & mask;
    return (iw[w] << (S - s)) & mask;
  }
  return __funnelshift_r(iw[w], iw[w + 1], s - S) & mask;  // s > 32 - B >= 24 > S
}

template <class T>
__device__ __forceinline__ void x_pair(std::uint32_t w, float& lo, float& hi) {
  if constexpr (std::is_same_v<T, __half>) detail::h2_to_f2(w, lo, hi);
  else detail::bf2_to_f2(w, lo, hi);
}

/// acc[r] += the tile's 32 products with X row r; tbase: shared-window address of the tile's first
/// window (a multiple of 2^B x column bytes, see SkmTraits' static_assert, so a field's byte offset
/// is ORed in, not added).
template <class Tr>
__device__ __forceinline__ void compute(const Tile<Tr>& tile, float (&acc)[Tr::MB], unsigned tbase) {
  using T = typename Tr::Elem;
#pragma unroll
  for (int j = 0; j < Tr::kSlots; ++j) {
    const unsigned addr = (field_shifted<Tr::B, Tr::kColShift>(tile.i, j) | tbase) + (j / Tr::NN) * Tr::kWinBytes;
    std::uint32_t xw[Tr::MB / 2];
    // Not volatile: the scheduler may move these reads; every address depends on the pinned
    // post-barrier base (see the kernel), so none can move above the staging barrier.
    if constexpr (Tr::MB == 8)
      asm("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(xw[0]), "=r"(xw[1]), "=r"(xw[2]), "=r"(xw[3]) : "r"(addr));
    else
      asm("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(xw[0]), "=r"(xw[1]) : "r"(addr));
    const float w = detail::value_at<T>(tile.v, j);
#pragma unroll
    for (int q = 0; q < Tr::MB / 2; ++q) {
      float lo, hi;
      x_pair<T>(xw[q], lo, hi);
      acc[2 * q] = fmaf(w, lo, acc[2 * q]);
      acc[2 * q + 1] = fmaf(w, hi, acc[2 * q + 1]);
    }
  }
}

template <int MB>
__device__ __forceinline__ void store_rows(const SkmArgs& a, int g, const float (&v)[MB], int lane) {
  const int row = g * 32 + lane;
  if (row >= a.n) return;
#pragma unroll
  for (int r = 0; r < MB; ++r)
    if (r < a.m) detail::store_y(a.y, std::size_t(r) * a.n + row, v[r], a.y_dtype);
}

/// Adds a partial group sum (ntiles of the group's tiles) and, if it completes the group, writes Y.
template <int MB>
__device__ __forceinline__ void flush(const SkmArgs& a, int g, const float (&v)[MB], unsigned ntiles, int lane) {
  const int row = g * 32 + lane;
  const std::size_t rs = std::size_t(a.row_groups) * 32;
#pragma unroll
  for (int r = 0; r < MB; ++r)
    if (r < a.m) atomicAdd(a.ws + r * rs + row, v[r]);
  __threadfence();
  __syncwarp();
  unsigned prev = 0;
  if (lane == 0) prev = atomicAdd(a.cnt + g, ntiles);
  prev = __shfl_sync(0xffffffffu, prev, 0);
  if (prev + ntiles == unsigned(a.tiles)) {
    __threadfence();
    float s[MB];
#pragma unroll
    for (int r = 0; r < MB; ++r) s[r] = r < a.m ? atomicExch(a.ws + r * rs + row, 0.0f) : 0.0f;
    if (lane == 0) atomicExch(a.cnt + g, 0u);
    store_rows<MB>(a, g, s, lane);
  }
}

/// Column pair p of the staged range: v[r] = row r, columns (2p, 2p + 1) in the low / high half.
template <class Tr>
__device__ __forceinline__ void store_pair(unsigned char* xs, int p, const std::uint32_t (&v)[Tr::MB]) {
  constexpr int MB = Tr::MB;
  std::uint32_t c0[MB / 2], c1[MB / 2];  // column 2p / 2p + 1: rows (2q, 2q + 1) per word
#pragma unroll
  for (int q = 0; q < MB / 2; ++q) {
    c0[q] = __byte_perm(v[2 * q], v[2 * q + 1], 0x5410);
    c1[q] = __byte_perm(v[2 * q], v[2 * q + 1], 0x7632);
  }
  uint4* d = reinterpret_cast<uint4*>(xs + std::size_t(2 * p) * Tr::kColBytes);
  if constexpr (MB == 8) {
    d[0] = make_uint4(c0[0], c0[1], c0[2], c0[3]);
    d[1] = make_uint4(c1[0], c1[1], c1[2], c1[3]);
  } else {
    d[0] = make_uint4(c0[0], c0[1], c1[0], c1[1]);
  }
}

/// Stages X[0..m)[col_lo, col_lo + ncols) as [column][MB] in the weight dtype (zeros past k and m).
/// Pairs wholly inside k of a 4-byte aligned X: 32-bit loads, kBatch pairs per thread requested
/// before any is stored (the L2 round trips overlap); the rest (odd k, misaligned X, past k): 16-bit.
template <class Tr>
__device__ __forceinline__ void stage_x(const SkmArgs& a, unsigned char* xs, int col_lo, int ncols) {
  constexpr int MB = Tr::MB, kBatch = 4;
  const int npairs = ncols / 2;
  const int fast = a.x_pairs ? max(0, min(npairs, (a.k - col_lo) / 2)) : 0;
  const std::uint32_t* x32 = static_cast<const std::uint32_t*>(a.x) + (col_lo >> 1);
  for (int p0 = threadIdx.x; p0 < fast; p0 += kBatch * Tr::kThreads) {
    std::uint32_t v[kBatch][MB];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int p = p0 + u * Tr::kThreads;
#pragma unroll
      for (int r = 0; r < MB; ++r) v[u][r] = (p < fast && r < a.m) ? __ldg(x32 + (std::size_t(r) * a.k >> 1) + p) : 0u;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (p0 + u * Tr::kThreads < fast) store_pair<Tr>(xs, p0 + u * Tr::kThreads, v[u]);
  }
  const unsigned short* x16 = static_cast<const unsigned short*>(a.x);
  for (int p = fast + int(threadIdx.x); p < npairs; p += Tr::kThreads) {
    const int col = col_lo + 2 * p;
    std::uint32_t v[MB];
#pragma unroll
    for (int r = 0; r < MB; ++r) {
      const std::uint32_t lo = (r < a.m && col < a.k) ? __ldg(x16 + std::size_t(r) * a.k + col) : 0u;
      const std::uint32_t hi = (r < a.m && col + 1 < a.k) ? __ldg(x16 + std::size_t(r) * a.k + col + 1) : 0u;
      v[r] = lo | (hi << 16);
    }
    store_pair<Tr>(xs, p, v);
  }
}

}  // namespace skm

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1) ew_spmv_skm_kernel(const __grid_constant__ SkmArgs a) {
  constexpr int MB = Tr::MB;
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int chunk = blockIdx.x / a.ctas_per_chunk, cb = blockIdx.x - chunk * a.ctas_per_chunk;
  const int tc0 = chunk * a.chunk_tiles;
  const int tcn = min(a.chunk_tiles, a.tiles - tc0);  // tiles of this chunk in every group
  const long long uc = (long long)a.row_groups * tcn;
  const long long wc = (long long)a.ctas_per_chunk * Tr::kWarps;
  const long long gw = (long long)cb * Tr::kWarps + warp;
  const long long v0 = gw * uc / wc, v1 = (gw + 1) * uc / wc;
  const int n_units = int(v1 - v0);
  const int g0 = int(v0 / tcn), t0 = int(v0 - (long long)g0 * tcn);

  int lg = g0, lt = t0;  // load cursor
  auto next_unit = [&]() {
    const std::size_t u = std::size_t(lg) * a.tiles + tc0 + lt;
    if (++lt == tcn) lt = 0, ++lg;
    return u;
  };
  skm::Tile<Tr> ta, tb;
  if (n_units > 0) skm::load<Tr>(ta, a, next_unit(), lane);
  if (n_units > 1) skm::load<Tr>(tb, a, next_unit(), lane);

  // X starts at the first kXAlign-aligned shared address (the plan adds kXAlign bytes of slack).
  const unsigned raw = unsigned(__cvta_generic_to_shared(smem));
  unsigned xs_addr = (raw + (Tr::kXAlign - 1)) & ~unsigned(Tr::kXAlign - 1);
  const int col_lo = chunk * a.chunk_cols;
  skm::stage_x<Tr>(a, smem + (xs_addr - raw), col_lo, min(a.chunk_cols, a.x_cols - col_lo));
  __syncthreads();
  asm volatile("" : "+r"(xs_addr));  // pins every address derived from it below the barrier

  // Segments (a group's tiles inside this chunk) closed in the loop: stored straight to Y when the
  // warp holds the whole group (one chunk, started at tile 0); the first one otherwise waits in
  // `head` (flushed after the loop, no fence in the stream); later ones (chunks > 1) are flushed.
  float acc[MB], head[MB];
#pragma unroll
  for (int r = 0; r < MB; ++r) acc[r] = 0.0f, head[r] = 0.0f;
  const bool whole = a.chunks == 1;
  int g = g0, t = t0;
  auto step = [&]() {
    if (++t == tcn) {
      if (g == g0 && (t0 != 0 || !whole)) {
#pragma unroll
        for (int r = 0; r < MB; ++r) head[r] = acc[r];
      } else if (whole) {
        skm::store_rows<MB>(a, g, acc, lane);
      } else {
        skm::flush<MB>(a, g, acc, unsigned(tcn), lane);
      }
#pragma unroll
      for (int r = 0; r < MB; ++r) acc[r] = 0.0f;
      ++g;
      t = 0;
    }
  };
  const unsigned tile_bytes = unsigned(Tr::kTileCols) * Tr::kColBytes;
  for (int q = 0; q < n_units; q += 2) {
    skm::compute<Tr>(ta, acc, xs_addr + unsigned(t) * tile_bytes);
    if (q + 2 < n_units) skm::load<Tr>(ta, a, next_unit(), lane);
    step();
    if (q + 1 < n_units) {
      skm::compute<Tr>(tb, acc, xs_addr + unsigned(t) * tile_bytes);
      if (q + 3 < n_units) skm::load<Tr>(tb, a, next_unit(), lane);
      step();
    }
  }
  if (n_units > 0) {
    if (g != g0 && (t0 != 0 || !whole)) skm::flush<MB>(a, g0, head, unsigned(tcn - t0), lane);
    if (t != 0) skm::flush<MB>(a, g, acc, unsigned(g == g0 ? t - t0 : t), lane);
  }
}

}  // namespace sparsenm::cuda::ew
