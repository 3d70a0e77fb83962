// sparsenm GPU tests — EW-N:M SpMM (cuda:ew_spmm) and both EW kernels through the plan API:
// family members incl. odd M, dtypes, m tails (not multiples of 16), n/k tails, phases,
// poisoned outputs, NaN/Inf semantics, and agreement with the library's fp64 reference.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "cuda/ew/spmv.hpp"
#include "ew_support.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/reference.hpp"

namespace {

using namespace sparsenm;
using namespace ewtest;

struct Dev {
  void* p = nullptr;
  explicit Dev(std::size_t bytes) { cudaMalloc(&p, bytes ? bytes : 1); }
  ~Dev() { cudaFree(p); }
};

/// Runs the SpMM kernel directly; y poisoned, with one extra row that must stay untouched.
void run_spmm(const CondensedMatrix& w, const DenseMatrix& x, DType yt, int smem_budget, std::vector<std::byte>& y) {
  const auto packed = cuda::ew::pack_spmv(w);
  const int m = int(x.rows());
  ASSERT_EQ(cuda::ew::spmm_unsupported(packed.layout, w.dtype, m), "");
  cuda::ew::SpmvArgs a;
  const auto cfg = cuda::ew::plan_spmm(packed.layout, w.dtype, m, a, smem_budget);
  const auto fn = cuda::ew::find_spmm(w.dtype, packed.layout.bits, w.pattern().n, w.pattern().m);
  ASSERT_NE(fn, nullptr);
  Dev dv(packed.values.size()), di(packed.indices.size() * 4), dx(x.size_bytes());
  const std::size_t n = std::size_t(w.rows()), yb = std::size_t(m) * n * dtype_size(yt), extra = n * dtype_size(yt);
  Dev dy(yb + extra);
  EW_CUDA(cudaMemcpy(dv.p, packed.values.data(), packed.values.size(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(di.p, packed.indices.data(), packed.indices.size() * 4, cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemset(dy.p, 0xFF, yb + extra));
  a.values = dv.p;
  a.indices = static_cast<const std::uint32_t*>(di.p);
  a.x = dx.p;
  a.y = dy.p;
  a.y_dtype = yt == DType::f32 ? 0 : yt == DType::f16 ? 1 : 2;
  fn(a, cfg, nullptr);
  EW_CUDA(cudaGetLastError());
  EW_CUDA(cudaDeviceSynchronize());
  std::vector<std::byte> all(yb + extra);
  EW_CUDA(cudaMemcpy(all.data(), dy.p, all.size(), cudaMemcpyDeviceToHost));
  for (std::size_t i = yb; i < all.size(); ++i) ASSERT_EQ(all[i], std::byte{0xFF}) << "wrote past row m-1";
  y.assign(all.begin(), all.begin() + std::ptrdiff_t(yb));
}

void check_spmm(const Pattern& p, std::int64_t n, std::int64_t k, std::int64_t m, DType t, DType yt,
                std::uint64_t seed, int smem_budget = 0) {
  SCOPED_TRACE(p.str() + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " m=" + std::to_string(m) + " " +
               std::string(to_string(t)) + "->" + std::string(to_string(yt)));
  const auto w = random_ew(p, n, k, t, seed);
  const auto x = random_matrix(t, m, k, seed + 1);
  std::vector<std::byte> y;
  run_spmm(w, x, yt, smem_budget, y);
  if (::testing::Test::HasFatalFailure()) return;
  const auto cmp = compare(y, yt, oracle(x, w));
  EXPECT_EQ(cmp.unwritten, 0);
  EXPECT_EQ(cmp.class_mismatch, 0);
  EXPECT_LT(cmp.rel_err, tolerance(yt));
}

TEST(EwSpmm, FamilyMembersAndMTails) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 1000;
  for (auto nm : std::vector<std::pair<int, int>>{{2, 4}, {4, 8}, {2, 8}, {1, 8}, {2, 16}, {1, 16}, {3, 32}, {8, 32},
                                                  {16, 32}, {4, 32}, {2, 5}, {3, 7}, {3, 10}, {7, 100}, {1, 2}})
    for (std::int64_t m : {1, 16, 37})
      check_spmm(Pattern::element(nm.first, nm.second), 290, 777, m, DType::f32, DType::f32, ++seed);
  check_spmm(Pattern::hw24(), 64, 100, 9, DType::f16, DType::f16, ++seed);
}

TEST(EwSpmm, DtypesShapesAndPhases) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 1100;
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (auto p : {Pattern::element(2, 8), Pattern::element(3, 32), Pattern::element(5, 7)}) {
      check_spmm(p, 513, 2051, 33, t, t, ++seed);
      check_spmm(p, 31, 64, 130, t, t, ++seed);
    }
  check_spmm(Pattern::element(8, 32), 300, 4000, 20, DType::f32, DType::f32, ++seed, 8192);  // many phases
  check_spmm(Pattern::element(2, 8), 200, 1000, 17, DType::f16, DType::f32, ++seed);
  check_spmm(Pattern::element(16, 256), 100, 3000, 18, DType::f16, DType::f16, ++seed);
  // 1:256: one 32-slot tile spans 33 windows = 8448 columns of X: more than the budget.
  const auto wide = cuda::ew::SpmvLayout::of(ew_layout(Pattern::element(1, 256), 100, 3000), DType::f16);
  EXPECT_NE(cuda::ew::spmm_unsupported(wide, DType::f16, 18), "");
}

TEST(EwSpmm, NanInfFollowTheProductSemantics) {
  EW_REQUIRE_DEVICE();
  const Pattern p = Pattern::element(2, 8);
  auto w = random_ew(p, 96, 203, DType::f32, 1200);
  auto x = random_matrix(DType::f32, 20, 203, 1201);
  x.set(3, 17, INFINITY);
  x.set(19, 202, NAN);
  std::vector<std::byte> y;
  run_spmm(w, x, DType::f32, 0, y);
  if (::testing::Test::HasFatalFailure()) return;
  const auto ref = oracle(x, w);
  const auto cmp = compare(y, DType::f32, ref);
  EXPECT_EQ(cmp.class_mismatch, 0);
  EXPECT_EQ(cmp.unwritten, 0);
  EXPECT_LT(cmp.rel_err, 1e-5);
}

TEST(EwPlan, ForcedKernelsMatchTheLibraryReference) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 1300;
  for (auto [kernel, m] : std::vector<std::pair<std::string, int>>{{"cuda:ew_spmv", 1}, {"cuda:ew_spmv", 7},
                                                                     {"cuda:ew_spmm", 40}, {"", 3}, {"", 64}})
    for (DType t : {DType::f16, DType::f32}) {
      SCOPED_TRACE(kernel + " m=" + std::to_string(m));
      const auto w = random_ew(Pattern::element(2, 8), 333, 1025, t, ++seed);
      w.validate();
      const auto x = random_matrix(t, m, 1025, ++seed);
      MatmulDesc d;
      d.m = m;
      d.x_dtype = t;
      d.y_dtype = t;
      d.backend = Backend::cuda;
      d.kernel = kernel;
      const Plan plan = Plan::create(w, d);
      if (!kernel.empty()) EXPECT_EQ(plan.kernel(), kernel);
      Dev dx(x.size_bytes()), dy(std::size_t(m) * 333 * dtype_size(t));
      EW_CUDA(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
      EW_CUDA(cudaMemset(dy.p, 0xFF, std::size_t(m) * 333 * dtype_size(t)));
      plan.run(dx.p, dy.p, nullptr);
      EW_CUDA(cudaDeviceSynchronize());
      std::vector<std::byte> y(std::size_t(m) * 333 * dtype_size(t));
      EW_CUDA(cudaMemcpy(y.data(), dy.p, y.size(), cudaMemcpyDeviceToHost));
      const auto ref = reference_matmul_f64(x.view(), w);
      const auto cmp = compare(y, t, ref);
      EXPECT_EQ(cmp.unwritten, 0);
      EXPECT_LT(cmp.rel_err, tolerance(t)) << plan.kernel() << ": " << plan.reason();
      const auto mine = oracle(x, w);  // the test oracle agrees with the library's reference
      for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(ref[i], mine[i], 1e-9 * (1 + std::abs(ref[i])));
    }
}

TEST(EwPlan, UnsupportedReasonsAreGiven) {
  EW_REQUIRE_DEVICE();
  const auto w = random_ew(Pattern::element(2, 8), 64, 64, DType::f16, 1400);
  MatmulDesc d;
  d.m = 9;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f16;
  d.backend = Backend::cuda;
  d.kernel = "cuda:ew_spmv";
  EXPECT_THROW(Plan::create(w, d), Unsupported);  // m > 8
  d.m = 2;
  d.x_dtype = DType::f32;
  EXPECT_THROW(Plan::create(w, d), InvalidArgument);
}

}  // namespace

namespace {
TEST(EwSpmmSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  check_spmm(Pattern::element(2, 8), 70, 1000, 20, DType::f32, DType::f32, 9101, 4096);
  check_spmm(Pattern::element(3, 7), 33, 301, 17, DType::f16, DType::f16, 9102);
}
}  // namespace
