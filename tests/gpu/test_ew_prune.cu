// sparsenm GPU tests — prune_cuda (GPU magnitude pruning + condensing, element N:M / hw24) equals
// the CPU prune() bit for bit: many N:M incl. M = 5, 7, 10, 32, 100, 256, all weight dtypes, ties
// (coarsely quantised values, +0 / -0), NaN / +-Inf, tails (cols not a multiple of M, tail windows
// with fewer columns than N), strided views, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ew_support.hpp"
#include "sparsenm/cuda.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/prune.hpp"

namespace {

using namespace sparsenm;

/// Random matrix with many ties and special values, in a buffer with leading dimension ld.
DenseMatrix tricky(DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  DenseMatrix d = random_matrix(t, rows, cols, seed);
  std::mt19937_64 rng(seed ^ 0x5eed);
  std::uniform_int_distribution<int> pick(0, 99);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const int u = pick(rng);
      float v = std::round(d.at(r, c) * 4.0f) / 4.0f;  // 9 levels: many equal magnitudes
      if (u == 0) v = NAN;
      else if (u == 1) v = INFINITY;
      else if (u == 2) v = -INFINITY;
      else if (u == 3) v = -0.0f;
      d.set(r, c, v);
    }
  return d;
}

void expect_same(const CondensedMatrix& gpu, const CondensedMatrix& cpu, const std::string& what) {
  ASSERT_EQ(gpu.layout, cpu.layout) << what;
  ASSERT_EQ(gpu.dtype, cpu.dtype) << what;
  ASSERT_EQ(gpu.values.size(), cpu.values.size()) << what;
  ASSERT_EQ(gpu.indices, cpu.indices) << what << ": packed indices differ";
  ASSERT_TRUE(std::memcmp(gpu.values.data(), cpu.values.data(), cpu.values.size()) == 0) << what << ": values differ";
}

TEST(EwPruneCuda, EqualsCpuPruneForEveryFamilyMember) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 7000;
  const std::vector<std::pair<int, int>> nms = {{1, 2}, {2, 4}, {1, 4}, {3, 4}, {4, 8}, {2, 8}, {1, 8}, {2, 16},
                                                {1, 16}, {3, 32}, {8, 32}, {16, 32}, {2, 5}, {3, 7}, {3, 10},
                                                {7, 100}, {1, 256}, {100, 256}, {31, 32}};
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (auto [n, m] : nms)
      for (std::int64_t cols : {std::int64_t(3 * m + 1), std::int64_t(517), std::int64_t(2)}) {
        const Pattern p = Pattern::element(n, m);
        const DenseMatrix w = tricky(t, 37, cols, ++seed);
        const std::string what = p.str() + " " + std::string(to_string(t)) + " cols=" + std::to_string(cols);
        expect_same(prune_cuda(w.view(), p), prune(w.view(), p), what);
        if (::testing::Test::HasFatalFailure()) return;
      }
  const DenseMatrix w = tricky(DType::f16, 64, 130, ++seed);
  expect_same(prune_cuda(w.view(), Pattern::hw24()), prune(w.view(), Pattern::hw24()), "hw24");
}

TEST(EwPruneCuda, StridedViewAndLargerShape) {
  EW_REQUIRE_DEVICE();
  const DenseMatrix big = tricky(DType::f16, 300, 1000, 7100);
  const MatrixView sub{DType::f16, big.data(), 300, 777, 1000};  // ld > cols
  expect_same(prune_cuda(sub, Pattern::element(2, 8)), prune(sub, Pattern::element(2, 8)), "strided 2:8");
  const DenseMatrix w = random_matrix(DType::f16, 2048, 4096, 7101);
  expect_same(prune_cuda(w.view(), Pattern::element(2, 8)), prune(w.view(), Pattern::element(2, 8)), "2048x4096 2:8");
}

TEST(EwPruneCuda, RejectsOtherPatternsAndBadArguments) {
  const DenseMatrix w = random_matrix(DType::f16, 8, 16, 7200);
  EXPECT_THROW(prune_cuda(w.view(), Pattern::vector(2, 4, 4)), InvalidArgument);
  EXPECT_THROW(prune_cuda(w.view(), Pattern::venom(64, 8)), InvalidArgument);
  EXPECT_THROW(prune_cuda_device(nullptr, DType::f16, 8, 16, 16, Pattern::element(2, 4), nullptr, nullptr),
               InvalidArgument);
  EXPECT_THROW(prune_cuda_device(w.data(), DType::f16, 8, 16, 8, Pattern::element(2, 4), nullptr, nullptr),
               InvalidArgument);  // ld < cols
}

}  // namespace

namespace {
TEST(EwPruneCudaSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  const DenseMatrix w = tricky(DType::bf16, 33, 203, 7300);
  expect_same(prune_cuda(w.view(), Pattern::element(3, 10)), prune(w.view(), Pattern::element(3, 10)), "3:10");
  expect_same(prune_cuda(w.view(), Pattern::element(2, 8)), prune(w.view(), Pattern::element(2, 8)), "2:8");
}
}  // namespace
