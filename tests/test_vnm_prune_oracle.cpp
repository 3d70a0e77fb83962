// The CPU oracle that the GPU pruning tests (tests/gpu/test_vnm_prune.cu) compare against,
// checked here against the CPU pruner prune() itself: same condensed bytes for hardware 2:4 and
// for V:2:M wherever prune() searches exhaustively (<= 16 real columns per window). Together
// with the GPU tests this gives GPU pruning == prune() without a GPU in the loop here.
#include <gtest/gtest.h>

#include "sparsenm/prune.hpp"
#include "support/venom_prune_oracle.hpp"

namespace sparsenm {
namespace {

void expect_same_bytes(const CondensedMatrix& got, const CondensedMatrix& want) {
  ASSERT_EQ(got.layout, want.layout);
  EXPECT_TRUE(got.columns == want.columns) << "columns differ";
  EXPECT_TRUE(got.indices == want.indices) << "indices differ";
  EXPECT_TRUE(got.values == want.values) << "values differ";
}

TEST(VnmPruneOracle, VenomMatchesCpuPruneUpTo16Columns) {
  std::uint64_t seed = 10;
  for (int V : {32, 64, 128, 256})
    for (int M : {4, 5, 7, 8, 10, 16})
      for (int levels : {0, 3}) {
        const DType t = (M + levels) % 3 == 0 ? DType::bf16 : (M % 2 ? DType::f32 : DType::f16);
        const std::int64_t rows = V + 13, cols = M * 5 + 3;
        SCOPED_TRACE(Pattern::venom(V, M).str() + " levels " + std::to_string(levels));
        DenseMatrix w = test::weights(t, rows, cols, ++seed, levels);
        expect_same_bytes(test::oracle_venom(w, Pattern::venom(V, M)), prune(w.view(), Pattern::venom(V, M)));
      }
}

TEST(VnmPruneOracle, Hw24MatchesCpuPrune) {
  std::uint64_t seed = 400;
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 5}, {37, 130}, {64, 257}})
      for (int levels : {0, 2}) {
        DenseMatrix w = test::weights(t, r, c, ++seed, levels);
        expect_same_bytes(test::oracle_hw24(w), prune(w.view(), Pattern::hw24()));
      }
}

}  // namespace
}  // namespace sparsenm

namespace sparsenm {
namespace {

// Where the rules part (documented in include/sparsenm/cuda_prune_venom.hpp): beyond 16 real
// columns prune() runs a budgeted branch and bound. For 17..32 the GPU rule (and the oracle) is
// exhaustive, so it keeps at least as much magnitude as prune(); at M = 32 they differ on this
// data. Past 32 the GPU rule is prune()'s L1 start + swap search without the final budgeted
// branch and bound, so prune() keeps at least as much (they differ at M = 40 here). Kept L1 is
// the search's score (the sum over rows of the two kept magnitudes), exact in double here.
double kept_l1(const CondensedMatrix& c) {
  DenseMatrix d = expand(c);
  double s = 0;
  for (std::int64_t r = 0; r < d.rows(); ++r)
    for (std::int64_t k = 0; k < d.cols(); ++k) s += std::fabs(double(d.at(r, k)));
  return s;
}

TEST(VnmPruneOracle, VenomLargeWindows) {
  std::uint64_t seed = 200;
  for (int M : {32, 40, 100})
    for (int levels : {0, 2}) {
      SCOPED_TRACE("M " + std::to_string(M) + " levels " + std::to_string(levels));
      DenseMatrix w = test::weights(DType::f16, 70, M * 2 + 37, ++seed, levels);
      for (std::int64_t r = 0; r < w.rows(); ++r)  // finite data: compare kept mass
        for (std::int64_t k = 0; k < w.cols(); ++k)
          if (!std::isfinite(w.at(r, k))) w.set(r, k, 0.5f);
      const CondensedMatrix o = test::oracle_venom(w, Pattern::venom(32, M)), c = prune(w.view(), Pattern::venom(32, M));
      if (M <= 32)
        EXPECT_GE(kept_l1(o), kept_l1(c));
      else
        EXPECT_GE(kept_l1(c), kept_l1(o));
    }
}

}  // namespace
}  // namespace sparsenm
