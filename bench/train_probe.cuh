// sparsenm bench — access-pattern ceilings of the memory-bound training kernels (docs/PERF-train.md
// "Session 6"): "data movers" that read and write the SAME bytes at the SAME addresses, in the same
// grid / CTA / tile order and with the same load and store widths as the shipped kernels, but do
// no compute (every stored word is an XOR of words the thread loaded, so nothing is dead). Their
// time is the floor of that kernel's stream mix on this device: a shipped kernel's fraction of
// copy divided by its mover's fraction of copy is how far it is from its own ceiling.
// Movers:
// - mask_mover_kernel<kCW, kApply>: the staged lean mask search (mask24_lean.cuh, variant 9 for
//   kCW = 4, variant 8 for kCW = 2): per CTA-pass the W tile loads (4 x 16 B per thread), the
//   write-out stores of S(W) values (2 x 16 B), S(W)^T values (2 x 16 B), the mask rows (16 B,
//   threads < 16 kCW) and the S(W) index rows (8 / 16 B), after the strip the S(W)^T index rows;
//   no staging through shared memory and no barrier (the stores go straight to the addresses the
//   staged write-out uses). kApply: the mask rows are read instead of written (the apply stream
//   mix; the shipped apply is variant 4 / 1, whose tile order differs: this is its stream mix in
//   the lean order).
// - flat_mask_mover_kernel: the same five outputs and one input, each array walked linearly by a
//   grid-stride loop (per 32 B of W: 16 B + 16 B of values, 2 B of each of mask, S(W) index and
//   S(W)^T index): the alternative order — every output in long contiguous runs.
// - mvue_fm_chunk_mover / mvue_fm_lines_mover: feature-major MVUE, variants 6 / 10 (32-token chunk
//   per thread) and variant 7 (two 16-token units per lane) geometry.
// - mvue_tm_tile_mover / mvue_tm_lines_mover: token-major, variant 1 (128 x 128 tile, Tile24
//   write-out) and variants 3 / 7 / 18 (256 x 64 tile, TileW64 write-out; session 4-7c: variant 5) geometry: the thread's 16 token
//   rows of 8 B loaded, the tile's write-out addresses stored (no shared-memory transpose).
// - mask_line_mover_kernel<kRP, kC, kPasses> (session 8, docs/PERF-train.md "Session 8"): "line"
//   orders — a CTA walks kPasses passes of kRP rows down a kC-column tile, loads whole lines and
//   writes every output as rows of consecutive 16-byte pieces (S(W)^T index rows after the strip);
//   the train bench checks each one's coverage (every output word written, no byte past the ends).
// - copy / read-only / write-only kernels over a byte count (grid-stride, 16-byte accesses).
// Occupancy: each mover can be capped to the shipped kernel's resident CTAs per SM (dynamic
// shared-memory padding, occupancy_cap_smem), so that it has the same warps per SM.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/train/mask24.cuh"
#include "cuda/train/prefetch.cuh"

namespace sparsenm::bench::probe {

using train::detail::Mask24Args;
using train::detail::Mask24Geom;
using train::detail::Mask24LeanSteps;
using train::detail::Mask24LeanTraits;

__device__ __forceinline__ uint4 x4(uint4 a, uint4 b) { return make_uint4(a.x ^ b.x, a.y ^ b.y, a.z ^ b.z, a.w ^ b.w); }
__device__ __forceinline__ uint4 rot4(uint4 a) { return make_uint4(a.y, a.z, a.w, a.x); }

template <int kCW, bool kApply>
__global__ void __launch_bounds__(Mask24LeanTraits<kCW>::kThreads) mask_mover_kernel(Mask24Args args, Mask24Geom g, Mask24LeanSteps st) {
  using L = Mask24LeanTraits<kCW>;
  train::detail::offset_to_matrix(args, g, blockIdx.z);
  const int lane = threadIdx.x & 31, warp0 = threadIdx.x >> 5;
  const int wr = warp0 / kCW, wc = warp0 % kCW;
  const int xl = lane & 3, yl = lane >> 2;
  const std::int64_t row_base = std::int64_t(blockIdx.y) * (L::kTileRows * L::kPasses);
  const std::int64_t r0 = row_base + 32 * wr + 4 * yl;
  const std::int64_t c0 = std::int64_t(blockIdx.x) * L::kTileCols + 32 * wc + 8 * xl;
  const int passes = int(min(std::int64_t(L::kPasses), (args.rows - row_base) / L::kTileRows));
  const char* pw = static_cast<const char*>(args.w) + (r0 * args.cols + c0) * 2;
  const int tid = threadIdx.x;
  const int orow = tid / (2 * kCW), och = tid % (2 * kCW);
  const int trow = tid >> 2, tch = tid & 3;
  constexpr int kSiFirst = 16 * kCW;
  const std::int64_t col0 = std::int64_t(blockIdx.x) * L::kTileCols;
  char* ov = static_cast<char*>(args.w_values) + row_base * st.wv_row + col0 + 16 * och + orow * st.wv_row;
  char* ot = static_cast<char*>(args.wt_values) + (col0 + trow) * st.tv_row + row_base + 16 * tch;
  char* oq = nullptr;
  std::int64_t oq_pass = 0;
  if (tid < 16 * kCW) {
    char* m = kApply ? const_cast<char*>(reinterpret_cast<const char*>(args.mask_in)) : reinterpret_cast<char*>(args.mask_out);
    oq = m + ((row_base / 4 + tid / kCW) * g.bcols + col0 / 4) * 2 + 16 * (tid % kCW);
    oq_pass = st.mask_pass;
  } else if (tid < kSiFirst + 64) {
    oq = reinterpret_cast<char*>(args.w_indices) + (row_base + tid - kSiFirst) * g.wi_pitch + col0 / 8;
    oq_pass = st.wi_pass;
  }
  uint4 tacc = make_uint4(0, 0, 0, 0);  // the strip's S(W)^T index bytes
#pragma unroll 1
  for (int p = 0; p < passes; ++p) {
    uint4 x[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) x[r] = __ldcs(reinterpret_cast<const uint4*>(pw + r * st.w_row));
    uint4 a = x4(x[0], x[1]), b = x4(x[2], x[3]);
    if (kApply && tid < 16 * kCW) a = x4(a, __ldcs(reinterpret_cast<const uint4*>(oq)));
    __stcs(reinterpret_cast<uint4*>(ov), a);
    __stcs(reinterpret_cast<uint4*>(ov + 32 * st.wv_row), b);
    __stcs(reinterpret_cast<uint4*>(ot), rot4(a));
    __stcs(reinterpret_cast<uint4*>(ot + (16 * kCW) * st.tv_row), rot4(b));
    if (tid < 16 * kCW) {
      if (!kApply) __stcs(reinterpret_cast<uint4*>(oq), x4(a, b));
    } else if (tid < kSiFirst + 64) {
      if constexpr (kCW == 2) __stcs(reinterpret_cast<uint2*>(oq), make_uint2(a.x ^ b.y, a.z ^ b.w));
      else __stcs(reinterpret_cast<uint4*>(oq), x4(a, rot4(b)));
    }
    tacc = x4(tacc, x4(a, b));
    ov += st.wv_pass;
    ot += 2 * (L::kTileRows / 2);
    oq += oq_pass;
    pw += st.w_pass;
  }
  const int valid = 8 * passes;
  const bool idx16 = (g.ti_pitch % 16) == 0;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int row = trow + 16 * kCW * k;
    const uint4 w4 = k ? rot4(tacc) : tacc;
    char* dst = reinterpret_cast<char*>(args.wt_indices) + (col0 + row) * g.ti_pitch + row_base / 8 + 16 * tch;
    if (16 * tch + 16 <= valid) {
      if (idx16) {
        __stcs(reinterpret_cast<uint4*>(dst), w4);
      } else {
        __stcs(reinterpret_cast<uint2*>(dst), make_uint2(w4.x, w4.y));
        __stcs(reinterpret_cast<uint2*>(dst) + 1, make_uint2(w4.z, w4.w));
      }
    } else if (16 * tch < valid) {
      __stcs(reinterpret_cast<uint2*>(dst), make_uint2(w4.x, w4.y));
    }
  }
}

/// Launches the lean mask mover over a batch (the arguments the shipped search gets; shapes with
/// rows % 64 == 0 and cols % (32 kCW) == 0). max_ctas: resident CTAs per SM (0: no cap).
template <int kCW, bool kApply>
void launch_mask_mover(const Mask24Args& a, int max_ctas, cudaStream_t s = nullptr) {
  using L = Mask24LeanTraits<kCW>;
  const Mask24Geom g = train::detail::mask24_geom<std::uint16_t>(a);
  Mask24LeanSteps st;
  st.w_row = a.cols * 2;
  st.wv_row = g.wv_pitch * 2;
  st.wi_row = g.wi_pitch;
  st.tv_row = g.tv_pitch * 2;
  st.ti_row = g.ti_pitch;
  st.w_pass = L::kTileRows * st.w_row;
  st.mask_pass = (L::kTileRows / 4) * g.bcols * 2;
  st.wv_pass = L::kTileRows * st.wv_row;
  st.wi_pass = L::kTileRows * st.wi_row;
  const std::int64_t strip = std::int64_t(L::kTileRows) * L::kPasses;
  const dim3 grid(unsigned(a.cols / L::kTileCols), unsigned((a.rows + strip - 1) / strip), unsigned(a.batch));
  auto k = mask_mover_kernel<kCW, kApply>;
  const std::size_t smem = train::detail::occupancy_cap_smem(k, L::kThreads, max_ctas);
  k<<<grid, L::kThreads, smem, s>>>(a, g, st);
  SPARSENM_CUDA_CHECK_LAUNCH("mask_mover_kernel");
}

/// Session 8, the "line" orders (docs/PERF-train.md "Session 8"): a CTA of 256 threads owns a
/// column tile of nc = kC columns of one matrix (the last tile of a matrix whose cols % kC != 0:
/// the remaining cols % kC, a multiple of 64) and walks kPasses passes of kRP rows down it. Per
/// pass it loads the kRP x nc W tile (16-byte loads, consecutive lanes along a row, all issued
/// before any store) and writes, each as rows of consecutive 16-byte pieces (8 lanes = one whole
/// 128-byte line where the row piece is >= 128 B):
///   S(W) values  kRP rows x nc B         S(W)^T values  nc W^T rows x kRP B
///   mask         kRP / 4 rows x nc / 2 B S(W) index     kRP rows x nc / 8 B
/// and after the strip the S(W)^T index rows (nc W^T rows x kPasses kRP / 8 B, collected over the
/// passes: a kernel would stage them in shared memory; here XOR accumulators in registers).
/// kRP = kC = 128: every value row piece is a whole line; kC = 256: the S(W) index pieces are
/// whole sectors too; kRP = 64: the S(W)^T value pieces are 64 B (the shipped lean order's size)
/// with everything else as in 128 x 128. kApply: the mask rows are read instead of written.
/// kPrefetch: the next pass's W tile is loaded before this pass's stores (two tiles in registers).
/// One CTA's strip with a compile-time tile width kNC (kC, or the 64-column tail).
template <int kRP, int kNC, int kPasses, bool kApply, bool kPrefetch>
__device__ __forceinline__ void mask_line_strip(const Mask24Args& args, const Mask24Geom& g, std::int64_t col0, std::int64_t row_base) {
  constexpr int kLd = kRP * kNC / 2048;                   // 16-byte W loads per thread and pass
  constexpr int kLdRow = kNC / 8;                          // 16-byte pieces per W row of the tile
  constexpr int kTvRow = kRP / 16;                         // pieces per S(W)^T row and pass
  constexpr int kTiRow = kPasses * kRP / 8;                // bytes per S(W)^T index row of a full strip
  constexpr int kAcc = kNC * kTiRow / 16 / 256;            // its 16-byte pieces per thread
  static_assert(kLd >= 2 && kLd % 2 == 0 && kAcc >= 1 && 256 % kLdRow == 0 && 256 % kTvRow == 0, "tile shape");
  const int t = threadIdx.x;
  const int passes = int(min(std::int64_t(kPasses), (args.rows - row_base) / kRP));
  const std::int64_t w_row = args.cols * 2, wv_row = g.wv_pitch * 2, tv_row = g.tv_pitch * 2;
  // per-thread bases; piece j of a pass lies j * (rows per 256 pieces) rows further
  const char* pw = static_cast<const char*>(args.w) + (row_base + t / kLdRow) * w_row + col0 * 2 + 16 * (t % kLdRow);
  char* pv = static_cast<char*>(args.w_values) + (row_base + t / (kNC / 16)) * wv_row + col0 + 16 * (t % (kNC / 16));
  char* pt = static_cast<char*>(args.wt_values) + (col0 + t / kTvRow) * tv_row + row_base + 16 * (t % kTvRow);
  uint4 acc[kAcc];
#pragma unroll
  for (int j = 0; j < kAcc; ++j) acc[j] = make_uint4(0, 0, 0, 0);
  uint4 x[kLd], y[kLd];
  auto load = [&](uint4 (&dst)[kLd], const char* src) {
#pragma unroll
    for (int j = 0; j < kLd; ++j) dst[j] = __ldcs(reinterpret_cast<const uint4*>(src + j * (256 / kLdRow) * w_row));
  };
  load(x, pw);
#pragma unroll 1
  for (int p = 0; p < passes; ++p) {
    if constexpr (kPrefetch) {
      if (p + 1 < passes) load(y, pw + kRP * w_row);
    }
    const std::int64_t row0 = row_base + std::int64_t(p) * kRP;
#pragma unroll
    for (int j = 0; j < kLd / 2; ++j) {
      const uint4 a = x4(x[2 * j], x[2 * j + 1]);
      __stcs(reinterpret_cast<uint4*>(pv + j * (256 / (kNC / 16)) * wv_row), a);
      __stcs(reinterpret_cast<uint4*>(pt + j * (256 / kTvRow) * tv_row), rot4(a));
      acc[j % kAcc] = x4(acc[j % kAcc], a);
    }
    // mask: kRP / 4 rows x kNC / 2 B; S(W) index: kRP rows x kNC / 8 B
    const uint4 m = x4(x[0], rot4(x[1]));
    constexpr int kMask = kRP * kNC / 128, kMaskRow = kNC / 32;
#pragma unroll
    for (int f0 = 0; f0 < kMask; f0 += 256) {
      const int f = f0 + t;
      if (kMask % 256 == 0 || f < kMask) {
        char* pm = reinterpret_cast<char*>(kApply ? const_cast<std::uint16_t*>(args.mask_in) : args.mask_out) +
                   ((row0 / 4 + f / kMaskRow) * g.bcols + col0 / 4) * 2 + 16 * (f % kMaskRow);
        if constexpr (kApply) acc[0] = x4(acc[0], __ldcs(reinterpret_cast<const uint4*>(pm)));
        else __stcs(reinterpret_cast<uint4*>(pm), m);
      }
    }
    const int ti = (t + 128) & 255;  // the index pieces start with the threads the mask leaves idle
    if (kNC >= 128 && g.wi_pitch % 16 == 0) {  // 16-byte pieces
      constexpr int kSi = kRP * kNC / 128, kSiRow = kNC / 128 > 0 ? kNC / 128 : 1;
#pragma unroll
      for (int f0 = 0; f0 < kSi; f0 += 256) {
        const int f = f0 + ti;
        if (kSi % 256 == 0 || f < kSi)
          __stcs(reinterpret_cast<uint4*>(args.w_indices + (row0 + f / kSiRow) * g.wi_pitch + col0 / 8 + 16 * (f % kSiRow)), rot4(m));
      }
    } else {  // 8-byte pieces (S(W) index rows only 8-byte aligned, e.g. 1600 columns: 200 B rows)
      constexpr int kSi = kRP * kNC / 64, kSiRow = kNC / 64;
#pragma unroll
      for (int f0 = 0; f0 < kSi; f0 += 256) {
        const int f = f0 + ti;
        if (kSi % 256 == 0 || f < kSi)
          __stcs(reinterpret_cast<uint2*>(args.w_indices + (row0 + f / kSiRow) * g.wi_pitch + col0 / 8 + 8 * (f % kSiRow)),
                 make_uint2(m.x ^ m.y, m.z ^ m.w));
      }
    }
    pw += kRP * w_row;
    pv += kRP * wv_row;
    pt += kRP;
    if constexpr (kPrefetch) {
#pragma unroll
      for (int j = 0; j < kLd; ++j) x[j] = y[j];
    } else if (p + 1 < passes) {
      load(x, pw);
    }
  }
  // S(W)^T index rows of the strip: kNC rows x kTiRow B, of which passes kRP / 8 are valid
  const int valid = passes * kRP / 8;
#pragma unroll
  for (int j = 0; j < kAcc; ++j) {
    const int f = j * 256 + t, r = f / (kTiRow / 16), ch = f % (kTiRow / 16);
    char* dst = reinterpret_cast<char*>(args.wt_indices) + (col0 + r) * g.ti_pitch + row_base / 8 + 16 * ch;
    if (16 * ch + 16 <= valid) __stcs(reinterpret_cast<uint4*>(dst), acc[j]);
    else if (16 * ch < valid) __stcs(reinterpret_cast<uint2*>(dst), make_uint2(acc[j].x, acc[j].y));
  }
}

/// Session 8, the "line" orders (docs/PERF-train.md "Session 8"): a CTA of 256 threads owns a
/// column tile of kC columns of one matrix (the last tile of a matrix whose cols % kC != 0: the
/// 64-column tail) and walks kPasses passes of kRP rows down it. Per pass it loads the W tile
/// (16-byte loads, consecutive lanes along a row, all issued before any store) and writes, each
/// as rows of consecutive 16-byte pieces (8 lanes = one whole 128-byte line where the row piece
/// is >= 128 B):
///   S(W) values  kRP rows x kC B         S(W)^T values  kC W^T rows x kRP B
///   mask         kRP / 4 rows x kC / 2 B S(W) index     kRP rows x kC / 8 B
/// and after the strip the S(W)^T index rows (kC W^T rows x kPasses kRP / 8 B, collected over the
/// passes: a kernel would stage them in shared memory; here XOR accumulators in registers).
/// kRP = kC = 128: every value row piece is a whole line; kC = 256: the S(W) index pieces are
/// whole sectors too; kRP = 64: the S(W)^T value pieces are 64 B (the shipped lean order's size)
/// with everything else as in 128 x 128. kApply: the mask rows are read instead of written.
/// kPrefetch: the next pass's W tile is loaded before this pass's stores (two tiles in registers).
template <int kRP, int kC, int kPasses, bool kApply = false, bool kPrefetch = false>
__global__ void __launch_bounds__(256, (kC == 256 || kPrefetch) ? 2 : 3) mask_line_mover_kernel(Mask24Args args, Mask24Geom g) {
  static_assert(kC == 128 || kC == 256, "column tiles of 128 or 256 (tails of 64 or 128)");
  train::detail::offset_to_matrix(args, g, blockIdx.z);
  const std::int64_t col0 = std::int64_t(blockIdx.x) * kC;
  const std::int64_t nc = min(std::int64_t(kC), args.cols - col0);
  const std::int64_t row_base = std::int64_t(blockIdx.y) * (kRP * kPasses);
  if (nc == kC) mask_line_strip<kRP, kC, kPasses, kApply, kPrefetch>(args, g, col0, row_base);
  else if (kC == 256 && nc == 128) mask_line_strip<kRP, 128, kPasses, kApply, kPrefetch>(args, g, col0, row_base);
  else mask_line_strip<kRP, 64, kPasses, kApply, kPrefetch>(args, g, col0, row_base);
}

/// Launches a line-order mover over a batch (rows % kRP == 0, cols % 64 == 0, the 16-bit
/// outputs of transposable_mask24_batched, 16-byte aligned rows: rows % 128 == 0 for the S(W)^T
/// index rows, cols % 128 == 0 or a 64-column tail for the S(W) index rows).
template <int kRP, int kC, int kPasses, bool kApply = false, bool kPrefetch = false>
void launch_mask_line_mover(const Mask24Args& a, cudaStream_t s = nullptr) {
  const std::int64_t tail = a.cols % kC;
  if (a.rows % 128 != 0 || a.cols % 64 != 0 || (tail != 0 && tail != 64 && tail != 128))
    throw InvalidArgument("mask_line_mover", "rows % 128 == 0, cols % 64 == 0 and cols % kC in {0, 64, 128}");
  const Mask24Geom g = train::detail::mask24_geom<std::uint16_t>(a);
  const std::int64_t strip = std::int64_t(kRP) * kPasses;
  const dim3 grid(unsigned((a.cols + kC - 1) / kC), unsigned((a.rows + strip - 1) / strip), unsigned(a.batch));
  mask_line_mover_kernel<kRP, kC, kPasses, kApply, kPrefetch><<<grid, 256, 0, s>>>(a, g);
  SPARSENM_CUDA_CHECK_LAUNCH("mask_line_mover_kernel");
}

/// The flat order: n32 = bytes of W / 32; per unit i: W[2i], W[2i+1] (16 B each) -> sv[i], tv[i]
/// (16 B), m[i], si[i], ti[i] (2 B).
__global__ void __launch_bounds__(256) flat_mask_mover_kernel(const uint4* __restrict__ w, uint4* __restrict__ sv, uint4* __restrict__ tv,
                                                             std::uint16_t* __restrict__ m, std::uint16_t* __restrict__ si,
                                                             std::uint16_t* __restrict__ ti, std::int64_t n32) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + stride < n32; i += 2 * stride) {  // two units in flight per thread
    const uint4 a0 = __ldcs(w + 2 * i), b0 = __ldcs(w + 2 * i + 1);
    const uint4 a1 = __ldcs(w + 2 * (i + stride)), b1 = __ldcs(w + 2 * (i + stride) + 1);
    const uint4 c0 = x4(a0, b0), c1 = x4(a1, b1);
    __stcs(sv + i, c0);
    __stcs(tv + i, rot4(c0));
    __stcs(sv + i + stride, c1);
    __stcs(tv + i + stride, rot4(c1));
    m[i] = std::uint16_t(c0.x), si[i] = std::uint16_t(c0.y), ti[i] = std::uint16_t(c0.z);
    m[i + stride] = std::uint16_t(c1.x), si[i + stride] = std::uint16_t(c1.y), ti[i + stride] = std::uint16_t(c1.z);
  }
  for (; i < n32; i += stride) {
    const uint4 c = x4(__ldcs(w + 2 * i), __ldcs(w + 2 * i + 1));
    __stcs(sv + i, c);
    __stcs(tv + i, rot4(c));
    m[i] = std::uint16_t(c.x), si[i] = std::uint16_t(c.y), ti[i] = std::uint16_t(c.z);
  }
}

/// Plain copy of n16 16-byte words (4 in flight per thread).
__global__ void __launch_bounds__(256) copy16_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::int64_t n16) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = __ldcs(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < 4; ++k) __stcs(dst + i + k * stride, v[k]);
  }
  for (; i < n16; i += stride) __stcs(dst + i, __ldcs(src + i));
}

/// Read-only pass over n16 16-byte words; one word per thread written (XOR of everything read).
__global__ void __launch_bounds__(256) read16_kernel(const uint4* __restrict__ src, std::uint32_t* __restrict__ sink, std::int64_t n16) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t gid = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  std::int64_t i = gid;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = __ldcs(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < 4; ++k) acc = x4(acc, v[k]);
  }
  for (; i < n16; i += stride) acc = x4(acc, __ldcs(src + i));
  sink[gid] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}

/// Write-only pass over n16 16-byte words (values from the index and a seed).
__global__ void __launch_bounds__(256) write16_kernel(uint4* __restrict__ dst, std::int64_t n16, std::uint32_t seed) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride) {
    const std::uint32_t u = std::uint32_t(i) ^ seed;
    __stcs(dst + i, make_uint4(u, u * 3u, u * 5u, u * 7u));
  }
}

// ---- MVUE (16-bit elements; T tokens, N features; every shape here tiles exactly) ----

/// Feature-major, variants 6 / 10: thread = 32 tokens of one feature (4 x 16 B loads), 2 x 16 B of
/// values + 4 index bytes per feature; CTA 64 x 4, features walked with a grid-y stride.
__global__ void __launch_bounds__(256) mvue_fm_chunk_mover(const std::uint16_t* __restrict__ g, std::uint16_t* __restrict__ out,
                                                          std::uint8_t* __restrict__ idx, std::int64_t T, std::int64_t N) {
  const std::int64_t t0 = (std::int64_t(blockIdx.x) * 64 + threadIdx.x) * 32;
  if (t0 >= T) return;
  const std::int64_t windows = T / 4, vcols = 2 * windows, irb = (windows + 1) / 2, w0 = t0 / 4;
  for (std::int64_t f = std::int64_t(blockIdx.y) * 4 + threadIdx.y; f < N; f += std::int64_t(gridDim.y) * 4) {
    const uint4* src = reinterpret_cast<const uint4*>(g + f * T + t0);
    uint4 q[4];
#pragma unroll
    for (int v = 0; v < 4; ++v) q[v] = __ldcs(src + v);
    const uint4 a = x4(q[0], q[1]), b = x4(q[2], q[3]);
    __stcs(reinterpret_cast<uint4*>(out + f * vcols + 2 * w0), a);
    __stcs(reinterpret_cast<uint4*>(out + f * vcols + 2 * w0) + 1, b);
    __stcs(reinterpret_cast<unsigned*>(idx + f * irb + w0 / 2), a.x ^ b.y);
  }
}

/// Feature-major, variant 7: lane = units 64 wx + l and 64 wx + 32 + l of its CTA's 128 (16 tokens
/// each: 2 x 16 B loads, 16 B of values + 2 index bytes).
__global__ void __launch_bounds__(256) mvue_fm_lines_mover(const std::uint16_t* __restrict__ g, std::uint16_t* __restrict__ out,
                                                          std::uint8_t* __restrict__ idx, std::int64_t T, std::int64_t N) {
  const std::int64_t windows = T / 4, vcols = 2 * windows, irb = (windows + 1) / 2;
  const int lane = threadIdx.x & 31;
  const std::int64_t ubase = std::int64_t(blockIdx.x) * 128 + (threadIdx.x >> 5) * 64 + lane;
  for (std::int64_t f = std::int64_t(blockIdx.y) * 4 + threadIdx.y; f < N; f += std::int64_t(gridDim.y) * 4) {
    uint4 q[2][2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const std::int64_t t0 = 16 * (ubase + 32 * u);
      if (t0 + 16 > T) continue;
      const uint4* src = reinterpret_cast<const uint4*>(g + f * T + t0);
      q[u][0] = __ldcs(src), q[u][1] = __ldcs(src + 1);
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const std::int64_t t0 = 16 * (ubase + 32 * u), w0 = t0 / 4;
      if (t0 + 16 > T) continue;
      const uint4 c = x4(q[u][0], q[u][1]);
      __stcs(reinterpret_cast<uint4*>(out + f * vcols + 2 * w0), c);
      *reinterpret_cast<std::uint16_t*>(idx + f * irb + w0 / 2) = std::uint16_t(c.x ^ c.w);
    }
  }
}

/// Token-major, variant 1: tile 128 tokens x 128 features; thread (fp = tid % 32, tg = tid / 32)
/// loads features 4 fp .. +3 of tokens 16 tg .. +15 (8 B each); the Tile24 write-out: 4 rounds of
/// 16 B value chunks (thread = chunk tid % 8 of rows tid / 8 + 32 j), index rows 2 x 4 B per thread.
__global__ void __launch_bounds__(256) mvue_tm_tile_mover(const std::uint16_t* __restrict__ g, std::uint16_t* __restrict__ out,
                                                         std::uint8_t* __restrict__ idx, std::int64_t T, std::int64_t N) {
  const int tid = threadIdx.x, fp = tid % 32, tg = tid / 32;
  const std::int64_t f0 = std::int64_t(blockIdx.x) * 128 + 4 * fp, t0 = std::int64_t(blockIdx.y) * 128 + 16 * tg;
  const std::int64_t windows = T / 4, vcols = 2 * windows, irb = (windows + 1) / 2;
  uint2 x[16];
#pragma unroll
  for (int t = 0; t < 16; ++t) x[t] = __ldcs(reinterpret_cast<const uint2*>(g + (t0 + t) * N + f0));
  const std::int64_t row0 = std::int64_t(blockIdx.x) * 128, win0 = std::int64_t(blockIdx.y) * 32;
  const int row = tid / 8, ch = tid % 8;
  uint4* dst = reinterpret_cast<uint4*>(out + (row0 + row) * vcols + 2 * win0) + ch;
  const std::int64_t step = 32 * vcols * 2 / 16;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    __stcs(dst + j * step, make_uint4(x[4 * j].x ^ x[4 * j + 1].y, x[4 * j + 1].x ^ x[4 * j + 2].y, x[4 * j + 2].x ^ x[4 * j + 3].y,
                                      x[4 * j + 3].x ^ x[4 * j].y));
  const int irow = tid / 2, h = tid % 2;
  std::uint32_t* di = reinterpret_cast<std::uint32_t*>(idx + (row0 + irow) * irb + win0 / 2 + 8 * h);
  __stcs(di, x[0].x ^ x[5].y ^ x[10].x);
  __stcs(di + 1, x[15].y ^ x[7].x ^ x[2].y);
}

/// Token-major, variant 5 (dropped in session 9; the same tiles as 3 / 7 / 18): tile 256 tokens x 64 features; thread (fp = tid % 16, tg = tid / 16)
/// loads features 4 fp .. +3 of tokens 16 tg .. +15; the TileW64 write-out: 4 rounds of 16 B
/// value chunks (chunk tid % 16 of rows tid / 16 + 16 j), index rows as 16 B halves (tid < 128).
__global__ void __launch_bounds__(256) mvue_tm_lines_mover(const std::uint16_t* __restrict__ g, std::uint16_t* __restrict__ out,
                                                          std::uint8_t* __restrict__ idx, std::int64_t T, std::int64_t N) {
  const int tid = threadIdx.x, fp = tid % 16, tg = tid / 16;
  const std::int64_t f0 = std::int64_t(blockIdx.x) * 64 + 4 * fp, t0 = std::int64_t(blockIdx.y) * 256 + 16 * tg;
  const std::int64_t windows = T / 4, vcols = 2 * windows, irb = (windows + 1) / 2;
  uint2 x[16];
#pragma unroll
  for (int t = 0; t < 16; ++t) x[t] = __ldcs(reinterpret_cast<const uint2*>(g + (t0 + t) * N + f0));
  const std::int64_t row0 = std::int64_t(blockIdx.x) * 64, win0 = std::int64_t(blockIdx.y) * 64;
  const int row = tid / 16, ch = tid % 16;
  uint4* dst = reinterpret_cast<uint4*>(out + (row0 + row) * vcols + 2 * win0) + ch;
  const std::int64_t step = 16 * vcols * 2 / 16;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    __stcs(dst + j * step, make_uint4(x[4 * j].x ^ x[4 * j + 1].y, x[4 * j + 1].x ^ x[4 * j + 2].y, x[4 * j + 2].x ^ x[4 * j + 3].y,
                                      x[4 * j + 3].x ^ x[4 * j].y));
  if (tid < 128) {
    const int irow = tid / 2, h = tid % 2;
    __stcs(reinterpret_cast<uint4*>(idx + (row0 + irow) * irb + win0 / 2 + 16 * h),
           make_uint4(x[0].x ^ x[5].y, x[10].x ^ x[15].y, x[7].x ^ x[2].y, x[12].x ^ x[9].y));
  }
}

/// Grid of a grid-stride kernel: every SM full (the kernel's own occupancy).
template <class K>
int full_grid(K kernel, int threads) {
  int dev = 0, sms = 0, per_sm = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  return sms * per_sm;
}

}  // namespace sparsenm::bench::probe
