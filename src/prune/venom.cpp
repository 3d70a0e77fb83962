// sparsenm prune — V:2:M (VENOM): per V x M block the 4 columns keeping the most magnitude
// after each row keeps its top 2 of those 4 (search: venom.hpp), then 2:4 inside each row.
//
// The engine walks slabs of V rows (OpenMP over slabs; a partial last slab has fewer rows) and,
// inside a slab, windows of M columns. A tail window with fewer than 4 real columns selects
// them all plus the lowest padding columns; with >= 4 real columns only real ones are chosen.
// Per row, the 2 kept among the 4 are the two largest |w| (|NaN| = +inf; ties: lower column).
#include "prune/venom.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "prune/common.hpp"
#include "prune/engine.hpp"
#include "prune/select.hpp"

namespace sparsenm::prune_detail {

namespace {

inline bool lex_less(const std::array<int, 4>& a, const std::array<int, 4>& b) noexcept {
  for (int i = 0; i < 4; ++i)
    if (a[i] != b[i]) return a[i] < b[i];
  return false;
}

// Top two of three values (t1 >= t2).
inline void top2_of3(double x, double y, double z, double& t1, double& t2) noexcept {
  double hi = std::max(x, y), lo = std::min(x, y);
  t1 = std::max(hi, z);
  t2 = std::max(lo, std::min(hi, z));
}

// Top two of the union of two sorted pairs (a1 >= a2, b1 >= b2).
inline void merge_top2(double a1, double a2, double b1, double b2, double& t1, double& t2) noexcept {
  if (a1 >= b1) {
    t1 = a1;
    t2 = std::max(a2, b1);
  } else {
    t1 = b1;
    t2 = std::max(a1, b2);
  }
}

}  // namespace

double venom_score(const VenomBlock& b, const std::array<int, 4>& col) {
  double s = 0.0;
  for (int r = 0; r < b.rows; ++r) {
    const double* row = b.mag + std::int64_t(r) * b.ld;
    double hi1 = std::max(row[col[0]], row[col[1]]), lo1 = std::min(row[col[0]], row[col[1]]);
    double hi2 = std::max(row[col[2]], row[col[3]]), lo2 = std::min(row[col[2]], row[col[3]]);
    double t1, t2;
    merge_top2(hi1, lo1, hi2, lo2, t1, t2);
    s += t1 + t2;
  }
  return s;
}

VenomChoice venom_enumerate(const VenomBlock& b) {
  const int n = b.count, rows = b.rows;
  VenomChoice best;
  best.score = -1.0;
  std::vector<double> t1(static_cast<std::size_t>(rows)), t2(static_cast<std::size_t>(rows)), acc(static_cast<std::size_t>(n));
  for (int a = 0; a < n - 3; ++a)
    for (int bb = a + 1; bb < n - 2; ++bb)
      for (int c = bb + 1; c < n - 1; ++c) {
        for (int r = 0; r < rows; ++r) {
          const double* row = b.mag + std::int64_t(r) * b.ld;
          top2_of3(row[a], row[bb], row[c], t1[std::size_t(r)], t2[std::size_t(r)]);
        }
        std::fill(acc.begin() + c + 1, acc.end(), 0.0);
        for (int r = 0; r < rows; ++r) {
          const double* row = b.mag + std::int64_t(r) * b.ld;
          const double x1 = t1[std::size_t(r)], x2 = t2[std::size_t(r)];
          for (int d = c + 1; d < n; ++d) acc[std::size_t(d)] += x1 + std::max(x2, row[d]);
        }
        best.passes += 1 + (n - c - 1);
        for (int d = c + 1; d < n; ++d)
          if (acc[std::size_t(d)] > best.score) {
            best.score = acc[std::size_t(d)];
            best.col = {a, bb, c, d};
          }
      }
  best.proven = true;
  return best;
}

VenomChoice venom_l1_start(const VenomBlock& b) {
  std::vector<double> mass(std::size_t(b.count), 0.0);
  for (int r = 0; r < b.rows; ++r) {
    const double* row = b.mag + std::int64_t(r) * b.ld;
    for (int c = 0; c < b.count; ++c) mass[std::size_t(c)] += row[c];
  }
  int pos[4];
  std::vector<int> scratch(static_cast<std::size_t>(b.count));
  select_top(mass.data(), b.count, 4, pos, scratch.data());
  VenomChoice s;
  s.col = {pos[0], pos[1], pos[2], pos[3]};
  s.score = venom_score(b, s.col);
  s.passes = 2;
  s.proven = b.count == 4;
  return s;
}

VenomChoice venom_local_search(const VenomBlock& b, const VenomChoice& start) {
  VenomChoice cur = start;
  std::vector<char> in(static_cast<std::size_t>(b.count));
  for (;;) {
    std::fill(in.begin(), in.end(), 0);
    for (int c : cur.col) in[std::size_t(c)] = 1;
    bool found = false;
    std::array<int, 4> best_set{};
    double best_score = cur.score;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < b.count; ++j) {
        if (in[std::size_t(j)]) continue;
        std::array<int, 4> s = cur.col;
        s[std::size_t(i)] = j;
        std::sort(s.begin(), s.end());
        double sc = venom_score(b, s);
        ++cur.passes;
        if (sc > cur.score && (!found || sc > best_score || (sc == best_score && lex_less(s, best_set)))) {
          found = true;
          best_score = sc;
          best_set = s;
        }
      }
    if (!found) return cur;
    cur.col = best_set;
    cur.score = best_score;
  }
}

VenomChoice venom_branch_bound(const VenomBlock& b, const VenomChoice& incumbent, std::int64_t budget) {
  const int n = b.count, rows = b.rows;
  const std::size_t R = std::size_t(rows);
  VenomChoice best = incumbent;
  // Suffix top-2 per row: s1/s2[j * rows + r] = two largest magnitudes of columns j..n-1.
  std::vector<double> s1((std::size_t(n) + 1) * R, 0.0), s2((std::size_t(n) + 1) * R, 0.0);
  for (int j = n - 1; j >= 0; --j)
    for (int r = 0; r < rows; ++r) {
      double x = b.mag[std::int64_t(r) * b.ld + j];
      double a1 = s1[(std::size_t(j) + 1) * R + std::size_t(r)], a2 = s2[(std::size_t(j) + 1) * R + std::size_t(r)];
      merge_top2(std::max(x, a1), std::min(x, a1), a2, 0.0, s1[std::size_t(j) * R + std::size_t(r)],
                 s2[std::size_t(j) * R + std::size_t(r)]);
    }
  std::vector<double> p1(R), p2(R), q1(R), q2(R), t1(R), t2(R), acc(static_cast<std::size_t>(n));
  std::int64_t passes = incumbent.passes;
  bool aborted = false;
  auto out_of_budget = [&]() {
    if (budget >= 0 && passes - incumbent.passes >= budget) aborted = true;
    return aborted;
  };
  // Cut a subtree whose sets are all >= min_completion (lexicographically) and score <= bound.
  auto cut = [&](double bound, const std::array<int, 4>& min_completion) {
    return bound < best.score || (bound == best.score && !lex_less(min_completion, best.col));
  };
  // Bound of prefix (x1 >= x2 per row) completed from columns next..n-1.
  auto bound_of = [&](const std::vector<double>& x1, const std::vector<double>& x2, int next) {
    double s = 0.0;
    const double* a1 = s1.data() + std::size_t(next) * R;
    const double* a2 = s2.data() + std::size_t(next) * R;
    for (std::size_t r = 0; r < R; ++r) {
      double u1, u2;
      merge_top2(x1[r], x2[r], a1[r], a2[r], u1, u2);
      s += u1 + u2;
    }
    ++passes;
    return s;
  };

  for (int a = 0; a < n - 3 && !aborted; ++a) {
    for (int r = 0; r < rows; ++r) {
      p1[std::size_t(r)] = b.mag[std::int64_t(r) * b.ld + a];
      p2[std::size_t(r)] = 0.0;
    }
    if (out_of_budget()) break;
    if (cut(bound_of(p1, p2, a + 1), {a, a + 1, a + 2, a + 3})) continue;
    for (int bb = a + 1; bb < n - 2 && !aborted; ++bb) {
      for (int r = 0; r < rows; ++r) {
        double x = b.mag[std::int64_t(r) * b.ld + bb];
        q1[std::size_t(r)] = std::max(p1[std::size_t(r)], x);
        q2[std::size_t(r)] = std::min(p1[std::size_t(r)], x);
      }
      if (out_of_budget()) break;
      if (cut(bound_of(q1, q2, bb + 1), {a, bb, bb + 1, bb + 2})) continue;
      for (int c = bb + 1; c < n - 1; ++c) {
        for (int r = 0; r < rows; ++r) {
          double x = b.mag[std::int64_t(r) * b.ld + c];
          merge_top2(q1[std::size_t(r)], q2[std::size_t(r)], x, 0.0, t1[std::size_t(r)], t2[std::size_t(r)]);
        }
        if (out_of_budget()) break;
        if (cut(bound_of(t1, t2, c + 1), {a, bb, c, c + 1})) continue;
        if (budget >= 0 && passes - incumbent.passes + (n - c - 1) > budget) {
          aborted = true;
          break;
        }
        std::fill(acc.begin() + c + 1, acc.end(), 0.0);
        for (int r = 0; r < rows; ++r) {
          const double* row = b.mag + std::int64_t(r) * b.ld;
          const double x1 = t1[std::size_t(r)], x2 = t2[std::size_t(r)];
          for (int d = c + 1; d < n; ++d) acc[std::size_t(d)] += x1 + std::max(x2, row[d]);
        }
        passes += n - c - 1;
        for (int d = c + 1; d < n; ++d) {
          const double sc = acc[std::size_t(d)];
          const std::array<int, 4> s{a, bb, c, d};
          if (sc > best.score || (sc == best.score && lex_less(s, best.col))) {
            best.score = sc;
            best.col = s;
          }
        }
      }
    }
  }
  best.passes = passes;
  best.proven = !aborted;
  return best;
}

VenomChoice venom_select(const VenomBlock& b) {
  VenomChoice start = venom_l1_start(b);
  if (b.count == 4) return start;
  VenomChoice local = venom_local_search(b, start);
  return venom_branch_bound(b, local, b.count <= 16 ? -1 : kVenomBudget);
}

// ---------------------------------------------------------------------------------------------

namespace {

template <class E, bool kDense>
void venom_slabs(const MatrixView& w, int V, int m, const Output& out) {
  using bits = typename E::bits;
  const std::int64_t rows = w.rows, cols = w.cols;
  const std::int64_t windows = ceil_div(cols, m), slabs = ceil_div(rows, V);
  const auto* in = static_cast<const bits*>(w.data);
  bits* dense = static_cast<bits*>(out.dense);
  CondensedMatrix* cm = out.condensed;

#pragma omp parallel
  {
    std::vector<double> mag(std::size_t(V) * std::size_t(m));
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t sl = 0; sl < slabs; ++sl) {
      const std::int64_t r0 = sl * V, r1 = std::min(rows, r0 + V);
      const int nrows = int(r1 - r0);
      for (std::int64_t win = 0; win < windows; ++win) {
        const std::int64_t c0 = win * m;
        const int real = int(std::min<std::int64_t>(m, cols - c0));
        for (int r = 0; r < nrows; ++r) {
          const bits* row = in + (r0 + r) * w.ld + c0;
          double* mrow = mag.data() + std::size_t(r) * std::size_t(m);
          for (int c = 0; c < real; ++c) mrow[c] = rank_magnitude(E::to_float(row[c]));
        }
        std::array<int, 4> col{0, 1, 2, 3};
        if (real >= 4) col = venom_select(VenomBlock{mag.data(), nrows, m, real}).col;
        if constexpr (!kDense) {
          std::uint8_t* crow = cm->columns.data() + sl * cm->layout.colloc_row_bytes;
          for (int i = 0; i < 4; ++i) set_packed(crow, win * 4 + i, cm->layout.colloc_bits, unsigned(col[std::size_t(i)]));
        }
        for (int r = 0; r < nrows; ++r) {
          const double* mrow = mag.data() + std::size_t(r) * std::size_t(m);
          double x[4];
          for (int i = 0; i < 4; ++i) x[i] = col[std::size_t(i)] < real ? mrow[col[std::size_t(i)]] : 0.0;
          int k1 = 0;
          for (int i = 1; i < 4; ++i)
            if (x[i] > x[k1]) k1 = i;
          int k2 = k1 == 0 ? 1 : 0;
          for (int i = 0; i < 4; ++i)
            if (i != k1 && x[i] > x[k2]) k2 = i;
          if (k2 < k1) std::swap(k1, k2);
          const int kept[2] = {k1, k2};
          const std::int64_t gr = r0 + r;
          const bits* row = in + gr * w.ld + c0;
          for (int s = 0; s < 2; ++s) {
            const int c = col[std::size_t(kept[s])];
            if constexpr (kDense) {
              if (c < real) dense[gr * cols + c0 + c] = row[c];
            } else {
              bits* vrow = reinterpret_cast<bits*>(cm->values.data()) + gr * cm->layout.value_cols;
              vrow[win * 2 + s] = c < real ? row[c] : bits(0);
              set_packed(cm->indices.data() + gr * cm->layout.index_row_bytes, win * 2 + s, 2, unsigned(kept[s]));
            }
          }
        }
      }
    }
  }
}

}  // namespace

void prune_venom(const MatrixView& w, int v, int m, const Output& out) {
  dispatch(w.dtype, [&](auto traits) {
    using E = decltype(traits);
    if (out.dense)
      venom_slabs<E, true>(w, v, m, out);
    else
      venom_slabs<E, false>(w, v, m, out);
  });
}

}  // namespace sparsenm::prune_detail
