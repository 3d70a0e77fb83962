// sparsenm — EW-N:M SpMV / small batch on tensor cores: Y^T (n x m) = W (n x k) * X^T (k x m) for
// m <= 8 (padded to the n8 of mma.sync.m16n8k16; f16 / bf16 inputs, fp32 accumulate). The condensed
// weight is decoded in registers into dense A fragments; the tensor cores multiply the zeros too
// (at m = 8 they have > 10x headroom over the HBM stream at 25 % density), so the design problem is
// the decode, not the math. Replaces ew_spmv's per-value gathers of X (m x 4 B of staged fp32 X
// per stored value, ~0.6 of the byte ratio at best at m = 8) by dense B fragments read once per
// window from shared memory.
//
// Data layout (spmv_tc_layout.hpp, repacked once at plan time):
//   W: a warp owns 16 rows; lane = 4g + t decodes window t of every 4-window chunk, for rows g and
//      g + 8 (the rows of its A fragment). Its tile = 32 slots (16 / N chunks x 2 rows x N),
//      [row block][tile][vec][lane][16 B] values + the canonical b-bit bitstream of its 32 fields.
//   k permutation: inside mma step s of a chunk, physical k = 2t + e (e = 0, 1) is window t's
//      position 4s + e and physical 2t + 8 + e is position 4s + 2 + e. A and B use the same map,
//      so a lane's A registers for one row are simply its window's M positions in order:
//      D[r] = {pos 2r, pos 2r + 1}, step s uses {Dg[2s], Dg8[2s], Dg[2s+1], Dg8[2s+1]}; and its B
//      registers are M consecutive X values of row g (= column g of X^T): one 16-byte read for M = 8.
//   X: staged per phase in shared memory as the raw 16-bit values, [8 rows][pitch] (rows >= m and
//      columns >= k zero), so padding slots and the rows past m multiply zeros.
// Decode (per row window, all offsets compile-time after unrolling): field j of the bitstream
//   gives s = 16 p with one shift + one AND (a funnel shift when the field straddles two words);
//   the value is one AND or shift of its 32-bit word; then for every 4-position pair q of the
//   window the value can reach (positions j .. M-N+j for the j-th value), a 64-bit shift by
//   s - 64 q (SHF.L.U32 + SHF.L.U64.HI; PTX clamps shift amounts >= 64 to a zero result, and a
//   "negative" amount is a huge unsigned one) drops it into the right half of the right register
//   or yields 0; N > 1 values are ORed (LOP3). No compares, no selects, no shared-memory tables.
// Decode kDecPrmt (template option, N in {1, 2}, M in {8, 16}; cuda:ew_spmv_tc_prmt, raced by the
//   plan; measured fastest at 2:8 / 2:16 at m = 8): every A register is one PRMT of the 32-bit word holding the window's value(s)
//   against zero, its selector read (LDS.128, 4 selector words) from a per-CTA table in shared
//   memory indexed by the window's adjacent index fields (2:8 / 1:8: 6 bits, 2:16: 8 bits; 1:16:
//   one 4-bit table per row half); a word packing two 16-bit selectors yields the second by
//   IMAD.HI (FMA pipe). 8 copies of each entry (copy = lane & 7): conflict-free quarter-warps.
//   SASS per stored value: 2:8 5.7 instructions (2.9 integer ALU), 2:16 10.8 (5.1) against the
//   shift decode's 12.1 (10.0) and 20.2 (17.9). Two accumulator chains; the weight pipeline
//   runs across X phases. Tables + X phases are sized for 3 CTAs per SM (fill_table below).
// Ring (template option RING > 2; cuda:ew_spmv_tc_ring, raced by the plan): RING tiles per warp
//   in registers (<= 128 registers), tile t + RING loaded as soon as tile t is decoded (RING - 1
//   in flight during each decode); 2:8 reads 8-byte selector entries (LDS.64). Measured at
//   d55cf64 (docs/PERF.md, session 4): +1 % (28672 x 8192) / +7 % (12288^2) over prmt at 2:8 with
//   3x the bytes in flight: the weight stream tops out near 2.8 TB/s, not at HBM latency.
// X staging: cp.async (every 16-byte vector of a thread in flight at once), all variants.
// Grid: a runtime CTA width (SpmvTcArgs::cta_warps, 4..8 warps); the shift variant keeps 8.
// Tiling: CTA = 8 warps = 128 rows x a range of tiles along k; split-k over a thread-block cluster
//   of `ksplit` CTAs reduced through distributed shared memory (as ew_spmv). Each lane streams its
//   tiles with two in flight (4 x LDG.128 values + b / idx_vec index loads each, evict-first).
// Coalescing: every weight load instruction of a warp reads 512 contiguous bytes (values) or
//   128/256/512 contiguous bytes (indices). Bank conflicts: see SpmvTcTraits::kPitchMod.
// Limits: HBM for W where the decode fits the issue budget (~19 lane-instructions per stored fp16
//   value at b = 3 and 4.2 TB/s; the integer pipe does half that). Per stored value at M = 8:
//   ~2 (field) + 1 (value) + 5 (two pair shifts, one offset add) + (N - 1) / N x 4 (ORs) integer
//   ops; M = 16 doubles the pair shifts per value (four pairs), so 2:16 / 1:16 are decode-bound.
// NaN / Inf: the dense decode multiplies X at pruned positions by 0, so X must be finite for the
//   product to equal FORMAT.md section 8 (0 * Inf = NaN): the plan candidate requires
//   desc.x_finite (as cuBLAS on the dense expansion does); stored slots propagate NaN / Inf.
#pragma once
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ew/stream_tile.cuh"
#include "cuda/ew/spmv_tc_traits.cuh"

namespace sparsenm::cuda::ew {

namespace tc_detail {

template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

/// w << n as 64 bits; n >= 64 (or "negative") gives 0 (PTX shl clamps the amount).
__device__ __forceinline__ unsigned long long shl64(std::uint32_t w, std::uint32_t n) {
  unsigned long long r;
  asm("shl.b64 %0, %1, %2;" : "=l"(r) : "l"((unsigned long long)w), "r"(n));
  return r;
}

/// 16 x field j of the lane's B-bit bitstream (j compile-time after unrolling).
template <int B>
__device__ __forceinline__ std::uint32_t field16(const std::uint32_t (&iw)[B], int j) {
  const int bit = j * B, w = bit >> 5, s = bit & 31;
  constexpr std::uint32_t mask = ((1u << B) - 1u) << 4;
  if (s + B <= 32) {
    if (s >= 4) return (iw[w] >> (s - 4)) & mask;
    return (iw[w] << (4 - s)) & mask;
  }
  return (__funnelshift_r(iw[w], iw[w + 1], s) << 4) & mask;
}

/// 16-bit value j of the lane's tile, zero-extended.
__device__ __forceinline__ std::uint32_t value16(const std::uint32_t (&v)[16], int j) {
  const std::uint32_t word = v[j >> 1];
  return (j & 1) ? (word >> 16) : (word & 0xffffu);
}

template <class Tr>
struct Tile {
  std::uint32_t v[16];
  std::uint32_t i[Tr::B];
};

template <class Tr>
__device__ __forceinline__ void load_tile(Tile<Tr>& tile, const SpmvTcArgs& a, int block, int lane, int t) {
  load_stream_tile<4, Tr::kIdxLoads, Tr::kIdxVec>(tile.v, tile.i, a.values, a.indices, std::size_t(block) * a.tiles + t, lane);
}

/// Reads the lane's M staged X values of one window (row g) as M / 2 half2 registers.
template <int MM>
__device__ __forceinline__ void load_xwin(const unsigned char* p, std::uint32_t (&xb)[MM / 2]) {
  if constexpr (MM == 4) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    xb[0] = u.x, xb[1] = u.y;
  } else {
#pragma unroll
    for (int q = 0; q < MM / 8; ++q) {
      const uint4 u = reinterpret_cast<const uint4*>(p)[q];
      xb[4 * q] = u.x, xb[4 * q + 1] = u.y, xb[4 * q + 2] = u.z, xb[4 * q + 3] = u.w;
    }
  }
}

/// The kDecShift decode of one chunk: d[h][r] = A register r of row g + 8h.
template <class Tr>
__device__ __forceinline__ void decode_shift(const Tile<Tr>& tile, int c, std::uint32_t (&d)[2][Tr::kRegs]) {
  constexpr int N = Tr::NN, M = Tr::MM, R = Tr::kRegs;
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int r = 0; r < R; ++r) d[h][r] = 0u;
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int j = c * 2 * N + h * N + i;
      const std::uint32_t s = field16<Tr::B>(tile.i, j);
      const std::uint32_t w = value16(tile.v, j);
#pragma unroll
      for (int q = i / 4; q <= (M - N + i) / 4; ++q) {  // the pairs the i-th value can reach
        const unsigned long long u = shl64(w, s - 64u * unsigned(q));
        d[h][2 * q] |= std::uint32_t(u);
        d[h][2 * q + 1] |= std::uint32_t(u >> 32);
      }
    }
}

/// 128 x the W-bit field starting at bit `bit` of the lane's bitstream (bit compile-time after
/// unrolling): the byte offset of a selector-table entry (8 copies x 16 bytes per entry).
template <int B, int W>
__host__ __device__ __forceinline__ std::uint32_t field128(const std::uint32_t (&iw)[B], int bit) {
  const int w = bit >> 5, s = bit & 31;
  constexpr std::uint32_t mask = ((1u << W) - 1u) << 7;
  if (s + W <= 32) {
    if (s >= 7) return (iw[w] >> (s - 7)) & mask;
    return (iw[w] << (7 - s)) & mask;
  }
  const unsigned long long two = (static_cast<unsigned long long>(iw[w + 1]) << 32) | iw[w];  // a funnel shift
  return (static_cast<std::uint32_t>(two >> s) << 7) & mask;
}

// `#pragma unroll` in the functions that also compile for the host (host compilers warn on it).
#if defined(__CUDA_ARCH__)
#define SPARSENM_TC_UNROLL _Pragma("unroll")
#else
#define SPARSENM_TC_UNROLL
#endif

/// The three primitives of the kDecPrmt decode on the device (a host test substitutes its own,
/// so decode_prmt itself runs on the CPU there).
struct DeviceDecodeOps {
  /// PRMT against zero: byte i of the result is byte (sel >> 4i) & 7 of {0 (bytes 4..7), w (0..3)};
  /// only sel's low 16 bits count (the table's selectors never set the sign-replicate bit, so no
  /// 0x7777 mask as __byte_perm).
  __device__ static std::uint32_t prmt(std::uint32_t w, std::uint32_t sel) {
    std::uint32_t d;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(d) : "r"(w), "r"(sel));
    return d;
  }
  /// sel >> 16 as IMAD.HI (x 2^16) on the FMA pipe instead of a shift on the integer ALU.
  __device__ static std::uint32_t hi16(std::uint32_t sel) { return __umulhi(sel, 0x10000u); }
  /// 16 bytes at shared-memory address addr.
  __device__ static uint4 lds128(std::uint32_t addr) {
    uint4 u;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "r"(addr));
    return u;
  }
  /// 8 bytes at shared-memory address addr.
  __device__ static uint2 lds64(std::uint32_t addr) {
    uint2 u;
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(u.x), "=r"(u.y) : "r"(addr));
    return u;
  }
};

/// The kDecPrmt decode of one chunk: every A register is one PRMT of the 32-bit word holding the
/// window's value(s) against zero, with the selector from the table (tab: address of this lane's
/// copy, i.e. table base + kTabCopyBytes (lane & kTabCopyMask)).
#pragma nv_exec_check_disable
template <class Tr, class Ops = DeviceDecodeOps>
__host__ __device__ __forceinline__ void decode_prmt(const Tile<Tr>& tile, int c, std::uint32_t tab,
                                                     std::uint32_t (&d)[2][Tr::kRegs]) {
  constexpr int N = Tr::NN, B = Tr::B;
  constexpr std::uint32_t kPlane = std::uint32_t(Tr::kTabEntries) * 128u;
SPARSENM_TC_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int j = c * 2 * N + h * N;  // first slot of the window
    if constexpr (N == 2 && Tr::kTab64) {  // 2:8 ring: 8-byte entries, selectors two per word
      const std::uint32_t word = tile.v[j >> 1];
      const uint2 sel = Ops::lds64(tab + field128<B, 2 * B>(tile.i, j * B));
      d[h][0] = Ops::prmt(word, sel.x);
      d[h][1] = Ops::prmt(word, Ops::hi16(sel.x));
      d[h][2] = Ops::prmt(word, sel.y);
      d[h][3] = Ops::prmt(word, Ops::hi16(sel.y));
    } else if constexpr (N == 2) {
      const std::uint32_t word = tile.v[j >> 1];  // both values: low half slot j, high half j + 1
      const uint4 sel = Ops::lds128(tab + field128<B, 2 * B>(tile.i, j * B));
      if constexpr (!Tr::kTabPacked) {
        d[h][0] = Ops::prmt(word, sel.x);
        d[h][1] = Ops::prmt(word, sel.y);
        d[h][2] = Ops::prmt(word, sel.z);
        d[h][3] = Ops::prmt(word, sel.w);
      } else {
        const std::uint32_t sw[4] = {sel.x, sel.y, sel.z, sel.w};
SPARSENM_TC_UNROLL
        for (int q = 0; q < 4; ++q) {
          d[h][2 * q] = Ops::prmt(word, sw[q]);
          d[h][2 * q + 1] = Ops::prmt(word, Ops::hi16(sw[q]));
        }
      }
    } else if constexpr (Tr::MM == 8) {  // N = 1: slots 2c (row g, low half), 2c + 1 (row g + 8, high half)
      if (h == 1) break;                  // both rows from one entry
      const std::uint32_t word = tile.v[c];
      const uint4 sel = Ops::lds128(tab + field128<B, 2 * B>(tile.i, j * B));
      const std::uint32_t sw[4] = {sel.x, sel.y, sel.z, sel.w};
SPARSENM_TC_UNROLL
      for (int r = 0; r < 4; ++r) {
        d[0][r] = Ops::prmt(word, sw[r]);
        d[1][r] = Ops::prmt(word, Ops::hi16(sw[r]));
      }
    } else {  // N = 1, M = 16: one table per half (row), two planes
      const std::uint32_t word = tile.v[c];
      const std::uint32_t off = field128<B, B>(tile.i, j * B) + std::uint32_t(h * Tr::kTabPlanes) * kPlane;
SPARSENM_TC_UNROLL
      for (int pl = 0; pl < Tr::kTabPlanes; ++pl) {
        const uint4 sel = Ops::lds128(tab + off + std::uint32_t(pl) * kPlane);
        d[h][4 * pl] = Ops::prmt(word, sel.x);
        d[h][4 * pl + 1] = Ops::prmt(word, sel.y);
        d[h][4 * pl + 2] = Ops::prmt(word, sel.z);
        d[h][4 * pl + 3] = Ops::prmt(word, sel.w);
      }
    }
  }
}

/// PRMT selector (16 bits, 4 nibbles; nibble 4 = a zero byte of the second operand) of A
/// register r for a window whose values sit at positions p0 (bytes 0, 1 of the word) and p1
/// (bytes 2, 3; p1 < 0: none).
__host__ __device__ constexpr std::uint32_t prmt_selector(int r, int p0, int p1) {
  std::uint32_t sel = 0;
  for (int e = 0; e < 2; ++e) {
    const int pos = 2 * r + e;
    const std::uint32_t lo = pos == p0 ? 0u : pos == p1 ? 2u : 4u;
    const std::uint32_t hi = lo == 4u ? 4u : lo + 1u;
    sel |= (lo | (hi << 4)) << (8 * e);
  }
  return sel;
}

/// The 4 words of 16-byte table slot e (byte offset 16 e; see spmv_tc_table_bytes).
template <class Tr>
__host__ __device__ inline void table_words(int e, std::uint32_t (&wv)[4]) {
  constexpr int B = Tr::B, kMask = (1 << B) - 1;
  const int idx = (e >> 3) % Tr::kTabEntries, sp = (e >> 3) / Tr::kTabEntries;  // sp = set * planes + plane
  if constexpr (Tr::kTab64) {  // two 8-byte copies of {sel(0) | sel(1) << 16, sel(2) | sel(3) << 16}
    const int p0 = idx & kMask, p1 = idx >> B;
    for (int q = 0; q < 4; ++q)
      wv[q] = prmt_selector(2 * (q & 1), p0, p1) | (prmt_selector(2 * (q & 1) + 1, p0, p1) << 16);
  } else if constexpr (Tr::NN == 2) {
    const int p0 = idx & kMask, p1 = idx >> B;
    for (int q = 0; q < 4; ++q)
      wv[q] = Tr::kTabPacked ? (prmt_selector(2 * q, p0, p1) | (prmt_selector(2 * q + 1, p0, p1) << 16))
                             : prmt_selector(q, p0, p1);
  } else if constexpr (Tr::MM == 8) {  // N = 1 joint: row g's field, then row g + 8's
    const int pg = idx & kMask, pg8 = idx >> B;
    for (int q = 0; q < 4; ++q) wv[q] = prmt_selector(q, pg, -1) | (prmt_selector(q, -1, pg8) << 16);
  } else {
    const int set = sp / Tr::kTabPlanes, plane = sp % Tr::kTabPlanes;
    for (int q = 0; q < 4; ++q)
      wv[q] = set == 0 ? prmt_selector(4 * plane + q, idx, -1) : prmt_selector(4 * plane + q, -1, idx);
  }
}

/// Fills the kDecPrmt selector table (Tr::kTabBytes at shared address `base`); every thread of
/// the CTA takes part; the caller synchronizes before use.
template <class Tr>
__device__ __forceinline__ void fill_table(unsigned char* base) {
  for (int e = threadIdx.x; e < Tr::kTabBytes / 16; e += int(blockDim.x)) {
    std::uint32_t wv[4];
    table_words<Tr>(e, wv);
    reinterpret_cast<uint4*>(base)[e] = make_uint4(wv[0], wv[1], wv[2], wv[3]);
  }
}

/// acc += the tile's 16 rows x (its columns) times X^T. xw: staged X of row g at window t of the
/// tile's first chunk; tab: this lane's selector-table address (kDecPrmt).
template <class Tr>
__device__ __forceinline__ void compute_tile(const Tile<Tr>& tile, float (&acc)[Tr::kAcc][4], const unsigned char* xw,
                                             std::uint32_t tab) {
  constexpr int M = Tr::MM, R = Tr::kRegs;
  if constexpr (Tr::kDec == kDecNone) {  // diagnostic: keep the loads, drop decode / X / mma
    std::uint32_t f = tile.i[0];
#pragma unroll
    for (int q = 0; q < 16; ++q) f ^= tile.v[q];
#pragma unroll
    for (int q = 1; q < Tr::B; ++q) f ^= tile.i[q];
    acc[0][0] += __uint_as_float(f & 0x007fffffu);  // a denormal or zero: the sum stays finite
  } else {
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c) {
      std::uint32_t xb[R];
      load_xwin<M>(xw + c * Tr::kChunkCols * 2, xb);
      std::uint32_t d[2][R];
      if constexpr (Tr::kDec == kDecPrmt) decode_prmt<Tr>(tile, c, tab, d);
      else decode_shift<Tr>(tile, c, d);
#pragma unroll
      for (int st = 0; st < Tr::kSteps; ++st)
        mma16816<typename Tr::Elem>(acc[(c * Tr::kSteps + st) % Tr::kAcc], d[0][2 * st], d[1][2 * st],
                                    d[0][2 * st + 1], d[1][2 * st + 1], xb[2 * st], xb[2 * st + 1]);
    }
  }
}

__device__ __forceinline__ void store_y(void* y, std::size_t i, float v, int y_dtype) {
  if (y_dtype == 0) static_cast<float*>(y)[i] = v;
  else if (y_dtype == 1) static_cast<__half*>(y)[i] = __float2half_rn(v);
  else static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16_rn(v);
}

/// Stages X[0..8)[c0, c0 + ncols) as raw 16-bit values, rows [8][pitch]; zeros past m and k.
/// 16-byte path: cp.async (LDGSTS) global -> shared, so every vector of the thread is in flight at
/// once and none passes through registers (the register loop before kept one load in flight per
/// iteration: 16 dependent L2 round trips per thread and phase at m = 8, ~4 us of the 28672 x 8192
/// time at 08296c0); the caller's __syncthreads() after this call publishes the data.
template <class Tr>
__device__ __forceinline__ void stage_x(unsigned char* xs, const SpmvTcArgs& a, int c0, int ncols, int pitch) {
  const unsigned short* x = static_cast<const unsigned short*>(a.x);
  if (a.x_vec) {  // k % 8 == 0 and x 16-byte aligned: a vector is wholly inside or past k
    const int nv = ncols / 8;
    const std::uint32_t base = std::uint32_t(__cvta_generic_to_shared(xs));
    for (int e = threadIdx.x; e < 8 * nv; e += int(blockDim.x)) {
      const int r = e / nv, v = e - r * nv, col = c0 + 8 * v;
      const std::uint32_t dst = base + std::uint32_t(r * pitch + v * 16);
      if (r < a.m && col < a.k) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(x + std::size_t(r) * a.k + col)
                     : "memory");
      } else {
        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(dst), "r"(0u) : "memory");
      }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
  } else {
    for (int e = threadIdx.x; e < 8 * ncols; e += int(blockDim.x)) {
      const int r = e / ncols, c = e - r * ncols, col = c0 + c;
      unsigned short u = 0;
      if (r < a.m && col < a.k) u = x[std::size_t(r) * a.k + col];
      *reinterpret_cast<unsigned short*>(xs + r * pitch + c * 2) = u;
    }
  }
}

}  // namespace tc_detail

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks) ew_spmv_tc_kernel(const __grid_constant__ SpmvTcArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const int rows_per_cta = a.cta_warps * 16;  // blockDim.x = 32 x cta_warps
  const int block = blockIdx.x * a.cta_warps + warp;
  const bool active = block < a.row_blocks;
  const int t_begin = blockIdx.y * a.tiles_per_split;
  const int t_end = min(a.tiles, t_begin + a.tiles_per_split);
  const int pitch = spmv_tc_pitch(a.tiles_per_phase * Tr::kTileCols, Tr::MM);
  unsigned char* xs = smem + Tr::kTabBytes;  // [selector table][staged X]
  if constexpr (Tr::kDec == kDecPrmt) tc_detail::fill_table<Tr>(smem);  // ordered by the phase's __syncthreads
  const std::uint32_t tab = std::uint32_t(__cvta_generic_to_shared(smem)) +
                           std::uint32_t(Tr::kTabCopyBytes) * std::uint32_t(lane & Tr::kTabCopyMask);
  float acc[Tr::kAcc][4] = {};

  if constexpr (Tr::kRing > 2) {
    // Register ring (cuda:ew_spmv_tc_ring): tile t lives in slot (t - t_begin) % kRing and is
    // reloaded with tile t + kRing as soon as it is decoded, so kRing - 1 tiles of the warp stay
    // in flight during every decode, and the ring runs across X phases. The slot must be a
    // compile-time index (registers), so the tile loop is unrolled kRing times; phases therefore
    // start at a slot-0 tile: tiles_per_phase is a multiple of kRing or covers the whole split
    // (plan_spmv_tc; launch_spmv_tc checks it).
    tc_detail::Tile<Tr> ring[Tr::kRing];
    if (active) {
#pragma unroll
      for (int s = 0; s < Tr::kRing; ++s)
        if (t_begin + s < t_end) tc_detail::load_tile<Tr>(ring[s], a, block, lane, t_begin + s);
    }
    for (int ph = t_begin; ph < t_end; ph += a.tiles_per_phase) {
      const int pe = min(ph + a.tiles_per_phase, t_end);
      if (ph != t_begin) __syncthreads();  // every warp is done with the previous phase's X
      tc_detail::stage_x<Tr>(xs, a, ph * Tr::kTileCols, (pe - ph) * Tr::kTileCols, pitch);
      __syncthreads();
      if (active) {
        const unsigned char* xw = xs + g * pitch + tq * Tr::MM * 2;
        for (int t = ph; t < pe; t += Tr::kRing) {
#pragma unroll
          for (int s = 0; s < Tr::kRing; ++s) {
            if (t + s < pe) {
              tc_detail::compute_tile<Tr>(ring[s], acc, xw + (t + s - ph) * Tr::kTileCols * 2, tab);
              if (t + s + Tr::kRing < t_end) tc_detail::load_tile<Tr>(ring[s], a, block, lane, t + s + Tr::kRing);
            }
          }
        }
      }
    }
  } else if constexpr (Tr::kDec != kDecShift) {  // kDecPrmt (and the kDecNone diagnostic)
    // Two tiles in flight across phase boundaries too: tile t lives in buffer (t - t_begin) & 1
    // and is reloaded with tile t + 2 (of whichever phase) as soon as it is consumed, so a
    // phase's first tiles were loaded during the previous phase's last ones.
    tc_detail::Tile<Tr> ta, tb;
    if (active && t_begin < t_end) {
      tc_detail::load_tile<Tr>(ta, a, block, lane, t_begin);
      if (t_begin + 1 < t_end) tc_detail::load_tile<Tr>(tb, a, block, lane, t_begin + 1);
    }
    for (int ph = t_begin; ph < t_end; ph += a.tiles_per_phase) {
      const int pe = min(ph + a.tiles_per_phase, t_end);
      if (ph != t_begin) __syncthreads();  // every warp is done with the previous phase's X
      tc_detail::stage_x<Tr>(xs, a, ph * Tr::kTileCols, (pe - ph) * Tr::kTileCols, pitch);
      __syncthreads();
      if (active) {
        const unsigned char* xw = xs + g * pitch + tq * Tr::MM * 2;
        for (int t = ph; t < pe; ++t) {
          if (((t - t_begin) & 1) == 0) {
            tc_detail::compute_tile<Tr>(ta, acc, xw + (t - ph) * Tr::kTileCols * 2, tab);
            if (t + 2 < t_end) tc_detail::load_tile<Tr>(ta, a, block, lane, t + 2);
          } else {
            tc_detail::compute_tile<Tr>(tb, acc, xw + (t - ph) * Tr::kTileCols * 2, tab);
            if (t + 2 < t_end) tc_detail::load_tile<Tr>(tb, a, block, lane, t + 2);
          }
        }
      }
    }
  } else {
    for (int ph = t_begin; ph < t_end; ph += a.tiles_per_phase) {
      const int pe = min(ph + a.tiles_per_phase, t_end);
      tc_detail::Tile<Tr> ta, tb;
      if (active) {  // two tiles in flight while X is staged
        tc_detail::load_tile<Tr>(ta, a, block, lane, ph);
        if (ph + 1 < pe) tc_detail::load_tile<Tr>(tb, a, block, lane, ph + 1);
      }
      if (ph != t_begin) __syncthreads();  // every warp is done with the previous phase's X
      tc_detail::stage_x<Tr>(xs, a, ph * Tr::kTileCols, (pe - ph) * Tr::kTileCols, pitch);
      __syncthreads();
      if (active) {
        const unsigned char* xw = xs + g * pitch + tq * Tr::MM * 2;
        for (int t = ph; t < pe; t += 2) {  // each buffer is refilled as soon as it is consumed
          tc_detail::compute_tile<Tr>(ta, acc, xw + (t - ph) * Tr::kTileCols * 2, tab);
          if (t + 2 < pe) tc_detail::load_tile<Tr>(ta, a, block, lane, t + 2);
          if (t + 1 < pe) {
            tc_detail::compute_tile<Tr>(tb, acc, xw + (t + 1 - ph) * Tr::kTileCols * 2, tab);
            if (t + 3 < pe) tc_detail::load_tile<Tr>(tb, a, block, lane, t + 3);
          }
        }
      }
    }
  }

  // C fragment: acc[0..1] = rows g, X rows 2tq, 2tq + 1; acc[2..3] = row g + 8.
#pragma unroll
  for (int q = 1; q < Tr::kAcc; ++q)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[0][e] += acc[q][e];
  if (a.ksplit == 1) {
    if (active) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = block * 16 + g + (e >> 1) * 8, xr = 2 * tq + (e & 1);
        if (row < a.n && xr < a.m) tc_detail::store_y(a.y, std::size_t(xr) * a.n + row, acc[0][e], a.y_dtype);
      }
    }
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // clusters need sm_90; the host plans ksplit = 1 before that
#else
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __syncthreads();  // every thread is done reading the staged X
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int e = 0; e < 4; ++e)
    red[(2 * tq + (e & 1)) * rows_per_cta + warp * 16 + g + (e >> 1) * 8] = acc[0][e];
  cluster.sync();
  const int rank = int(cluster.block_rank()), ks = a.ksplit;
  for (int o = rank + ks * int(threadIdx.x); o < 8 * rows_per_cta; o += ks * int(blockDim.x)) {
    const int r = o / rows_per_cta, rr = o - r * rows_per_cta;
    const int grow = blockIdx.x * rows_per_cta + rr;
    float s = 0.0f;
    for (int p = 0; p < ks; ++p) s += cluster.map_shared_rank(red, p)[o];
    if (r < a.m && grow < a.n) tc_detail::store_y(a.y, std::size_t(r) * a.n + grow, s, a.y_dtype);
  }
  cluster.sync();  // keep this CTA's partials alive until every peer has read them
#endif
}

}  // namespace sparsenm::cuda::ew
