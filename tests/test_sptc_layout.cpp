// sparsenm tests — plan-time packing for the sparse tensor cores (src/cuda/sptc/layout.hpp,
// pack.hpp): metadata placement against the hardware-side decoding, exact repacking of hw24 and
// element N:M weights, padding, and the unsupported cases.
#include <gtest/gtest.h>

#include <set>

#include "cuda/sptc/layout.hpp"
#include "cuda/sptc/pack.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/reference.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

using sptc::Packed24;

TEST(SptcLayout, MetaPlaceAndHardwareSideDecodingAreInverse) {
  const std::int64_t rows_pad = 192;  // 3 row blocks
  std::set<std::pair<std::int64_t, int>> seen;
  for (std::int64_t r = 0; r < rows_pad; ++r)
    for (std::int64_t gi = 0; gi < 48; ++gi)  // 3 k blocks
      for (int s = 0; s < 2; ++s) {
        sptc::MetaPlace p = sptc::meta_place(r, gi, s, rows_pad);
        ASSERT_TRUE(seen.insert({p.word, p.bit}).second) << "two slots share bits";
        const std::int64_t per_kb = (rows_pad / 64) * 128;
        const std::int64_t kb = p.word / per_kb, nb = (p.word % per_kb) / 128;
        const int thread = int(p.word % 128);
        sptc::MetaSource src = sptc::meta_source(nb, kb, thread, p.bit);
        EXPECT_EQ(src.row, r);
        EXPECT_EQ(src.group, gi);
        EXPECT_EQ(src.slot, s);
      }
  EXPECT_EQ(seen.size(), std::size_t(192 * 48 * 2));
}

TEST(SptcLayout, SelectorPairsAndWarpRows) {
  // Selector kk is served by quad lanes 2kk and 2kk+1; warp w serves rows 16w..16w+15; the low
  // half-word is row g, the high half-word row g+8; lane pair (0, 1) splits k 0..15 / 16..31.
  for (int thread = 0; thread < 128; ++thread) {
    const int w = thread / 32, lane = thread % 32, quad = lane % 4;
    sptc::MetaSource lo = sptc::meta_source(0, 0, thread, 0), hi = sptc::meta_source(0, 0, thread, 16);
    EXPECT_EQ(lo.row, 16 * w + lane / 4);
    EXPECT_EQ(hi.row, lo.row + 8);
    EXPECT_EQ(lo.group, 8 * (quad / 2) + 4 * (quad % 2));  // first group of its k32 step and half
    EXPECT_EQ(sptc::meta_source(0, 0, thread, 12).group, lo.group + 3);
  }
}

TEST(SptcLayout, RegisterAFragmentsCoverEveryValueOnceInThePtxLayout) {
  // PTX (sparse mma m16n8k32 / wgmma m64nNk32, f16/bf16 A): registers 0,2 hold row g, 1,3 row
  // g+8 (g = lane/4) of the warp's 16 rows; the first logical column is 4t (t = lane%4), +16 for
  // registers 2,3; each register holds the 2 kept values of that group of 4 (compressed column
  // = logical / 2).
  const std::int64_t rows_pad = 128, k_pad = 128;  // 2 row blocks x 2 k blocks
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  for (std::int64_t kb = 0; kb < k_pad / 64; ++kb)
    for (std::int64_t rb = 0; rb < rows_pad / 64; ++rb)
      for (int kk = 0; kk < 2; ++kk)
        for (int th = 0; th < 128; ++th)
          for (int reg = 0; reg < 4; ++reg) {
            const sptc::RaSource s = sptc::ra_frag_source(rb, kb, kk, th, reg);
            const int w = th / 32, g = (th % 32) / 4, t = th % 4;
            EXPECT_EQ(s.row, rb * 64 + 16 * w + g + (reg % 2 ? 8 : 0));
            const std::int64_t logical = kb * 64 + 32 * kk + 4 * t + (reg >= 2 ? 16 : 0);
            EXPECT_EQ(s.col, logical / 2);
            ASSERT_TRUE(seen.insert({s.row, s.col}).second && seen.insert({s.row, s.col + 1}).second);
          }
  EXPECT_EQ(seen.size(), std::size_t(rows_pad * k_pad / 2));
  // the packed array holds those values, low half first, in [kb][rb][kk][thread][reg] order
  DenseMatrix dense = random_pattern_matrix(Pattern::hw24(), DType::f16, 70, 200, 7, 0.1);
  const Packed24 p = sptc::pack_hw24(condense(dense.view(), Pattern::hw24()), 128);
  const std::vector<std::uint32_t> f = sptc::pack_ra_frags(p);
  ASSERT_EQ(f.size(), std::size_t(p.rows_pad * p.k_pad / 2 / 2));
  std::size_t i = 0;
  for (std::int64_t kb = 0; kb < p.k_pad / 64; ++kb)
    for (std::int64_t rb = 0; rb < p.rows_pad / 64; ++rb)
      for (int kk = 0; kk < 2; ++kk)
        for (int th = 0; th < 128; ++th)
          for (int reg = 0; reg < 4; ++reg, ++i) {
            const sptc::RaSource s = sptc::ra_frag_source(rb, kb, kk, th, reg);
            ASSERT_EQ(f[i] & 0xFFFFu, p.value(s.row, s.col));
            ASSERT_EQ(f[i] >> 16, p.value(s.row, s.col + 1));
          }
  // pack_ra: the same arrays with the k-blocks padded to a multiple of 4 (zero values, pad words)
  const sptc::PackedRa ra = sptc::pack_ra(p, 4);
  EXPECT_EQ(ra.k_pad, 256);  // 200 columns -> 4 k-blocks
  ASSERT_EQ(ra.frags.size(), std::size_t(ra.k_pad / 64 * (p.rows_pad / 64) * 1024));
  ASSERT_EQ(ra.meta.size(), std::size_t(ra.k_pad / 64 * (p.rows_pad / 64) * 128));
  for (std::size_t j = 0; j < ra.frags.size(); ++j) ASSERT_EQ(ra.frags[j], j < f.size() ? f[j] : 0u);
  for (std::size_t j = 0; j < ra.meta.size(); ++j) ASSERT_EQ(ra.meta[j], j < p.meta.size() ? p.meta[j] : sptc::kPadWord);
  const sptc::PackedRa ra5 = sptc::pack_ra(sptc::pack_hw24(condense(random_pattern_matrix(Pattern::hw24(), DType::f16, 64, 320, 8, 0.1).view(), Pattern::hw24()), 128), 4);
  EXPECT_EQ(ra5.k_pad, 512);  // 5 k-blocks -> 8
  EXPECT_THROW(sptc::pack_ra(p, 0), std::invalid_argument);
}

/// Dense expansion of a packed operand (values at the positions the metadata names).
std::vector<float> expand(const Packed24& p, DType t) {
  std::vector<float> d(std::size_t(p.rows * p.k), 0.f);
  for (std::int64_t r = 0; r < p.rows; ++r)
    for (std::int64_t gi = 0; gi < p.k / 4; ++gi)
      for (int s = 0; s < 2; ++s) {
        std::uint16_t bits = p.value(r, 2 * gi + s);
        float v = t == DType::f16 ? fp16_bits_to_float(bits) : bf16_bits_to_float(bits);
        d[std::size_t(r * p.k + gi * 4 + p.position(r, gi, s))] += v;
      }
  return d;
}

void expect_valid_codes_and_padding(const Packed24& p) {
  for (std::int64_t r = 0; r < p.rows_pad; ++r)
    for (std::int64_t gi = 0; gi < p.k_pad / 4; ++gi) {
      const int p0 = p.position(r, gi, 0), p1 = p.position(r, gi, 1);
      ASSERT_LT(p0, p1) << "row " << r << " group " << gi << ": ordered metadata needs ascending positions";
      if (r >= p.rows || gi >= p.k / 4) {
        EXPECT_EQ(p0, 0);
        EXPECT_EQ(p1, 1);
        EXPECT_EQ(p.value(r, 2 * gi), 0);
        EXPECT_EQ(p.value(r, 2 * gi + 1), 0);
      }
    }
}

void check_repack(const Pattern& pat, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed, double zf) {
  SCOPED_TRACE(pat.str() + " " + std::string(to_string(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
  DenseMatrix dense = random_pattern_matrix(pat, t, rows, cols, seed, zf);
  CondensedMatrix w = condense(dense.view(), pat);
  ASSERT_EQ(sptc::hw24_unsupported(w), "");
  Packed24 p = sptc::pack_hw24(w, 128);
  EXPECT_EQ(p.rows, rows);
  EXPECT_EQ(p.k, (cols + 3) / 4 * 4);
  EXPECT_EQ(p.rows_pad % 128, 0);
  EXPECT_EQ(p.k_pad % 64, 0);
  expect_valid_codes_and_padding(p);
  std::vector<float> got = expand(p, t);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < p.k; ++c) {
      const float want = c < cols ? dense.at(r, c) : 0.f;
      ASSERT_EQ(got[std::size_t(r * p.k + c)], want) << "row " << r << " col " << c;
    }
}

TEST(SptcLayout, Hw24RepacksExactlyWithTails) {
  check_repack(Pattern::hw24(), DType::f16, 1, 4, 1, 0.0);
  check_repack(Pattern::hw24(), DType::f16, 70, 130, 2, 0.0);   // tails in rows, k, k not /64
  check_repack(Pattern::hw24(), DType::bf16, 129, 66, 3, 0.3);  // cols % 4 != 0, stored zeros
  check_repack(Pattern::hw24(), DType::f16, 64, 256, 4, 0.0);
}

TEST(SptcLayout, ElementPatternsWithAtMostTwoPerGroupRepackExactly) {
  check_repack(Pattern::element(2, 4), DType::f16, 33, 100, 5, 0.0);
  check_repack(Pattern::element(1, 4), DType::bf16, 40, 77, 6, 0.0);
  check_repack(Pattern::element(2, 8), DType::f16, 65, 203, 7, 0.2);
  check_repack(Pattern::element(1, 16), DType::f16, 17, 64, 8, 0.0);
  check_repack(Pattern::element(2, 16), DType::bf16, 9, 300, 9, 0.0);
}

TEST(SptcLayout, ElementPatternsNotAlignedToFourAreCheckedPerMatrix) {
  // 1:3 puts at most 2 nonzeros in any aligned group of 4: packable.
  check_repack(Pattern::element(1, 3), DType::f16, 20, 61, 10, 0.0);
  // 2:3 can put 3 in a group of 4: columns 0,1 (window 0) and 3 (window 1) -> unsupported.
  DenseMatrix d(DType::f16, 2, 6);
  d.set(0, 0, 1.f);
  d.set(0, 1, 2.f);
  d.set(0, 3, 3.f);
  CondensedMatrix w = condense(d.view(), Pattern::element(2, 3));
  EXPECT_NE(sptc::hw24_unsupported(w).find("more than 2 nonzeros"), std::string::npos);
  EXPECT_THROW(sptc::pack_hw24(w, 128), InvalidArgument);
}

TEST(SptcLayout, FourOfEightIsRejectedWhenAGroupHoldsThree) {
  DenseMatrix d(DType::bf16, 3, 8);
  d.set(1, 4, 1.f);
  d.set(1, 5, 1.f);
  d.set(1, 7, 1.f);
  CondensedMatrix w = condense(d.view(), Pattern::element(4, 8));
  const std::string why = sptc::hw24_unsupported(w);
  EXPECT_NE(why.find("row 1"), std::string::npos) << why;
}

TEST(SptcLayout, UnsupportedDtypeAndPattern) {
  DenseMatrix d = random_pattern_matrix(Pattern::hw24(), DType::f32, 8, 16, 11, 0.0);
  CondensedMatrix w = condense(d.view(), Pattern::hw24());
  EXPECT_NE(sptc::hw24_unsupported(w).find("f16 or bf16"), std::string::npos);
  EXPECT_THROW(sptc::pack_hw24(w, 128), InvalidArgument);
  DenseMatrix v = random_pattern_matrix(Pattern::vector(2, 4, 4), DType::f16, 8, 16, 12, 0.0);
  CondensedMatrix wv = condense(v.view(), Pattern::vector(2, 4, 4));
  EXPECT_NE(sptc::hw24_unsupported(wv).find("pattern"), std::string::npos);
}

TEST(SptcLayout, Pack24RejectsBadSlotsAndAlignment) {
  auto ok = [](std::int64_t, std::vector<sptc::Slot>& s) {
    for (std::size_t j = 0; j < s.size(); ++j) s[j] = {std::int64_t(j / 2), int(j % 2), 0};
  };
  EXPECT_THROW(sptc::pack24(4, 2, 100, ok), std::invalid_argument);
  EXPECT_THROW(sptc::pack24(0, 2, 128, ok), std::invalid_argument);
  EXPECT_NO_THROW(sptc::pack24(4, 2, 128, ok));
  auto descending = [](std::int64_t, std::vector<sptc::Slot>& s) {
    for (std::size_t j = 0; j < s.size(); ++j) s[j] = {std::int64_t(j / 2), int(1 - j % 2), 0};
  };
  EXPECT_THROW(sptc::pack24(4, 2, 128, descending), std::invalid_argument);
  auto wrong_group = [](std::int64_t, std::vector<sptc::Slot>& s) {
    for (std::size_t j = 0; j < s.size(); ++j) s[j] = {0, int(j % 2), 0};
  };
  EXPECT_THROW(sptc::pack24(4, 2, 128, wrong_group), std::invalid_argument);
}

/// V:2:M -> gathered 2:4: expanding the packed operand through the gather table must give back
/// the dense weight exactly (every stored value at its column, nothing else), every gathered
/// index past the matrix must be -1, and padding must stay valid ordered metadata.
void check_venom(int v, int mw, DType t, std::int64_t rows, std::int64_t cols, int group_rows, std::uint64_t seed) {
  const Pattern pat = Pattern::venom(v, mw);
  SCOPED_TRACE(pat.str() + " " + std::to_string(rows) + "x" + std::to_string(cols) + " G=" + std::to_string(group_rows));
  DenseMatrix dense = random_pattern_matrix(pat, t, rows, cols, seed, 0.2);
  CondensedMatrix w = condense(dense.view(), pat);
  ASSERT_EQ(sptc::venom_unsupported(w), "");
  sptc::PackedVnm p = sptc::pack_venom(w, group_rows, 128);
  const bool spread = v < group_rows;
  EXPECT_EQ(p.rows_per_group, spread ? 32 : group_rows);
  EXPECT_EQ(p.a.rows, spread ? (rows + 31) / 32 * 64 : rows);
  EXPECT_EQ(p.a.k, w.layout.windows * 4);
  EXPECT_EQ(p.groups * group_rows, p.a.rows_pad);
  ASSERT_EQ(p.gather.size(), std::size_t(p.groups * p.a.k_pad));
  expect_valid_codes_and_padding(p.a);
  for (std::int32_t c : p.gather) ASSERT_TRUE(c >= -1 && c < cols);
  std::vector<float> got(std::size_t(rows * cols), 0.f);
  for (std::int64_t pr = 0; pr < p.a.rows_pad; ++pr)
    for (std::int64_t gi = 0; gi < p.a.k / 4; ++gi)
      for (int s = 0; s < 2; ++s) {
        const std::uint16_t bits = p.a.value(pr, 2 * gi + s);
        const float val = t == DType::f16 ? fp16_bits_to_float(bits) : bf16_bits_to_float(bits);
        const std::int64_t r = p.weight_row(pr, rows);
        if (r < 0) {
          ASSERT_EQ(bits, 0) << "padding row " << pr << " holds a value";
          continue;
        }
        const std::int32_t col = p.gather[std::size_t((pr / group_rows) * p.a.k_pad + gi * 4 + p.a.position(pr, gi, s))];
        if (col < 0) {
          ASSERT_EQ(val, 0.f) << "row " << r << ": a nonzero value reads a zero B row";
          continue;
        }
        got[std::size_t(r * cols + col)] += val;
      }
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) ASSERT_EQ(got[std::size_t(r * cols + c)], dense.at(r, c)) << "row " << r << " col " << c;
}

TEST(SptcLayout, VenomGathersExactlyEveryVAndM) {
  std::uint64_t seed = 40;
  for (int v : {32, 64, 128, 256})
    for (int mw : {4, 5, 7, 8, 10, 16, 32, 100})
      for (int g : {64, 128}) {
        if (v < g && !(v == 32 && g == 64)) continue;
        check_venom(v, mw, seed % 2 ? DType::bf16 : DType::f16, v + 37, 3 * mw + 3, g, seed);
        ++seed;
      }
}

TEST(SptcLayout, VenomRejectsOtherPatternsAndBadGroups) {
  DenseMatrix d = random_pattern_matrix(Pattern::hw24(), DType::f16, 8, 16, 13, 0.0);
  CondensedMatrix w = condense(d.view(), Pattern::hw24());
  EXPECT_NE(sptc::venom_unsupported(w).find("venom"), std::string::npos);
  EXPECT_THROW(sptc::pack_venom(w, 64, 128), InvalidArgument);
  DenseMatrix dv = random_pattern_matrix(Pattern::venom(64, 8), DType::f16, 70, 40, 14, 0.0);
  CondensedMatrix wv = condense(dv.view(), Pattern::venom(64, 8));
  EXPECT_THROW(sptc::pack_venom(wv, 96, 192), InvalidArgument);
  EXPECT_THROW(sptc::pack_venom(wv, 64, 96), InvalidArgument);
  EXPECT_THROW(sptc::pack_venom(wv, 128, 128), InvalidArgument);  // two slabs in one tile
  EXPECT_NO_THROW(sptc::pack_venom(wv, 64, 128));
  DenseMatrix df = random_pattern_matrix(Pattern::venom(64, 8), DType::f32, 70, 40, 15, 0.0);
  CondensedMatrix wf = condense(df.view(), Pattern::venom(64, 8));
  EXPECT_NE(sptc::venom_unsupported(wf).find("f16 or bf16"), std::string::npos);
}


// ---- V:2:M (venom) weights as hardware 2:4 (issue 4: run V:2:M on the 2:4 kernels) ----

/// First row holding more than 2 nonzeros in some aligned group of 4 columns, or -1.
std::int64_t first_row_over_two_per_group(const DenseMatrix& d) {
  for (std::int64_t r = 0; r < d.rows(); ++r)
    for (std::int64_t g = 0; g < d.cols(); g += 4) {
      int nz = 0;
      for (std::int64_t c = g; c < std::min(d.cols(), g + 4); ++c) nz += d.at(r, c) != 0.f;
      if (nz > 2) return r;
    }
  return -1;
}

/// Zeros every nonzero past the second of each aligned group of 4 (the result is still V:2:M:
/// condense stores the zeroed slots as explicit zeros).
DenseMatrix keep_two_per_group(const DenseMatrix& d) {
  DenseMatrix out = d;
  for (std::int64_t r = 0; r < d.rows(); ++r)
    for (std::int64_t g = 0; g < d.cols(); g += 4) {
      int nz = 0;
      for (std::int64_t c = g; c < std::min(d.cols(), g + 4); ++c)
        if (d.at(r, c) != 0.f && ++nz > 2) out.set(r, c, 0.f);
    }
  return out;
}

/// The 2:4 packing of venom weight w expands to exactly expand(w); the CPU reference gives the
/// same product through w and through the 2:4 form (re-condensed as hw24).
void expect_venom_repack_exact(const CondensedMatrix& w, bool check_product) {
  ASSERT_EQ(sptc::hw24_unsupported(w), "");
  const DenseMatrix want = expand(w);
  const std::int64_t rows = w.rows(), cols = w.cols();
  Packed24 p = sptc::pack_hw24(w, 128);
  EXPECT_EQ(p.rows, rows);
  EXPECT_EQ(p.k, (cols + 3) / 4 * 4);
  expect_valid_codes_and_padding(p);
  std::vector<float> got = expand(p, w.dtype);
  DenseMatrix as24(w.dtype, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < p.k; ++c) {
      const float g = got[std::size_t(r * p.k + c)];
      ASSERT_EQ(g, c < cols ? want.at(r, c) : 0.f) << "row " << r << " col " << c;
      if (c < cols) as24.set(r, c, g);
    }
  if (!check_product) return;
  const DenseMatrix x = random_matrix(w.dtype, 5, cols, 77);
  const std::vector<double> via_venom = reference_matmul_f64(x.view(), w);
  const std::vector<double> via_24 = reference_matmul_f64(x.view(), condense(as24.view(), Pattern::hw24()));
  ASSERT_EQ(via_venom.size(), via_24.size());
  for (std::size_t i = 0; i < via_venom.size(); ++i) ASSERT_EQ(via_venom[i], via_24[i]) << "y entry " << i;
}

TEST(SptcLayout, VenomRepacksTo24ExactlyEveryVAndMWithTails) {
  std::uint64_t seed = 500;
  int packed = 0, refused = 0;
  for (int v : {32, 64, 128, 256})
    for (int mw : {4, 5, 7, 8, 10, 16, 32, 100})
      for (DType t : {DType::f16, DType::bf16}) {
        const Pattern pat = Pattern::venom(v, mw);
        const std::int64_t rows = v + 13, cols = 2 * mw + 3 + (mw == 100 ? 0 : 40);  // tails in rows and cols
        SCOPED_TRACE(pat.str() + " " + std::string(to_string(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
        const DenseMatrix dense = random_pattern_matrix(pat, t, rows, cols, ++seed, 0.2);
        const CondensedMatrix w = condense(dense.view(), pat);
        const std::int64_t bad = first_row_over_two_per_group(dense);
        if (mw % 4 == 0) ASSERT_EQ(bad, -1) << "a V:2:M row with M % 4 == 0 cannot hold 3 in a group of 4";
        const std::string why = sptc::hw24_unsupported(w);
        if (bad < 0) {
          expect_venom_repack_exact(w, v == 32);
          ++packed;
        } else {
          ++refused;
          // exact per-row check: reported with the first offending row, never packed
          EXPECT_NE(why.find("row " + std::to_string(bad) + " has more than 2 nonzeros"), std::string::npos) << why;
          EXPECT_THROW(sptc::pack_hw24(w, 128), InvalidArgument);
        }
        // the same weight with every group of 4 cut to <= 2 nonzeros: always packable, exactly
        const DenseMatrix cut = keep_two_per_group(dense);
        expect_venom_repack_exact(condense(cut.view(), pat), v == 32);
      }
  // both branches ran: random M % 4 != 0 weights hit 3-in-a-group, M % 4 == 0 ones never do
  EXPECT_GE(packed, 32);
  EXPECT_GT(refused, 0);
  std::printf("venom -> 2:4: %d random weights packable as drawn, %d refused (3 nonzeros in a group of 4)\n", packed, refused);
}

TEST(SptcLayout, VenomWithThreeInAGroupOfFourIsUnsupported) {
  // 64:2:5: row 3 keeps columns 3, 4 (window 0 = cols 0..4) and 5, 6 (window 1 = cols 5..9):
  // the aligned group 4..7 holds 3 nonzeros.
  DenseMatrix d(DType::f16, 70, 12);
  d.set(0, 0, 1.f);
  d.set(3, 3, 1.f);
  d.set(3, 4, 2.f);
  d.set(3, 5, 3.f);
  d.set(3, 6, 4.f);
  const CondensedMatrix w = condense(d.view(), Pattern::venom(64, 5));
  const std::string why = sptc::hw24_unsupported(w);
  EXPECT_NE(why.find("row 3 has more than 2 nonzeros in an aligned group of 4"), std::string::npos) << why;
  EXPECT_NE(why.find("not a hardware 2:4 matrix"), std::string::npos) << why;
  EXPECT_THROW(sptc::pack_hw24(w, 128), InvalidArgument);
  // a stored zero does not count: with column 6 zeroed the same slots pack
  d.set(3, 6, 0.f);
  expect_venom_repack_exact(condense(d.view(), Pattern::venom(64, 5)), true);
  // f32 venom: the dtype, not the pattern, is the reason
  DenseMatrix f(DType::f32, 8, 16);
  f.set(1, 2, 1.f);
  EXPECT_NE(sptc::hw24_unsupported(condense(f.view(), Pattern::venom(32, 8))).find("f16 or bf16"), std::string::npos);
}

TEST(SptcLayout, VenomWithShortStorageIsUnsupported) {
  DenseMatrix d = random_pattern_matrix(Pattern::venom(32, 8), DType::f16, 40, 24, 31, 0.0);
  CondensedMatrix w = condense(d.view(), Pattern::venom(32, 8));
  w.columns.pop_back();
  EXPECT_NE(sptc::hw24_unsupported(w).find("smaller than its layout"), std::string::npos);
  EXPECT_THROW(sptc::pack_hw24(w, 128), InvalidArgument);
}

}  // namespace
}  // namespace sparsenm
