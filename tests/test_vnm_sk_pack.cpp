// sparsenm tests — pack_vnm_sk (src/format/vnm_sk_pack.hpp): the native V:2:M stream-K packing.
// Every stored slot read back through the kernel's rule (2-bit position from the lane's index
// words, column from the slab's table byte of lane (j / 2) * 2 + pos / 2) has the canonical value
// and column; padding (rows past n, slots past the last window, tables past the last window) is
// zero; a product emulated on the packed bytes (X zero past k, as in the kernel's shared memory)
// equals the fp64 reference; every limit throws InvalidArgument naming "w".
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "format/vnm_sk_pack.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/reference.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

using detail::VnmSkPacked;

std::vector<double> emulate(const VnmSkPacked& p, const DenseMatrix& x, DType t) {
  const detail::VnmSkLayout& l = p.layout;
  std::vector<double> y(std::size_t(l.rows), 0.0);
  for (std::int64_t r = 0; r < l.rows; ++r) {
    double s = 0;
    for (std::int64_t j = 0; j < l.tiles * detail::kVnmSkSlots; ++j) {
      const double v = load_as_float(t, p.values.data(), l.value_offset(r, j));
      if (j >= l.slots) {
        EXPECT_EQ(v, 0.0) << "padding slot " << j << " of row " << r;
        continue;
      }
      const std::int64_t c = detail::unpack_vnm_sk_column(p, r, j);
      s += v * (c < l.cols ? double(x.at(0, c)) : 0.0);
    }
    y[std::size_t(r)] = s;
  }
  return y;
}

TEST(VnmSkPack, EverySlotReadsBackItsValueAndColumn) {
  std::uint64_t seed = 7100;
  struct Case {
    int v, m;
  };
  for (const Case c : {Case{128, 8}, Case{128, 16}, Case{64, 8}, Case{32, 16}, Case{256, 5}, Case{64, 4}})
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(std::to_string(c.v) + ":2:" + std::to_string(c.m) + " " + std::string(to_string(t)));
      const Pattern p = Pattern::venom(c.v, c.m);
      // tails: rows not a multiple of 32 or V; cols not a multiple of M nor of the 16-window tile
      const std::int64_t rows = c.v + 45, cols = 16 * c.m * 2 + 5 * c.m + 3;
      const CondensedMatrix w = condense(random_pattern_matrix(p, t, rows, cols, ++seed, 0.1).view(), p);
      const VnmSkPacked pk = detail::pack_vnm_sk(w);
      const detail::VnmSkLayout& l = pk.layout;
      EXPECT_EQ(l.slots, w.layout.value_cols);
      EXPECT_EQ(l.tiles, (l.slots + 31) / 32);
      EXPECT_EQ(l.row_groups, (rows + 31) / 32);
      EXPECT_EQ(l.slabs, (rows + c.v - 1) / c.v);
      EXPECT_EQ(l.slab_groups, c.v / 32);
      ASSERT_EQ(pk.values.size(), l.value_bytes());
      ASSERT_EQ(pk.indices.size(), l.index_words());
      ASSERT_EQ(pk.table.size(), l.table_bytes());
      const std::size_t eb = dtype_size(t);
      for (std::int64_t r = 0; r < l.row_groups * 32; ++r)
        for (std::int64_t j = 0; j < l.tiles * 32; ++j) {
          const std::byte* got = pk.values.data() + l.value_offset(r, j) * eb;
          if (r < rows && j < l.slots) {
            ASSERT_EQ(0, std::memcmp(got, w.values.data() + std::size_t(r * l.slots + j) * eb, eb)) << r << " " << j;
            ASSERT_EQ(detail::unpack_vnm_sk_column(pk, r, j), w.column_of(r, j)) << r << " " << j;
          } else {
            for (std::size_t b = 0; b < eb; ++b) ASSERT_EQ(got[b], std::byte{0}) << "padding " << r << " " << j;
            if (j < l.tiles * 32) {
              const int bit = int(j % 32) * 2;
              ASSERT_EQ((pk.indices[l.index_word_offset(r, j / 32, bit >> 5)] >> (bit & 31)) & 3u, 0u) << r << " " << j;
            }
          }
        }
      // tables past the last window are zero
      for (std::int64_t sl = 0; sl < l.slabs; ++sl)
        for (int lane = 0; lane < 32; ++lane) {
          const std::int64_t t_last = l.tiles - 1, win = t_last * 16 + lane / 2;
          if (win >= l.windows) EXPECT_EQ(pk.table[l.table_offset(sl, t_last) + std::size_t(lane)], 0u);
        }
    }
}

TEST(VnmSkPack, EmulatedProductMatchesTheReference) {
  std::uint64_t seed = 7200;
  for (int M : {8, 16})
    for (DType t : {DType::f16, DType::bf16}) {
      const Pattern p = Pattern::venom(128, M);
      const std::int64_t rows = 300, cols = 40 * M + 7;
      const CondensedMatrix w = condense(random_pattern_matrix(p, t, rows, cols, ++seed, 0.05).view(), p);
      const DenseMatrix x = random_matrix(t, 1, cols, ++seed);
      const std::vector<double> ref = reference_matmul_f64(x.view(), w), got = emulate(detail::pack_vnm_sk(w), x, t);
      ASSERT_EQ(ref.size(), got.size());
      for (std::size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-9 * (1.0 + std::fabs(ref[i]))) << i;
    }
}

TEST(VnmSkPack, BytesAreTheVnmBytes) {
  // 128:2:8 and 128:2:16 at 4096 x 4096 (fp16): the packed weight is within 0.2 % of the canonical
  // V:2:M bytes (tiles and tables), the element 2:M form 5 % / 10 % above them.
  for (int M : {8, 16}) {
    const FormatLayout f = FormatLayout::of(Pattern::venom(128, M), 4096, 4096);
    const detail::VnmSkLayout l = detail::VnmSkLayout::of(f, DType::f16);
    const double canon = double(f.value_bytes(DType::f16) + f.index_bytes() + f.colloc_bytes());
    EXPECT_LT(double(l.total_bytes()) / canon, 1.002) << M;
    EXPECT_GE(double(l.total_bytes()) / canon, 1.0) << M;
  }
}

void expect_rejected(const FormatLayout& f, DType t, const std::string& what) {
  try {
    (void)detail::VnmSkLayout::of(f, t);
    ADD_FAILURE() << "no throw for " << f.str() << " " << to_string(t);
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "w");
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(VnmSkPack, RejectsWhatItCannotPack) {
  expect_rejected(FormatLayout::of(Pattern::element(2, 8), 64, 64), DType::f16, "venom");
  expect_rejected(FormatLayout::of(Pattern::hw24(), 64, 64), DType::f16, "venom");
  expect_rejected(FormatLayout::of(Pattern::venom(128, 32), 64, 64), DType::f16, "M <= 16");
  expect_rejected(FormatLayout::of(Pattern::venom(128, 8), 64, 64), DType::f32, "f16 or bf16");
  FormatLayout odd_v = FormatLayout::of(Pattern::venom(32, 8), 64, 64);
  odd_v.pattern.v = 48;  // not a valid pattern, but the packing must refuse it on its own
  expect_rejected(odd_v, DType::f16, "V % 32 == 0");
  // storage that disagrees with the layout
  const Pattern p = Pattern::venom(64, 8);
  CondensedMatrix w = condense(random_pattern_matrix(p, DType::f16, 70, 100, 7300).view(), p);
  w.columns.pop_back();
  try {
    (void)detail::pack_vnm_sk(w);
    ADD_FAILURE() << "no throw for truncated column tables";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "w");
    EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sparsenm
