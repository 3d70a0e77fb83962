// sparsenm tests — a CPU oracle of the V:2:M and hardware-2:4 magnitude-pruning rules (the CPU
// pruner's documented rules restated in the plainest form: exhaustive subsets for <= 32 real
// columns, the L1 start + best-improvement swap search beyond, row-order double scores,
// lexicographically smallest subset on ties, first maximum per row, |NaN| = +inf). The GPU
// pruning tests compare against it; a CPU test checks it against prune() itself.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm::test {

inline double rank_mag(float x) { return std::isnan(x) ? INFINITY : std::fabs(double(x)); }

// ---- CPU oracle (the CPU pruner's rules, restated) ----
inline double score(const std::vector<double>& mag, int rows, int ld, const std::array<int, 4>& s) {
  double acc = 0.0;
  for (int r = 0; r < rows; ++r) {
    const double* row = mag.data() + std::size_t(r) * ld;
    double hi1 = std::max(row[s[0]], row[s[1]]), lo1 = std::min(row[s[0]], row[s[1]]);
    double hi2 = std::max(row[s[2]], row[s[3]]), lo2 = std::min(row[s[2]], row[s[3]]);
    double t1, t2;
    if (hi1 >= hi2) {
      t1 = hi1;
      t2 = std::max(lo1, hi2);
    } else {
      t1 = hi2;
      t2 = std::max(hi1, lo2);
    }
    acc += t1 + t2;
  }
  return acc;
}

inline std::array<int, 4> select_cols(const std::vector<double>& mag, int rows, int ld, int count) {
  if (count < 4) return {0, 1, 2, 3};
  if (count <= 32) {
    std::array<int, 4> best{};
    double bs = -1.0;
    for (int a = 0; a < count; ++a)
      for (int b = a + 1; b < count; ++b)
        for (int c = b + 1; c < count; ++c)
          for (int d = c + 1; d < count; ++d) {
            const double s = score(mag, rows, ld, {a, b, c, d});
            if (s > bs) bs = s, best = {a, b, c, d};
          }
    return best;
  }
  std::vector<double> mass(std::size_t(count), 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < count; ++c) mass[std::size_t(c)] += mag[std::size_t(r) * ld + c];
  std::array<int, 4> cur{};
  for (int s = 0; s < 4; ++s) {
    int best = -1;
    for (int c = 0; c < count; ++c) {
      bool taken = false;
      for (int u = 0; u < s; ++u) taken |= cur[std::size_t(u)] == c;
      if (!taken && (best < 0 || mass[std::size_t(c)] > mass[std::size_t(best)])) best = c;
    }
    cur[std::size_t(s)] = best;
  }
  std::sort(cur.begin(), cur.end());
  double cs = score(mag, rows, ld, cur);
  for (;;) {
    bool found = false;
    std::array<int, 4> bset{};
    double bsc = cs;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < count; ++j) {
        if (std::find(cur.begin(), cur.end(), j) != cur.end()) continue;
        std::array<int, 4> s = cur;
        s[std::size_t(i)] = j;
        std::sort(s.begin(), s.end());
        const double sc = score(mag, rows, ld, s);
        if (sc > cs && (!found || sc > bsc || (sc == bsc && s < bset))) found = true, bsc = sc, bset = s;
      }
    if (!found) return cur;
    cur = bset;
    cs = bsc;
  }
}

inline CondensedMatrix oracle_venom(const DenseMatrix& w, const Pattern& p) {
  const FormatLayout l = FormatLayout::of(p, w.rows(), w.cols());
  CondensedMatrix c = CondensedMatrix::allocate(l, w.dtype());
  const std::size_t es = dtype_size(w.dtype());
  const int V = p.v, M = p.m;
  for (std::int64_t r0 = 0; r0 < w.rows(); r0 += V) {
    const int rows = int(std::min<std::int64_t>(V, w.rows() - r0));
    for (std::int64_t win = 0; win < l.windows; ++win) {
      const std::int64_t c0 = win * M;
      const int real = int(std::min<std::int64_t>(M, w.cols() - c0));
      std::vector<double> mag(std::size_t(rows) * M, 0.0);
      for (int r = 0; r < rows; ++r)
        for (int q = 0; q < real; ++q) mag[std::size_t(r) * M + q] = rank_mag(w.at(r0 + r, c0 + q));
      const std::array<int, 4> col = select_cols(mag, rows, M, real);
      for (int q = 0; q < 4; ++q) set_packed(c.columns.data() + (r0 / V) * l.colloc_row_bytes, win * 4 + q, l.colloc_bits, unsigned(col[std::size_t(q)]));
      for (int r = 0; r < rows; ++r) {
        double x[4];
        for (int i = 0; i < 4; ++i) x[i] = col[std::size_t(i)] < real ? mag[std::size_t(r) * M + col[std::size_t(i)]] : 0.0;
        int k1 = 0;
        for (int i = 1; i < 4; ++i)
          if (x[i] > x[k1]) k1 = i;
        int k2 = k1 == 0 ? 1 : 0;
        for (int i = 0; i < 4; ++i)
          if (i != k1 && x[i] > x[k2]) k2 = i;
        if (k2 < k1) std::swap(k1, k2);
        const int kept[2] = {k1, k2};
        for (int s = 0; s < 2; ++s) {
          const int cc = col[std::size_t(kept[s])];
          const std::size_t vo = std::size_t((r0 + r) * l.value_cols + win * 2 + s) * es;
          if (cc < real) std::memcpy(c.values.data() + vo, static_cast<const std::byte*>(w.data()) + std::size_t((r0 + r) * w.cols() + c0 + cc) * es, es);
          set_packed(c.indices.data() + (r0 + r) * l.index_row_bytes, win * 2 + s, 2, unsigned(kept[s]));
        }
      }
    }
  }
  return c;
}

inline CondensedMatrix oracle_hw24(const DenseMatrix& w) {
  const FormatLayout l = FormatLayout::of(Pattern::hw24(), w.rows(), w.cols());
  CondensedMatrix c = CondensedMatrix::allocate(l, w.dtype());
  const std::size_t es = dtype_size(w.dtype());
  for (std::int64_t r = 0; r < w.rows(); ++r)
    for (std::int64_t win = 0; win < l.windows; ++win) {
      const int real = int(std::min<std::int64_t>(4, w.cols() - win * 4));
      int p0 = 0, p1 = 1;
      if (real >= 2) {
        double m[4];
        for (int i = 0; i < 4; ++i) m[i] = i < real ? rank_mag(w.at(r, win * 4 + i)) : -1.0;
        int a = 0;
        for (int i = 1; i < 4; ++i)
          if (m[i] > m[a]) a = i;
        int b = a == 0 ? 1 : 0;
        for (int i = 0; i < 4; ++i)
          if (i != a && m[i] > m[b]) b = i;
        p0 = std::min(a, b), p1 = std::max(a, b);
      }
      const int pos[2] = {p0, p1};
      for (int s = 0; s < 2; ++s) {
        if (pos[s] < real)
          std::memcpy(c.values.data() + std::size_t(r * l.value_cols + win * 2 + s) * es,
                      static_cast<const std::byte*>(w.data()) + std::size_t(r * w.cols() + win * 4 + pos[s]) * es, es);
        set_packed(c.indices.data() + r * l.index_row_bytes, win * 2 + s, 2, unsigned(pos[s]));
      }
    }
  return c;
}

// Random weights; `levels` > 0 quantises magnitudes to that many levels (forces ties); a few
// NaN, Inf and -0 entries are planted.
inline DenseMatrix weights(DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed, int levels) {
  DenseMatrix w = random_matrix(t, rows, cols, seed);
  test::SplitMix rng(seed + 99);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      if (levels > 0) w.set(r, c, float(int(rng.below(std::uint64_t(2 * levels + 1))) - levels) / float(levels));
      const std::uint64_t u = rng.below(1000);
      if (u == 0) w.set(r, c, NAN);
      if (u == 1) w.set(r, c, -INFINITY);
      if (u == 2) w.set(r, c, -0.0f);
    }
  return w;
}


}  // namespace sparsenm::test
