// sparsenm — the 90 transposable 2:4 patterns of a 4x4 block and the exact two-level search
// (seed 003 §5.1 "transposable mask by convolution"; Hubara et al. 2021).
//
// A pattern is 4 row pairs (p0, p1, p2, p3), each one of the 6 column pairs
// (0,1) < (0,2) < (0,3) < (1,2) < (1,3) < (2,3), such that every column is used exactly twice:
// 90 patterns. Score S = fl(fl(s0[p0] + s1[p1]) + fl(s2[p2] + s3[p3])) with s_r[p] = |w_ra| + |w_rb|.
//
// Search without enumerating 90 x 8 sums (~16 flops per element instead of ~40):
//  1. Bottom half: for each of the 19 column-need vectors n (sum 4, entries <= 2), Bmax[n] =
//     max over the (p2, p3) with count(p2) + count(p3) = n of B = fl(s2[p2] + s3[p3]): 36 sums.
//  2. Top half: each of the 36 (p0, p1) fixes the need n = 2 - count(p0) - count(p1);
//     V(t) = fl(T_t + Bmax[n_t]). Since x -> fl(T + x) is monotone, V(t) is the best score of
//     any pattern starting with t, so M = max V and the first t reaching M (strict >) is the
//     top half of the lexicographically first optimal pattern.
//  3. For that t, the first p2 (p3 = n - p2 is then fixed) with fl(T + B) == M completes it.
// All indices are compile-time constants after unrolling (static_for), so everything lives
// in registers. NaN scores never compare greater; if no bottom matches (NaN input) the first
// compatible one is taken, so the result is always a valid transposable pattern.
//
// Host and device: the same code is compiled into the kernels and into the CPU tests
// (tests/test_train_rules.cpp), so the rule itself is checked on every CI run.
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

constexpr int pair_a(int k) { return k < 3 ? 0 : (k < 5 ? 1 : 2); }
constexpr int pair_b(int k) { return k == 0 ? 1 : ((k == 1 || k == 3) ? 2 : 3); }
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

/// Best transposable pattern of a block of magnitudes a[r][c] (see the header comment).
/// Returns the 16-bit mask, bit 4*r + c.
SPARSENM_HD unsigned best_pattern24(const float (&a)[4][4]) {
  float s[4][6];
  SPARSENM_UNROLL
  for (int r = 0; r < 4; ++r)
    SPARSENM_UNROLL
    for (int k = 0; k < 6; ++k) s[r][k] = a[r][pair_a(k)] + a[r][pair_b(k)];

  float bmax[81];
  static_for<0, 36>([&](auto ic) {
    constexpr int i = decltype(ic)::value;
    constexpr int code = fill_code(i / 6, i % 6);
    const float b = s[2][i / 6] + s[3][i % 6];
    if constexpr (first_fill(i)) bmax[code] = b;
    else bmax[code] = fmaxf(bmax[code], b);
  });

  float best = -INFINITY, best_t = 0.f;
  unsigned top = pair_mask(0) | (pair_mask(0) << 4);
  unsigned n1 = need_mask(0, 0, 1), n2 = need_mask(0, 0, 2);
  static_for<0, 36>([&](auto ic) {
    constexpr int t = decltype(ic)::value;
    constexpr int p0 = t / 6, p1 = t % 6;
    const float tv = s[0][p0] + s[1][p1];
    const float v = tv + bmax[need_code(p0, p1)];
    if (v > best) {
      best = v;
      best_t = tv;
      top = pair_mask(p0) | (pair_mask(p1) << 4);
      n1 = need_mask(p0, p1, 1);
      n2 = need_mask(p0, p1, 2);
    }
  });

  unsigned m2 = 0, m3 = 0, f2 = 0, f3 = 0;
  bool found = false, any = false;
  static_for<0, 6>([&](auto ic) {
    constexpr int p2 = decltype(ic)::value;
    constexpr unsigned pm2 = pair_mask(p2);
    const bool valid = ((pm2 & ~(n1 | n2)) == 0u) && ((pm2 & n2) == n2);
    const unsigned pm3 = n2 | (n1 & ~pm2);
    const float s3 = ((((pm3 & 1u) ? a[3][0] : 0.f) + ((pm3 & 2u) ? a[3][1] : 0.f)) +
                      ((pm3 & 4u) ? a[3][2] : 0.f)) + ((pm3 & 8u) ? a[3][3] : 0.f);
    const float v = best_t + (s[2][p2] + s3);
    if (valid && !found && v == best) {
      found = true;
      m2 = pm2;
      m3 = pm3;
    }
    if (valid && !any) {
      any = true;
      f2 = pm2;
      f3 = pm3;
    }
  });
  if (!found) {
    m2 = f2;
    m3 = f3;
  }
  return top | (m2 << 8) | (m3 << 12);
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
