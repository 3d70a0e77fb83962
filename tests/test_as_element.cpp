// sparsenm tests — venom_as_element (src/format/as_element.hpp): a V:2:M weight seen as the
// element 2:M weight with the same stored slots. Checked slot by slot (value and column,
// padding slots included), by validate(), by expand() and by the fp64 product with X holding
// Inf / NaN at columns no row stores (FORMAT.md section 8).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "format/as_element.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/reference.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

void check_same_slots(const CondensedMatrix& v, const CondensedMatrix& e) {
  ASSERT_EQ(e.pattern(), Pattern::element(2, v.pattern().m));
  ASSERT_EQ(e.rows(), v.rows());
  ASSERT_EQ(e.cols(), v.cols());
  ASSERT_EQ(e.layout.value_cols, v.layout.value_cols);
  ASSERT_EQ(e.values, v.values);
  for (std::int64_t r = 0; r < v.rows(); ++r)
    for (std::int64_t j = 0; j < v.layout.value_cols; ++j) ASSERT_EQ(e.column_of(r, j), v.column_of(r, j)) << "row " << r << " slot " << j;
}

TEST(AsElement, EverySlotKeepsItsColumnAndValue) {
  std::uint64_t seed = 5100;
  for (int V : {32, 64, 128})
    for (int M : {4, 5, 7, 8, 10, 16, 32, 100})
      for (DType t : {DType::f16, DType::bf16, DType::f32}) {
        SCOPED_TRACE("V=" + std::to_string(V) + " M=" + std::to_string(M) + " " + std::string(to_string(t)));
        const Pattern p = Pattern::venom(V, M);
        // tails: rows not a multiple of V, cols not a multiple of M (padding slots in the last window)
        const std::int64_t rows = V + 13, cols = 3 * M + (M > 4 ? 3 : 1);
        const CondensedMatrix v = condense(random_pattern_matrix(p, t, rows, cols, ++seed, 0.1).view(), p);
        const CondensedMatrix e = detail::venom_as_element(v);
        EXPECT_NO_THROW(e.validate());
        check_same_slots(v, e);
        const DenseMatrix dv = expand(v), de = expand(e);
        ASSERT_EQ(dv.size_bytes(), de.size_bytes());
        EXPECT_EQ(0, std::memcmp(dv.data(), de.data(), dv.size_bytes()));
      }
}

TEST(AsElement, ProductsAgreeIncludingNonFiniteXAtPrunedColumns) {
  const Pattern p = Pattern::venom(64, 8);
  const std::int64_t rows = 150, cols = 203;
  const CondensedMatrix v = condense(random_pattern_matrix(p, DType::f16, rows, cols, 5200, 0.2).view(), p);
  const CondensedMatrix e = detail::venom_as_element(v);
  DenseMatrix x = random_pattern_matrix(Pattern::element(7, 8), DType::f16, 3, cols, 5201);
  // Inf / NaN in X at the first column no row stores (if any) and at a stored one.
  std::vector<bool> stored(std::size_t(cols), false);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < v.layout.value_cols; ++j)
      if (const auto c = v.column_of(r, j); c < cols) stored[std::size_t(c)] = true;
  std::int64_t unstored = 0;
  for (std::int64_t c = 0; c < cols; ++c)
    if (!stored[std::size_t(c)]) {
      store_from_float(DType::f16, x.data(), std::size_t(c), std::numeric_limits<float>::infinity());
      ++unstored;
      break;
    }
  EXPECT_EQ(unstored, 1) << "the test needs a column no row stores (zero_fraction 0.2 on 150 rows)";
  store_from_float(DType::f16, x.data(), std::size_t(cols + v.column_of(7, 3)), std::numeric_limits<float>::quiet_NaN());
  const std::vector<double> a = reference_matmul_f64(x.view(), v), b = reference_matmul_f64(x.view(), e);
  ASSERT_EQ(a.size(), b.size());
  std::int64_t nonfinite = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) {
      EXPECT_TRUE(std::isnan(b[i])) << i;
      ++nonfinite;
    } else {
      EXPECT_EQ(a[i], b[i]) << i;
    }
  }
  EXPECT_GT(nonfinite, 0);
  EXPECT_LT(nonfinite, std::int64_t(a.size()));
}

TEST(AsElement, RejectsOtherPatterns) {
  for (const Pattern& p : {Pattern::element(2, 8), Pattern::hw24(), Pattern::vector(2, 8, 4), Pattern::block(1, 4, 2, 2)}) {
    const CondensedMatrix c = condense(random_pattern_matrix(p, DType::f16, 16, 32, 5300).view(), p);
    try {
      (void)detail::venom_as_element(c);
      ADD_FAILURE() << "no throw for " << p.str();
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "w");
      EXPECT_NE(std::string(e.what()).find("venom"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sparsenm
