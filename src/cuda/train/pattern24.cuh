// sparsenm — the 90 transposable 2:4 patterns of a 4x4 block and the exact two-level search
// (seed 003 §5.1 "transposable mask by convolution"; Hubara et al. 2021).
//
// A pattern is 4 row pairs, each one of the 6 column pairs, such that every column is used
// exactly twice: 90 patterns. Rule (bit for bit the CPU reference sparsenm::transposable_24_mask,
// src/prune/transposable.cpp): magnitudes in fp64 (|NaN| = +inf), s_r[p] = |w_ra| + |w_rb|,
// maximise S = s0 + s1 + s2 + s3; ties go to the pattern with the smallest 16-bit mask value
// (bit 4r + c). With the pairs ordered by their nibble value, (0,1) < (0,2) < (1,2) < (0,3) <
// (1,3) < (2,3), that is the lexicographically first (p3, p2, p1, p0).
//
// Search without enumerating 90 x 8 sums:
//  1. Bottom rows (1, 0): for each of the 19 column-need vectors n (sum 4, entries <= 2),
//     Bmax[n] = max over the (p1, p0) with count(p1) + count(p0) = n of B = s1[p1] + s0[p0].
//  2. Top rows (3, 2): each of the 36 (p3, p2) fixes n = 2 - count(p3) - count(p2);
//     V(t) = T_t + Bmax[n_t] (x -> T + x is monotone, so V(t) is the best score of any pattern
//     with top t); M = max V and the first t reaching M (strict >) is the top of the answer.
//  3. For that t, the first p1 (p0 = n - p1 is then fixed) with T + B == M completes it.
// In fp64 the sums of f16 magnitudes are exact, so the grouping (T + B here, ((s0 + s1) + s2) +
// s3 on the CPU) cannot change a comparison: bit-identical masks. For bf16 / f32 the same holds
// unless one block's magnitudes span more than ~2^26 (then a rounded near-tie may differ).
// All indices are compile-time constants after unrolling (static_for): registers only. NaN
// never wins a comparison; a block always gets a valid transposable pattern.
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
/// Base-3 code of what the bottom rows must fill after top pairs (p0, p1).
constexpr int need_code(int p0, int p1) {
  int code = 0, p = 1;
  for (int c = 0; c < 4; ++c, p *= 3) code += (2 - col_count(p0, p1, c)) * p;
  return code;
}
constexpr unsigned need_mask(int p0, int p1, int want) {
  unsigned m = 0;
  for (int c = 0; c < 4; ++c)
    if (2 - col_count(p0, p1, c) == want) m |= 1u << c;
  return m;
}
/// Is bottom combination i (= p2 * 6 + p3) the first with its fill code?
constexpr bool first_fill(int i) {
  for (int j = 0; j < i; ++j)
    if (fill_code(j / 6, j % 6) == fill_code(i / 6, i % 6)) return false;
  return true;
}

/// Best transposable pattern of a block of magnitudes a[r][c] (|x| as float, NaN already
/// mapped to +inf: exact), summed in Acc (double for the CPU reference's rule; see the header
/// comment). Returns the 16-bit mask, bit 4*r + c. The row sums are formed where they are used
/// so that fewer doubles are live at once.
template <class Acc>
SPARSENM_HD unsigned best_pattern24(const float (&a)[4][4]) {
  auto pair_sum = [&](int r, int k) { return Acc(a[r][pair_a(k)]) + Acc(a[r][pair_b(k)]); };
  Acc s[4][6];
  SPARSENM_UNROLL
  for (int r = 0; r < 2; ++r)
    SPARSENM_UNROLL
    for (int k = 0; k < 6; ++k) s[r][k] = pair_sum(r, k);

  Acc bmax[81];
  static_for<0, 36>([&](auto ic) {  // bottom: i = p1 * 6 + p0
    constexpr int i = decltype(ic)::value;
    constexpr int code = fill_code(i / 6, i % 6);
    const Acc b = s[1][i / 6] + s[0][i % 6];
    if constexpr (first_fill(i)) bmax[code] = b;
    else bmax[code] = fmax(bmax[code], b);
  });

  SPARSENM_UNROLL
  for (int r = 2; r < 4; ++r)
    SPARSENM_UNROLL
    for (int k = 0; k < 6; ++k) s[r][k] = pair_sum(r, k);
  Acc best = -Acc(INFINITY), best_t = 0;
  unsigned top = (pair_mask(0) << 12) | (pair_mask(0) << 8);
  unsigned n1 = need_mask(0, 0, 1), n2 = need_mask(0, 0, 2);
  static_for<0, 36>([&](auto ic) {  // top: t = p3 * 6 + p2
    constexpr int t = decltype(ic)::value;
    constexpr int p3 = t / 6, p2 = t % 6;
    const Acc tv = s[3][p3] + s[2][p2];
    const Acc v = tv + bmax[need_code(p3, p2)];
    if (v > best) {
      best = v;
      best_t = tv;
      top = (pair_mask(p3) << 12) | (pair_mask(p2) << 8);
      n1 = need_mask(p3, p2, 1);
      n2 = need_mask(p3, p2, 2);
    }
  });

  unsigned m1 = 0, m0 = 0, f1 = 0, f0 = 0;
  bool found = false, any = false;
  static_for<0, 6>([&](auto ic) {
    constexpr int p1 = decltype(ic)::value;
    constexpr unsigned pm1 = pair_mask(p1);
    const bool valid = ((pm1 & ~(n1 | n2)) == 0u) && ((pm1 & n2) == n2);
    const unsigned pm0 = n2 | (n1 & ~pm1);
    const Acc s0 = ((((pm0 & 1u) ? Acc(a[0][0]) : Acc(0)) + ((pm0 & 2u) ? Acc(a[0][1]) : Acc(0))) +
                    ((pm0 & 4u) ? Acc(a[0][2]) : Acc(0))) + ((pm0 & 8u) ? Acc(a[0][3]) : Acc(0));
    const Acc v = best_t + (s[1][p1] + s0);
    if (valid && !found && v == best) {
      found = true;
      m1 = pm1;
      m0 = pm0;
    }
    if (valid && !any) {
      any = true;
      f1 = pm1;
      f0 = pm0;
    }
  });
  if (!found) {
    m1 = f1;
    m0 = f0;
  }
  return top | (m1 << 4) | m0;
}

/// The rule's magnitude of one element: |x|, NaN -> +inf (as the CPU reference; exact in float).
SPARSENM_HD float rank_magnitude24(float x) {
  const float a = fabsf(x);
  return a != a ? INFINITY : a;
}

/// The two stored positions of a 4-bit quad mask: the two lowest kept, then the lowest free
/// (only matters for invalid masks). `bad` = the quad does not keep exactly 2.
struct QuadPos {
  int lo, hi;
  bool bad;
};
SPARSENM_HD QuadPos quad_positions(unsigned m4) {
  m4 &= 0xfu;
  const int pc = popc4(m4);
  unsigned m = m4;
  if (pc != 2) {
    unsigned keep = 0;
    for (int i = 0; i < 4 && popc4(keep) < 2; ++i)
      if (m4 & (1u << i)) keep |= 1u << i;
    for (int i = 0; i < 4 && popc4(keep) < 2; ++i)
      if (!(keep & (1u << i))) keep |= 1u << i;
    m = keep;
  }
  return QuadPos{lowest_bit(m), highest_bit(m), pc != 2};
}

/// Selects v[i] for a runtime i in 0..3 without local memory.
template <class Raw>
SPARSENM_HD Raw sel4(Raw v0, Raw v1, Raw v2, Raw v3, int i) {
  Raw lo = (i & 1) ? v1 : v0, hi = (i & 1) ? v3 : v2;
  return (i & 2) ? hi : lo;
}

}  // namespace sparsenm::train::detail
