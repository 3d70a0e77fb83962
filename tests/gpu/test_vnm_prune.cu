// GPU pruning to V:2:M and hardware 2:4 (include/sparsenm/cuda_prune_venom.hpp) against a CPU
// oracle written from the CPU pruner's documented rules (src/prune: row-order double scores,
// lexicographically smallest subset on ties, first maximum per row, |NaN| = +inf): the
// condensed bytes must be identical. Data include heavy ties (few magnitude levels), NaN, Inf,
// -0, tail windows with < 4 real columns and partial slabs.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "sparsenm/cuda_prune_venom.hpp"
#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"
#include "support/venom_prune_oracle.hpp"

namespace sparsenm {
namespace {

using test::oracle_hw24;
using test::oracle_venom;
using test::weights;

bool have_device() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}
#define REQUIRE_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device: GPU test skipped"

void expect_same(const CondensedMatrix& got, const CondensedMatrix& want) {
  ASSERT_EQ(got.layout, want.layout);
  EXPECT_TRUE(got.columns == want.columns) << "columns differ";
  EXPECT_TRUE(got.indices == want.indices) << "indices differ";
  EXPECT_TRUE(got.values == want.values) << "values differ";
  EXPECT_NO_THROW(got.validate());
}

TEST(VnmPruneGpu, VenomEqualsCpuRules) {
  REQUIRE_DEVICE();
  std::uint64_t seed = 10;
  for (int V : {32, 64, 128, 256})
    for (int M : {4, 5, 7, 8, 10, 16, 32})
      for (int levels : {0, 3}) {
        const DType t = (M + levels) % 3 == 0 ? DType::bf16 : (M % 2 ? DType::f32 : DType::f16);
        const std::int64_t rows = V + 13, cols = M * 5 + 3;
        SCOPED_TRACE(Pattern::venom(V, M).str() + " " + std::string(to_string(t)) + " levels " + std::to_string(levels));
        DenseMatrix w = weights(t, rows, cols, ++seed, levels);
        expect_same(prune_venom_cuda(w.view(), Pattern::venom(V, M)), oracle_venom(w, Pattern::venom(V, M)));
      }
}

TEST(VnmPruneGpu, VenomLargeMLocalSearch) {
  REQUIRE_DEVICE();
  std::uint64_t seed = 200;
  for (int M : {40, 100}) {
    for (int levels : {0, 2}) {
      SCOPED_TRACE("M " + std::to_string(M) + " levels " + std::to_string(levels));
      DenseMatrix w = weights(DType::f16, 70, M * 2 + 37, ++seed, levels);  // tail window of 37 > 32 and of 37 % ...
      expect_same(prune_venom_cuda(w.view(), Pattern::venom(32, M)), oracle_venom(w, Pattern::venom(32, M)));
    }
  }
  DenseMatrix w = weights(DType::bf16, 40, 100 + 20, 301, 0);  // tail window of 20 (exhaustive)
  expect_same(prune_venom_cuda(w.view(), Pattern::venom(32, 100)), oracle_venom(w, Pattern::venom(32, 100)));
}

TEST(VnmPruneGpu, Hw24EqualsCpuRules) {
  REQUIRE_DEVICE();
  std::uint64_t seed = 400;
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 5}, {37, 130}, {64, 257}})
      for (int levels : {0, 2}) {
        DenseMatrix w = weights(t, r, c, ++seed, levels);
        expect_same(prune_hw24_cuda(w.view()), oracle_hw24(w));
      }
}

TEST(VnmPruneGpu, PrunedMatrixSatisfiesPatternAndKeepsMass) {
  REQUIRE_DEVICE();
  DenseMatrix w = random_matrix(DType::f16, 256, 512, 77);
  const Pattern p = Pattern::venom(128, 16);
  CondensedMatrix c = prune_venom_cuda(w.view(), p);
  DenseMatrix d = expand(c);
  EXPECT_TRUE(check_pattern(d.view(), p).ok);
  // The chosen columns keep at least the L1-mass-best 4 columns would (the optimum dominates).
  double kept = 0, total = 0;
  for (std::int64_t r = 0; r < 256; ++r)
    for (std::int64_t k = 0; k < 512; ++k) kept += std::fabs(d.at(r, k)), total += std::fabs(w.at(r, k));
  EXPECT_GT(kept / total, 2.0 / 16);  // better than a random 2:16 choice on average
}

TEST(VnmPruneGpu, Rejects) {
  REQUIRE_DEVICE();
  DenseMatrix w = random_matrix(DType::f16, 8, 8, 1);
  EXPECT_THROW(prune_venom_cuda(w.view(), Pattern::element(2, 8)), InvalidArgument);
  EXPECT_THROW(prune_venom_cuda(w.view(), Pattern::hw24()), InvalidArgument);
  MatrixView bad = w.view();
  bad.data = nullptr;
  EXPECT_THROW(prune_hw24_cuda(bad), InvalidArgument);
  MatrixView empty = w.view();
  empty.rows = 0;
  EXPECT_THROW(prune_hw24_cuda(empty), InvalidArgument);
  MatrixView wrong = w.view();
  wrong.dtype = DType::i32;
  EXPECT_THROW(prune_venom_cuda(wrong, Pattern::venom(32, 8)), InvalidArgument);
}

}  // namespace
}  // namespace sparsenm
