// Tests of the CPU reference kernels (src/cpu/reference.cpp): every granularity, every weight
// dtype, m in {1, 3, 8, 37}, tails in rows and cols, against the naive dense f64 product of the
// expanded weight; plus accumulation agreement, batch invariance, Inf/NaN semantics of pruned
// and kept positions, and every error path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/reference.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

struct Case {
  std::string pattern;
  std::int64_t rows, cols;  // tails: neither a multiple of the row group nor of the window
};

// Shapes chosen so that rows leave a partial row group (vw/bw/venom) and cols a partial window.
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"2:4", 13, 38},          {"1:4", 7, 21},           {"2:8", 11, 61},       {"3:7", 9, 50},
      {"5:16", 6, 90},          {"1:2", 5, 9},            {"7:256", 3, 300},     {"2:4/hw", 10, 42},
      {"2:8/vw4", 14, 45},      {"1:3/vw3", 8, 17},       {"2:8/bw4x2", 10, 52}, {"1:4/bw2x3", 7, 29},
      {"3:5/bw3x4", 8, 47},     {"32:2:8", 45, 61},       {"64:2:10", 70, 33},   {"32:2:5", 33, 23},
  };
  return c;
}

DenseMatrix to_f32(const MatrixView& v) {
  DenseMatrix out(DType::f32, v.rows, v.cols);
  for (std::int64_t i = 0; i < v.rows; ++i)
    for (std::int64_t j = 0; j < v.cols; ++j) out.set(i, j, v.at(i, j));
  return out;
}

// Tolerance of the relative error for an f32-accumulated result stored as `y`.
double tolerance(DType y) {
  switch (y) {
    case DType::f16: return 2e-3;
    case DType::bf16: return 1.5e-2;
    default: return 2e-6;
  }
}

TEST(Reference, MatchesDenseF64EveryPatternDtypeAndM) {
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  std::uint64_t seed = 1;
  for (const Case& c : cases()) {
    const Pattern p = Pattern::parse(c.pattern);
    for (DType t : dtypes) {
      SCOPED_TRACE(c.pattern + " " + std::string(to_string(t)) + " " + std::to_string(c.rows) + "x" +
                   std::to_string(c.cols));
      const DenseMatrix dense = random_pattern_matrix(p, t, c.rows, c.cols, seed++, 0.1);
      const CondensedMatrix w = condense(dense.view(), p);
      const DenseMatrix expanded = expand(w);
      for (std::int64_t m : {1, 3, 8, 37}) {
        SCOPED_TRACE("m = " + std::to_string(m));
        const DenseMatrix x = random_matrix(t, m, c.cols, seed++);
        const std::vector<double> want = dense_matmul_f64(x.view(), expanded.view());

        const std::vector<double> got64 = reference_matmul_f64(x.view(), w);
        ASSERT_EQ(got64.size(), want.size());
        double num = 0, den = 0;
        for (std::size_t i = 0; i < want.size(); ++i) {
          num += (got64[i] - want[i]) * (got64[i] - want[i]);
          den += want[i] * want[i];
        }
        EXPECT_LE(std::sqrt(num), 1e-12 * std::sqrt(den));

        for (DType yt : dtypes) {
          DenseMatrix y(yt, m, c.rows);
          std::memset(y.data(), 0xff, y.size_bytes());  // poison: NaN in every dtype
          reference_matmul(x.view(), w, y.mutable_view(), Accumulate::f32);
          EXPECT_LE(relative_error(y.view(), want), tolerance(yt)) << "y " << to_string(yt);
        }
        DenseMatrix y64(DType::f32, m, c.rows);
        std::memset(y64.data(), 0xff, y64.size_bytes());
        reference_matmul(x.view(), w, y64.mutable_view(), Accumulate::f64);
        EXPECT_LE(relative_error(y64.view(), want), 1e-7);
      }
    }
  }
}

TEST(Reference, F32AndF64AccumulationAgree) {
  const Pattern p = Pattern::parse("2:8");
  const DenseMatrix dense = random_pattern_matrix(p, DType::f16, 64, 1000, 7);
  const CondensedMatrix w = condense(dense.view(), p);
  const DenseMatrix x = random_matrix(DType::f16, 5, 1000, 8);
  DenseMatrix y32(DType::f32, 5, 64), y64(DType::f32, 5, 64);
  reference_matmul(x.view(), w, y32.mutable_view(), Accumulate::f32);
  reference_matmul(x.view(), w, y64.mutable_view(), Accumulate::f64);
  std::vector<double> ref(y64.rows() * y64.cols());
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 64; ++j) ref[std::size_t(i * 64 + j)] = y64.at(i, j);
  const double err = relative_error(y32.view(), ref);
  EXPECT_LE(err, 1e-6);
  EXPECT_GT(err, 0.0) << "f32 and f64 accumulation gave identical bits over k = 1000: suspicious";
}

// Long k (several k tiles at m = 32 in f64: the X tile budget is 512 KiB) and m over one tile.
TEST(Reference, LongRowsAndManyXRowsCrossTiles) {
  const Pattern p = Pattern::parse("2:4");
  const std::int64_t rows = 9, cols = 4099, m = 45;
  const DenseMatrix dense = random_pattern_matrix(p, DType::bf16, rows, cols, 21);
  const CondensedMatrix w = condense(dense.view(), p);
  const DenseMatrix x = random_matrix(DType::bf16, m, cols, 22);
  const std::vector<double> want = dense_matmul_f64(x.view(), dense.view());
  for (Accumulate acc : {Accumulate::f32, Accumulate::f64}) {
    DenseMatrix y(DType::f32, m, rows);
    reference_matmul(x.view(), w, y.mutable_view(), acc);
    EXPECT_LE(relative_error(y.view(), want), acc == Accumulate::f64 ? 1e-7 : 1e-5);
  }
  const std::vector<double> got = reference_matmul_f64(x.view(), w);
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-9 * (1 + std::abs(want[i])));
}

// The f32 result of one row of X does not depend on m (fixed order by window, then slot).
TEST(Reference, BatchInvariantBits) {
  for (const char* text : {"2:8", "32:2:8", "2:8/bw4x2"}) {
    SCOPED_TRACE(text);
    const Pattern p = Pattern::parse(text);
    const DenseMatrix dense = random_pattern_matrix(p, DType::f16, 40, 333, 3);
    const CondensedMatrix w = condense(dense.view(), p);
    const DenseMatrix x = random_matrix(DType::f16, 37, 333, 4);
    DenseMatrix y_all(DType::f32, 37, 40);
    reference_matmul(x.view(), w, y_all.mutable_view(), Accumulate::f32);
    for (std::int64_t i : {0, 5, 36}) {
      const MatrixView xi{DType::f16, static_cast<const std::byte*>(x.data()) + i * 333 * 2, 1, 333, 333};
      DenseMatrix yi(DType::f32, 1, 40);
      reference_matmul(xi, w, yi.mutable_view(), Accumulate::f32);
      for (std::int64_t r = 0; r < 40; ++r) {
        const float a = yi.at(0, r), b = y_all.at(i, r);
        ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << "row " << i << " col " << r;
      }
    }
  }
}

// Views with ld > cols for x and y; y's padding is left untouched.
TEST(Reference, StridedViews) {
  const Pattern p = Pattern::parse("2:8/vw4");
  const DenseMatrix dense = random_pattern_matrix(p, DType::f32, 10, 45, 5);
  const CondensedMatrix w = condense(dense.view(), p);
  const DenseMatrix xs = random_matrix(DType::f32, 3, 50, 6);  // x = first 45 columns
  const MatrixView x{DType::f32, xs.data(), 3, 45, 50};
  DenseMatrix ys(DType::f32, 3, 13);
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 13; ++j) ys.set(i, j, 42.0f);
  reference_matmul(x, w, MutableMatrixView{DType::f32, ys.data(), 3, 10, 13}, Accumulate::f32);
  const std::vector<double> want = dense_matmul_f64(x, dense.view());
  for (std::int64_t i = 0; i < 3; ++i) {
    for (std::int64_t j = 0; j < 10; ++j) EXPECT_NEAR(ys.at(i, j), want[std::size_t(i * 10 + j)], 1e-5);
    for (std::int64_t j = 10; j < 13; ++j) EXPECT_EQ(ys.at(i, j), 42.0f);
  }
}

TEST(Reference, EmptyBatchIsANoOp) {
  const Pattern p = Pattern::parse("2:4");
  const CondensedMatrix w = condense(random_pattern_matrix(p, DType::f16, 4, 8, 1).view(), p);
  const MatrixView x{DType::f16, nullptr, 0, 8, 8};
  reference_matmul(x, w, MutableMatrixView{DType::f16, nullptr, 0, 4, 4});
  EXPECT_TRUE(reference_matmul_f64(x, w).empty());
}

// format.hpp: the product is the sum over stored slots inside the matrix; pruned positions
// contribute nothing even where X holds Inf or NaN.
TEST(Reference, InfAtPrunedPositionDoesNotPoisonKeptDoes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.pattern);
    const Pattern p = Pattern::parse(c.pattern);
    const DenseMatrix dense = random_pattern_matrix(p, DType::f16, c.rows, c.cols, 77, 0.2);
    const CondensedMatrix w = condense(dense.view(), p);
    std::vector<std::set<std::int64_t>> stored(std::size_t(c.rows));
    for (std::int64_t r = 0; r < c.rows; ++r)
      for (std::int64_t s = 0; s < w.layout.value_cols; ++s)
        if (const std::int64_t col = w.column_of(r, s); col < c.cols) stored[std::size_t(r)].insert(col);

    DenseMatrix x = random_matrix(DType::f16, 2, c.cols, 78);
    DenseMatrix base(DType::f32, 2, c.rows);
    reference_matmul(x.view(), w, base.mutable_view(), Accumulate::f32);

    // A column row 0 does not store (the pattern keeps < cols per row) and one it stores with
    // a nonzero value (there is one: values are nonzero with probability 0.8).
    std::int64_t pruned = -1, kept = -1;
    for (std::int64_t col = 0; col < c.cols; ++col) {
      if (!stored[0].count(col)) {
        if (pruned < 0) pruned = col;
      } else if (kept < 0 && dense.at(0, col) != 0.0f) {
        kept = col;
      }
    }
    ASSERT_GE(pruned, 0);
    for (float poison : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      x.set(1, pruned, poison);
      DenseMatrix y(DType::f32, 2, c.rows);
      reference_matmul(x.view(), w, y.mutable_view(), Accumulate::f32);
      for (std::int64_t r = 0; r < c.rows; ++r) {
        const float a = y.at(0, r), b = base.at(0, r);
        EXPECT_EQ(std::memcmp(&a, &b, 4), 0) << "untouched x row changed at " << r;
        if (!stored[std::size_t(r)].count(pruned)) {
          const float g = y.at(1, r), e = base.at(1, r);
          EXPECT_EQ(std::memcmp(&g, &e, 4), 0) << "pruned position leaked into row " << r;
        } else if (dense.at(r, pruned) != 0.0f) {
          EXPECT_FALSE(std::isfinite(y.at(1, r))) << "kept position ignored in row " << r;
        }
      }
      x.set(1, pruned, 0.5f);
    }
    if (kept >= 0) {
      x.set(1, kept, std::numeric_limits<float>::infinity());
      DenseMatrix y(DType::f32, 2, c.rows);
      reference_matmul(x.view(), w, y.mutable_view(), Accumulate::f64);
      EXPECT_TRUE(std::isinf(y.at(1, 0)) || std::isnan(y.at(1, 0)));
    }
  }
}

// A padding slot placed at the last position of the last window, with k long enough that the
// kernel splits k into several tiles (k = 2^17 + 1 at m = 1; the transposed X tile holds 512 KiB):
// the slot must not pick up any X value (Inf sits at every pruned position 7 mod 8).
TEST(Reference, PaddingSlotNeverReadAcrossKTiles) {
  const Pattern p = Pattern::element(2, 8);
  const std::int64_t rows = 2, cols = (std::int64_t(1) << 17) + 1;
  DenseMatrix dense(DType::f32, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      if (c % 8 < 2) dense.set(r, c, float((c + 3 * r) % 5) - 2.5f);
  CondensedMatrix w = condense(dense.view(), p);
  // The last window has one real column (position 0) and one padding slot, condensed at
  // position 1; move it to position 7 (still ascending, still value 0).
  const std::int64_t field = (w.layout.windows - 1) * 2 + 1;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint8_t* row = w.indices.data() + r * w.layout.index_row_bytes;
    ASSERT_EQ(get_packed(row, field, 3), 1u);
    set_packed(row, field, 3, 7);  // 1 | 7 = 7
    ASSERT_EQ(w.column_of(r, field), cols + 6);
  }
  w.validate();
  DenseMatrix x = random_matrix(DType::f32, 1, cols, 31);
  for (std::int64_t c = 7; c < cols; c += 8) x.set(0, c, std::numeric_limits<float>::infinity());
  const std::vector<double> want = [&] {
    DenseMatrix xf = x;
    for (std::int64_t c = 7; c < cols; c += 8) xf.set(0, c, 0.0f);
    return dense_matmul_f64(xf.view(), dense.view());
  }();
  for (Accumulate acc : {Accumulate::f32, Accumulate::f64}) {
    DenseMatrix y(DType::f32, 1, rows);
    reference_matmul(x.view(), w, y.mutable_view(), acc);
    for (std::int64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(std::isfinite(y.at(0, r))) << "row " << r << " acc " << int(acc);
      EXPECT_NEAR(y.at(0, r), want[std::size_t(r)], 1e-4 * (1 + std::abs(want[std::size_t(r)])));
    }
  }
}

// Rows of X never mix: NaN in every element of X row 0 leaves every other output row
// bit-identical to a clean run, across several tiles of X rows of different widths, with
// padding slots in the last window (1 real column there, so a padding slot in every row).
TEST(Reference, RowsOfXNeverMixAcrossTiles) {
  for (const char* text : {"2:8", "32:2:8", "2:8/bw4x2", "3:5/vw2"}) {
    const Pattern p = Pattern::parse(text);
    const std::int64_t rows = 35, cols = 3 * p.window_cols() + (p.kind == Granularity::block ? p.bk : 1);
    const CondensedMatrix w = condense(random_pattern_matrix(p, DType::bf16, rows, cols, 50).view(), p);
    for (std::int64_t m : {37, 70}) {
      SCOPED_TRACE(std::string(text) + " m = " + std::to_string(m));
      const DenseMatrix clean = random_matrix(DType::bf16, m, cols, 51);
      DenseMatrix poisoned = clean;
      for (std::int64_t c = 0; c < cols; ++c) poisoned.set(0, c, std::numeric_limits<float>::quiet_NaN());
      for (Accumulate acc : {Accumulate::f32, Accumulate::f64}) {
        DenseMatrix a(DType::f32, m, rows), b(DType::f32, m, rows);
        reference_matmul(clean.view(), w, a.mutable_view(), acc);
        reference_matmul(poisoned.view(), w, b.mutable_view(), acc);
        const auto* pa = static_cast<const std::byte*>(a.data());
        const auto* pb = static_cast<const std::byte*>(b.data());
        const std::size_t row_bytes = std::size_t(rows) * 4;
        EXPECT_EQ(std::memcmp(pa + row_bytes, pb + row_bytes, a.size_bytes() - row_bytes), 0) << int(acc);
        EXPECT_TRUE(std::isnan(b.at(0, 0))) << int(acc);
      }
    }
  }
}

// ---- error paths -----------------------------------------------------------------------------

struct Fixture {
  Pattern p = Pattern::parse("2:8");
  CondensedMatrix w = condense(random_pattern_matrix(p, DType::f16, 6, 20, 9).view(), p);
  DenseMatrix x = random_matrix(DType::f16, 3, 20, 10);
  DenseMatrix y = DenseMatrix(DType::f32, 3, 6);
};

template <class F>
void expect_invalid(F&& f, const std::string& argument) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected InvalidArgument naming " << argument;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
  }
}

TEST(ReferenceErrors, ShapeMismatch) {
  Fixture f;
  const DenseMatrix x_bad = random_matrix(DType::f16, 3, 21, 1);
  expect_invalid([&] { reference_matmul(x_bad.view(), f.w, f.y.mutable_view()); }, "x");
  expect_invalid([&] { reference_matmul_f64(x_bad.view(), f.w); }, "x");
  DenseMatrix y_rows(DType::f32, 2, 6), y_cols(DType::f32, 3, 7);
  expect_invalid([&] { reference_matmul(f.x.view(), f.w, y_rows.mutable_view()); }, "y");
  expect_invalid([&] { reference_matmul(f.x.view(), f.w, y_cols.mutable_view()); }, "y");
  expect_invalid([&] { dense_matmul_f64(f.x.view(), random_matrix(DType::f16, 4, 19, 2).view()); }, "x");
  MatrixView bad_ld = f.x.view();
  bad_ld.ld = 19;
  expect_invalid([&] { reference_matmul(bad_ld, f.w, f.y.mutable_view()); }, "x");
}

TEST(ReferenceErrors, DtypeMismatch) {
  Fixture f;
  const DenseMatrix x32 = random_matrix(DType::f32, 3, 20, 1);
  expect_invalid([&] { reference_matmul(x32.view(), f.w, f.y.mutable_view()); }, "x");
  expect_invalid([&] { reference_matmul_f64(x32.view(), f.w); }, "x");
  std::vector<double> y64(18);
  expect_invalid([&] { reference_matmul(f.x.view(), f.w, MutableMatrixView{DType::f64, y64.data(), 3, 6, 6}); }, "y");
  CondensedMatrix w_bad = f.w;
  w_bad.dtype = DType::u16;
  expect_invalid([&] { reference_matmul(f.x.view(), w_bad, f.y.mutable_view()); }, "w");
  expect_invalid([&] { reference_matmul(f.x.view(), f.w, f.y.mutable_view(), Accumulate(7)); }, "acc");
}

TEST(ReferenceErrors, NullData) {
  Fixture f;
  expect_invalid([&] { reference_matmul(MatrixView{DType::f16, nullptr, 3, 20, 20}, f.w, f.y.mutable_view()); }, "x");
  expect_invalid([&] { reference_matmul(f.x.view(), f.w, MutableMatrixView{DType::f32, nullptr, 3, 6, 6}); }, "y");
  expect_invalid([&] { reference_matmul_f64(MatrixView{DType::f16, nullptr, 3, 20, 20}, f.w); }, "x");
}

TEST(ReferenceErrors, MalformedWeight) {
  Fixture f;
  CondensedMatrix short_values = f.w;
  short_values.values.pop_back();
  expect_invalid([&] { reference_matmul(f.x.view(), short_values, f.y.mutable_view()); }, "w");
  CondensedMatrix short_indices = f.w;
  short_indices.indices.pop_back();
  expect_invalid([&] { reference_matmul_f64(f.x.view(), short_indices); }, "w");
  CondensedMatrix extra_columns = f.w;
  extra_columns.columns.push_back(0);
  expect_invalid([&] { reference_matmul(f.x.view(), extra_columns, f.y.mutable_view()); }, "w");
  CondensedMatrix bad_layout = f.w;
  bad_layout.layout.value_cols += 1;
  expect_invalid([&] { reference_matmul(f.x.view(), bad_layout, f.y.mutable_view()); }, "w");
  // Positions not ascending: the full validation runs before any product.
  CondensedMatrix bad_index = f.w;
  std::fill(bad_index.indices.begin(), bad_index.indices.end(), std::uint8_t(0));
  EXPECT_THROW(reference_matmul(f.x.view(), bad_index, f.y.mutable_view()), FormatError);
  EXPECT_THROW(reference_matmul_f64(f.x.view(), bad_index), FormatError);
}

// ---- relative_error ------------------------------------------------------------------------

TEST(RelativeError, Semantics) {
  DenseMatrix g(DType::f32, 1, 3);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  g.set(0, 0, 3.0f);
  g.set(0, 1, 4.0f);
  g.set(0, 2, 0.0f);
  EXPECT_EQ(relative_error(g.view(), {3, 4, 0}), 0.0);
  EXPECT_NEAR(relative_error(g.view(), {3, 4, 5}), 5.0 / std::sqrt(50.0), 1e-15);
  EXPECT_TRUE(std::isnan(relative_error(g.view(), {3, 4, nan})));  // NaN on one side only
  EXPECT_EQ(relative_error(g.view(), {3, 4, inf}), inf);
  g.set(0, 2, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(relative_error(g.view(), {3, 4, 0})));
  EXPECT_EQ(relative_error(g.view(), {3, 4, nan}), 0.0);  // both NaN: agree
  g.set(0, 2, std::numeric_limits<float>::infinity());
  EXPECT_EQ(relative_error(g.view(), {3, 4, inf}), 0.0);
  EXPECT_EQ(relative_error(g.view(), {3, 4, -inf}), inf);
  DenseMatrix z(DType::f16, 1, 2);
  EXPECT_EQ(relative_error(z.view(), {0, 0}), 0.0);  // 0 / 0
  z.set(0, 1, 1.0f);
  EXPECT_EQ(relative_error(z.view(), {0, 0}), inf);
  expect_invalid([&] { relative_error(z.view(), {0, 0, 0}); }, "ref");
  expect_invalid([&] { relative_error(MatrixView{DType::f32, nullptr, 1, 2, 2}, {0, 0}); }, "got");
}

TEST(DenseMatmulF64, SmallExactProduct) {
  DenseMatrix x(DType::f32, 2, 3), w(DType::bf16, 2, 3);
  const float xv[] = {1, 2, 3, -1, 0.5f, 4}, wv[] = {1, 0, -2, 0.25f, 8, 1};
  for (int i = 0; i < 6; ++i) {
    x.set(i / 3, i % 3, xv[i]);
    w.set(i / 3, i % 3, wv[i]);
  }
  const std::vector<double> y = dense_matmul_f64(x.view(), w.view());
  ASSERT_EQ(y.size(), 4u);
  EXPECT_EQ(y[0], 1 - 6);
  EXPECT_EQ(y[1], 0.25 + 16 + 3);
  EXPECT_EQ(y[2], -1 - 8);
  EXPECT_EQ(y[3], -0.25 + 4 + 4);
}

}  // namespace
}  // namespace sparsenm
