// CPU pruning: magnitude N:M (element, vector, block, venom, hw24) against brute force, the
// condensed output against condense(prune_dense), ties, tails, NaN, PruneReport, the venom
// search for M > 16, transposable 2:4 masks, MVUE 2:4 (Philox KATs, unbiasedness, variance),
// determinism and every error path.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>

#include "prune/mvue.hpp"
#include "prune/philox.hpp"
#include "prune/transposable.hpp"
#include "prune/venom.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/prune.hpp"
#include "support/random_pattern.hpp"

using namespace sparsenm;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// Helpers

std::uint32_t bits_at(DType t, const void* data, std::size_t i) {
  if (dtype_size(t) == 4) {
    std::uint32_t b;
    std::memcpy(&b, static_cast<const std::byte*>(data) + 4 * i, 4);
    return b;
  }
  std::uint16_t b;
  std::memcpy(&b, static_cast<const std::byte*>(data) + 2 * i, 2);
  return b;
}

std::uint32_t dense_bits(const MatrixView& w, std::int64_t r, std::int64_t c) {
  return bits_at(w.dtype, w.data, std::size_t(r * w.ld + c));
}

DenseMatrix from_rows(const std::vector<std::vector<float>>& rows, DType t = DType::f32) {
  DenseMatrix d(t, std::int64_t(rows.size()), std::int64_t(rows[0].size()));
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < rows[r].size(); ++c) d.set(std::int64_t(r), std::int64_t(c), rows[r][c]);
  return d;
}

/// Random integer magnitudes 0..range-1 with random signs (exact sums: ties decided exactly).
DenseMatrix integer_matrix(std::int64_t rows, std::int64_t cols, int range, std::uint64_t seed, DType t = DType::f32) {
  test::SplitMix rng(seed);
  DenseMatrix d(t, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      float v = float(rng.below(std::uint64_t(range)));
      d.set(r, c, (rng.next() & 1) ? -v : v);
    }
  return d;
}

bool same_condensed(const CondensedMatrix& a, const CondensedMatrix& b) {
  return a.layout == b.layout && a.dtype == b.dtype && a.values == b.values && a.indices == b.indices &&
         a.columns == b.columns;
}

double mag(const MatrixView& w, std::int64_t r, std::int64_t c) {
  double x = std::fabs(double(w.at(r, c)));
  return std::isnan(x) ? std::numeric_limits<double>::infinity() : x;
}

/// All k-subsets of 0..n-1 in lexicographic order.
std::vector<std::vector<int>> subsets(int n, int k) {
  std::vector<std::vector<int>> out;
  std::vector<int> s(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) s[std::size_t(i)] = i;
  while (true) {
    out.push_back(s);
    int i = k - 1;
    while (i >= 0 && s[std::size_t(i)] == n - k + i) --i;
    if (i < 0) break;
    ++s[std::size_t(i)];
    for (int j = i + 1; j < k; ++j) s[std::size_t(j)] = s[std::size_t(j - 1)] + 1;
  }
  return out;
}

/// Unit (column or block) scores of one group-window, as the pruner defines them: element =
/// |w| (one row), vector/block = sum of w^2 over the group's rows (row order, then columns).
std::vector<double> unit_scores(const MatrixView& w, const Pattern& p, std::int64_t r0, std::int64_t r1,
                                std::int64_t win, int real) {
  const int unit = p.kind == Granularity::block ? p.bk : 1;
  std::vector<double> s(std::size_t(real), 0.0);
  for (std::int64_t r = r0; r < r1; ++r)
    for (int u = 0; u < real; ++u)
      for (int e = 0; e < unit; ++e) {
        const std::int64_t c = win * p.window_cols() + std::int64_t(u) * unit + e;
        if (c >= w.cols) continue;
        const double m = mag(w, r, c);
        s[std::size_t(u)] += (p.kind == Granularity::element || p.kind == Granularity::hw24) ? m : m * m;
      }
  return s;
}

/// Brute force: the n-subset of units with the largest total score; ties: lexicographically
/// smallest. (Finite data only; sums are exact for the integer-valued inputs used with ties.)
std::vector<int> best_units(const std::vector<double>& score, int n) {
  double count = 1.0;  // C(size, n)
  for (int i = 0; i < n; ++i) count = count * double(int(score.size()) - i) / double(i + 1);
  if (count > 20000.0) {  // too many subsets: the equivalent sort (score desc, then column asc)
    std::vector<int> order(score.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return score[std::size_t(a)] > score[std::size_t(b)]; });
    order.resize(std::size_t(n));
    std::sort(order.begin(), order.end());
    return order;
  }
  std::vector<int> best;
  double best_sum = -1.0;
  for (const auto& s : subsets(int(score.size()), n)) {
    double sum = 0.0;
    for (int u : s) sum += score[std::size_t(u)];
    if (sum > best_sum) {
      best_sum = sum;
      best = s;
    }
  }
  return best;
}

/// Checks prune(w, p) (element, hw24, vector, block) against brute force, unit by unit, and
/// every stored value against w; then the dense/condensed consistency.
void expect_optimal_grouped(const MatrixView& w, const Pattern& p) {
  SCOPED_TRACE(p.str() + " " + std::to_string(w.rows) + "x" + std::to_string(w.cols));
  const CondensedMatrix c = prune(w, p);
  EXPECT_NO_THROW(c.validate());
  const int unit = p.kind == Granularity::block ? p.bk : 1;
  const std::int64_t real_units = (w.cols + unit - 1) / unit;
  const int g = p.row_group();
  for (std::int64_t r0 = 0; r0 < w.rows; r0 += g) {
    const std::int64_t r1 = std::min(w.rows, r0 + g);
    for (std::int64_t win = 0; win < c.layout.windows; ++win) {
      const int real = int(std::min<std::int64_t>(p.m, real_units - win * p.m));
      std::vector<int> expect;
      if (real >= p.n) {
        expect = best_units(unit_scores(w, p, r0, r1, win, real), p.n);
      } else {
        for (int i = 0; i < p.n; ++i) expect.push_back(i);  // all real units, then padding
      }
      const std::uint8_t* irow = c.indices.data() + (r0 / g) * c.layout.index_row_bytes;
      for (int s = 0; s < p.n; ++s)
        ASSERT_EQ(int(get_packed(irow, win * p.n + s, c.layout.index_bits)), expect[std::size_t(s)])
            << "group row " << r0 << " window " << win << " slot " << s;
    }
  }
  // Every stored value: the input's bits at its column, 0 for padding slots.
  for (std::int64_t r = 0; r < w.rows; ++r)
    for (std::int64_t slot = 0; slot < c.layout.value_cols; ++slot) {
      const std::int64_t col = c.column_of(r, slot);
      const std::uint32_t got = bits_at(c.dtype, c.values.data(), std::size_t(r * c.layout.value_cols + slot));
      ASSERT_EQ(got, col < w.cols ? dense_bits(w, r, col) : 0u) << "row " << r << " slot " << slot;
    }
  // prune_dense is the expansion; condensing it gives back the same bytes.
  const DenseMatrix d = prune_dense(w, p);
  EXPECT_TRUE(check_pattern(d.view(), p).ok);
  EXPECT_EQ(expand(c).bytes(), d.bytes());
  EXPECT_TRUE(same_condensed(condense(d.view(), p), c));
}

/// Venom: the chosen column set of every slab-window must score the brute-force maximum
/// (per-row top-2 sums, plain row order); with `exact_ties` (integer data) it must also be the
/// lexicographically first maximiser. Each row keeps its top 2 of the 4 (ties: lower column).
void expect_optimal_venom(const MatrixView& w, const Pattern& p, bool exact_ties) {
  SCOPED_TRACE(p.str() + " " + std::to_string(w.rows) + "x" + std::to_string(w.cols));
  const CondensedMatrix c = prune(w, p);
  EXPECT_NO_THROW(c.validate());
  for (std::int64_t r0 = 0; r0 < w.rows; r0 += p.v) {
    const std::int64_t r1 = std::min(w.rows, r0 + p.v);
    for (std::int64_t win = 0; win < c.layout.windows; ++win) {
      const std::int64_t c0 = win * p.m;
      const int real = int(std::min<std::int64_t>(p.m, w.cols - c0));
      std::array<int, 4> chosen{};
      for (int i = 0; i < 4; ++i)
        chosen[std::size_t(i)] = int(get_packed(c.columns.data() + (r0 / p.v) * c.layout.colloc_row_bytes, win * 4 + i,
                                                c.layout.colloc_bits));
      auto score = [&](const std::array<int, 4>& s) {
        double total = 0.0;
        for (std::int64_t r = r0; r < r1; ++r) {
          double x[4];
          for (int i = 0; i < 4; ++i) x[i] = s[std::size_t(i)] < real ? mag(w, r, c0 + s[std::size_t(i)]) : 0.0;
          std::sort(x, x + 4);
          total += x[3] + x[2];
        }
        return total;
      };
      if (real < 4) {
        EXPECT_EQ(chosen, (std::array<int, 4>{0, 1, 2, 3}));
      } else {
        std::array<int, 4> best{};
        double best_score = -1.0;
        for (const auto& s : subsets(real, 4)) {
          std::array<int, 4> a{s[0], s[1], s[2], s[3]};
          const double sc = score(a);
          if (sc > best_score) {
            best_score = sc;
            best = a;
          }
        }
        if (exact_ties)
          EXPECT_EQ(chosen, best) << "slab " << r0 << " window " << win;
        else
          EXPECT_GE(score(chosen), best_score * (1.0 - 1e-12)) << "slab " << r0 << " window " << win;
      }
      for (std::int64_t r = r0; r < r1; ++r) {  // per row: top 2 of the 4, ties lower column
        double x[4];
        for (int i = 0; i < 4; ++i) x[i] = chosen[std::size_t(i)] < real ? mag(w, r, c0 + chosen[std::size_t(i)]) : 0.0;
        int k1 = 0;
        for (int i = 1; i < 4; ++i)
          if (x[i] > x[k1]) k1 = i;
        int k2 = k1 == 0 ? 1 : 0;
        for (int i = 0; i < 4; ++i)
          if (i != k1 && x[i] > x[k2]) k2 = i;
        const unsigned lo = unsigned(std::min(k1, k2)), hi = unsigned(std::max(k1, k2));
        const std::uint8_t* irow = c.indices.data() + r * c.layout.index_row_bytes;
        EXPECT_EQ(get_packed(irow, win * 2, 2), lo);
        EXPECT_EQ(get_packed(irow, win * 2 + 1, 2), hi);
      }
    }
  }
  for (std::int64_t r = 0; r < w.rows; ++r)
    for (std::int64_t slot = 0; slot < c.layout.value_cols; ++slot) {
      const std::int64_t col = c.column_of(r, slot);
      const std::uint32_t got = bits_at(c.dtype, c.values.data(), std::size_t(r * c.layout.value_cols + slot));
      ASSERT_EQ(got, col < w.cols ? dense_bits(w, r, col) : 0u) << "row " << r << " slot " << slot;
    }
  const DenseMatrix d = prune_dense(w, p);
  EXPECT_TRUE(check_pattern(d.view(), p).ok);
  EXPECT_EQ(expand(c).bytes(), d.bytes());
  if (p.m <= 16) EXPECT_TRUE(same_condensed(condense(d.view(), p), c));  // exact search: canonical
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Element / hw24 / vector / block: optimal against brute force

TEST(PruneElement, OptimalOnRandomDataEveryDtypeWithTails) {
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (const char* pat : {"2:4", "1:4", "2:8", "3:8", "4:8", "1:6", "5:8", "2:4/hw"}) {
      const DenseMatrix w = random_matrix(t, 5, 29, 11 + int(t));
      expect_optimal_grouped(w.view(), Pattern::parse(pat));
    }
}

TEST(PruneElement, OptimalWithTiesOnIntegerData) {
  // Few distinct magnitudes: many ties, resolved towards the lower column.
  for (const char* pat : {"2:4", "2:8", "3:8", "1:5", "4:7"}) {
    const DenseMatrix w = integer_matrix(6, 37, 3, 5);
    expect_optimal_grouped(w.view(), Pattern::parse(pat));
  }
}

TEST(PruneElement, LargerWindowsUseTheGeneralPath) {
  // m outside the compile-time set and n > 4 (nth_element path), plus a tail.
  for (const char* pat : {"6:12", "5:10", "8:32", "16:32", "3:32", "7:9"}) {
    const DenseMatrix w = integer_matrix(3, 75, 50, 17);
    expect_optimal_grouped(w.view(), Pattern::parse(pat));
  }
  const DenseMatrix w = random_matrix(DType::f16, 3, 300, 4);
  expect_optimal_grouped(w.view(), Pattern::element(100, 256));  // checked by sorting (too many subsets)
}

TEST(PruneVector, OptimalRandomAndTies) {
  for (const char* pat : {"2:4/vw4", "2:8/vw2", "1:4/vw3", "3:8/vw8", "5:8/vw4"}) {
    const DenseMatrix w = random_matrix(DType::f32, 11, 27, 3);  // partial last group, tail window
    expect_optimal_grouped(w.view(), Pattern::parse(pat));
    const DenseMatrix wi = integer_matrix(11, 27, 2, 9, DType::bf16);
    expect_optimal_grouped(wi.view(), Pattern::parse(pat));
  }
}

TEST(PruneBlock, OptimalRandomAndTies) {
  for (const char* pat : {"2:4/bw2x2", "1:4/bw1x4", "2:8/bw3x2", "3:5/bw4x3", "1:2/bw2x5"}) {
    const DenseMatrix w = random_matrix(DType::f16, 9, 41, 6);  // partial group, partial block, tail
    expect_optimal_grouped(w.view(), Pattern::parse(pat));
    const DenseMatrix wi = integer_matrix(9, 41, 2, 10);
    expect_optimal_grouped(wi.view(), Pattern::parse(pat));
  }
}

TEST(PruneElement, KeepsTopNOfHandMadeRows) {
  const DenseMatrix w = from_rows({{1, -5, 3, 0.5f, 2, 2, -2, 0}, {0, 0, 0, 0, 0, 0, 0, 0}});
  const DenseMatrix d = prune_dense(w.view(), Pattern::element(2, 4));
  const std::vector<float> row0 = {0, -5, 3, 0, 2, 2, 0, 0};  // |2| ties: lower columns win
  for (int c = 0; c < 8; ++c) EXPECT_EQ(d.at(0, c), row0[std::size_t(c)]) << c;
  const CondensedMatrix cm = prune(w.view(), Pattern::element(2, 4));
  // All-zero row: positions 0, 1 in each window (lowest), values 0.
  for (int s = 0; s < 4; ++s) EXPECT_EQ(cm.column_of(1, s), (s / 2) * 4 + s % 2);
}

// ---------------------------------------------------------------------------------------------
// Venom

TEST(PruneVenom, OptimalOnSmallBlocksRandomAndTies) {
  // V = 32 slabs; rows 40 = one full slab + a partial one; cols with a tail window.
  for (int m : {4, 5, 8, 10, 16}) {
    const Pattern p = Pattern::venom(32, m);
    const DenseMatrix w = random_matrix(DType::f16, 40, 3 * m + 3, std::uint64_t(m));
    expect_optimal_venom(w.view(), p, false);
    const DenseMatrix wi = integer_matrix(40, 3 * m + 3, 3, std::uint64_t(100 + m));
    expect_optimal_venom(wi.view(), p, true);
  }
}

TEST(PruneVenom, TailWindowWithFewerThanFourColumns) {
  const Pattern p = Pattern::venom(32, 8);
  for (int cols : {1, 2, 3, 9, 10, 11}) {
    const DenseMatrix w = random_matrix(DType::f32, 33, cols, 2);
    expect_optimal_venom(w.view(), p, false);
  }
}

TEST(PruneVenom, NoZeroColumnIsChosenOverAUsefulOne) {
  // Two useful columns (5, 6) in a slab of zeros: the set is {0, 1, 5, 6} (lowest fill).
  DenseMatrix w(DType::f32, 32, 8);
  for (int r = 0; r < 32; ++r) {
    w.set(r, 5, 1.0f + float(r));
    w.set(r, 6, -2.0f);
  }
  const CondensedMatrix c = prune(w.view(), Pattern::venom(32, 8));
  std::array<unsigned, 4> cols{};
  for (int i = 0; i < 4; ++i) cols[std::size_t(i)] = get_packed(c.columns.data(), i, 3);
  EXPECT_EQ(cols, (std::array<unsigned, 4>{0, 1, 5, 6}));
  EXPECT_EQ(expand(c).bytes(), w.bytes());
}

namespace {
std::vector<double> random_block(test::SplitMix& rng, int rows, int m, int ld) {
  std::vector<double> mag(std::size_t(ld) * std::size_t(m), 0.0);
  for (int c = 0; c < m; ++c)
    for (int r = 0; r < rows; ++r) mag[std::size_t(c) * std::size_t(ld) + std::size_t(r)] = rng.uniform();
  return mag;
}
}  // namespace

TEST(PruneVenom, BranchAndBoundUnlimitedEqualsEnumeration) {
  using namespace sparsenm::prune_detail;
  test::SplitMix rng(77);
  for (int trial = 0; trial < 60; ++trial) {
    const int rows = 1 + int(rng.below(20)), m = 4 + int(rng.below(13)), ld = (rows + 7) / 8 * 8;
    std::vector<double> mag = random_block(rng, rows, m, ld);
    if (trial % 3 == 0)  // integer magnitudes 0..2: many exact ties
      for (double& x : mag) x = std::floor(x * 3.0);
    for (int r = rows; r < ld; ++r)
      for (int c = 0; c < m; ++c) mag[std::size_t(c) * std::size_t(ld) + std::size_t(r)] = 0.0;
    const VenomBlock b{mag.data(), rows, ld, m};
    const VenomChoice e = venom_enumerate(b);
    const VenomChoice start = venom_local_search(b, venom_l1_start(b));
    const VenomChoice bb = venom_branch_bound(b, start, -1);
    EXPECT_TRUE(bb.proven);
    EXPECT_EQ(bb.col, e.col) << "trial " << trial;
    EXPECT_EQ(bb.score, e.score);
    EXPECT_EQ(venom_score(b, e.col), e.score);
    EXPECT_EQ(venom_select(b).col, e.col);
  }
}

TEST(PruneVenom, SearchBeyond16ColumnsAgainstExhaustive) {
  // The documented search for M > 16 (venom.hpp): never worse than its L1 start or its local
  // search; optimal whenever it claims `proven`; the optimality rate is reported.
  using namespace sparsenm::prune_detail;
  for (int m : {20, 32}) {
    test::SplitMix rng(1000 + std::uint64_t(m));
    const int trials = m == 20 ? 150 : 40;
    int optimal = 0, local_optimal = 0, proven = 0;
    for (int trial = 0; trial < trials; ++trial) {
      const int rows = trial % 2 ? 8 : 16;
      const std::vector<double> mag = random_block(rng, rows, m, rows);
      const VenomBlock b{mag.data(), rows, rows, m};
      const VenomChoice exact = venom_enumerate(b);
      const VenomChoice start = venom_l1_start(b);
      const VenomChoice local = venom_local_search(b, start);
      const VenomChoice got = venom_select(b);
      EXPECT_EQ(got.score, venom_score(b, got.col));
      EXPECT_GE(local.score, start.score);
      EXPECT_GE(got.score, local.score);
      EXPECT_LE(got.score, exact.score);
      if (got.proven) EXPECT_EQ(got.col, exact.col) << "claimed optimal but is not";
      optimal += got.col == exact.col;
      local_optimal += local.col == exact.col;
      proven += got.proven;
    }
    std::cout << "[ venom M=" << m << " ] search optimal " << optimal << "/" << trials << ", local search alone "
              << local_optimal << "/" << trials << ", proven " << proven << "/" << trials << "\n";
    RecordProperty("venom_M" + std::to_string(m) + "_optimal", optimal);
    EXPECT_GE(optimal, trials / 2);  // far below what it achieves: a regression alarm
  }
}

TEST(PruneVenom, WideWindowsPruneAndStayValid) {
  const Pattern p = Pattern::venom(32, 24);
  const DenseMatrix w = random_matrix(DType::bf16, 40, 60, 8);
  const CondensedMatrix c = prune(w.view(), p);
  EXPECT_NO_THROW(c.validate());
  const DenseMatrix d = prune_dense(w.view(), p);
  EXPECT_TRUE(check_pattern(d.view(), p).ok);
  EXPECT_EQ(expand(c).bytes(), d.bytes());
}

// ---------------------------------------------------------------------------------------------
// Tails, NaN, ties, determinism

TEST(PruneTails, NarrowMatricesUsePaddingSlotsOnlyWhenNeeded) {
  for (const char* pat : {"2:4", "3:8", "2:4/vw2", "2:4/bw2x2", "2:8/bw1x3"})
    for (int cols : {1, 2, 3, 5, 7}) {
      const DenseMatrix w = random_matrix(DType::f32, 3, cols, std::uint64_t(cols));
      expect_optimal_grouped(w.view(), Pattern::parse(pat));
      const CondensedMatrix c = prune(w.view(), Pattern::parse(pat));
      // Every nonzero input in a window that has fewer real units than slots is kept.
      const DenseMatrix d = expand(c);
      const Pattern p = Pattern::parse(pat);
      const int unit = p.kind == Granularity::block ? p.bk : 1;
      if ((cols + unit - 1) / unit <= p.n) EXPECT_EQ(d.bytes(), w.bytes()) << pat << " cols " << cols;
    }
}

TEST(PruneNaN, NaNAndInfAreKeptFirst) {
  const DenseMatrix w = from_rows({{1, kNaN, 3, 2}, {kInf, 5, kNaN, -kInf}, {kNaN, kNaN, kNaN, 1}});
  const DenseMatrix d = prune_dense(w.view(), Pattern::element(2, 4));
  EXPECT_EQ(d.at(0, 0), 0.0f);
  EXPECT_TRUE(std::isnan(d.at(0, 1)));
  EXPECT_EQ(d.at(0, 2), 3.0f);
  EXPECT_EQ(d.at(0, 3), 0.0f);
  // |NaN| = +inf: ties with inf resolved by column: inf (col 0) and NaN (col 2) before -inf.
  EXPECT_EQ(d.at(1, 0), kInf);
  EXPECT_EQ(d.at(1, 1), 0.0f);
  EXPECT_TRUE(std::isnan(d.at(1, 2)));
  EXPECT_EQ(d.at(1, 3), 0.0f);
  EXPECT_TRUE(std::isnan(d.at(2, 0)) && std::isnan(d.at(2, 1)));
  EXPECT_EQ(d.at(2, 2), 0.0f);
  for (DType t : {DType::f16, DType::bf16}) {  // the 16-bit keys clamp NaN the same way
    const DenseMatrix w16 = from_rows({{kNaN, 65504.0f, kInf, 1}}, t);
    const DenseMatrix d16 = prune_dense(w16.view(), Pattern::element(2, 4));
    EXPECT_TRUE(std::isnan(d16.at(0, 0)));
    EXPECT_EQ(d16.at(0, 1), 0.0f);
    EXPECT_EQ(d16.at(0, 2), kInf);
  }
  // Vector, block and venom: a NaN makes its column / block / row pick win.
  const DenseMatrix wv = from_rows({{1, 2, 3, kNaN}, {4, 5, 6, 0}});
  EXPECT_TRUE(std::isnan(prune_dense(wv.view(), Pattern::vector(1, 4, 2)).at(0, 3)));
  EXPECT_TRUE(std::isnan(prune_dense(wv.view(), Pattern::block(1, 2, 2, 2)).at(0, 3)));
  DenseMatrix wn = random_matrix(DType::f32, 32, 8, 3);
  wn.set(7, 6, kNaN);
  const DenseMatrix dn = prune_dense(wn.view(), Pattern::venom(32, 8));
  EXPECT_TRUE(std::isnan(dn.at(7, 6)));
  EXPECT_TRUE(check_pattern(dn.view(), Pattern::venom(32, 8)).ok);
  PruneReport rep;
  prune(wn.view(), Pattern::venom(32, 8), &rep);
  EXPECT_TRUE(std::isfinite(rep.retained_l1) && std::isfinite(rep.retained_l2));
}

TEST(PruneTies, SignedZerosAndEqualMagnitudes) {
  const DenseMatrix w = from_rows({{-0.0f, 0.0f, -0.0f, 0.0f}, {-2, 2, -2, 2}, {0, -1, 0, 1}});
  const CondensedMatrix c = prune(w.view(), Pattern::element(2, 4));
  EXPECT_EQ(c.column_of(0, 0), 0);
  EXPECT_EQ(c.column_of(0, 1), 1);
  EXPECT_EQ(c.column_of(1, 0), 0);
  EXPECT_EQ(c.column_of(1, 1), 1);
  EXPECT_EQ(c.column_of(2, 0), 1);
  EXPECT_EQ(c.column_of(2, 1), 3);
  EXPECT_EQ(c.value(1, 0), -2.0f);
  EXPECT_TRUE(same_condensed(condense(prune_dense(w.view(), Pattern::element(2, 4)).view(), Pattern::element(2, 4)), c));
}

TEST(PruneDeterminism, SameBytesWhateverTheThreadCount) {
  const int saved = omp_get_max_threads();
  for (const char* pat : {"2:8", "2:4", "16:32", "2:8/vw4", "2:4/bw4x4", "32:2:8", "32:2:20"}) {
    const Pattern p = Pattern::parse(pat);
    const DenseMatrix w = random_matrix(DType::f16, 260, 300, 5);  // above the parallel threshold
    omp_set_num_threads(1);
    PruneReport r1, r2;
    const CondensedMatrix a = prune(w.view(), p, &r1);
    const DenseMatrix da = prune_dense(w.view(), p);
    omp_set_num_threads(3);
    const CondensedMatrix b = prune(w.view(), p, &r2);
    const DenseMatrix db = prune_dense(w.view(), p);
    EXPECT_TRUE(same_condensed(a, b)) << pat;
    EXPECT_EQ(da.bytes(), db.bytes()) << pat;
    EXPECT_EQ(r1.retained_l1, r2.retained_l1);
    EXPECT_EQ(r1.retained_l2, r2.retained_l2);
  }
  omp_set_num_threads(saved);
}

TEST(PruneStrided, ViewWithLeadingDimension) {
  const DenseMatrix big = random_matrix(DType::bf16, 7, 40, 12);
  const MatrixView sub{DType::bf16, big.data(), 7, 29, 40};  // 29 of 40 columns
  expect_optimal_grouped(sub, Pattern::element(2, 8));
  expect_optimal_grouped(sub, Pattern::vector(1, 4, 3));
}

// ---------------------------------------------------------------------------------------------
// PruneReport

TEST(PruneReportTest, HandComputed) {
  const DenseMatrix w = from_rows({{1, -2, 3, 0.5f}, {0, 0, 0, 4}});
  PruneReport r;
  prune(w.view(), Pattern::element(2, 4), &r);
  EXPECT_EQ(r.nonzeros_kept, 3);  // -2, 3, 4 (the zero kept in row 1 does not count)
  EXPECT_DOUBLE_EQ(r.sparsity, 5.0 / 8.0);
  EXPECT_DOUBLE_EQ(r.retained_l1, 9.0 / 10.5);
  EXPECT_DOUBLE_EQ(r.retained_l2, 29.0 / 30.25);
  PruneReport rd;
  prune_dense(w.view(), Pattern::element(2, 4), &rd);
  EXPECT_EQ(rd.nonzeros_kept, r.nonzeros_kept);
  EXPECT_EQ(rd.retained_l1, r.retained_l1);
  EXPECT_EQ(rd.retained_l2, r.retained_l2);
  EXPECT_EQ(rd.sparsity, r.sparsity);
  PruneReport z;
  prune(DenseMatrix(DType::f16, 3, 9).view(), Pattern::element(1, 4), &z);
  EXPECT_EQ(z.retained_l1, 1.0);
  EXPECT_EQ(z.retained_l2, 1.0);
  EXPECT_EQ(z.sparsity, 1.0);
  EXPECT_EQ(z.nonzeros_kept, 0);
}

TEST(PruneReportTest, MatchesDirectSumsOnRandomData) {
  for (const char* pat : {"2:8", "2:4/vw4", "1:4/bw2x2", "32:2:8"}) {
    const DenseMatrix w = random_matrix(DType::f32, 37, 45, 21);
    PruneReport r;
    const DenseMatrix d = prune_dense(w.view(), Pattern::parse(pat), &r);
    double l1 = 0, l1k = 0, l2 = 0, l2k = 0;
    std::int64_t nz = 0;
    for (std::int64_t i = 0; i < w.rows(); ++i)
      for (std::int64_t j = 0; j < w.cols(); ++j) {
        const double x = w.at(i, j), y = d.at(i, j);
        l1 += std::fabs(x);
        l2 += x * x;
        l1k += std::fabs(y);
        l2k += y * y;
        nz += y != 0.0;
      }
    EXPECT_EQ(r.nonzeros_kept, nz) << pat;
    EXPECT_NEAR(r.retained_l1, l1k / l1, 1e-12) << pat;
    EXPECT_NEAR(r.retained_l2, l2k / l2, 1e-12) << pat;
    EXPECT_NEAR(r.sparsity, 1.0 - double(nz) / double(w.rows() * w.cols()), 1e-15) << pat;
    EXPECT_GT(r.retained_l2, Pattern::parse(pat).density());  // magnitude pruning beats random
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(PruneErrors, BadInputs) {
  const DenseMatrix w = random_matrix(DType::f32, 4, 8, 1);
  const std::vector<std::int32_t> ints(32, 1);
  auto expect_arg = [](auto&& fn, const std::string& argument) {
    try {
      fn();
      ADD_FAILURE() << "no exception (expected InvalidArgument naming " << argument << ")";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
  };
  const Pattern ok = Pattern::element(2, 4);
  const MatrixView bad_dtype{DType::i32, ints.data(), 4, 8, 8};
  const MatrixView null_data{DType::f32, nullptr, 4, 8, 8};
  const MatrixView bad_ld{DType::f32, w.data(), 4, 8, 7};
  const MatrixView negative{DType::f32, w.data(), -1, 8, 8};
  for (const MatrixView& v : {bad_dtype, null_data, bad_ld, negative}) {
    expect_arg([&] { prune(v, ok); }, "w");
    expect_arg([&] { prune_dense(v, ok); }, "w");
    expect_arg([&] { transposable_24_mask(v); }, "w");
    expect_arg([&] { mvue24(v, 1); }, "g");
  }
  for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {0, 8}, {4, 0}}) {
    const MatrixView empty{DType::f32, w.data(), r, c, 8};
    expect_arg([&] { prune(empty, ok); }, "w");
    expect_arg([&] { prune_dense(empty, ok); }, "w");
    expect_arg([&] { transposable_24_mask(empty); }, "w");
    expect_arg([&] { mvue24(empty, 1); }, "g");
  }
  // Invalid patterns (built by hand: the factories would refuse them).
  std::vector<Pattern> bad;
  Pattern p;
  p.kind = Granularity::element, p.n = 4, p.m = 4, bad.push_back(p);
  p.n = 0, bad.push_back(p);
  p.n = 2, p.m = 300, bad.push_back(p);
  p = Pattern::venom(32, 8), p.v = 16, bad.push_back(p);
  p = Pattern::venom(32, 8), p.n = 3, bad.push_back(p);
  p = Pattern::block(2, 4, 2, 2), p.bk = 0, bad.push_back(p);
  p = Pattern::vector(2, 4, 2), p.v = 1, bad.push_back(p);
  p = Pattern::hw24(), p.m = 8, bad.push_back(p);
  p.kind = Granularity(42), bad.push_back(p);
  for (const Pattern& q : bad) {
    EXPECT_THROW(prune(w.view(), q), InvalidArgument) << q.str();
    EXPECT_THROW(prune_dense(w.view(), q), InvalidArgument) << q.str();
  }
}

// ---------------------------------------------------------------------------------------------
// Transposable 2:4

namespace {
bool transposable_ok(unsigned m) {
  for (int i = 0; i < 4; ++i)
    if (__builtin_popcount((m >> (4 * i)) & 0xfu) != 2) return false;
  for (int j = 0; j < 4; ++j)
    if (__builtin_popcount(m & (0x1111u << j)) != 2) return false;
  return true;
}

/// Brute force over all 2^16 masks by the documented rule (transposable.hpp): fp32 row pair
/// sums, bottom B = P0 + P1, top T = P2 + P3, V = T + B; the largest V, ties to the smallest
/// top half, then the largest B, then the smallest bottom half.
unsigned brute_mask(const float mag[4][4]) {
  unsigned best = 0;
  float best_v = -1.0f, best_b = -1.0f;
  for (unsigned m = 0; m < 65536; ++m) {
    if (!transposable_ok(m)) continue;
    float pair[4];
    for (int i = 0; i < 4; ++i) {
      int j0 = -1, j1 = -1;
      for (int j = 0; j < 4; ++j)
        if (m >> (4 * i + j) & 1u) (j0 < 0 ? j0 : j1) = j;
      pair[i] = mag[i][j0] + mag[i][j1];
    }
    const float b = pair[0] + pair[1], t = pair[2] + pair[3], v = t + b;
    const bool better = v > best_v || (v == best_v && (m >> 8) < (best >> 8)) ||
                        (v == best_v && (m >> 8) == (best >> 8) && b > best_b);
    if (better) {
      best_v = v;
      best_b = b;
      best = m;
    }
  }
  return best;
}
}  // namespace

TEST(Transposable, NinetyPatternsInOrder) {
  const auto& pats = prune_detail::transposable_patterns();
  unsigned count = 0, prev = 0;
  for (unsigned m = 0; m < 65536; ++m) count += transposable_ok(m);
  EXPECT_EQ(count, 90u);
  for (std::size_t k = 0; k < pats.size(); ++k) {
    EXPECT_TRUE(transposable_ok(pats[k]));
    if (k) EXPECT_GT(pats[k], prev);
    prev = pats[k];
  }
}

TEST(Transposable, BestPatternMatchesBruteForce) {
  const auto& pats = prune_detail::transposable_patterns();
  test::SplitMix rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    float mag[4][4];
    for (auto& row : mag)
      for (float& x : row)  // odd: many ties; every 4th: exponents over 40 binades (fp32 rounding)
        x = trial % 2 ? float(rng.below(3)) : trial % 4 == 2 ? std::ldexp(float(rng.uniform()), int(rng.below(40)) - 20) : float(rng.uniform());
    if (trial == 0)
      for (auto& row : mag)
        for (float& x : row) x = 1.0f;  // all equal: the first pattern
    const unsigned expect = brute_mask(mag);
    EXPECT_EQ(pats[std::size_t(prune_detail::best_transposable_pattern(mag))], expect) << "trial " << trial;
  }
}

TEST(Transposable, MaskIsTransposableAndOptimalWithEdges) {
  const DenseMatrix w = random_matrix(DType::f16, 14, 23, 4);  // edge blocks in both directions
  const auto mask = transposable_24_mask(w.view());
  ASSERT_EQ(mask.size(), std::size_t(14 * 23));
  for (std::int64_t bi = 0; bi < 4; ++bi)
    for (std::int64_t bj = 0; bj < 6; ++bj) {
      float mag4[4][4];
      unsigned got = 0;
      bool full = true;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const std::int64_t r = bi * 4 + i, c = bj * 4 + j;
          const bool inside = r < 14 && c < 23;
          full = full && inside;
          mag4[i][j] = inside ? std::fabs(w.at(r, c)) : 0.0f;
          if (inside && mask[std::size_t(r * 23 + c)]) got |= 1u << (4 * i + j);
        }
      const unsigned expect = brute_mask(mag4);
      // Positions past the edge are not in the mask; compare on the real part.
      unsigned real_bits = 0;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          if (bi * 4 + i < 14 && bj * 4 + j < 23) real_bits |= 1u << (4 * i + j);
      EXPECT_EQ(got, expect & real_bits) << bi << "," << bj;
      if (full) EXPECT_TRUE(transposable_ok(got));
    }
  // Both W and W^T satisfy 2:4 under the mask.
  DenseMatrix masked(DType::f32, 14, 23), masked_t(DType::f32, 23, 14);
  for (std::int64_t r = 0; r < 14; ++r)
    for (std::int64_t c = 0; c < 23; ++c)
      if (mask[std::size_t(r * 23 + c)]) {
        masked.set(r, c, 1.0f);
        masked_t.set(c, r, 1.0f);
      }
  EXPECT_TRUE(check_pattern(masked.view(), Pattern::element(2, 4)).ok);
  EXPECT_TRUE(check_pattern(masked_t.view(), Pattern::element(2, 4)).ok);
  // NaN counts as the largest magnitude.
  DenseMatrix wn(DType::f32, 4, 4);
  wn.set(2, 3, kNaN);
  const auto mn = transposable_24_mask(wn.view());
  EXPECT_EQ(mn[2 * 4 + 3], 1);
}

// ---------------------------------------------------------------------------------------------
// MVUE 2:4

TEST(Philox, KnownAnswerVectors) {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines.
  struct Kat {
    std::uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    std::uint32_t out[4];
    prune_detail::philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.out[i]) << i;
  }
  const float u = prune_detail::mvue_uniform(5, 7, 9);
  EXPECT_GE(u, 0.0f);
  EXPECT_LT(u, 1.0f);
  EXPECT_EQ(u, prune_detail::mvue_uniform(5, 7, 9));
  EXPECT_NE(u, prune_detail::mvue_uniform(5, 7, 10));
}

TEST(Mvue, GroupRules) {
  using prune_detail::mvue_group;
  float out[4];
  // <= 2 nonzeros: unchanged (bit for bit, signed zero included).
  const float two[4] = {0.0f, -3.5f, -0.0f, 1.25f};
  for (float u : {0.0f, 0.3f, 0.99f}) {
    mvue_group(two, u, out);
    EXPECT_EQ(std::memcmp(out, two, sizeof two), 0);
  }
  // Main regime: values +-S/2.
  const float x[4] = {1, -2, 3, 2};  // S = 8, max 3 <= 5
  for (float u : {0.0f, 0.1f, 0.5f, 0.9f, 0.999f}) {
    mvue_group(x, u, out);
    int nz = 0;
    for (int i = 0; i < 4; ++i)
      if (out[i] != 0.0f) {
        ++nz;
        EXPECT_EQ(std::fabs(out[i]), 4.0f);
        EXPECT_EQ(std::signbit(out[i]), std::signbit(x[i]));
      }
    EXPECT_EQ(nz, 2) << u;
  }
  // Dominant element regime: x_t kept exactly, one other scaled to +-R.
  const float y[4] = {0.5f, -10.0f, 1.0f, 0.5f};  // R = 2 < 10
  for (float u : {0.0f, 0.3f, 0.6f, 0.9f}) {
    mvue_group(y, u, out);
    EXPECT_EQ(out[1], -10.0f);
    int nz = 0;
    for (int i : {0, 2, 3})
      if (out[i] != 0.0f) {
        ++nz;
        EXPECT_EQ(std::fabs(out[i]), 2.0f);
      }
    EXPECT_EQ(nz, 1);
  }
  // Non-finite: the NaN / inf survive.
  const float z[4] = {1.0f, kNaN, 2.0f, -kInf};
  mvue_group(z, 0.5f, out);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[3], -kInf);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[2], 0.0f);
}

TEST(Mvue, VarianceIsMinimalAndBelowTheApproxEstimator) {
  test::SplitMix rng(8);
  int strictly_better = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    double a[4];
    for (double& v : a) v = rng.uniform() * (trial % 3 == 0 ? 10.0 : 1.0);
    if (trial % 5 == 0) a[trial % 4] *= 20.0;  // dominant element
    double p[4], q[4];
    prune_detail::mvue_probabilities(a, p);
    prune_detail::mvue_approx_probabilities(a, q);
    double sum_p = 0, var = 0, var_approx = 0;
    for (int i = 0; i < 4; ++i) {
      EXPECT_GE(p[i], 0.0);
      EXPECT_LE(p[i], 1.0 + 1e-15);
      sum_p += p[i];
      var += a[i] * a[i] / p[i] - a[i] * a[i];
      var_approx += a[i] * a[i] / q[i] - a[i] * a[i];
    }
    EXPECT_NEAR(sum_p, 2.0, 1e-12);
    EXPECT_LE(var, var_approx * (1 + 1e-12) + 1e-15);
    strictly_better += var < var_approx * (1 - 1e-9);
  }
  EXPECT_GT(strictly_better, 1000);
}

TEST(Mvue, UnbiasedWithTheAnalyticVarianceAndMarginals) {
  // f32 so that storing a value does not round. Mean over K fixed seeds within 5 standard
  // errors (from the analytic variance) of the input, for every element; the empirical total
  // variance within 10% of the analytic one; inclusion frequencies near p_i.
  const std::int64_t rows = 6, cols = 22;  // tail group of 2 columns
  DenseMatrix g = random_matrix(DType::f32, rows, cols, 31);
  g.set(0, 0, 0.0f);
  g.set(1, 4, 7.0f);  // a dominant element
  const int K = 3000;
  std::vector<double> sum(std::size_t(rows * cols), 0.0), sum2(sum.size(), 0.0), hits(sum.size(), 0.0);
  for (int k = 0; k < K; ++k) {
    const DenseMatrix out = mvue24(g.view(), std::uint64_t(1000 + k));
    for (std::int64_t i = 0; i < rows * cols; ++i) {
      const double y = out.at(i / cols, i % cols);
      sum[std::size_t(i)] += y;
      sum2[std::size_t(i)] += (y - g.at(i / cols, i % cols)) * (y - g.at(i / cols, i % cols));
      hits[std::size_t(i)] += y != 0.0;
    }
  }
  double var_total = 0, emp_total = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < (cols + 3) / 4; ++j) {
      double a[4] = {0, 0, 0, 0}, p[4];
      for (int i = 0; i < 4; ++i)
        if (j * 4 + i < cols) a[i] = std::fabs(double(g.at(r, j * 4 + i)));
      prune_detail::mvue_probabilities(a, p);
      for (int i = 0; i < 4 && j * 4 + i < cols; ++i) {
        const std::size_t e = std::size_t(r * cols + j * 4 + i);
        const double x = g.at(r, j * 4 + i);
        const double var = p[i] > 0 ? a[i] * a[i] / p[i] - a[i] * a[i] : 0.0;
        var_total += var;
        emp_total += sum2[e] / K;
        EXPECT_NEAR(sum[e] / K, x, 5.0 * std::sqrt(var / K) + 1e-6) << "r " << r << " c " << j * 4 + i;
        EXPECT_NEAR(hits[e] / K, p[i], 5.0 * std::sqrt(p[i] * (1 - p[i]) / K) + 1e-9) << "r " << r << " c " << j * 4 + i;
      }
    }
  EXPECT_NEAR(emp_total / var_total, 1.0, 0.1);
}

TEST(Mvue, AtMostTwoPerGroupDeterministicAndSparseGroupsUnchanged) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    DenseMatrix g = random_matrix(t, 33, 37, 2);
    for (std::int64_t c = 0; c < 4; ++c) g.set(5, c, c == 1 ? 0.75f : 0.0f);  // 1 nonzero
    g.set(6, 8, 0.0f);
    g.set(6, 10, 0.0f);  // 2 nonzeros
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const DenseMatrix a = mvue24(g.view(), 42);
    omp_set_num_threads(2);
    const DenseMatrix b = mvue24(g.view(), 42);
    omp_set_num_threads(saved);
    EXPECT_EQ(a.bytes(), b.bytes());
    EXPECT_NE(mvue24(g.view(), 43).bytes(), a.bytes());
    for (std::int64_t r = 0; r < 33; ++r)
      for (std::int64_t j = 0; j < 10; ++j) {
        int nz = 0;
        for (std::int64_t c = j * 4; c < std::min<std::int64_t>(37, j * 4 + 4); ++c) nz += a.at(r, c) != 0.0f;
        EXPECT_LE(nz, 2);
      }
    for (std::int64_t c = 0; c < 4; ++c) EXPECT_EQ(dense_bits(a.view(), 5, c), dense_bits(g.view(), 5, c));
    for (std::int64_t c = 8; c < 12; ++c) EXPECT_EQ(dense_bits(a.view(), 6, c), dense_bits(g.view(), 6, c));
    // The result depends only on (seed, position): a sub-view gives the same values.
    const MatrixView top{t, g.data(), 10, 37, 37};
    const DenseMatrix s = mvue24(top, 42);
    for (std::int64_t r = 0; r < 10; ++r)
      for (std::int64_t c = 0; c < 37; ++c) EXPECT_EQ(dense_bits(s.view(), r, c), dense_bits(a.view(), r, c));
  }
}
