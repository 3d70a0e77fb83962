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

// The lane loops below are compiled for several instruction sets (function multiversioning,
// chosen once at load time); every clone performs the same IEEE double operations in the same
// order (no FMA is possible: there are no products), so results do not depend on the CPU.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define SPARSENM_VENOM_CLONES __attribute__((target_clones("default", "avx2", "arch=skylake-avx512")))
#else
#define SPARSENM_VENOM_CLONES
#endif

namespace {

constexpr int kL = kVenomLanes;

inline int round8(int rows) noexcept { return (rows + kL - 1) / kL * kL; }

inline bool lex_less(const std::array<int, 4>& a, const std::array<int, 4>& b) noexcept {
  for (int i = 0; i < 4; ++i)
    if (a[i] != b[i]) return a[i] < b[i];
  return false;
}

inline double combine(const double* lane) noexcept {
  double s = lane[0];
  for (int l = 1; l < kL; ++l) s += lane[l];
  return s;
}

// Top two of three values (t1 >= t2).
inline void top2_of3(double x, double y, double z, double& t1, double& t2) noexcept {
  const double hi = std::max(x, y), lo = std::min(x, y);
  t1 = std::max(hi, z);
  t2 = std::max(lo, std::min(hi, z));
}

// Top two of the union of two sorted pairs (a1 >= a2, b1 >= b2).
inline void merge_top2(double a1, double a2, double b1, double b2, double& t1, double& t2) noexcept {
  t1 = std::max(a1, b1);
  t2 = a1 >= b1 ? std::max(a2, b1) : std::max(a1, b2);
}

SPARSENM_VENOM_CLONES
double score_kernel(const double* c0, const double* c1, const double* c2, const double* c3, int rows8) {
  double lane[kL] = {};
  for (int r0 = 0; r0 < rows8; r0 += kL)
    for (int l = 0; l < kL; ++l) {
      const int r = r0 + l;
      double t1, t2;
      merge_top2(std::max(c0[r], c1[r]), std::min(c0[r], c1[r]), std::max(c2[r], c3[r]), std::min(c2[r], c3[r]), t1, t2);
      lane[l] += t1 + t2;
    }
  return combine(lane);
}

// Per-row top-2 of three columns into t1/t2.
SPARSENM_VENOM_CLONES
void top3_kernel(const double* a, const double* b, const double* c, int rows8, double* t1, double* t2) {
  for (int r = 0; r < rows8; ++r) top2_of3(a[r], b[r], c[r], t1[r], t2[r]);
}

// Per-row max/min of two columns, and the top-2 of that pair plus a third column (the same
// values top2_of3 gives, split so that the pair is formed once per (a, b)).
SPARSENM_VENOM_CLONES
void pair_kernel(const double* a, const double* b, int rows8, double* hi, double* lo) {
  for (int r = 0; r < rows8; ++r) {
    hi[r] = std::max(a[r], b[r]);
    lo[r] = std::min(a[r], b[r]);
  }
}
SPARSENM_VENOM_CLONES
void add_third_kernel(const double* hi, const double* lo, const double* c, int rows8, double* t1, double* t2) {
  for (int r = 0; r < rows8; ++r) {
    t1[r] = std::max(hi[r], c[r]);
    t2[r] = std::max(lo[r], std::min(hi[r], c[r]));
  }
}

// Scores of {a, b, c, d} for every d in [d0, d1) given the per-row top-2 of {a, b, c}.
SPARSENM_VENOM_CLONES
void leaves_kernel(const double* mag, int ld, int rows8, const double* t1, const double* t2, int d0, int d1,
                   double* out) {
  int d = d0;
  for (; d + 4 <= d1; d += 4) {  // four sets at a time: independent accumulators hide latency
    const double* D0 = mag + std::int64_t(d) * ld;
    const double* D1 = D0 + ld;
    const double* D2 = D1 + ld;
    const double* D3 = D2 + ld;
    double l0[kL] = {}, l1[kL] = {}, l2[kL] = {}, l3[kL] = {};
    for (int r0 = 0; r0 < rows8; r0 += kL)
      for (int l = 0; l < kL; ++l) {
        const int r = r0 + l;
        const double x1 = t1[r], x2 = t2[r];
        l0[l] += x1 + std::max(x2, D0[r]);
        l1[l] += x1 + std::max(x2, D1[r]);
        l2[l] += x1 + std::max(x2, D2[r]);
        l3[l] += x1 + std::max(x2, D3[r]);
      }
    out[d] = combine(l0);
    out[d + 1] = combine(l1);
    out[d + 2] = combine(l2);
    out[d + 3] = combine(l3);
  }
  for (; d < d1; ++d) {
    const double* D = mag + std::int64_t(d) * ld;
    double lane[kL] = {};
    for (int r0 = 0; r0 < rows8; r0 += kL)
      for (int l = 0; l < kL; ++l) lane[l] += t1[r0 + l] + std::max(t2[r0 + l], D[r0 + l]);
    out[d] = combine(lane);
  }
}

// Sum over rows of the top-2 of (x1 >= x2) merged with (y1 >= y2).
SPARSENM_VENOM_CLONES
double bound_kernel(const double* x1, const double* x2, const double* y1, const double* y2, int rows8) {
  double lane[kL] = {};
  for (int r0 = 0; r0 < rows8; r0 += kL)
    for (int l = 0; l < kL; ++l) {
      const int r = r0 + l;
      double u1, u2;
      merge_top2(x1[r], x2[r], y1[r], y2[r], u1, u2);
      lane[l] += u1 + u2;
    }
  return combine(lane);
}

const double* column(const VenomBlock& b, int c) noexcept { return b.mag + std::int64_t(c) * b.ld; }

}  // namespace

double venom_score(const VenomBlock& b, const std::array<int, 4>& col) {
  return score_kernel(column(b, col[0]), column(b, col[1]), column(b, col[2]), column(b, col[3]), round8(b.rows));
}

VenomChoice venom_enumerate(const VenomBlock& b) {
  const int n = b.count, rows8 = round8(b.rows);
  VenomChoice best;
  best.score = -1.0;
  alignas(64) double hi[256], lo[256], t1[256], t2[256], leaf[256];
  for (int a = 0; a < n - 3; ++a)
    for (int bb = a + 1; bb < n - 2; ++bb) {
      pair_kernel(column(b, a), column(b, bb), rows8, hi, lo);
      for (int c = bb + 1; c < n - 1; ++c) {
        add_third_kernel(hi, lo, column(b, c), rows8, t1, t2);
        leaves_kernel(b.mag, b.ld, rows8, t1, t2, c + 1, n, leaf);
        best.passes += 1 + (n - c - 1);
        for (int d = c + 1; d < n; ++d)
          if (leaf[d] > best.score) {
            best.score = leaf[d];
            best.col = {a, bb, c, d};
          }
      }
    }
  best.proven = true;
  return best;
}

VenomChoice venom_l1_start(const VenomBlock& b) {
  double mass[256];
  for (int c = 0; c < b.count; ++c) {
    const double* col = column(b, c);
    double s = 0.0;
    for (int r = 0; r < b.rows; ++r) s += col[r];
    mass[c] = s;
  }
  int pos[4], scratch[256];
  select_top(mass, b.count, 4, pos, scratch);
  VenomChoice s;
  s.col = {pos[0], pos[1], pos[2], pos[3]};
  s.score = venom_score(b, s.col);
  s.passes = 2;
  s.proven = b.count == 4;
  return s;
}

VenomChoice venom_local_search(const VenomBlock& b, const VenomChoice& start) {
  VenomChoice cur = start;
  for (;;) {
    bool in[256] = {};
    for (int c : cur.col) in[c] = true;
    bool found = false;
    std::array<int, 4> best_set{};
    double best_score = cur.score;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < b.count; ++j) {
        if (in[j]) continue;
        std::array<int, 4> s = cur.col;
        s[std::size_t(i)] = j;
        std::sort(s.begin(), s.end());
        const double sc = venom_score(b, s);
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
  const int n = b.count, rows8 = round8(b.rows);
  const std::size_t R = std::size_t(rows8);
  VenomChoice best = incumbent;
  // Suffix top-2 per row: s1/s2[j * R + r] = two largest magnitudes of columns j..n-1.
  std::vector<double> s1((std::size_t(n) + 1) * R, 0.0), s2((std::size_t(n) + 1) * R, 0.0);
  for (int j = n - 1; j >= 0; --j) {
    const double* x = column(b, j);
    const double* a1 = s1.data() + (std::size_t(j) + 1) * R;
    const double* a2 = s2.data() + (std::size_t(j) + 1) * R;
    double* o1 = s1.data() + std::size_t(j) * R;
    double* o2 = s2.data() + std::size_t(j) * R;
    for (std::size_t r = 0; r < R; ++r) {
      o1[r] = std::max(x[r], a1[r]);
      o2[r] = std::max(std::min(x[r], a1[r]), a2[r]);
    }
  }
  std::vector<double> work(5 * R + std::size_t(n), 0.0);
  double* zero = work.data();  // stays 0
  double *q1 = zero + R, *q2 = q1 + R, *t1 = q2 + R, *t2 = t1 + R, *leaf = t2 + R;  // leaf: n entries
  std::int64_t passes = 0;
  bool aborted = false;
  auto spend = [&](std::int64_t k) {
    if (budget >= 0 && passes + k > budget) aborted = true;
    passes += aborted ? 0 : k;
    return !aborted;
  };
  auto cut = [&](double bound, const std::array<int, 4>& min_completion) {
    return bound < best.score || (bound == best.score && !lex_less(min_completion, best.col));
  };
  auto suffix1 = [&](int j) { return s1.data() + std::size_t(j) * R; };
  auto suffix2 = [&](int j) { return s2.data() + std::size_t(j) * R; };

  for (int a = 0; a < n - 3 && !aborted; ++a) {
    const double* A = column(b, a);
    if (!spend(1)) break;
    if (cut(bound_kernel(A, zero, suffix1(a + 1), suffix2(a + 1), rows8), {a, a + 1, a + 2, a + 3})) continue;
    for (int bb = a + 1; bb < n - 2 && !aborted; ++bb) {
      const double* B = column(b, bb);
      for (std::size_t r = 0; r < R; ++r) {
        q1[r] = std::max(A[r], B[r]);
        q2[r] = std::min(A[r], B[r]);
      }
      if (!spend(1)) break;
      if (cut(bound_kernel(q1, q2, suffix1(bb + 1), suffix2(bb + 1), rows8), {a, bb, bb + 1, bb + 2})) continue;
      for (int c = bb + 1; c < n - 1; ++c) {
        top3_kernel(column(b, a), B, column(b, c), rows8, t1, t2);
        if (!spend(1)) break;
        if (cut(bound_kernel(t1, t2, suffix1(c + 1), suffix2(c + 1), rows8), {a, bb, c, c + 1})) continue;
        if (!spend(n - c - 1)) break;
        leaves_kernel(b.mag, b.ld, rows8, t1, t2, c + 1, n, leaf);
        for (int d = c + 1; d < n; ++d) {
          const std::array<int, 4> s{a, bb, c, d};
          if (leaf[d] > best.score || (leaf[d] == best.score && lex_less(s, best.col))) {
            best.score = leaf[d];
            best.col = s;
          }
        }
      }
    }
  }
  best.passes = incumbent.passes + passes;
  best.proven = !aborted;
  return best;
}

VenomChoice venom_select(const VenomBlock& b) {
  if (b.count <= 16) return venom_enumerate(b);
  VenomChoice local = venom_local_search(b, venom_l1_start(b));
  // Root bound: every row keeps its own top-2 over all columns.
  std::vector<double> r1(std::size_t(round8(b.rows)), 0.0), r2(r1.size(), 0.0);
  for (int c = 0; c < b.count; ++c) {
    const double* x = column(b, c);
    for (std::size_t r = 0; r < r1.size(); ++r) {
      const double hi = std::max(x[r], r1[r]);
      r2[r] = std::max(std::min(x[r], r1[r]), r2[r]);
      r1[r] = hi;
    }
  }
  std::vector<double> zero(r1.size(), 0.0);
  if (bound_kernel(r1.data(), r2.data(), zero.data(), zero.data(), round8(b.rows)) == local.score) {
    local.proven = true;
    return local;
  }
  return venom_branch_bound(b, local, kVenomBudget);
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

#pragma omp parallel if (rows * cols >= kParallelMinVenom)
  {
    // Column-major magnitudes of one V x M block (venom.hpp); V is a multiple of 8.
    std::vector<double> mag(std::size_t(V) * std::size_t(m), 0.0);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t sl = 0; sl < slabs; ++sl) {
      const std::int64_t r0 = sl * V, r1 = std::min(rows, r0 + V);
      const int nrows = int(r1 - r0);
      if (nrows < V) std::fill(mag.begin(), mag.end(), 0.0);  // zero rows past the end
      for (std::int64_t win = 0; win < windows; ++win) {
        const std::int64_t c0 = win * m;
        const int real = int(std::min<std::int64_t>(m, cols - c0));
        for (int r = 0; r < nrows; ++r) {
          const bits* row = in + (r0 + r) * w.ld + c0;
          double* dst = mag.data() + r;
          for (int c = 0; c < real; ++c) dst[std::size_t(c) * std::size_t(V)] = rank_magnitude(E::to_float(row[c]));
        }
        std::array<int, 4> col{0, 1, 2, 3};
        if (real >= 4) col = venom_select(VenomBlock{mag.data(), nrows, V, real}).col;
        if constexpr (!kDense) {
          std::uint8_t* crow = cm->columns.data() + sl * cm->layout.colloc_row_bytes;
          for (int i = 0; i < 4; ++i) set_packed(crow, win * 4 + i, cm->layout.colloc_bits, unsigned(col[std::size_t(i)]));
        }
        for (int r = 0; r < nrows; ++r) {
          double x[4];
          for (int i = 0; i < 4; ++i) {
            const int c = col[std::size_t(i)];
            x[i] = c < real ? mag[std::size_t(c) * std::size_t(V) + std::size_t(r)] : 0.0;
          }
          // The two largest of the 4 (ties: lower column), branch-free: rank_i = number of
          // entries that beat x_i; kept iff rank < 2.
          unsigned keep = 0;
          for (int i = 0; i < 4; ++i) {
            int rank = 0;
            for (int j = 0; j < 4; ++j) rank += (x[j] > x[i]) | ((x[j] == x[i]) & (j < i));
            keep |= unsigned(rank < 2) << i;
          }
          const int k1 = __builtin_ctz(keep);
          const int kept[2] = {k1, __builtin_ctz(keep & (keep - 1))};
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
