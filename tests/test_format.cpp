// Canonical condensed format: layout numbers, bit packing, condense/expand, check_pattern,
// CondensedMatrix::validate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"

using namespace sparsenm;

namespace {

// ---------------------------------------------------------------------------------------------
// Helpers

/// Replaces field j of a packed row (clears its bits first; set_packed only ORs).
void put_field(std::uint8_t* row, std::int64_t j, int bits, unsigned v) {
  for (int i = 0; i < bits; ++i) {
    std::int64_t bit = j * bits + i;
    row[bit >> 3] = std::uint8_t(row[bit >> 3] & ~(1u << (bit & 7)));
  }
  set_packed(row, j, bits, v);
}

bool same_bytes(const DenseMatrix& a, const DenseMatrix& b) {
  return a.dtype() == b.dtype() && a.rows() == b.rows() && a.cols() == b.cols() && a.bytes() == b.bytes();
}

bool same_condensed(const CondensedMatrix& a, const CondensedMatrix& b) {
  return a.layout == b.layout && a.dtype == b.dtype && a.values == b.values && a.indices == b.indices &&
         a.columns == b.columns;
}

bool is_nonzero(const DenseMatrix& d, std::int64_t r, std::int64_t c) {
  float v = d.at(r, c);
  return v != 0.0f || std::isnan(v);
}

/// Independent check of the canonical choice: for each group x window, the units stored are
/// all the nonzero units plus the lowest others; every row of the group uses the same units.
/// (Not for venom; venom has its own check below.)
void expect_canonical_units(const DenseMatrix& d, const CondensedMatrix& c) {
  const Pattern& p = c.pattern();
  const int unit = p.kind == Granularity::block ? p.bk : 1;
  const int vpw = p.values_per_window();
  const int g = p.row_group();
  for (std::int64_t r0 = 0; r0 < d.rows(); r0 += g) {
    const std::int64_t r1 = std::min(d.rows(), r0 + g);
    for (std::int64_t w = 0; w < c.layout.windows; ++w) {
      std::set<std::int64_t> nz;  // units holding a nonzero in the group
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t col = w * p.window_cols(); col < std::min(d.cols(), (w + 1) * p.window_cols()); ++col)
          if (is_nonzero(d, r, col)) nz.insert((col - w * p.window_cols()) / unit);
      std::vector<std::int64_t> expect(nz.begin(), nz.end());
      for (std::int64_t u = 0; std::int64_t(expect.size()) < p.n; ++u)
        if (!nz.count(u)) expect.push_back(u);
      std::sort(expect.begin(), expect.end());
      for (std::int64_t r = r0; r < r1; ++r)
        for (int j = 0; j < p.n; ++j)
          for (int e = 0; e < unit; ++e) {
            std::int64_t col = c.column_of(r, w * vpw + j * unit + e);
            ASSERT_EQ(col, w * p.window_cols() + expect[std::size_t(j)] * unit + e)
                << p.str() << " row " << r << " window " << w << " slot " << j;
          }
    }
  }
}

void expect_canonical_venom(const DenseMatrix& d, const CondensedMatrix& c) {
  const Pattern& p = c.pattern();
  for (std::int64_t r0 = 0; r0 < d.rows(); r0 += p.v) {
    const std::int64_t r1 = std::min(d.rows(), r0 + p.v);
    for (std::int64_t w = 0; w < c.layout.windows; ++w) {
      std::set<int> nz;
      for (std::int64_t r = r0; r < r1; ++r)
        for (int u = 0; u < p.m && w * p.m + u < d.cols(); ++u)
          if (is_nonzero(d, r, w * p.m + u)) nz.insert(u);
      std::vector<int> sel(nz.begin(), nz.end());
      for (int u = 0; sel.size() < 4; ++u)
        if (!nz.count(u)) sel.push_back(u);
      std::sort(sel.begin(), sel.end());
      const std::uint8_t* crow = c.columns.data() + (r0 / p.v) * c.layout.colloc_row_bytes;
      for (int q = 0; q < 4; ++q)
        ASSERT_EQ(int(get_packed(crow, w * 4 + q, c.layout.colloc_bits)), sel[std::size_t(q)]);
      for (std::int64_t r = r0; r < r1; ++r) {
        std::vector<int> pos;
        for (int q = 0; q < 4; ++q)
          if (w * p.m + sel[std::size_t(q)] < d.cols() && is_nonzero(d, r, w * p.m + sel[std::size_t(q)]))
            pos.push_back(q);
        for (int q = 0; pos.size() < 2; ++q)
          if (std::find(pos.begin(), pos.end(), q) == pos.end()) pos.push_back(q);
        std::sort(pos.begin(), pos.end());
        for (int j = 0; j < 2; ++j)
          ASSERT_EQ(c.column_of(r, w * 2 + j), w * p.m + sel[std::size_t(pos[std::size_t(j)])]);
      }
    }
  }
}

std::vector<Pattern> all_patterns() {
  std::vector<Pattern> ps;
  for (const char* t : {"2:4", "1:4", "1:5", "3:7", "2:8", "4:10", "5:16", "8:32", "30:100", "64:256", "255:256",
                        "2:4/vw4", "1:5/vw2", "3:7/vw3", "2:8/vw16", "4:16/vw8", "10:100/vw5", "2:4/vw256",
                        "2:4/bw2x2", "1:5/bw3x2", "2:7/bw1x3", "1:8/bw4x1", "3:10/bw2x4", "16:32/bw2x2",
                        "1:4/bw1x1", "32:2:4", "32:2:5", "64:2:7", "32:2:8", "32:2:10", "128:2:16", "32:2:100",
                        "32:2:256", "2:4/hw"})
    ps.push_back(Pattern::parse(t));
  return ps;
}

// ---------------------------------------------------------------------------------------------
// Layout

TEST(Layout, HandComputedElement) {
  FormatLayout l = FormatLayout::of(Pattern::element(2, 8), 11008, 4096);
  EXPECT_EQ(l.windows, 512);
  EXPECT_EQ(l.value_cols, 1024);
  EXPECT_EQ(l.index_bits, 3);
  EXPECT_EQ(l.index_rows, 11008);
  EXPECT_EQ(l.index_fields, 1024);
  EXPECT_EQ(l.index_row_bytes, 384);
  EXPECT_EQ(l.colloc_rows, 0);
  EXPECT_EQ(l.colloc_bits, 0);
  EXPECT_EQ(l.value_bytes(DType::f16), std::size_t(11008) * 1024 * 2);
  EXPECT_EQ(l.index_bytes(), std::size_t(11008) * 384);
  EXPECT_EQ(l.colloc_bytes(), 0u);
  EXPECT_EQ(l.str(), "2:8 11008x4096: 512 windows, values 11008x1024, indices 11008x384 B (1024 x 3 bit)");

  FormatLayout t = FormatLayout::of(Pattern::element(1, 256), 3, 257);  // tail of 1 column
  EXPECT_EQ(t.windows, 2);
  EXPECT_EQ(t.value_cols, 2);
  EXPECT_EQ(t.index_bits, 8);
  EXPECT_EQ(t.index_row_bytes, 2);

  FormatLayout s = FormatLayout::of(Pattern::element(3, 5), 7, 11);
  EXPECT_EQ(s.windows, 3);
  EXPECT_EQ(s.value_cols, 9);
  EXPECT_EQ(s.index_bits, 3);
  EXPECT_EQ(s.index_fields, 9);
  EXPECT_EQ(s.index_row_bytes, 4);  // 27 bits

  FormatLayout h = FormatLayout::of(Pattern::hw24(), 1, 1);
  EXPECT_EQ(h.windows, 1);
  EXPECT_EQ(h.value_cols, 2);
  EXPECT_EQ(h.index_bits, 2);
  EXPECT_EQ(h.index_row_bytes, 1);
}

TEST(Layout, HandComputedVectorBlock) {
  FormatLayout v = FormatLayout::of(Pattern::vector(2, 4, 4), 10, 10);
  EXPECT_EQ(v.windows, 3);
  EXPECT_EQ(v.value_cols, 6);
  EXPECT_EQ(v.index_bits, 2);
  EXPECT_EQ(v.index_rows, 3);  // 4 + 4 + 2 rows
  EXPECT_EQ(v.index_fields, 6);
  EXPECT_EQ(v.index_row_bytes, 2);

  FormatLayout b = FormatLayout::of(Pattern::block(2, 4, 2, 3), 5, 13);
  EXPECT_EQ(b.pattern.window_cols(), 12);
  EXPECT_EQ(b.windows, 2);
  EXPECT_EQ(b.value_cols, 12);  // 2 windows * 2 blocks * 3 values
  EXPECT_EQ(b.index_bits, 2);
  EXPECT_EQ(b.index_rows, 3);
  EXPECT_EQ(b.index_fields, 4);
  EXPECT_EQ(b.index_row_bytes, 1);
}

TEST(Layout, HandComputedVenom) {
  FormatLayout l = FormatLayout::of(Pattern::venom(64, 10), 100, 25);
  EXPECT_EQ(l.windows, 3);
  EXPECT_EQ(l.value_cols, 6);
  EXPECT_EQ(l.index_bits, 2);
  EXPECT_EQ(l.index_rows, 100);
  EXPECT_EQ(l.index_fields, 6);
  EXPECT_EQ(l.index_row_bytes, 2);
  EXPECT_EQ(l.colloc_bits, 4);
  EXPECT_EQ(l.colloc_rows, 2);
  EXPECT_EQ(l.colloc_fields, 12);
  EXPECT_EQ(l.colloc_row_bytes, 6);
  EXPECT_EQ(l.colloc_bytes(), 12u);
  EXPECT_NE(l.str().find("columns 2x6 B (12 x 4 bit)"), std::string::npos) << l.str();
}

TEST(Layout, RejectsBadDims) {
  try {
    FormatLayout::of(Pattern::element(2, 4), 0, 8);
    FAIL() << "rows 0 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "rows");
    EXPECT_NE(std::string(e.what()).find("got 0"), std::string::npos);
  }
  try {
    FormatLayout::of(Pattern::element(2, 4), 4, -3);
    FAIL() << "cols -3 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "cols");
  }
  EXPECT_THROW(FormatLayout::of(Pattern::element(2, 4), std::int64_t(1) << 40, 8), InvalidArgument);
  EXPECT_THROW(FormatLayout::of(Pattern::element(2, 4), std::int64_t(1) << 30, std::int64_t(1) << 30),
               InvalidArgument);
  Pattern bad;
  bad.n = 4;
  bad.m = 4;
  try {
    FormatLayout::of(bad, 4, 4);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "pattern");
  }
}

TEST(Layout, Footprint) {
  FormatLayout l = FormatLayout::of(Pattern::element(2, 4), 8, 16);
  Footprint f = footprint(l, DType::f16);
  EXPECT_EQ(f.value_bytes, 8u * 8 * 2);
  EXPECT_EQ(f.index_bytes, 8u * 2);  // 8 fields x 2 bit
  EXPECT_EQ(f.colloc_bytes, 0u);
  EXPECT_EQ(f.dense_bytes, 8u * 16 * 2);
  EXPECT_EQ(f.total(), 144u);
  EXPECT_DOUBLE_EQ(f.ratio(), 144.0 / 256.0);
  EXPECT_NE(f.str().find("0.5625"), std::string::npos) << f.str();

  Footprint v = footprint(FormatLayout::of(Pattern::venom(32, 8), 64, 64), DType::bf16);
  EXPECT_EQ(v.value_bytes, 64u * 16 * 2);
  EXPECT_EQ(v.index_bytes, 64u * 4);      // 16 fields x 2 bit
  EXPECT_EQ(v.colloc_bytes, 2u * 12);     // 32 fields x 3 bit
  EXPECT_NE(v.str().find("columns"), std::string::npos);
  EXPECT_EQ(Footprint{}.ratio(), 0.0);
}

// ---------------------------------------------------------------------------------------------
// Bit packing

TEST(Packing, EveryWidthMatchesBitByBitReference) {
  test::SplitMix rng(7);
  for (int bits = 1; bits <= 8; ++bits) {
    const int fields = 203;
    std::vector<unsigned> vals(fields);
    for (auto& v : vals) v = unsigned(rng.below(1u << bits));
    std::vector<std::uint8_t> packed((fields * bits + 7) / 8 + 1, 0), ref(packed.size(), 0);
    for (int j = 0; j < fields; ++j) set_packed(packed.data(), j, bits, vals[std::size_t(j)]);
    for (int j = 0; j < fields; ++j)
      for (int i = 0; i < bits; ++i)
        if ((vals[std::size_t(j)] >> i) & 1u) ref[std::size_t((j * bits + i) / 8)] |= std::uint8_t(1u << ((j * bits + i) % 8));
    EXPECT_EQ(packed, ref) << bits << " bit";
    EXPECT_EQ(packed.back(), 0) << "wrote past the last field, " << bits << " bit";
    for (int j = 0; j < fields; ++j) ASSERT_EQ(get_packed(packed.data(), j, bits), vals[std::size_t(j)]) << bits;
    // all-ones fields do not bleed into neighbours
    std::vector<std::uint8_t> ones(packed.size(), 0);
    set_packed(ones.data(), 5, bits, (1u << bits) - 1u);
    for (int j = 0; j < fields; ++j) EXPECT_EQ(get_packed(ones.data(), j, bits), j == 5 ? (1u << bits) - 1u : 0u);
  }
}

TEST(Packing, WorkedExample3Bit) {  // docs/FORMAT.md: fields 2, 5, 0, 7 at 3 bit -> 2A 0E
  std::uint8_t row[2] = {0, 0};
  unsigned f[4] = {2, 5, 0, 7};
  for (int j = 0; j < 4; ++j) set_packed(row, j, 3, f[j]);
  EXPECT_EQ(row[0], 0x2A);
  EXPECT_EQ(row[1], 0x0E);
}

// ---------------------------------------------------------------------------------------------
// Condense: exact bytes on hand-made matrices

TEST(Condense, HandMade24) {
  DenseMatrix d(DType::f32, 1, 8);
  const float row[8] = {0, 5, 0, 7, 1, 0, 0, 0};
  for (int c = 0; c < 8; ++c) d.set(0, c, row[c]);
  CondensedMatrix c = condense(d.view(), Pattern::element(2, 4));
  ASSERT_EQ(c.values.size(), 16u);
  const float* v = reinterpret_cast<const float*>(c.values.data());
  EXPECT_EQ(v[0], 5.0f);
  EXPECT_EQ(v[1], 7.0f);
  EXPECT_EQ(v[2], 1.0f);
  EXPECT_EQ(v[3], 0.0f);
  ASSERT_EQ(c.indices.size(), 1u);
  EXPECT_EQ(c.indices[0], 1 | 3 << 2 | 0 << 4 | 1 << 6);  // positions 1,3 | 0,1
  EXPECT_TRUE(c.columns.empty());
}

TEST(Condense, HandMade28With3BitIndices) {
  DenseMatrix d(DType::f16, 1, 16);
  d.set(0, 2, 1.5f);
  d.set(0, 5, -2.0f);
  d.set(0, 8, 3.0f);
  d.set(0, 15, 4.0f);
  CondensedMatrix c = condense(d.view(), Pattern::element(2, 8));
  ASSERT_EQ(c.indices.size(), 2u);
  EXPECT_EQ(c.indices[0], 0x2A);
  EXPECT_EQ(c.indices[1], 0x0E);
  EXPECT_EQ(c.value(0, 0), 1.5f);
  EXPECT_EQ(c.value(0, 1), -2.0f);
  EXPECT_EQ(c.value(0, 2), 3.0f);
  EXPECT_EQ(c.value(0, 3), 4.0f);
}

TEST(Condense, PaddingSlotsInTailWindow) {
  // 4:8 on 9 columns: window 1 has one real column; 3 slots are padding (columns 9, 10, 11).
  DenseMatrix d(DType::bf16, 2, 9);
  d.set(0, 8, 2.0f);
  d.set(1, 0, 1.0f);
  CondensedMatrix c = condense(d.view(), Pattern::element(4, 8));
  EXPECT_EQ(c.column_of(0, 4), 8);
  EXPECT_EQ(c.column_of(0, 5), 9);
  EXPECT_EQ(c.column_of(0, 7), 11);
  EXPECT_EQ(c.value(0, 4), 2.0f);
  for (int s = 5; s < 8; ++s) EXPECT_EQ(c.value(0, s), 0.0f);
  EXPECT_EQ(c.column_of(1, 0), 0);
  EXPECT_EQ(c.column_of(1, 1), 1);
  EXPECT_EQ(c.column_of(1, 4), 8);  // empty tail window: lowest positions, the real column first
  EXPECT_TRUE(same_bytes(expand(c), d));
}

TEST(Condense, VenomHandMade) {
  // 32:2:8 on 32 x 8: the slab uses columns 1, 3, 6 -> selected {1, 3, 6} + lowest free {0}
  // = {0, 1, 3, 6}.
  DenseMatrix d(DType::f32, 32, 8);
  d.set(0, 1, 1.0f);
  d.set(0, 6, 2.0f);
  d.set(5, 3, 3.0f);
  d.set(31, 6, 4.0f);
  d.set(31, 0, -1.0f);
  CondensedMatrix c = condense(d.view(), Pattern::venom(32, 8));
  ASSERT_EQ(c.columns.size(), 2u);  // 4 fields x 3 bit
  EXPECT_EQ(get_packed(c.columns.data(), 0, 3), 0u);
  EXPECT_EQ(get_packed(c.columns.data(), 1, 3), 1u);
  EXPECT_EQ(get_packed(c.columns.data(), 2, 3), 3u);
  EXPECT_EQ(get_packed(c.columns.data(), 3, 3), 6u);
  EXPECT_EQ(c.columns[0], 0xC8);  // docs/FORMAT.md section 10
  EXPECT_EQ(c.columns[1], 0x0C);
  EXPECT_EQ(c.indices[0], 1 | 3 << 2);           // row 0: positions 1 (col 1), 3 (col 6)
  EXPECT_EQ(c.indices[5], 0 | 2 << 2);           // row 5: position 2 (col 3) + lowest free 0
  EXPECT_EQ(c.indices[31], 0 | 3 << 2);          // row 31: col 0, col 6
  EXPECT_EQ(c.indices[7], 0 | 1 << 2);           // empty row: positions 0, 1
  EXPECT_EQ(c.value(31, 0), -1.0f);
  EXPECT_EQ(c.value(31, 1), 4.0f);
  EXPECT_TRUE(same_bytes(expand(c), d));
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(Condense, RoundTripEveryPatternDtypeAndTail) {
  test::SplitMix rng(2024);
  int cases = 0;
  for (const Pattern& p : all_patterns()) {
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      for (int rep = 0; rep < 2; ++rep) {
        const int g = p.row_group();
        // rows: a few groups plus a partial one (sometimes none); cols: windows plus a tail.
        const std::int64_t rows = g * std::int64_t(1 + rng.below(g >= 32 ? 2 : 4)) + std::int64_t(rng.below(std::uint64_t(g)));
        const std::int64_t wc = p.window_cols();
        const std::int64_t max_windows = std::max<std::int64_t>(1, 1024 / wc);
        const std::int64_t cols = wc * std::int64_t(rng.below(std::uint64_t(std::min<std::int64_t>(4, max_windows)))) +
                                  1 + std::int64_t(rng.below(std::uint64_t(wc)));
        const double zf = rep == 0 ? 0.0 : 0.3;
        DenseMatrix d = random_pattern_matrix(p, t, rows, cols, rng.next(), zf);
        SCOPED_TRACE(p.str() + " " + std::string(to_string(t)) + " " + std::to_string(rows) + "x" +
                     std::to_string(cols));
        PatternCheck chk = check_pattern(d.view(), p);
        ASSERT_TRUE(chk.ok) << chk.message;
        EXPECT_EQ(chk.violations, 0);
        CondensedMatrix c = condense(d.view(), p);
        EXPECT_EQ(c.layout, FormatLayout::of(p, rows, cols));
        EXPECT_EQ(c.dtype, t);
        ASSERT_NO_THROW(c.validate());
        DenseMatrix e = expand(c);
        ASSERT_TRUE(same_bytes(e, d));
        CondensedMatrix c2 = condense(e.view(), p);
        ASSERT_TRUE(same_condensed(c, c2));
        if (p.kind == Granularity::venom)
          expect_canonical_venom(d, c);
        else
          expect_canonical_units(d, c);
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, int(all_patterns().size()) * 6);
}

TEST(Condense, StridedViewAndNaNAndNegativeZero) {
  // A view with ld > cols; NaN counts as nonzero and keeps its payload; -0 counts as zero.
  const Pattern p = Pattern::element(2, 4);
  std::vector<std::uint16_t> buf(3 * 11, 0x1234);  // junk in the gap columns 8..10
  auto at = [&](int r, int c) -> std::uint16_t& { return buf[std::size_t(r * 11 + c)]; };
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 8; ++c) at(r, c) = 0;
  at(0, 1) = 0x7e01;  // NaN with payload
  at(0, 2) = 0x3c00;  // 1.0
  at(1, 1) = 0x8000;  // -0: counts as zero
  at(1, 3) = 0x4000;  // 2.0
  at(1, 6) = 0x8000;
  MatrixView v{DType::f16, buf.data(), 3, 8, 11};
  CondensedMatrix c = condense(v, p);
  const auto* vals = reinterpret_cast<const std::uint16_t*>(c.values.data());
  EXPECT_EQ(vals[0], 0x7e01);  // row 0, window 0: columns 1, 2
  EXPECT_EQ(vals[1], 0x3c00);
  EXPECT_EQ(c.column_of(1, 0), 0);  // row 1: -0 at col 1 is free; col 0 is the lowest free
  EXPECT_EQ(c.column_of(1, 1), 3);
  EXPECT_EQ(c.column_of(1, 2), 4);  // window 1: -0 at col 6 is free: positions 4, 5
  EXPECT_EQ(c.column_of(1, 3), 5);
  EXPECT_EQ(vals[c.layout.value_cols + 1], 0x4000);
  DenseMatrix e = expand(c);
  for (int r = 0; r < 3; ++r)
    for (int col = 0; col < 8; ++col) {
      std::uint16_t got;
      std::memcpy(&got, static_cast<const std::uint8_t*>(e.data()) + 2 * (r * 8 + col), 2);
      const bool kept = (c.column_of(r, 0) == col || c.column_of(r, 1) == col || c.column_of(r, 2) == col ||
                         c.column_of(r, 3) == col);
      EXPECT_EQ(got, kept ? at(r, col) : 0) << r << "," << col;
    }
  // A NaN that is not kept would be a violation: 3 "nonzeros" in the window.
  at(0, 0) = 0x7e00;
  PatternCheck chk = check_pattern(v, p);
  EXPECT_FALSE(chk.ok);
  EXPECT_EQ(chk.first_row, 0);
  EXPECT_EQ(chk.first_col, 0);
}

TEST(Condense, RejectsBadInput) {
  DenseMatrix d(DType::f32, 4, 8);
  EXPECT_THROW(condense(MatrixView{DType::u8, d.data(), 4, 8, 8}, Pattern::element(2, 4)), InvalidArgument);
  EXPECT_THROW(condense(MatrixView{DType::f32, d.data(), 4, 8, 7}, Pattern::element(2, 4)), InvalidArgument);
  EXPECT_THROW(condense(MatrixView{DType::f32, nullptr, 4, 8, 8}, Pattern::element(2, 4)), InvalidArgument);
  try {
    condense(MatrixView{DType::f32, d.data(), 0, 8, 8}, Pattern::element(2, 4));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "rows");
  }
  Pattern bad = Pattern::element(2, 4);
  bad.m = 300;
  EXPECT_THROW(condense(d.view(), bad), InvalidArgument);
  EXPECT_THROW(check_pattern(d.view(), bad), InvalidArgument);
  EXPECT_TRUE(check_pattern(MatrixView{DType::f32, nullptr, 0, 0, 0}, Pattern::element(2, 4)).ok);
}

// ---------------------------------------------------------------------------------------------
// Planted violations

struct Plant {
  std::int64_t row, col;
};

/// Plants one violation in group gi, window w of a clean matrix: sets an entry whose unit is
/// zero for the whole group (venom: a column outside the 4 selected, or a 3rd value in a row).
Plant plant(DenseMatrix& d, const Pattern& p, std::int64_t gi, std::int64_t w, bool venom_row_rule = false) {
  const int unit = p.kind == Granularity::block ? p.bk : 1;
  const std::int64_t r0 = gi * p.row_group(), r1 = std::min(d.rows(), r0 + p.row_group());
  const std::int64_t c0 = w * p.window_cols(), c1 = std::min(d.cols(), c0 + p.window_cols());
  if (p.kind == Granularity::venom && venom_row_rule) {
    // a selected column (nonzero somewhere in the slab) where row r0 is zero
    for (std::int64_t c = c0; c < c1; ++c) {
      bool used = false;
      for (std::int64_t r = r0; r < r1; ++r) used |= is_nonzero(d, r, c);
      if (used && !is_nonzero(d, r0, c)) {
        d.set(r0, c, 0.75f);
        return {r0, c};
      }
    }
    ADD_FAILURE() << "no place to plant";
    return {-1, -1};
  }
  for (std::int64_t c = c0; c < c1; c += unit) {
    bool used = false;
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t e = c; e < std::min(c1, c + unit); ++e) used |= is_nonzero(d, r, e);
    if (!used) {
      d.set(r1 - 1, std::min(c1, c + unit) - 1, -0.5f);
      return {r1 - 1, c};
    }
  }
  ADD_FAILURE() << "no place to plant";
  return {-1, -1};
}

TEST(CheckPattern, FindsPlantedViolations) {
  test::SplitMix rng(99);
  for (const Pattern& p : all_patterns()) {
    const int g = p.row_group();
    const int unit = p.kind == Granularity::block ? p.bk : 1;
    const int selected = p.kind == Granularity::venom ? 4 : p.n;
    if (selected >= p.m) continue;  // 32:2:4: every column is selectable, only the row rule applies
    for (DType t : {DType::f32, DType::bf16}) {
      const std::int64_t rows = 3 * g + (g > 1 ? g / 2 : 0);
      const std::int64_t wc = p.window_cols();
      const std::int64_t cols = 3 * wc + std::max<std::int64_t>(1, wc / 3) * 0 + (wc > unit ? unit : 0);
      SCOPED_TRACE(p.str() + " " + std::string(to_string(t)));
      DenseMatrix d = random_pattern_matrix(p, t, rows, cols, rng.next());
      ASSERT_TRUE(check_pattern(d.view(), p).ok);
      // two violations: group 2 window 1, and group 1 window 2 (the first in row-major order)
      plant(d, p, 2, 1);
      Plant first = plant(d, p, 1, 2);
      PatternCheck chk = check_pattern(d.view(), p);
      EXPECT_FALSE(chk.ok);
      EXPECT_EQ(chk.violations, 2);
      EXPECT_EQ(chk.first_row, 1 * g);
      EXPECT_EQ(chk.first_col, 2 * wc);
      EXPECT_NE(chk.message.find(std::to_string(g)), std::string::npos) << chk.message;
      EXPECT_NE(chk.message.find(p.str()), std::string::npos) << chk.message;
      try {
        condense(d.view(), p);
        FAIL() << "condense accepted a violating matrix";
      } catch (const PatternViolation& e) {
        EXPECT_EQ(e.row(), 1 * g);
        EXPECT_EQ(e.col(), 2 * wc);
        EXPECT_EQ(e.argument(), "dense");
        EXPECT_NE(std::string(e.what()).find(p.str()), std::string::npos) << e.what();
      }
      (void)first;
    }
  }
}

/// Brute force: violating group-windows, in order, straight from the definition.
std::vector<std::pair<std::int64_t, std::int64_t>> brute_violations(const DenseMatrix& d, const Pattern& p) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  const int unit = p.kind == Granularity::block ? p.bk : 1;
  const std::int64_t wc = p.window_cols();
  for (std::int64_t r0 = 0; r0 < d.rows(); r0 += p.row_group()) {
    const std::int64_t r1 = std::min(d.rows(), r0 + p.row_group());
    for (std::int64_t c0 = 0; c0 < d.cols(); c0 += wc) {
      std::set<std::int64_t> units;
      bool row_over = false;
      for (std::int64_t r = r0; r < r1; ++r) {
        int in_row = 0;
        for (std::int64_t c = c0; c < std::min(d.cols(), c0 + wc); ++c)
          if (is_nonzero(d, r, c)) {
            units.insert((c - c0) / unit);
            ++in_row;
          }
        row_over |= in_row > 2;
      }
      const bool bad = p.kind == Granularity::venom ? (units.size() > 4 || row_over)
                                                     : std::int64_t(units.size()) > p.n;
      if (bad) out.push_back({r0, c0});
    }
  }
  return out;
}

TEST(CheckPattern, MatchesBruteForceOnRandomMatrices) {
  test::SplitMix rng(4242);
  for (const Pattern& p : all_patterns()) {
    for (double density : {0.02, 0.1, 0.4}) {
      const std::int64_t rows = p.row_group() * 2 + std::int64_t(rng.below(std::uint64_t(p.row_group()))) + 1;
      const std::int64_t cols = p.window_cols() * 2 + std::int64_t(rng.below(std::uint64_t(p.window_cols())));
      DenseMatrix d(DType::f16, rows, cols);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
          if (rng.uniform() < density) d.set(r, c, rng.uniform() < 0.05 ? NAN : 1.0f);
          else if (rng.uniform() < 0.05) d.set(r, c, -0.0f);
      SCOPED_TRACE(p.str() + " density " + std::to_string(density));
      const auto expect = brute_violations(d, p);
      const PatternCheck chk = check_pattern(d.view(), p);
      ASSERT_EQ(chk.violations, std::int64_t(expect.size()));
      ASSERT_EQ(chk.ok, expect.empty());
      if (expect.empty()) {
        EXPECT_EQ(chk.first_row, -1);
        EXPECT_TRUE(chk.message.empty());
        CondensedMatrix c = condense(d.view(), p);
        DenseMatrix e = expand(c);
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t col = 0; col < cols; ++col)
            ASSERT_EQ(is_nonzero(e, r, col), is_nonzero(d, r, col));
      } else {
        EXPECT_EQ(chk.first_row, expect[0].first);
        EXPECT_EQ(chk.first_col, expect[0].second);
        EXPECT_FALSE(chk.message.empty());
        EXPECT_THROW(condense(d.view(), p), PatternViolation);
      }
    }
  }
}

TEST(CheckPattern, LargeMatrixParallelPathsAgree) {
  // Big enough for the OpenMP paths; one planted violation near the end.
  const Pattern p = Pattern::element(2, 8);
  DenseMatrix d = random_pattern_matrix(p, DType::bf16, 301, 1203, 11, 0.2);
  CondensedMatrix c = condense(d.view(), p);
  EXPECT_TRUE(same_bytes(expand(c), d));
  plant(d, p, 299, 140);
  PatternCheck chk = check_pattern(d.view(), p);
  EXPECT_EQ(chk.violations, 1);
  EXPECT_EQ(chk.first_row, 299);
  EXPECT_EQ(chk.first_col, 140 * 8);
}

TEST(CheckPattern, VenomRowRuleAndPartialSlab) {
  for (const char* text : {"32:2:4", "32:2:8", "64:2:16"}) {
    const Pattern p = Pattern::parse(text);
    SCOPED_TRACE(text);
    DenseMatrix d = random_pattern_matrix(p, DType::f16, 2 * p.v + 5, 3 * p.m + 2, 5);
    ASSERT_TRUE(check_pattern(d.view(), p).ok);
    // partial bottom slab (rows 2V .. 2V+4), window 1: a third value in row 2V
    Plant at = plant(d, p, 2, 1, /*venom_row_rule=*/true);
    ASSERT_GE(at.row, 0);
    PatternCheck chk = check_pattern(d.view(), p);
    EXPECT_FALSE(chk.ok);
    EXPECT_EQ(chk.violations, 1);
    EXPECT_EQ(chk.first_row, 2 * p.v);
    EXPECT_EQ(chk.first_col, p.m);
    EXPECT_NE(chk.message.find("row " + std::to_string(2 * p.v)), std::string::npos) << chk.message;
    EXPECT_THROW(condense(d.view(), p), PatternViolation);
  }
}

TEST(CheckPattern, ElementMessageNamesPlace) {
  DenseMatrix d(DType::f32, 3, 10);
  d.set(2, 4, 1.0f);
  d.set(2, 5, 1.0f);
  d.set(2, 7, 1.0f);
  PatternCheck chk = check_pattern(d.view(), Pattern::element(2, 4));
  EXPECT_FALSE(chk.ok);
  EXPECT_EQ(chk.first_row, 2);
  EXPECT_EQ(chk.first_col, 4);
  EXPECT_NE(chk.message.find("row 2, columns 4..7"), std::string::npos) << chk.message;
  EXPECT_NE(chk.message.find("3 nonzeros"), std::string::npos) << chk.message;
  // the partial last window (cols 8..9) cannot hold more than 2 anyway; 1:4 catches 2 there
  d.set(0, 8, 1.0f);
  d.set(0, 9, 1.0f);
  PatternCheck one = check_pattern(d.view(), Pattern::element(1, 4));
  EXPECT_EQ(one.violations, 2);
  EXPECT_EQ(one.first_row, 0);
  EXPECT_EQ(one.first_col, 8);
  EXPECT_NE(one.message.find("columns 8..9"), std::string::npos) << one.message;
}

// ---------------------------------------------------------------------------------------------
// validate() on corrupted condensed matrices

CondensedMatrix sample(const char* text, std::int64_t rows, std::int64_t cols, DType t = DType::f32) {
  const Pattern p = Pattern::parse(text);
  return condense(random_pattern_matrix(p, t, rows, cols, 17).view(), p);
}

void expect_format_error(const CondensedMatrix& c, const std::string& needle) {
  try {
    c.validate();
    ADD_FAILURE() << "validate accepted a corrupted matrix (" << needle << ")";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  EXPECT_THROW(expand(c), FormatError);
}

TEST(Validate, RejectsCorruptIndices) {
  CondensedMatrix c = sample("2:5", 6, 23);  // 3-bit fields, values 5..7 out of range
  ASSERT_NO_THROW(c.validate());
  CondensedMatrix bad = c;
  put_field(bad.indices.data() + 3 * bad.layout.index_row_bytes, 5, 3, 6);
  expect_format_error(bad, "indices row 3");
  expect_format_error(bad, "must be < 5");

  bad = c;  // non-ascending inside a window: swap fields 2 and 3 (window 1)
  std::uint8_t* row = bad.indices.data() + 4 * bad.layout.index_row_bytes;
  unsigned a = get_packed(row, 2, 3), b = get_packed(row, 3, 3);
  put_field(row, 2, 3, b);
  put_field(row, 3, 3, a);
  expect_format_error(bad, "not strictly ascending");

  bad = c;  // equal positions
  row = bad.indices.data();
  put_field(row, 1, 3, get_packed(row, 0, 3));
  expect_format_error(bad, "indices row 0");

  bad = c;  // 10 fields x 3 bit = 30 bits in 4 bytes: bit 31 must be zero
  bad.indices[std::size_t(bad.layout.index_row_bytes - 1)] |= 0x80;
  expect_format_error(bad, "unused bits");
}

TEST(Validate, RejectsNonzeroPaddingSlot) {
  CondensedMatrix c = sample("4:8", 5, 9, DType::f16);  // last window: 1 real column, 3 padding slots
  ASSERT_NO_THROW(c.validate());
  CondensedMatrix bad = c;
  store_from_float(DType::f16, bad.values.data(), std::size_t(2 * bad.layout.value_cols + 7), 1.0f);
  expect_format_error(bad, "values row 2");
  bad = c;  // NaN in padding
  store_from_float(DType::f16, bad.values.data(), std::size_t(4 * bad.layout.value_cols + 5),
                   std::numeric_limits<float>::quiet_NaN());
  expect_format_error(bad, "past the last column");
  bad = c;  // -0 in padding is the value 0: accepted
  store_from_float(DType::f16, bad.values.data(), std::size_t(4 * bad.layout.value_cols + 5), -0.0f);
  EXPECT_NO_THROW(bad.validate());

  CondensedMatrix b = sample("1:4/bw2x3", 4, 14);  // window 12 cols; window 1: cols 12..13 real
  ASSERT_NO_THROW(b.validate());
  // find a padding slot (column >= 14) in row 1 and poison it
  bool planted = false;
  for (std::int64_t s = 0; s < b.layout.value_cols && !planted; ++s)
    if (b.column_of(1, s) >= 14) {
      store_from_float(DType::f32, b.values.data(), std::size_t(b.layout.value_cols + s), 3.0f);
      planted = true;
    }
  ASSERT_TRUE(planted);
  expect_format_error(b, "values row 1");
}

TEST(Validate, RejectsCorruptVenomColumns) {
  CondensedMatrix c = sample("32:2:10", 70, 27);  // 4-bit column fields; 10..15 out of range
  ASSERT_NO_THROW(c.validate());
  CondensedMatrix bad = c;
  put_field(bad.columns.data() + bad.layout.colloc_row_bytes, 2, 4, 12);
  expect_format_error(bad, "columns row 1");
  bad = c;
  std::uint8_t* row = bad.columns.data();
  put_field(row, 1, 4, get_packed(row, 0, 4));
  expect_format_error(bad, "not strictly ascending");
  bad = c;  // venom positions: non-ascending
  row = bad.indices.data() + 9 * bad.layout.index_row_bytes;
  unsigned a = get_packed(row, 0, 2), b = get_packed(row, 1, 2);
  put_field(row, 0, 2, b);
  put_field(row, 1, 2, a);
  expect_format_error(bad, "indices row 9");
}

TEST(Validate, RejectsWrongSizesAndLayout) {
  CondensedMatrix c = sample("2:4/vw4", 9, 10);
  CondensedMatrix bad = c;
  bad.values.pop_back();
  expect_format_error(bad, "values hold");
  bad = c;
  bad.indices.push_back(0);
  expect_format_error(bad, "indices hold");
  bad = c;
  bad.columns.push_back(0);
  expect_format_error(bad, "columns hold");
  bad = c;
  bad.layout.value_cols += 1;
  expect_format_error(bad, "layout");
  bad = c;
  bad.layout.pattern.m = 300;
  expect_format_error(bad, "bad layout");
  bad = c;
  bad.dtype = DType::u8;
  expect_format_error(bad, "dtype");
  bad = c;
  bad.dtype = DType::f16;  // values sized for f32
  expect_format_error(bad, "values hold");
}

TEST(Validate, RandomCorruptionIsRejectedOrHarmless) {
  // Flip random bits in indices / columns / values: validate() either throws FormatError or the
  // matrix is still valid, in which case expand() must work and put every stored value inside
  // the matrix. Never a crash (this test matters most under ASan).
  test::SplitMix rng(31337);
  for (const char* text : {"2:4", "3:7", "2:8/vw4", "1:5/bw2x3", "32:2:10", "64:2:256"}) {
    const Pattern p = Pattern::parse(text);
    const CondensedMatrix good = sample(text, p.row_group() + 3, p.window_cols() * 2 + 3, DType::f16);
    int rejected = 0;
    for (int trial = 0; trial < 200; ++trial) {
      CondensedMatrix c = good;
      std::vector<std::uint8_t>* target = &c.indices;
      if (!c.columns.empty() && (trial & 1)) target = &c.columns;
      const std::size_t byte = std::size_t(rng.below(target->size()));
      (*target)[byte] = std::uint8_t((*target)[byte] ^ (1u << rng.below(8)));
      if (trial % 5 == 0) {  // and sometimes a value past the end of the row's last window
        const std::size_t v = std::size_t(rng.below(c.values.size()));
        c.values[v] = std::byte(std::uint8_t(c.values[v]) ^ 0x40);
      }
      try {
        c.validate();
      } catch (const FormatError&) {
        ++rejected;
        continue;
      }
      DenseMatrix e = expand(c);
      EXPECT_EQ(e.rows(), c.rows());
      EXPECT_EQ(e.cols(), c.cols());
    }
    EXPECT_GT(rejected, 0) << text;
  }
}

TEST(Allocate, SizesAndErrors) {
  FormatLayout l = FormatLayout::of(Pattern::venom(32, 8), 40, 20);
  CondensedMatrix c = CondensedMatrix::allocate(l, DType::bf16);
  EXPECT_EQ(c.values.size(), l.value_bytes(DType::bf16));
  EXPECT_EQ(c.indices.size(), l.index_bytes());
  EXPECT_EQ(c.columns.size(), l.colloc_bytes());
  // all-zero storage is not valid (positions 0,0 are not ascending)
  EXPECT_THROW(c.validate(), FormatError);
  try {
    CondensedMatrix::allocate(l, DType::i32);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dtype");
  }
  FormatLayout tampered = l;
  tampered.index_rows = 1;
  try {
    CondensedMatrix::allocate(tampered, DType::f32);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "layout");
  }
}

}  // namespace
