// sparsenm — the 90 transposable 2:4 patterns of a 4x4 block and the two-level search
// (seed 003 §5.1 "transposable mask by convolution"; Hubara et al. 2021).
//
// A pattern is 4 row pairs, each one of the 6 column pairs, such that every column is used
// exactly twice: 90 patterns. Rule (bit for bit the CPU reference sparsenm::transposable_24_mask,
// src/prune/transposable.cpp; all 90 patterns are scored, none is skipped): magnitudes
// a = |w| in fp32 (|NaN| = +inf); row pair sums s_r[p] = a_ra + a_rb; bottom B = s1[p1] + s0[p0],
// top T = s3[p3] + s2[p2], score V = T + B, every sum rounded in fp32. The pattern chosen has the
// largest V; among patterns tying on V, the smallest top half (mask bits 8..15); within that
// top, the largest B, then the smallest bottom half (bits 0..7). (In ascending mask order:
// take a pattern if V > best V, or V == best V with the same top and B > best B.)
// The pairs are ordered by their nibble value, (0,1) < (0,2) < (1,2) < (0,3) < (1,3) < (2,3), so
// that index order is mask order.
//
// Search without enumerating 90 x 3 sums:
//  1. Bottom rows (1, 0): for each of the 19 column-fill vectors n (sum 4, entries <= 2),
//     Bmax[n] = max over the (p1, p0) filling n of B, and Bsel[n] the first (p1, p0) reaching it.
//  2. Top rows (3, 2): each of the 36 (p3, p2) leaves n_t = 2 - count(p3) - count(p2) to fill;
//     V(t) = T_t + Bmax[n_t] is the best score with top t (x -> T + x is monotone in fp32); the
//     first t with the largest V(t) (strict >) and Bsel[n_t] are the answer.
// fp32 sums of f16 magnitudes are exact unless a block's exponents span more than ~10 binades;
// otherwise the chosen pattern is optimal up to the rounding of V (relative 2^-23). All indices
// are compile-time constants after unrolling (static_for): registers only. A block always gets
// a valid transposable pattern.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda/train/philox.hpp"  // SPARSENM_HD

namespace sparsenm::train::detail {

SPARSENM_HD int popc4(unsigned x) {
#if defined(__CUDA_ARCH__)
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}
SPARSENM_HD int lowest_bit(unsigned x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return __ffs(int(x)) - 1;
#else
  return __builtin_ctz(x);
#endif
}
SPARSENM_HD int highest_bit(unsigned x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return 31 - __clz(int(x));
#else
  return 31 - __builtin_clz(x);
#endif
}

template <int I, int N, class F>
SPARSENM_HD void static_for(F&& f) {
  if constexpr (I < N) {
    f(std::integral_constant<int, I>{});
    static_for<I + 1, N>(f);
  }
}

// pairs by nibble value: (0,1)=3, (0,2)=5, (1,2)=6, (0,3)=9, (1,3)=10, (2,3)=12
constexpr int pair_a(int k) { return (k == 2 || k == 4) ? 1 : (k == 5 ? 2 : 0); }
constexpr int pair_b(int k) { return k == 0 ? 1 : (k <= 2 ? 2 : 3); }
constexpr unsigned pair_mask(int k) { return (1u << pair_a(k)) | (1u << pair_b(k)); }
constexpr int col_count(int pa, int pb, int c) {
  return int((pair_mask(pa) >> c) & 1u) + int((pair_mask(pb) >> c) & 1u);
}
/// Base-3 code of the column-count vector of two row pairs (the need they fill).
constexpr int fill_code(int pa, int pb) {
  int code = 0, p = 1;
  for (int c = 0; c < 4; ++c, p *= 3) code += col_count(pa, pb, c) * p;
  return code;
}
/// Base-3 code of what the bottom rows must fill after top pairs (p3, p2).
constexpr int need_code(int p3, int p2) {
  int code = 0, p = 1;
  for (int c = 0; c < 4; ++c, p *= 3) code += (2 - col_count(p3, p2, c)) * p;
  return code;
}
/// Is bottom combination i (= p1 * 6 + p0) the first with its fill code?
constexpr bool first_fill(int i) {
  for (int j = 0; j < i; ++j)
    if (fill_code(j / 6, j % 6) == fill_code(i / 6, i % 6)) return false;
  return true;
}

/// The 4x4 bit matrix m (bit 4*r + c) transposed (bit 4*c + r).
constexpr unsigned transpose16(unsigned m) {
  unsigned t = 0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      if (m & (1u << (4 * r + c))) t |= 1u << (4 * c + r);
  return t;
}
/// A pattern's code word: the mask (bit 4*r + c) in bits 0..15 and its transpose (nibble c =
/// column c, bit r = row r) in bits 16..31. The search selects compile-time codes, so the
/// transpose costs nothing; the halves of the rows (0, 1) and (2, 3) combine by addition.
constexpr unsigned pattern_code(unsigned m) { return m | (transpose16(m) << 16); }

/// Best transposable pattern of a block of magnitudes a[r][c] (|x| as float, NaN already
/// mapped to +inf) by the rule in the header comment, as pattern_code(mask).
SPARSENM_HD unsigned best_pattern24_code(const float (&a)[4][4]) {
  auto pair_sum = [&](int r, int k) { return a[r][pair_a(k)] + a[r][pair_b(k)]; };
  float bmax[81];
  unsigned bsel[81];
  {
    float s0[6], s1[6];
    SPARSENM_UNROLL
    for (int k = 0; k < 6; ++k) s0[k] = pair_sum(0, k), s1[k] = pair_sum(1, k);
    static_for<0, 36>([&](auto ic) {  // bottom: i = p1 * 6 + p0, ascending bottom mask
      constexpr int i = decltype(ic)::value;
      constexpr int code = fill_code(i / 6, i % 6);
      constexpr unsigned m = pattern_code((pair_mask(i / 6) << 4) | pair_mask(i % 6));
      const float b = s1[i / 6] + s0[i % 6];
      if constexpr (first_fill(i)) {
        bmax[code] = b;
        bsel[code] = m;
      } else {
        if (b > bmax[code]) {
          bmax[code] = b;
          bsel[code] = m;
        }
      }
    });
  }
  float s2[6], s3[6];
  SPARSENM_UNROLL
  for (int k = 0; k < 6; ++k) s2[k] = pair_sum(2, k), s3[k] = pair_sum(3, k);
  float best = -1.0f;
  unsigned mask = 0;
  static_for<0, 36>([&](auto ic) {  // top: t = p3 * 6 + p2, ascending top mask
    constexpr int t = decltype(ic)::value;
    constexpr int p3 = t / 6, p2 = t % 6;
    constexpr int code = need_code(p3, p2);
    constexpr unsigned top = pattern_code((pair_mask(p3) << 12) | (pair_mask(p2) << 8));
    const float v = (s3[p3] + s2[p2]) + bmax[code];
    if (v > best) {
      best = v;
      mask = top + bsel[code];  // disjoint bits
    }
  });
  return mask;
}

/// The 16-bit mask (bit 4*r + c) of best_pattern24_code.
SPARSENM_HD unsigned best_pattern24(const float (&a)[4][4]) { return best_pattern24_code(a) & 0xffffu; }

/// The rule's magnitude of one element: |x|, NaN -> +inf (fminf returns the non-NaN operand).
SPARSENM_HD float rank_magnitude24(float x) { return fminf(fabsf(x), INFINITY); }

/// The two stored positions of a 4-bit quad mask: the two lowest kept, then the lowest free
/// (only matters for invalid masks). `bad` = the quad does not keep exactly 2.
struct QuadPos {
  int lo, hi;
  bool bad;
};
/// (lo | hi << 2) of quad_positions for every 4-bit mask, 4 bits each: a 64-bit constant.
constexpr std::uint64_t quad_nibble_table() {
  std::uint64_t t = 0;
  for (unsigned m = 0; m < 16; ++m) {
    unsigned keep = 0;
    int n = 0;
    for (int i = 0; i < 4 && n < 2; ++i)
      if (m & (1u << i)) keep |= 1u << i, ++n;
    for (int i = 0; i < 4 && n < 2; ++i)
      if (!(keep & (1u << i))) keep |= 1u << i, ++n;
    int lo = -1, hi = -1;
    for (int i = 0; i < 4; ++i)
      if (keep & (1u << i)) (lo < 0 ? lo : hi) = i;
    t |= std::uint64_t(unsigned(lo) | (unsigned(hi) << 2)) << (4 * m);
  }
  return t;
}
constexpr std::uint64_t kQuadNibbles = quad_nibble_table();
/// Bit m set iff the 4-bit mask m does not keep exactly 2.
constexpr unsigned kQuadBad = 0xffffu & ~((1u << 3) | (1u << 5) | (1u << 6) | (1u << 9) | (1u << 10) | (1u << 12));
SPARSENM_HD QuadPos quad_positions(unsigned m4) {
  m4 &= 0xfu;
  const unsigned nib = unsigned(kQuadNibbles >> (4 * m4)) & 0xfu;
  return QuadPos{int(nib & 3u), int(nib >> 2), ((kQuadBad >> m4) & 1u) != 0u};
}
/// Byte-permute selector that picks the 16-bit values lo and hi (0..3) out of a quad held in
/// two words (lo | hi << 16 of the result): bytes 2lo, 2lo+1, 2hi, 2hi+1.
constexpr unsigned pair_selector(unsigned nib) { return 0x1010u + (nib & 3u) * 0x22u + (nib >> 2) * 0x2200u; }
/// One entry of the compression table of the mask kernels, for key = quad a | quad b << 4 (two
/// 4-bit quad masks, e.g. one row of two neighbouring blocks): x, y = pair_selector of a, b;
/// z = nibble(a) | nibble(b) << 4 (an hw24 index byte) | (#bad quads among a, b) << 16.
struct QuadPairEntry {
  unsigned x, y, z;
};
constexpr QuadPairEntry quad_pair_entry(unsigned key) {
  const unsigned qa = key & 0xfu, qb = (key >> 4) & 0xfu;
  const unsigned na = unsigned(kQuadNibbles >> (4 * qa)) & 0xfu, nb = unsigned(kQuadNibbles >> (4 * qb)) & 0xfu;
  const unsigned bad = ((kQuadBad >> qa) & 1u) + ((kQuadBad >> qb) & 1u);
  return QuadPairEntry{pair_selector(na), pair_selector(nb), na | (nb << 4) | (bad << 16)};
}
/// Column c (0..3) of a 16-bit block mask as a 4-bit quad (bit r = row r): the bits c, c+4,
/// c+8, c+12 gathered by one multiply (the partial products land on distinct bits).
SPARSENM_HD unsigned mask_column(unsigned m, int c) { return ((((m >> c) & 0x1111u) * 0x1248u) >> 12) & 0xfu; }

/// Selects v[i] for a runtime i in 0..3 without local memory.
template <class Raw>
SPARSENM_HD Raw sel4(Raw v0, Raw v1, Raw v2, Raw v3, int i) {
  Raw lo = (i & 1) ? v1 : v0, hi = (i & 1) ? v3 : v2;
  return (i & 2) ? hi : lo;
}

}  // namespace sparsenm::train::detail
