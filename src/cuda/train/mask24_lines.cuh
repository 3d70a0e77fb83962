// sparsenm — mask search / apply with whole-sector stores (Mask24Args::variant = 4;
// docs/PERF-train.md "Session 3c"). The session-2 kernel (mask24_s2.cuh: one 4 x 8 region per
// thread, 256 threads) walks a CTA footprint of 256 rows x 256 columns as 8 passes of its
// 128 x 64 tile, so that every output stream leaves in whole 32-byte sectors that no other CTA
// touches:
// - S(W) index bytes: a 128 x 64 tile owns 8 bytes of each index row (a quarter sector shared
//   by 4 CTAs); here the bytes of all 4 column passes are staged in shared memory (256 rows x
//   32 B) and written at the end with 16-byte stores (8 / 4 where the row pitch allows no more).
// - S(W)^T: the two row passes of a column pass deposit into one 64-row x 64-window tile, so a
//   CTA writes 256 B (f16) of values and 32 B of indices per W^T row (was 128 B + 16 B, the
//   index half sector shared with the next CTA) with 16-byte stores.
// - S(W) values (64 B per row per pass) and the mask (32 B per block row per pass) go straight
//   from registers as in the session-2 kernel: whole sectors already.
// Outputs bit-identical to every other variant (same per-element code as mask24_s2.cuh).
// Measured (docs/PERF-train.md "Session 3c"): 1.02-1.08x on batched searches, 1.04-1.06x on
// batched applies with 256-multiple shapes, slower on 1600-column applies and on one matrix
// (under one wave); mask24_default_variant picks it for the cases where it won.
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/train/mask24_s2.cuh"
#include "cuda/train/pattern24.cuh"
#include "cuda/train/prefetch.cuh"
#include "cuda/train/train_common.cuh"

namespace sparsenm::train::detail {

struct Mask24LTraits {
  static constexpr int kThreads = 256, kRows = 256, kCols = 256;  // CTA footprint
  static constexpr int kRowPasses = 2, kColPasses = 4;             // of 128 x 64
  static constexpr int kIdxPitch = 36;                             // bytes per staged S(W) index row (32 used)
};

/// 64 W^T rows x 64 windows (256 W rows) of S(W)^T staged in shared memory. Value words at an
/// odd pitch (65 / 129 words: column-wise deposits at most 2-way conflicted), nibbles as bytes
/// at a 68-byte pitch (17 words).
template <class Raw>
struct TileT64 {
  static constexpr int kRows = 64, kWindows = 64, kValues = 128;
  static constexpr int kPitch = sizeof(Raw) == 2 ? 65 : 129;  ///< 32-bit words per row
  static constexpr int kNibPitch = 68;                        ///< bytes per row (64 used)
  std::uint32_t vals[kRows * kPitch];
  std::uint8_t nib[kRows * kNibPitch];

  __device__ __forceinline__ void put(int row, int win, Raw lo, Raw hi, unsigned nibble) {
    if constexpr (sizeof(Raw) == 2) {
      vals[row * kPitch + win] = std::uint32_t(lo) | (std::uint32_t(hi) << 16);
    } else {
      vals[row * kPitch + 2 * win] = lo;
      vals[row * kPitch + 2 * win + 1] = hi;
    }
    nib[row * kNibPitch + win] = std::uint8_t(nibble);
  }
  __device__ __forceinline__ void put_word(int row, int win, std::uint32_t pair, unsigned nibble) {
    static_assert(sizeof(Raw) == 2);
    vals[row * kPitch + win] = pair;
    nib[row * kNibPitch + win] = std::uint8_t(nibble);
  }
  __device__ __forceinline__ Raw value(int row, int v) const {
    if constexpr (sizeof(Raw) == 2) return Raw(vals[row * kPitch + v / 2] >> ((v & 1) * 16));
    else return vals[row * kPitch + v];
  }

  /// Writes rows [row0, row0 + 64) x windows [win0, win0 + 64) of a hw24 matrix (out_rows rows,
  /// `windows` windows). fast: interior, value rows 16-byte aligned, index rows 4-byte aligned;
  /// idx16: index rows also 16-byte aligned. All 256 threads, after a __syncthreads().
  __device__ __forceinline__ void write(Raw* __restrict__ values, std::uint8_t* __restrict__ indices, std::int64_t row0,
                                        std::int64_t win0, std::int64_t out_rows, std::int64_t windows, bool fast,
                                        bool idx16) const {
    const int tid = threadIdx.x;
    const std::int64_t vcols = 2 * windows, irb = (windows + 1) / 2;
    if (fast) {
      if (values) {
        constexpr int kChunks = kValues * int(sizeof(Raw)) / 16;  // 16 (f16) / 32 (f32) per row
#pragma unroll
        for (int k = 0; k < kRows * kChunks / 256; ++k) {  // a warp: 2 (1) whole rows
          const int i = tid + 256 * k, row = i / kChunks, ch = i % kChunks;
          const std::uint32_t* w = vals + row * kPitch + ch * 4;
          __stcs(reinterpret_cast<uint4*>(values + (row0 + row) * vcols + 2 * win0) + ch, make_uint4(w[0], w[1], w[2], w[3]));
        }
      }
      if (indices && tid < 2 * kRows) {
        const int row = tid / 2, h = tid % 2;  // 16 of the row's 32 index bytes: windows 32h .. 32h + 31
        const std::uint32_t* n = reinterpret_cast<const std::uint32_t*>(nib + row * kNibPitch) + 8 * h;
        std::uint32_t o[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {  // nibble bytes (n0 .. n7) -> index bytes (n0 | n1 << 4, ...)
          const std::uint32_t a = n[2 * k] | (n[2 * k] >> 4), b = n[2 * k + 1] | (n[2 * k + 1] >> 4);
          o[k] = __byte_perm(a, b, 0x6420u);
        }
        std::uint8_t* dst = indices + (row0 + row) * irb + win0 / 2 + 16 * h;
        if (idx16) {
          __stcs(reinterpret_cast<uint4*>(dst), make_uint4(o[0], o[1], o[2], o[3]));
        } else {
#pragma unroll
          for (int k = 0; k < 4; ++k) __stcs(reinterpret_cast<std::uint32_t*>(dst) + k, o[k]);
        }
      }
      return;
    }
    if (values) {
      for (int i = tid; i < kRows * kValues; i += 256) {
        const int row = i / kValues, v = i % kValues;
        if (row0 + row < out_rows && 2 * win0 + v < vcols) values[(row0 + row) * vcols + 2 * win0 + v] = value(row, v);
      }
    }
    if (indices) {
      for (int i = tid; i < kRows * kWindows / 2; i += 256) {
        const int row = i / (kWindows / 2), b = i % (kWindows / 2);
        const std::int64_t gb = win0 / 2 + b, w0 = win0 + 2 * b;
        if (row0 + row < out_rows && gb < irb) {
          unsigned byte = w0 < windows ? nib[row * kNibPitch + 2 * b] : 0u;
          if (w0 + 1 < windows) byte |= unsigned(nib[row * kNibPitch + 2 * b + 1]) << 4;
          indices[(row0 + row) * irb + gb] = std::uint8_t(byte);
        }
      }
    }
  }
};

template <class Raw>
struct Mask24LSmem {
  TileT64<Raw> t;
  std::uint8_t idx[Mask24LTraits::kRows * Mask24LTraits::kIdxPitch];  ///< S(W) index bytes of the footprint
};

/// One 128 x 64 pass (row_tile, col_tile in units of 128 x 64) of the footprint: the session-2
/// per-thread code (mask24_s2_tile) with the S(W) index byte going to the staging rows and the
/// S(W)^T pairs to window half `rp` of the 64-window tile.
template <class T, bool kSearch>
__device__ __forceinline__ void mask24_l_pass(const Mask24Args& args, std::int64_t row_tile, std::int64_t col_tile, int rp,
                                              int cp, bool fast, const std::uint32_t (&xw)[4][kMaskS2Words<typename Elem<T>::Raw>],
                                              Mask24LSmem<typename Elem<T>::Raw>& sm, unsigned& bad) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  using Traits = Mask24S2Traits;
  constexpr bool k16 = sizeof(Raw) == 2;
  const int tid = threadIdx.x, tcl = tid & 7, brl = tid >> 3;
  const std::int64_t rows = args.rows, cols = args.cols;
  const std::int64_t brows = (rows + 3) / 4, bcols = (cols + 3) / 4;
  const std::int64_t r0 = row_tile * Traits::kTileRows + 4 * brl, c0 = col_tile * Traits::kTileCols + 8 * tcl;
  auto elem = [&](int r, int c) -> Raw {
    if constexpr (k16) return Raw(xw[r][c / 2] >> (16 * (c % 2)));
    else return Raw(xw[r][c]);
  };
  auto pair16 = [](std::uint32_t q0, std::uint32_t q1, unsigned nib) {
    return __byte_perm(q0, q1, 0x1010u + (nib & 3u) * 0x22u + (nib & 0xcu) * 0x880u);
  };
  const std::int64_t br = r0 / 4, bc = c0 / 4;
  unsigned bm[2];
  mask24_s2_masks<T, kSearch>(args, xw, br, bc, brows, bcols, fast, bm);
  // ---- S(W): values straight from registers, index bytes to the staging rows ----
  if (args.w_values || args.w_indices) {
    const std::int64_t windows = bcols, vcols = 2 * windows;
    Raw* __restrict__ wv = static_cast<Raw*>(args.w_values);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      std::uint32_t pw[2];
      Raw v[4];
      unsigned nib[2];
      mask24_s2_row<T, kSearch>(xw, r, bm, r0 + r < rows, bc, bcols, pw, v, nib, bad);
      const std::int64_t row = r0 + r;
      if (wv) {
        if (fast) {
          if constexpr (k16) __stcs(reinterpret_cast<uint2*>(wv + row * vcols + 2 * bc), make_uint2(pw[0], pw[1]));
          else store_vec<Raw, 4>(wv + row * vcols + 2 * bc, v);
        } else if (row < rows) {
#pragma unroll
          for (int b = 0; b < 2; ++b)
            if (bc + b < windows) {
              wv[row * vcols + 2 * (bc + b)] = v[2 * b];
              wv[row * vcols + 2 * (bc + b) + 1] = v[2 * b + 1];
            }
        }
      }
      // staged byte: footprint row 128 rp + 4 brl + r, byte 8 cp + tcl (the write-out drops
      // bytes past the matrix; the high nibble of a last odd window is zero)
      sm.idx[(128 * rp + 4 * brl + r) * Mask24LTraits::kIdxPitch + 8 * cp + tcl] =
          std::uint8_t(nib[0] | (bc + 1 < windows ? nib[1] << 4 : 0u));
    }
  }
  // ---- S(W)^T: columns of the thread into window half rp of the 64-window tile ----
  if (args.wt_values || args.wt_indices) {
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const QuadPos q = quad_positions(mask_column(bm[c / 4], c % 4));
      const unsigned nib = unsigned(q.lo) | (unsigned(q.hi) << 2);
      if constexpr (k16) {
        const unsigned half_sel = (c & 1) ? 0x7632u : 0x5410u;
        const std::uint32_t c01 = __byte_perm(xw[0][c / 2], xw[1][c / 2], half_sel);
        const std::uint32_t c23 = __byte_perm(xw[2][c / 2], xw[3][c / 2], half_sel);
        sm.t.put_word(8 * tcl + c, 32 * rp + brl, pair16(c01, c23, nib), nib);
      } else {
        const Raw lo = sel4(elem(0, c), elem(1, c), elem(2, c), elem(3, c), q.lo);
        const Raw hi = sel4(elem(0, c), elem(1, c), elem(2, c), elem(3, c), q.hi);
        sm.t.put(8 * tcl + c, 32 * rp + brl, lo, hi, nib);
      }
      if (!kSearch && q.bad && c0 + c < cols && br < brows) ++bad;
    }
  }
}

/// The resident CTAs per SM the register cap of mask24_lines_kernel (variant 4) asks for: search
/// 3 (16-bit) / 2 (f32), apply 4 / 3.
template <class T, bool kSearch>
constexpr int kMask24LMinBlocks = kSearch ? (sizeof(T) == 2 ? 3 : 2) : (sizeof(T) == 2 ? 4 : 3);

/// Variant 4 (session 3c): the session-2 per-element code over a 256 x 256 footprint per CTA,
/// every store a whole 32-byte sector, under the register cap kMask24LMinBlocks. (Its occupancy
/// forms, variants 5 and 6 of session 4, measured slower and were dropped in session 9.)
template <class T, bool kSearch>
__global__ void __launch_bounds__(Mask24LTraits::kThreads, kMask24LMinBlocks<T, kSearch>)
    mask24_lines_kernel(Mask24Args args_in) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  using S2 = Mask24S2Traits;
  using L = Mask24LTraits;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int kWords = kMaskS2Words<Raw>;
  __shared__ Mask24LSmem<Raw> sm;
  // the pointers of matrix blockIdx.z are rebuilt from the parameters where used (per pass):
  // fewer registers live across the passes than one copy of the arguments
  auto matrix_args = [&]() {
    Mask24Args a = args_in;
    if (blockIdx.z > 0) offset_to_matrix_s2<Raw>(a, blockIdx.z);
    return a;
  };
  const int tid = threadIdx.x, tcl = tid & 7, brl = tid >> 3;
  const std::int64_t rows = args_in.rows, cols = args_in.cols;
  const std::int64_t brows = (rows + 3) / 4, bcols = (cols + 3) / 4;
  const bool want_t = args_in.wt_values || args_in.wt_indices;
  unsigned bad = 0;
#pragma unroll 1
  for (int cp = 0; cp < L::kColPasses; ++cp) {
    const std::int64_t col_tile = std::int64_t(blockIdx.x) * L::kColPasses + cp;
    if (col_tile * S2::kTileCols >= cols) break;  // CTA-uniform
#pragma unroll 1
    for (int rp = 0; rp < L::kRowPasses; ++rp) {
      const std::int64_t row_tile = std::int64_t(blockIdx.y) * L::kRowPasses + rp;
      if (row_tile * S2::kTileRows >= rows) break;  // CTA-uniform
      const std::int64_t r0 = row_tile * S2::kTileRows + 4 * brl, c0 = col_tile * S2::kTileCols + 8 * tcl;
      const Mask24Args args = matrix_args();
      const Raw* __restrict__ w = static_cast<const Raw*>(args.w);
      const bool fast = args.aligned && (row_tile + 1) * S2::kTileRows <= rows && (col_tile + 1) * S2::kTileCols <= cols;
      std::uint32_t xw[4][kWords];
      if (fast) {
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int v = 0; v < kWords / 4; ++v) {
            const uint4 q = __ldcs(reinterpret_cast<const uint4*>(w + (r0 + r) * cols + c0) + v);
            xw[r][4 * v] = q.x, xw[r][4 * v + 1] = q.y, xw[r][4 * v + 2] = q.z, xw[r][4 * v + 3] = q.w;
          }
      } else {
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int k = 0; k < kWords; ++k) {
            if constexpr (k16) {
              const std::int64_t c = c0 + 2 * k;
              const std::uint32_t e0 = (r0 + r < rows && c < cols) ? w[(r0 + r) * cols + c] : 0u;
              const std::uint32_t e1 = (r0 + r < rows && c + 1 < cols) ? w[(r0 + r) * cols + c + 1] : 0u;
              xw[r][k] = e0 | (e1 << 16);
            } else {
              xw[r][k] = (r0 + r < rows && c0 + k < cols) ? w[(r0 + r) * cols + c0 + k] : 0u;
            }
          }
      }
      mask24_l_pass<T, kSearch>(args, row_tile, col_tile, rp, cp, fast, xw, sm, bad);
    }
    if (want_t) {  // the column pass's 64 W^T rows x (up to) 64 windows
      const Mask24Args args = matrix_args();
      __syncthreads();
      const std::int64_t row_tile0 = std::int64_t(blockIdx.y) * L::kRowPasses;
      const bool fast_t = args.aligned && (col_tile + 1) * S2::kTileCols <= cols && (row_tile0 + L::kRowPasses) * S2::kTileRows <= rows;
      const std::int64_t ti_pitch = (brows + 1) / 2;
      const bool idx16 = ti_pitch % 16 == 0 && reinterpret_cast<std::uintptr_t>(args.wt_indices) % 16 == 0;
      sm.t.write(static_cast<Raw*>(args.wt_values), args.wt_indices, col_tile * S2::kTileCols, row_tile0 * (S2::kTileRows / 4),
                 cols, brows, fast_t, idx16);
      __syncthreads();
    }
  }
  const Mask24Args args = matrix_args();
  if (!kSearch && bad && args.violations) atomicAdd(args.violations, bad);
  if (args.w_indices) {  // the staged S(W) index bytes: 256 rows x 32 bytes from byte 32 blockIdx.x
    if (!want_t) __syncthreads();
    const std::int64_t irb = (bcols + 1) / 2, row0 = std::int64_t(blockIdx.y) * L::kRows, b0 = std::int64_t(blockIdx.x) * 32;
    const bool interior = row0 + L::kRows <= rows && b0 + 32 <= irb;
    const std::uintptr_t al = reinterpret_cast<std::uintptr_t>(args.w_indices) | std::uintptr_t(irb);
    if (interior && al % 4 == 0) {
      // a thread: 16 bytes (4 words) of row tid / 2 + 128 k; a warp covers 16 rows x 32 B
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const int row = tid / 2 + 128 * k, h = tid % 2;
        const std::uint32_t* s = reinterpret_cast<const std::uint32_t*>(sm.idx + row * L::kIdxPitch) + 4 * h;
        std::uint8_t* dst = args.w_indices + (row0 + row) * irb + b0 + 16 * h;
        if (al % 16 == 0) {
          __stcs(reinterpret_cast<uint4*>(dst), make_uint4(s[0], s[1], s[2], s[3]));
        } else if (al % 8 == 0) {
          __stcs(reinterpret_cast<uint2*>(dst), make_uint2(s[0], s[1]));
          __stcs(reinterpret_cast<uint2*>(dst) + 1, make_uint2(s[2], s[3]));
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q) __stcs(reinterpret_cast<std::uint32_t*>(dst) + q, s[q]);
        }
      }
    } else {
      for (int i = tid; i < L::kRows * 32; i += L::kThreads) {
        const int row = i / 32, b = i % 32;
        if (row0 + row < rows && b0 + b < irb) args.w_indices[(row0 + row) * irb + b0 + b] = sm.idx[row * L::kIdxPitch + b];
      }
    }
  }
}

/// Variant 4: the whole-sector kernel (with the occupancy control's padding if asked for).
template <class T>
void launch_mask24_lines(const Mask24Args& a, bool search, cudaStream_t s) {
  using L = Mask24LTraits;
  const dim3 grid(unsigned((a.cols + L::kCols - 1) / L::kCols), unsigned((a.rows + L::kRows - 1) / L::kRows), unsigned(a.batch));
  auto go = [&](auto kernel) { kernel<<<grid, L::kThreads, occupancy_cap_smem(kernel, L::kThreads, a.max_ctas_per_sm), s>>>(a); };
  search ? go(mask24_lines_kernel<T, true>) : go(mask24_lines_kernel<T, false>);
  SPARSENM_CUDA_CHECK_LAUNCH("mask24_lines_kernel");
}

}  // namespace sparsenm::train::detail
