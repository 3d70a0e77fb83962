// sparsenm — transposable 2:4 mask search and apply-mask, fused with compression of W and W^T
// (seed 003 §3.2, §5.1; issue 5). One kernel template, two modes (kSearch: find the mask;
// else: read it). Mask24Args::variant = 2 (the default for one 16-bit matrix larger than 6400 x 1600) and 3 (the
// same regions walked by a persistent grid with cp.async prefetch: the default for one 16-bit
// matrix of at most 6400 x 1600); apply and f32 searches run the session-2 kernel of
// mask24_s2.cuh, measured faster there, and large batched refreshes the whole-sector variant 4
// of mask24_lines.cuh (train_common.cuh mask24_default_variant). Session 3 design (docs/PERF-train.md): every thread owns an 8 x 8 region of W
// (2 x 2 blocks), so each of its 8 rows is one S(W) row piece (2 windows = 4 values + one whole
// index byte) and each of its 8 columns one S(W)^T row piece (2 windows = 4 values + one whole
// index byte): all outputs go straight from registers, no shared-memory transpose, no barrier
// after the start.
//
// Layout: W [rows][cols] row-major, dtype T (f16 / bf16 / f32). Outputs (train.hpp): the uint16
// mask per 4x4 block; hw24 S(W) [rows][cols/2] + 4 bits per window; hw24 S(W)^T [cols][rows/2].
// Tiling: a CTA (128 threads = 4 warps) owns 128 rows x 64 columns; warp w rows 32w..+31; lane
// (y = lane / 8, x = lane % 8) rows 8y..+7, columns 8x..+7 of them. A warp instruction then
// covers: loads 4 rows x 128 B (f16); S(W) values 4 rows x 64 B; S(W)^T values 8 rows x 32 B
// (the 4 y-lanes hold consecutive window pairs); mask 2 x 32 B: full 32-byte sectors (index
// bytes: 8 / 4 bytes per sector, merged in L2).
// Compression without per-quad arithmetic: the search selects, per block, a compile-time code
// word = mask | transposed mask << 16 (pattern24.cuh); from the four codes a few byte operations
// build keys (one row, or one column, of two neighbouring blocks = two 4-bit quads), and one
// shared-memory table lookup per key (QuadPairEntry, 256 x 16 B) gives both byte-permute
// selectors and the finished index byte. Apply builds the same keys from the loaded masks
// (transposed by two delta swaps for two masks at once).
// Bytes moved per element (f16): 2 read + 1 + 1/8 (S(W)) + 1 + 1/8 (S(W)^T) + 1/8 (mask) =
// 4.375 B, every output written once. Batches (gridDim.z): matrices back to back, one launch.
// Tails: a thread whose region is not whole (or unaligned shapes) takes the guarded element-wise
// path; elements past the matrix read as 0 (logical zero padding, train.hpp).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/train/mask24_lines.cuh"
#include "cuda/train/mask24_s2.cuh"
#include "cuda/train/pattern24.cuh"
#include "cuda/train/prefetch.cuh"
#include "cuda/train/train_common.cuh"
#include "cuda/train/variants.hpp"

namespace sparsenm::train::detail {

struct Mask24Traits {
  static constexpr int kThreads = 128, kTileRows = 128, kTileCols = 64;
};

/// Words per 8-element row of a thread's region: 16-bit types two elements per word.
template <class Raw>
constexpr int kRowWords = sizeof(Raw) == 2 ? 4 : 8;

/// Derived sizes of a mask problem, computed once on the host (launch_mask24_impl) so the
/// kernel spends no instructions on them: block / window counts, output pitches, and the byte
/// distance between consecutive matrices of a batch for every pointer (0 for a null pointer,
/// which therefore stays null).
struct Mask24Geom {
  std::int64_t brows = 0, bcols = 0;
  std::int64_t wv_pitch = 0, wi_pitch = 0, tv_pitch = 0, ti_pitch = 0;  ///< elements / bytes per row
  std::int64_t z_w = 0, z_mask_in = 0, z_mask_out = 0, z_wv = 0, z_wi = 0, z_tv = 0, z_ti = 0;  ///< bytes
};

template <class Raw>
Mask24Geom mask24_geom(const Mask24Args& a) {
  Mask24Geom g;
  const std::int64_t rows = a.rows, cols = a.cols;
  g.brows = (rows + 3) / 4, g.bcols = (cols + 3) / 4;
  g.wv_pitch = 2 * g.bcols, g.wi_pitch = (g.bcols + 1) / 2, g.tv_pitch = 2 * g.brows, g.ti_pitch = (g.brows + 1) / 2;
  const std::int64_t sz = sizeof(Raw);
  g.z_w = rows * cols * sz;
  g.z_mask_in = a.mask_in ? g.brows * g.bcols * 2 : 0;
  g.z_mask_out = a.mask_out ? g.brows * g.bcols * 2 : 0;
  g.z_wv = a.w_values ? rows * g.wv_pitch * sz : 0;
  g.z_wi = a.w_indices ? rows * g.wi_pitch : 0;
  g.z_tv = a.wt_values ? cols * g.tv_pitch * sz : 0;
  g.z_ti = a.wt_indices ? cols * g.ti_pitch : 0;
  return g;
}

/// Moves every pointer of `a` to matrix z of a batch stored back to back.
__device__ __forceinline__ void offset_to_matrix(Mask24Args& a, const Mask24Geom& g, unsigned z) {
  auto move = [z](auto* p, std::int64_t stride) {
    using P = decltype(p);
    using C = std::conditional_t<std::is_const_v<std::remove_pointer_t<P>>, const char*, char*>;
    return reinterpret_cast<P>(reinterpret_cast<C>(p) + stride * z);
  };
  a.w = move(a.w, g.z_w);
  a.mask_in = move(a.mask_in, g.z_mask_in);
  a.mask_out = move(a.mask_out, g.z_mask_out);
  a.w_values = move(a.w_values, g.z_wv);
  a.w_indices = move(a.w_indices, g.z_wi);
  a.wt_values = move(a.wt_values, g.z_tv);
  a.wt_indices = move(a.wt_indices, g.z_ti);
}

/// Byte permute without the compiler's selector masking (every selector here has its nibbles'
/// bit 3 clear, so prmt's default mode equals __byte_perm).
__device__ __forceinline__ std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

/// The compression table as data (copied to shared memory by every CTA).
struct QuadTableData {
  unsigned v[256][4];
};
constexpr QuadTableData make_quad_table() {
  QuadTableData t{};
  for (unsigned k = 0; k < 256; ++k) {
    const QuadPairEntry q = quad_pair_entry(k);
    t.v[k][0] = q.x, t.v[k][1] = q.y, t.v[k][2] = q.z, t.v[k][3] = 0;
  }
  return t;
}
__device__ const QuadTableData kQuadTableData = make_quad_table();

/// The compression table: entry k = quad_pair_entry(k) (pattern24.cuh).
struct QuadTable {
  uint4 e[256];
  /// Copies the table (256 threads' worth: two entries per thread of a 128-thread CTA, one of a
  /// 256-thread CTA; kThreads = the CTA's threads, a divisor of 256).
  template <int kThreads = Mask24Traits::kThreads>
  __device__ __forceinline__ void fill() {
    static_assert(256 % kThreads == 0, "threads must divide the table");
#pragma unroll
    for (int k = 0; k < 256; k += kThreads)
      e[k + threadIdx.x] = __ldg(reinterpret_cast<const uint4*>(kQuadTableData.v[k + threadIdx.x]));
  }
  /// Entry of byte j (compile-time 0..3) of the key word `keys`.
  template <int J>
  __device__ __forceinline__ uint4 at(unsigned keys) const {
    const unsigned off = J == 0 ? (keys << 4) & 0xff0u : (keys >> (8 * J - 4)) & 0xff0u;
    return *reinterpret_cast<const uint4*>(reinterpret_cast<const char*>(e) + off);
  }
};

/// Two 4x4 bit matrices (bits 0..15 and 16..31, bit 4*r + c) transposed, by two delta swaps.
__device__ __forceinline__ unsigned transpose16x2(unsigned x) {
  unsigned t = (x ^ (x >> 3)) & 0x0a0a0a0au;
  x ^= t ^ (t << 3);
  t = (x ^ (x >> 6)) & 0x00cc00ccu;
  return x ^ t ^ (t << 6);
}

/// The rule's magnitudes (rank_magnitude24: |x|, NaN -> +inf, in fp32) of block (bi, bj) of a
/// thread's region x[8][kRowWords]. f16: one packed min of |x| with +inf per two elements (min
/// returns the non-NaN operand; subnormals kept), then exact conversions; bf16: the same on the
/// bit patterns (|x| as an integer, NaN patterns above +inf's); f32: fminf(|x|, inf).
template <class T>
__device__ __forceinline__ void block_magnitudes(const std::uint32_t (&x)[8][kRowWords<typename Elem<T>::Raw>], int bi, int bj,
                                                 float (&a)[4][4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    if constexpr (std::is_same_v<T, float>) {
#pragma unroll
      for (int c = 0; c < 4; ++c) a[r][c] = rank_magnitude24(__uint_as_float(x[4 * bi + r][4 * bj + c]));
    } else {
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const std::uint32_t w = x[4 * bi + r][2 * bj + k];
        if constexpr (std::is_same_v<T, __half>) {
          __half2 h;
          std::uint32_t inf2 = 0x7c007c00u;
          __builtin_memcpy(&h, &w, 4);
          __half2 i2;
          __builtin_memcpy(&i2, &inf2, 4);
          const __half2 m = __hmin2(__habs2(h), i2);
          a[r][2 * k] = __low2float(m);
          a[r][2 * k + 1] = __high2float(m);
        } else {
          const std::uint32_t m = __vminu2(w & 0x7fff7fffu, 0x7f807f80u);
          a[r][2 * k] = __uint_as_float(m << 16);
          a[r][2 * k + 1] = __uint_as_float(m & 0xffff0000u);
        }
      }
    }
  }
}

/// Element (R, C) of a thread's region as a raw value.
template <class Raw>
__device__ __forceinline__ Raw region_elem(const std::uint32_t (&x)[8][kRowWords<Raw>], int R, int C) {
  if constexpr (sizeof(Raw) == 2) return Raw(x[R][C / 2] >> (16 * (C % 2)));
  else return Raw(x[R][C]);
}

/// Interior, aligned region: keys -> table -> byte permutes (16-bit) / selects (f32), vector stores.
/// yl = m(0,0) | m(1,0) << 16, yh = m(0,1) | m(1,1) << 16 (masks of the blocks (bi, bj));
/// z0 = mt(0,0) | mt(0,1) << 16, z1 = mt(1,0) | mt(1,1) << 16 (their transposes). Returns the
/// number of bad quads (apply with an invalid mask). Row pointers advance by one pitch per row
/// (two instructions per row and stream).
template <class T>
__device__ __forceinline__ unsigned region_fast(const Mask24Args& args, const Mask24Geom& g, std::int64_t r0, std::int64_t c0,
                                                const std::uint32_t (&x)[8][kRowWords<typename Elem<T>::Raw>], unsigned yl,
                                                unsigned yh, unsigned z0, unsigned z1, const QuadTable& table) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  // Row keys: byte (r/2) + 2*bi of rk[r%2] = quad r of block (bi,0) | quad r of block (bi,1) << 4.
  const unsigned rk[2] = {(yl & 0x0f0f0f0fu) | ((yh << 4) & 0xf0f0f0f0u), ((yl >> 4) & 0x0f0f0f0fu) | (yh & 0xf0f0f0f0u)};
  // Column keys: byte (c/2) + 2*bj of ck[c%2] = column c of block (0,bj) | of block (1,bj) << 4.
  const unsigned ck[2] = {(z0 & 0x0f0f0f0fu) | ((z1 << 4) & 0xf0f0f0f0u), ((z0 >> 4) & 0x0f0f0f0fu) | (z1 & 0xf0f0f0f0u)};
  unsigned acc = 0;
  if (args.w_values || args.w_indices) {
    Raw* __restrict__ wv = static_cast<Raw*>(args.w_values) + r0 * g.wv_pitch + c0 / 2;
    std::uint8_t* __restrict__ wi = args.w_indices + r0 * g.wi_pitch + c0 / 8;
    static_for<0, 8>([&](auto Rc) {
      constexpr int R = decltype(Rc)::value;
      const uint4 e = table.at<(R & 3) / 2 + 2 * (R / 4)>(rk[R & 1]);
      acc += e.z;
      if (args.w_values) {
        if constexpr (k16) {
          __stcs(reinterpret_cast<uint2*>(wv), make_uint2(prmt(x[R][0], x[R][1], e.x), prmt(x[R][2], x[R][3], e.y)));
        } else {
          const unsigned na = e.z & 0xfu, nb = (e.z >> 4) & 0xfu;
          __stcs(reinterpret_cast<uint4*>(wv),
                 make_uint4(sel4(x[R][0], x[R][1], x[R][2], x[R][3], int(na & 3u)), sel4(x[R][0], x[R][1], x[R][2], x[R][3], int(na >> 2)),
                            sel4(x[R][4], x[R][5], x[R][6], x[R][7], int(nb & 3u)), sel4(x[R][4], x[R][5], x[R][6], x[R][7], int(nb >> 2))));
        }
      }
      if (args.w_indices) *wi = std::uint8_t(e.z);
      wv += g.wv_pitch;
      wi += g.wi_pitch;
    });
  }
  if (args.wt_values || args.wt_indices) {
    Raw* __restrict__ tv = static_cast<Raw*>(args.wt_values) + c0 * g.tv_pitch + r0 / 2;
    std::uint8_t* __restrict__ ti = args.wt_indices + c0 * g.ti_pitch + r0 / 8;
    static_for<0, 8>([&](auto Cc) {
      constexpr int C = decltype(Cc)::value;
      const uint4 e = table.at<(C & 3) / 2 + 2 * (C / 4)>(ck[C & 1]);
      acc += e.z;
      if (args.wt_values) {
        if constexpr (k16) {
          constexpr unsigned hs = (C & 1) ? 0x7632u : 0x5410u;  // column C of two rows
          constexpr int k = C / 2;
          const std::uint32_t p0 = prmt(__byte_perm(x[0][k], x[1][k], hs), __byte_perm(x[2][k], x[3][k], hs), e.x);
          const std::uint32_t p1 = prmt(__byte_perm(x[4][k], x[5][k], hs), __byte_perm(x[6][k], x[7][k], hs), e.y);
          __stcs(reinterpret_cast<uint2*>(tv), make_uint2(p0, p1));
        } else {
          const unsigned na = e.z & 0xfu, nb = (e.z >> 4) & 0xfu;
          __stcs(reinterpret_cast<uint4*>(tv),
                 make_uint4(sel4(x[0][C], x[1][C], x[2][C], x[3][C], int(na & 3u)), sel4(x[0][C], x[1][C], x[2][C], x[3][C], int(na >> 2)),
                            sel4(x[4][C], x[5][C], x[6][C], x[7][C], int(nb & 3u)), sel4(x[4][C], x[5][C], x[6][C], x[7][C], int(nb >> 2))));
        }
      }
      if (args.wt_indices) *ti = std::uint8_t(e.z);
      tv += g.tv_pitch;
      ti += g.ti_pitch;
    });
  }
  return acc >> 16;
}

/// Any region (tails, unaligned shapes): element-wise, every store guarded; m[bi][bj] are the
/// block masks (blocks past the matrix: any valid pattern, never stored). Returns the number of
/// bad quads inside the matrix.
template <class T, bool kSearch>
__device__ __forceinline__ unsigned region_general(const Mask24Args& args, const Mask24Geom& g, std::int64_t r0, std::int64_t c0,
                                                   const std::uint32_t (&x)[8][kRowWords<typename Elem<T>::Raw>],
                                                   const unsigned (&m)[2][2]) {
  using Raw = typename Elem<T>::Raw;
  const std::int64_t rows = args.rows, cols = args.cols, brows = g.brows, bcols = g.bcols;
  const std::int64_t br = r0 / 4, bc = c0 / 4;
  unsigned bad = 0;
  if constexpr (kSearch) {
    if (args.mask_out)
      for (int bi = 0; bi < 2; ++bi)
        for (int bj = 0; bj < 2; ++bj)
          if (br + bi < brows && bc + bj < bcols) args.mask_out[(br + bi) * bcols + bc + bj] = std::uint16_t(m[bi][bj]);
  }
  Raw* __restrict__ wv = static_cast<Raw*>(args.w_values);
  Raw* __restrict__ tv = static_cast<Raw*>(args.wt_values);
#pragma unroll
  for (int R = 0; R < 8; ++R) {
    const std::int64_t row = r0 + R;
    if (row >= rows) break;
    unsigned byte = 0;
#pragma unroll
    for (int bj = 0; bj < 2; ++bj) {
      const std::int64_t win = bc + bj;
      if (win >= bcols) break;
      const QuadPos q = quad_positions(m[R / 4][bj] >> (4 * (R % 4)));
      if (wv) {
        const Raw e0 = region_elem<Raw>(x, R, 4 * bj), e1 = region_elem<Raw>(x, R, 4 * bj + 1),
                  e2 = region_elem<Raw>(x, R, 4 * bj + 2), e3 = region_elem<Raw>(x, R, 4 * bj + 3);
        wv[row * 2 * bcols + 2 * win] = sel4(e0, e1, e2, e3, q.lo);
        wv[row * 2 * bcols + 2 * win + 1] = sel4(e0, e1, e2, e3, q.hi);
      }
      byte |= (unsigned(q.lo) | (unsigned(q.hi) << 2)) << (4 * bj);
      bad += q.bad ? 1u : 0u;
    }
    if (args.w_indices) args.w_indices[row * ((bcols + 1) / 2) + bc / 2] = std::uint8_t(byte);
  }
#pragma unroll
  for (int C = 0; C < 8; ++C) {
    const std::int64_t col = c0 + C;
    if (col >= cols) break;
    unsigned byte = 0;
#pragma unroll
    for (int bi = 0; bi < 2; ++bi) {
      const std::int64_t win = br + bi;
      if (win >= brows) break;
      const QuadPos q = quad_positions(mask_column(m[bi][C / 4], C % 4));
      if (tv) {
        const Raw e0 = region_elem<Raw>(x, 4 * bi, C), e1 = region_elem<Raw>(x, 4 * bi + 1, C),
                  e2 = region_elem<Raw>(x, 4 * bi + 2, C), e3 = region_elem<Raw>(x, 4 * bi + 3, C);
        tv[col * 2 * brows + 2 * win] = sel4(e0, e1, e2, e3, q.lo);
        tv[col * 2 * brows + 2 * win + 1] = sel4(e0, e1, e2, e3, q.hi);
      }
      byte |= (unsigned(q.lo) | (unsigned(q.hi) << 2)) << (4 * bi);
      bad += q.bad ? 1u : 0u;
    }
    if (args.wt_indices) args.wt_indices[col * ((brows + 1) / 2) + br / 2] = std::uint8_t(byte);
  }
  return bad;
}

/// Registers: the search keeps a region (16 / 32 words) and the two-level search state live:
/// 4 CTAs of 128 threads per SM for 16-bit types (<= 128 registers), 3 for f32; apply 4 (the guarded tail path needs the registers).
template <class T, bool kSearch>
constexpr int kMask24MinBlocks = kSearch ? (sizeof(T) == 2 ? 4 : 3) : 4;

/// Guarded element loads of a thread's 8 x 8 region (tails, unaligned shapes); elements past the
/// matrix read as 0. `w` points to the thread's matrix.
template <class Raw>
__device__ __forceinline__ void region_load_guarded(const Raw* __restrict__ w, std::int64_t rows, std::int64_t cols, std::int64_t r0,
                                                    std::int64_t c0, std::uint32_t (&x)[8][kRowWords<Raw>]) {
#pragma unroll
  for (int R = 0; R < 8; ++R)
#pragma unroll
    for (int k = 0; k < kRowWords<Raw>; ++k) {
      const bool in_row = r0 + R < rows;
      if constexpr (sizeof(Raw) == 2) {
        const std::int64_t c = c0 + 2 * k;
        const std::uint32_t e0 = (in_row && c < cols) ? w[(r0 + R) * cols + c] : 0u;
        const std::uint32_t e1 = (in_row && c + 1 < cols) ? w[(r0 + R) * cols + c + 1] : 0u;
        x[R][k] = e0 | (e1 << 16);
      } else {
        x[R][k] = (in_row && c0 + k < cols) ? w[(r0 + R) * cols + c0 + k] : 0u;
      }
    }
}

/// Everything after the loads for one region (pointers of `args` already at its matrix): the
/// search (or the given masks mrow, fast path) and every store.
template <class T, bool kSearch>
__device__ __forceinline__ void region_process(const Mask24Args& args, const Mask24Geom& g, std::int64_t r0, std::int64_t c0, bool fast,
                                               const std::uint32_t (&x)[8][kRowWords<typename Elem<T>::Raw>], const unsigned (&mrow)[2],
                                               const QuadTable& table) {
  const std::int64_t brows = g.brows, bcols = g.bcols, br = r0 / 4, bc = c0 / 4;
  if constexpr (kSearch) {
    unsigned code[2][2];
#pragma unroll
    for (int bi = 0; bi < 2; ++bi)
#pragma unroll
      for (int bj = 0; bj < 2; ++bj) {
        float a[4][4];
        block_magnitudes<T>(x, bi, bj, a);
        code[bi][bj] = best_pattern24_code(a);
      }
    if (fast) {
      if (args.mask_out) {
        std::uint16_t* mp = args.mask_out + br * bcols + bc;
        __stcs(reinterpret_cast<unsigned*>(mp), __byte_perm(code[0][0], code[0][1], 0x5410));
        __stcs(reinterpret_cast<unsigned*>(mp + bcols), __byte_perm(code[1][0], code[1][1], 0x5410));
      }
      region_fast<T>(args, g, r0, c0, x, __byte_perm(code[0][0], code[1][0], 0x5410), __byte_perm(code[0][1], code[1][1], 0x5410),
                     __byte_perm(code[0][0], code[0][1], 0x7632), __byte_perm(code[1][0], code[1][1], 0x7632), table);
    } else {
      const unsigned m[2][2] = {{code[0][0] & 0xffffu, code[0][1] & 0xffffu}, {code[1][0] & 0xffffu, code[1][1] & 0xffffu}};
      region_general<T, true>(args, g, r0, c0, x, m);
    }
  } else {
    unsigned bad;
    if (fast) {
      bad = region_fast<T>(args, g, r0, c0, x, __byte_perm(mrow[0], mrow[1], 0x5410), __byte_perm(mrow[0], mrow[1], 0x7632),
                           transpose16x2(mrow[0]), transpose16x2(mrow[1]), table);
    } else {
      unsigned m[2][2];
#pragma unroll
      for (int bi = 0; bi < 2; ++bi)
#pragma unroll
        for (int bj = 0; bj < 2; ++bj)
          m[bi][bj] = (br + bi < brows && bc + bj < bcols) ? unsigned(args.mask_in[(br + bi) * bcols + bc + bj]) : 0xCC33u;
      bad = region_general<T, false>(args, g, r0, c0, x, m);
    }
    if (bad && args.violations) atomicAdd(args.violations, bad);
  }
}

template <class T, bool kSearch>
__global__ void __launch_bounds__(Mask24Traits::kThreads, (kMask24MinBlocks<T, kSearch>))
    mask24_kernel(Mask24Args args_in, Mask24Geom g) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  using Traits = Mask24Traits;
  constexpr int kWords = kRowWords<Raw>;
  __shared__ QuadTable table;
  Mask24Args args = args_in;
  offset_to_matrix(args, g, blockIdx.z);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t rows = args.rows, cols = args.cols, bcols = g.bcols;
  const std::int64_t r0 = std::int64_t(blockIdx.y) * Traits::kTileRows + 32 * warp + 8 * (lane >> 3);
  const std::int64_t c0 = std::int64_t(blockIdx.x) * Traits::kTileCols + 8 * (lane & 7);
  const std::int64_t br = r0 / 4, bc = c0 / 4;
  const bool fast = args.aligned && r0 + 8 <= rows && c0 + 8 <= cols;
  const Raw* __restrict__ w = static_cast<const Raw*>(args.w);
  std::uint32_t x[8][kWords];
  unsigned mrow[2] = {0u, 0u};  // apply, fast: masks of blocks (bi, 0) | (bi, 1) << 16
  if (fast) {
    const Raw* __restrict__ p = w + r0 * cols + c0;
#pragma unroll
    for (int R = 0; R < 8; ++R, p += cols)
#pragma unroll
      for (int v = 0; v < kWords / 4; ++v) {
        const uint4 q = __ldcs(reinterpret_cast<const uint4*>(p) + v);
        x[R][4 * v] = q.x, x[R][4 * v + 1] = q.y, x[R][4 * v + 2] = q.z, x[R][4 * v + 3] = q.w;
      }
    if constexpr (!kSearch) {
      const std::uint16_t* mp = args.mask_in + br * bcols + bc;
      mrow[0] = __ldcs(reinterpret_cast<const unsigned*>(mp));
      mrow[1] = __ldcs(reinterpret_cast<const unsigned*>(mp + bcols));
    }
  } else {
    region_load_guarded<Raw>(w, rows, cols, r0, c0, x);
  }
  table.fill();
  __syncthreads();  // the only barrier: the table is ready
  if (r0 >= rows || c0 >= cols) return;
  region_process<T, kSearch>(args, g, r0, c0, fast, x, mrow, table);
}

/// Persistent session-3 kernel (Mask24Args::variant = 3): the same 128 x 64 CTA tiles and 8 x 8
/// regions, walked with a grid stride over (column tile, row tile, matrix) (TileWalk); each thread
/// copies its next interior region (8 x 16-byte cp.async per 16 bytes of row; apply: + the two
/// 4-byte mask words) into its own shared-memory slots before it computes the current region,
/// so one region of loads per thread is in flight during the search and the stores. The table
/// is filled once per CTA. Dynamic shared memory: 2 buffers x (8 kRowWords / 4 uint4 + 2 words)
/// x 128 threads.
template <class T, bool kSearch>
__global__ void __launch_bounds__(Mask24Traits::kThreads, (kMask24MinBlocks<T, kSearch>))
    mask24_pf_kernel(Mask24Args args_in, Mask24Geom g, TileWalk walk) {
  using Raw = typename Elem<T>::Raw;
  using Traits = Mask24Traits;
  constexpr int kWords = kRowWords<Raw>, kVec = 8 * kWords / 4, kT = Traits::kThreads;
  __shared__ QuadTable table;
  extern __shared__ uint4 pf_mask[];  // [2][kVec][kT] uint4, then [2][2][kT] mask words
  unsigned* pf_words = reinterpret_cast<unsigned*>(pf_mask + 2 * kVec * kT);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::int64_t rows = args_in.rows, cols = args_in.cols, bcols = g.bcols;
  auto origin = [&](const TilePos& p, std::int64_t& r0, std::int64_t& c0) {
    r0 = std::int64_t(p.y) * Traits::kTileRows + 32 * warp + 8 * (lane >> 3);
    c0 = std::int64_t(p.x) * Traits::kTileCols + 8 * (lane & 7);
  };
  auto issue = [&](const TilePos& p, int buf) {
    if (!p.valid(walk)) return;
    std::int64_t r0, c0;
    origin(p, r0, c0);
    if (!(args_in.aligned && r0 + 8 <= rows && c0 + 8 <= cols)) return;
    const Raw* src = reinterpret_cast<const Raw*>(static_cast<const char*>(args_in.w) + g.z_w * p.z) + r0 * cols + c0;
#pragma unroll
    for (int R = 0; R < 8; ++R)
#pragma unroll
      for (int v = 0; v < kWords / 4; ++v)
        cp_async16(&pf_mask[(buf * kVec + R * (kWords / 4) + v) * kT + tid], reinterpret_cast<const uint4*>(src + R * cols) + v);
    if constexpr (!kSearch) {
      const std::uint16_t* mp =
          reinterpret_cast<const std::uint16_t*>(reinterpret_cast<const char*>(args_in.mask_in) + g.z_mask_in * p.z) +
          (r0 / 4) * bcols + c0 / 4;
      cp_async4(&pf_words[(buf * 2) * kT + tid], mp);
      cp_async4(&pf_words[(buf * 2 + 1) * kT + tid], mp + bcols);
    }
  };
  TilePos pos = TilePos::at(walk, blockIdx.x);
  issue(pos, 0);
  cp_async_commit();
  table.fill();
  __syncthreads();  // the only barrier: the table is ready
  int buf = 0;
  while (pos.valid(walk)) {
    TilePos next = pos;
    next.advance(walk);
    issue(next, buf ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    std::int64_t r0, c0;
    origin(pos, r0, c0);
    if (r0 < rows && c0 < cols) {
      Mask24Args args = args_in;
      offset_to_matrix(args, g, pos.z);
      const bool fast = args.aligned && r0 + 8 <= rows && c0 + 8 <= cols;
      std::uint32_t x[8][kWords];
      unsigned mrow[2] = {0u, 0u};
      if (fast) {
#pragma unroll
        for (int R = 0; R < 8; ++R)
#pragma unroll
          for (int v = 0; v < kWords / 4; ++v) {
            const uint4 q = pf_mask[(buf * kVec + R * (kWords / 4) + v) * kT + tid];
            x[R][4 * v] = q.x, x[R][4 * v + 1] = q.y, x[R][4 * v + 2] = q.z, x[R][4 * v + 3] = q.w;
          }
        if constexpr (!kSearch) mrow[0] = pf_words[(buf * 2) * kT + tid], mrow[1] = pf_words[(buf * 2 + 1) * kT + tid];
      } else {
        region_load_guarded<Raw>(static_cast<const Raw*>(args.w), rows, cols, r0, c0, x);
      }
      region_process<T, kSearch>(args, g, r0, c0, fast, x, mrow, table);
    }
    pos = next;
    buf ^= 1;
  }
  cp_async_wait<0>();
}

template <class T, bool kSearch>
constexpr std::size_t kMask24PfSmem = 2 * (8 * kRowWords<typename Elem<T>::Raw> / 4) * Mask24Traits::kThreads * 16 +
                                      2 * 2 * Mask24Traits::kThreads * 4;

}  // namespace sparsenm::train::detail

#include "cuda/train/mask24_lean.cuh"  // variants 8, 9 (use QuadTable, prmt, Mask24Geom above)

namespace sparsenm::train::detail {

template <class T>
void launch_mask24_impl(const Mask24Args& a, bool search, cudaStream_t s) {
  constexpr std::size_t kRawSize = sizeof(typename Elem<T>::Raw);
  check_mask24_variant(a.variant);
  int variant = a.variant != 0 ? a.variant : mask24_default_variant(kRawSize, search, a.batch, a.rows, a.cols);
  if (variant == 9) {  // the lean staged search over 128-column strips (mask24_lean.cuh, kCW = 4) where it fits, else variant 8
    if constexpr (kRawSize == 2) {
      if (mask24_lean_wide_fits(a, kRawSize, search)) {
        launch_mask24_lean<T, 4>(a, s);
        return;
      }
    }
    variant = 8;
  }
  if (variant == 8) {  // the lean staged 16-bit search (mask24_lean.cuh, 64-column strips) where it fits, else the default
    if constexpr (kRawSize == 2) {
      if (mask24_lean_staged_fits(a, kRawSize, search)) {
        launch_mask24_lean<T>(a, s);
        return;
      }
    }
    variant = mask24_default_variant(kRawSize, search, a.batch, a.rows, a.cols);
    if (variant == 8 || variant == 9) variant = 4;  // what the lean search does not take: the whole-sector kernel
  }
  if (variant == 1) {  // the session-2 kernel (mask24_s2.cuh)
    launch_mask24_s2<T>(a, search, s);
    return;
  }
  if (variant == 4) {  // whole-sector stores over a 256 x 256 footprint (mask24_lines.cuh)
    launch_mask24_lines<T>(a, search, s);
    return;
  }
  using Traits = Mask24Traits;
  const dim3 grid(unsigned((a.cols + Traits::kTileCols - 1) / Traits::kTileCols),
                  unsigned((a.rows + Traits::kTileRows - 1) / Traits::kTileRows), unsigned(a.batch));
  const Mask24Geom g = mask24_geom<typename Elem<T>::Raw>(a);
  if (variant == 3) {  // persistent, prefetching
    const std::int64_t tiles = std::int64_t(grid.x) * grid.y * grid.z;
    auto go = [&](auto kernel, std::size_t smem, ResidentCtas& cache) {
      const std::int64_t n = cache.grid(kernel, Traits::kThreads, smem, tiles);
      kernel<<<unsigned(n), Traits::kThreads, smem, s>>>(a, g, make_tile_walk(grid.x, grid.y, grid.z, n));
    };
    if (search) {
      static ResidentCtas cache;
      go(mask24_pf_kernel<T, true>, kMask24PfSmem<T, true>, cache);
    } else {
      static ResidentCtas cache;
      go(mask24_pf_kernel<T, false>, kMask24PfSmem<T, false>, cache);
    }
    SPARSENM_CUDA_CHECK_LAUNCH("mask24_pf_kernel");
    return;
  }
  if (search) mask24_kernel<T, true><<<grid, Traits::kThreads, 0, s>>>(a, g);
  else mask24_kernel<T, false><<<grid, Traits::kThreads, 0, s>>>(a, g);
  SPARSENM_CUDA_CHECK_LAUNCH("mask24_kernel");
}

}  // namespace sparsenm::train::detail
