// sparsenm — the session-2 mask search / apply kernel (one 4 x 8 region per thread, S(W)^T
// through shared memory), Mask24Args::variant = 1. Default for apply (all dtypes) and the f32
// search, where it measured faster than the session-3 kernel of mask24.cuh (variant 2, default
// for 16-bit searches); docs/PERF-train.md "Session 3". Both write identical outputs.
//
// Layout: W [rows][cols] row-major, dtype T (f16 / bf16 / f32). Outputs (train.hpp): the uint16
// mask per 4x4 block; hw24 S(W) [rows][cols/2] + 4 bits per window; hw24 S(W)^T [cols][rows/2].
// Tiling: a CTA (256 threads) owns a 128-row x 64-column tile of W. Thread (brl = tid / 8,
// tcl = tid % 8) owns rows 4*brl..+3 and columns 8*tcl..+7: two 4x4 blocks.
// - Reads: each thread loads its 4 rows x 8 elements with 16-byte loads (one for f16/bf16, two
//   for f32); a warp covers 4 block rows x 64 columns, i.e. 16 rows x 128 B (f16): fully
//   used 32-byte sectors, every input byte read exactly once (.cs streaming loads).
// - S(W): the thread's 4 rows x 2 windows map to 4 values + 1 index byte per row, written
//   straight from registers (8-byte value stores; a warp writes 16 rows x 64 contiguous bytes).
// - S(W)^T: each of the thread's 8 columns is a W^T row; its (value pair, nibble) for window
//   brl goes to shared memory (TileT), and the CTA writes 64 W^T rows x 128 B + 16 index bytes.
// - Mask: two uint16 per thread (one 4-byte store on interior tiles).
// Bytes moved per element (f16): 2 read + 1 + 1/8 (S(W)) + 1 + 1/8 (S(W)^T) + 1/8 (mask) =
// 4.375 B, every output written once. Floor = bytes / copy bandwidth. Compute: ~16 fp32 ops
// per element for the search (pattern24.cuh), fp32 as the CPU reference. Batches (gridDim.z):
// matrices stored back to back, one launch.
// Tails: partial tiles (or unaligned shapes) take the guarded element-wise path; elements past
// the matrix read as 0 (logical zero padding, train.hpp).
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/train/pattern24.cuh"
#include "cuda/train/tile_t.cuh"
#include "cuda/train/train_common.cuh"

namespace sparsenm::train::detail {

struct Mask24S2Traits {
  static constexpr int kThreads = 256, kTileRows = 128, kTileCols = 64;
};

/// Moves every pointer of `a` to matrix z of a batch stored back to back.
template <class Raw>
__device__ __forceinline__ void offset_to_matrix_s2(Mask24Args& a, std::int64_t z) {
  const std::int64_t rows = a.rows, cols = a.cols, brows = (rows + 3) / 4, bcols = (cols + 3) / 4;
  a.w = static_cast<const Raw*>(a.w) + z * rows * cols;
  if (a.mask_in) a.mask_in += z * brows * bcols;
  if (a.mask_out) a.mask_out += z * brows * bcols;
  if (a.w_values) a.w_values = static_cast<Raw*>(a.w_values) + z * rows * 2 * bcols;
  if (a.w_indices) a.w_indices += z * rows * ((bcols + 1) / 2);
  if (a.wt_values) a.wt_values = static_cast<Raw*>(a.wt_values) + z * cols * 2 * brows;
  if (a.wt_indices) a.wt_indices += z * cols * ((brows + 1) / 2);
}

/// The words a thread holds: 16-bit types packed two per word (element c of row r in word c / 2,
/// half c % 2), f32 one per word; 4 rows x 8 elements.
template <class Raw>
constexpr int kMaskS2Words = sizeof(Raw) == 2 ? 4 : 8;

/// Element c (0..7) of row r of the thread's 4 x 8 region held in xw (16-bit types: two per word).
template <class Raw>
__device__ __forceinline__ Raw mask24_s2_elem(const std::uint32_t (&xw)[4][kMaskS2Words<Raw>], int r, int c) {
  if constexpr (sizeof(Raw) == 2) return Raw(xw[r][c / 2] >> (16 * (c % 2)));
  else return Raw(xw[r][c]);
}

/// The masks of the thread's two 4 x 4 blocks (block row br, block columns bc, bc + 1; bits 4r..4r+3:
/// row r's kept columns): searched from xw and written to mask_out (kSearch), or read from mask_in
/// (blocks past the matrix: a valid filler pattern).
template <class T, bool kSearch>
__device__ __forceinline__ void mask24_s2_masks(const Mask24Args& args,
                                                const std::uint32_t (&xw)[4][kMaskS2Words<typename Elem<T>::Raw>],
                                                std::int64_t br, std::int64_t bc, std::int64_t brows, std::int64_t bcols,
                                                bool fast, unsigned (&bm)[2]) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  if constexpr (kSearch) {
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      float a[4][4];
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) a[r][c] = rank_magnitude24(E::to_float(mask24_s2_elem<Raw>(xw, r, 4 * b + c)));
      bm[b] = best_pattern24(a);
    }
    if (args.mask_out) {
      if (fast && (bcols % 2 == 0)) {
        *reinterpret_cast<std::uint32_t*>(args.mask_out + br * bcols + bc) = bm[0] | (bm[1] << 16);
      } else if (br < brows) {
        if (bc < bcols) args.mask_out[br * bcols + bc] = std::uint16_t(bm[0]);
        if (bc + 1 < bcols) args.mask_out[br * bcols + bc + 1] = std::uint16_t(bm[1]);
      }
    }
  } else {
#pragma unroll
    for (int b = 0; b < 2; ++b)
      bm[b] = (br < brows && bc + b < bcols) ? unsigned(args.mask_in[br * bcols + bc + b]) : 0xCC33u;
  }
}

/// Row r of the thread's two blocks under masks bm: each quad's kept pair (v[2b], v[2b + 1]; 16-bit
/// types also packed lo | hi << 16 in pw[b], by one byte permute whose selector comes from the quad
/// nibble) and its nibble lo | hi << 2. Apply (!kSearch): quads whose given mask is not 2:4 and that
/// lie inside the matrix (row_in, block columns < bcols) are counted in bad.
template <class T, bool kSearch>
__device__ __forceinline__ void mask24_s2_row(const std::uint32_t (&xw)[4][kMaskS2Words<typename Elem<T>::Raw>], int r,
                                              const unsigned (&bm)[2], bool row_in, std::int64_t bc, std::int64_t bcols,
                                              std::uint32_t (&pw)[2], typename Elem<T>::Raw (&v)[4], unsigned (&nib)[2],
                                              unsigned& bad) {
  using Raw = typename Elem<T>::Raw;
#pragma unroll
  for (int b = 0; b < 2; ++b) {
    const QuadPos q = quad_positions(bm[b] >> (4 * r));
    nib[b] = unsigned(q.lo) | (unsigned(q.hi) << 2);
    if constexpr (sizeof(Raw) == 2) {
      pw[b] = __byte_perm(xw[r][2 * b], xw[r][2 * b + 1], 0x1010u + (nib[b] & 3u) * 0x22u + (nib[b] & 0xcu) * 0x880u);
      v[2 * b] = Raw(pw[b]);
      v[2 * b + 1] = Raw(pw[b] >> 16);
    } else {
      const Raw e0 = mask24_s2_elem<Raw>(xw, r, 4 * b), e1 = mask24_s2_elem<Raw>(xw, r, 4 * b + 1),
                e2 = mask24_s2_elem<Raw>(xw, r, 4 * b + 2), e3 = mask24_s2_elem<Raw>(xw, r, 4 * b + 3);
      v[2 * b] = sel4(e0, e1, e2, e3, q.lo);
      v[2 * b + 1] = sel4(e0, e1, e2, e3, q.hi);
    }
    if (!kSearch && q.bad && row_in && bc + b < bcols) ++bad;
  }
}

/// One 128 x 64 tile of matrix `args` (pointers already at its matrix): the thread's words are
/// in xw; searches (kSearch) or reads the mask, writes mask / S(W) / S(W)^T. All 256 threads call
/// it (it contains __syncthreads when S(W)^T is wanted).
template <class T, bool kSearch>
__device__ __forceinline__ void mask24_s2_tile(const Mask24Args& args, std::int64_t row_tile, std::int64_t col_tile, bool fast,
                                            const std::uint32_t (&xw)[4][kMaskS2Words<typename Elem<T>::Raw>],
                                            TileT<typename Elem<T>::Raw>& tile) {
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
  // 16-bit types: the stored pair (lo | hi << 16) of a quad held in words (q0, q1), by one byte
  // permute; selector bytes (2lo, 2lo+1, 2hi, 2hi+1) from the quad nibble lo | hi << 2.
  auto pair16 = [](std::uint32_t q0, std::uint32_t q1, unsigned nib) {
    return __byte_perm(q0, q1, 0x1010u + (nib & 3u) * 0x22u + (nib & 0xcu) * 0x880u);
  };

  const std::int64_t br = r0 / 4, bc = c0 / 4;
  unsigned bm[2];
  mask24_s2_masks<T, kSearch>(args, xw, br, bc, brows, bcols, fast, bm);

  unsigned bad = 0;
  // ---- S(W): rows of the thread, straight from registers ----
  if (args.w_values || args.w_indices) {
    const std::int64_t windows = bcols, vcols = 2 * windows, irb = (windows + 1) / 2;
    Raw* __restrict__ wv = static_cast<Raw*>(args.w_values);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      std::uint32_t pw[2];  // 16-bit: packed pairs
      Raw v[4];
      unsigned nib[2];
      mask24_s2_row<T, kSearch>(xw, r, bm, r0 + r < rows, bc, bcols, pw, v, nib, bad);
      const std::int64_t row = r0 + r;
      if (fast) {
        if (wv) {
          if constexpr (k16) __stcs(reinterpret_cast<uint2*>(wv + row * vcols + 2 * bc), make_uint2(pw[0], pw[1]));
          else store_vec<Raw, 4>(wv + row * vcols + 2 * bc, v);
        }
        if (args.w_indices) args.w_indices[row * irb + bc / 2] = std::uint8_t(nib[0] | (nib[1] << 4));
      } else if (row < rows) {
#pragma unroll
        for (int b = 0; b < 2; ++b)
          if (wv && bc + b < windows) {
            wv[row * vcols + 2 * (bc + b)] = v[2 * b];
            wv[row * vcols + 2 * (bc + b) + 1] = v[2 * b + 1];
          }
        if (args.w_indices && bc / 2 < irb)
          args.w_indices[row * irb + bc / 2] = std::uint8_t(nib[0] | (bc + 1 < windows ? nib[1] << 4 : 0u));
      }
    }
  }
  // ---- S(W)^T: columns of the thread, via shared memory ----
  const bool want_t = args.wt_values || args.wt_indices;
  if (want_t) {
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const QuadPos q = quad_positions(mask_column(bm[c / 4], c % 4));
      const unsigned nib = unsigned(q.lo) | (unsigned(q.hi) << 2);
      if constexpr (k16) {
        const unsigned half_sel = (c & 1) ? 0x7632u : 0x5410u;  // column c of rows (0, 1), (2, 3)
        const std::uint32_t c01 = __byte_perm(xw[0][c / 2], xw[1][c / 2], half_sel);
        const std::uint32_t c23 = __byte_perm(xw[2][c / 2], xw[3][c / 2], half_sel);
        tile.put_word(8 * tcl + c, brl, pair16(c01, c23, nib), nib);
      } else {
        const Raw lo = sel4(elem(0, c), elem(1, c), elem(2, c), elem(3, c), q.lo);
        const Raw hi = sel4(elem(0, c), elem(1, c), elem(2, c), elem(3, c), q.hi);
        tile.put(8 * tcl + c, brl, lo, hi, nib);
      }
      if (!kSearch && q.bad && c0 + c < cols && br < brows) ++bad;
    }
  }
  if (!kSearch && bad && args.violations) atomicAdd(args.violations, bad);
  if (want_t) {
    __syncthreads();
    tile.write(static_cast<Raw*>(args.wt_values), args.wt_indices, col_tile * Traits::kTileCols,
               row_tile * (Traits::kTileRows / 4), cols, brows, fast);
  }
}


template <class T, bool kSearch>
__global__ void __launch_bounds__(Mask24S2Traits::kThreads, kSearch ? 2 : (sizeof(T) == 2 ? 4 : 3)) mask24_s2_kernel(Mask24Args args_in) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  using Traits = Mask24S2Traits;
  __shared__ TileT<Raw> tile;
  Mask24Args args = args_in;
  if (blockIdx.z > 0) offset_to_matrix_s2<Raw>(args, blockIdx.z);

  const int tid = threadIdx.x, tcl = tid & 7, brl = tid >> 3;
  const std::int64_t rows = args.rows, cols = args.cols;
  const std::int64_t row_tile = blockIdx.y, col_tile = blockIdx.x;
  const std::int64_t r0 = row_tile * Traits::kTileRows + 4 * brl, c0 = col_tile * Traits::kTileCols + 8 * tcl;
  const bool fast = args.aligned && (row_tile + 1) * Traits::kTileRows <= rows &&
                    (col_tile + 1) * Traits::kTileCols <= cols;
  const Raw* __restrict__ w = static_cast<const Raw*>(args.w);
  // The thread's 4 rows x 8 elements as 32-bit words: 16-bit types packed two per word
  // (element c of row r in word c / 2, half c % 2), f32 one per word.
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int kWords = kMaskS2Words<Raw>;
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
  mask24_s2_tile<T, kSearch>(args, row_tile, col_tile, fast, xw, tile);
}

template <class T>
void launch_mask24_s2(const Mask24Args& a, bool search, cudaStream_t s) {
  using Traits = Mask24S2Traits;
  const dim3 grid(unsigned((a.cols + Traits::kTileCols - 1) / Traits::kTileCols),
                  unsigned((a.rows + Traits::kTileRows - 1) / Traits::kTileRows), unsigned(a.batch));
  if (search) mask24_s2_kernel<T, true><<<grid, Traits::kThreads, 0, s>>>(a);
  else mask24_s2_kernel<T, false><<<grid, Traits::kThreads, 0, s>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("mask24_s2_kernel");
}

}  // namespace sparsenm::train::detail
