// sparsenm GPU tests — EW-N:M SpMM (cuda:ew_spmm) and both EW kernels through the plan API:
// family members incl. odd M, dtypes, m tails (not multiples of 16), n/k tails, phases,
// poisoned outputs, NaN/Inf semantics, and agreement with the library's fp64 reference.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "cuda/ew/spmv.hpp"
#include "ew_support.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/reference.hpp"

namespace {

using namespace sparsenm;
using namespace ewtest;

using Dev = DeviceMem;  // checked cudaMalloc (ew_support.hpp)

/// Inf in X row 3 at a column that W row 5 stores (slot 35: tile 1 of the row), NaN in row 7 at a
/// column of window 2 that row 5 does not store, NaN in row 17 at the last column (partial window).
/// Returns false (with a test failure) if window 2 of row 5 stores every column.
bool place_nan_inf(const CondensedMatrix& w, DenseMatrix& x) {
  const Pattern p = w.pattern();
  const auto& l = w.layout;
  const auto* row5 = w.indices.data() + 5 * l.index_row_bytes;
  const std::int64_t slot = 35;
  x.set(3, (slot / p.n) * p.m + get_packed(row5, slot, l.index_bits), INFINITY);
  std::int64_t col_pruned = -1;
  for (std::int64_t c = 2 * p.m; c < 3 * p.m && col_pruned < 0; ++c) {
    bool stored = false;
    for (int j = 0; j < p.n; ++j) stored |= 2 * p.m + std::int64_t(get_packed(row5, 2 * p.n + j, l.index_bits)) == c;
    if (!stored) col_pruned = c;
  }
  EXPECT_GE(col_pruned, 0);
  if (col_pruned < 0) return false;
  x.set(7, col_pruned, NAN);
  x.set(17, x.cols() - 1, NAN);
  return true;
}

/// Runs the SpMM kernel (variant v) directly; y poisoned, with one extra row that must stay
/// untouched. x_shift: X starts that many elements past an aligned allocation (misaligned X).
void run_spmm(const CondensedMatrix& w, const DenseMatrix& x, DType yt, int smem_budget, std::vector<std::byte>& y,
              cuda::ew::SpmmVariant v = cuda::ew::SpmmVariant::base, int x_shift = 0) {
  const auto packed = cuda::ew::pack_spmv(w);
  const int m = int(x.rows());
  ASSERT_EQ(cuda::ew::spmm_unsupported(packed.layout, w.dtype, m, v), "");
  cuda::ew::SpmvArgs a;
  const auto cfg = cuda::ew::plan_spmm(packed.layout, w.dtype, m, a, smem_budget, v);
  const auto fn = cuda::ew::find_spmm(w.dtype, packed.layout.bits, w.pattern().n, w.pattern().m, nullptr, v);
  ASSERT_NE(fn, nullptr);
  const std::size_t shift = std::size_t(x_shift) * dtype_size(w.dtype);
  Dev dv(packed.values.size()), di(packed.indices.size() * 4), dx(x.size_bytes() + shift);
  const std::size_t n = std::size_t(w.rows()), yb = std::size_t(m) * n * dtype_size(yt), extra = n * dtype_size(yt);
  Dev dy(yb + extra);
  void* xp = static_cast<std::byte*>(dx.p) + shift;
  EW_CUDA(cudaMemcpy(dv.p, packed.values.data(), packed.values.size(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(di.p, packed.indices.data(), packed.indices.size() * 4, cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(xp, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemset(dy.p, 0xFF, yb + extra));
  a.values = dv.p;
  a.indices = static_cast<const std::uint32_t*>(di.p);
  a.x = xp;
  a.y = dy.p;
  a.y_dtype = yt == DType::f32 ? 0 : yt == DType::f16 ? 1 : 2;
  fn(a, cfg, nullptr);
  EW_CUDA(cudaGetLastError());
  EW_CUDA(cudaDeviceSynchronize());
  read_back_guarded(dy.p, yb, extra, y);
}

void check_spmm(const Pattern& p, std::int64_t n, std::int64_t k, std::int64_t m, DType t, DType yt,
                std::uint64_t seed, int smem_budget = 0, cuda::ew::SpmmVariant v = cuda::ew::SpmmVariant::base,
                int x_shift = 0) {
  SCOPED_TRACE(p.str() + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " m=" + std::to_string(m) + " " +
               std::string(to_string(t)) + "->" + std::string(to_string(yt)) + " " + cuda::ew::spmm_variant_name(v) +
               " budget " + std::to_string(smem_budget) + " shift " + std::to_string(x_shift));
  const auto w = random_ew(p, n, k, t, seed);
  const auto x = random_matrix(t, m, k, seed + 1);
  std::vector<std::byte> y;
  run_spmm(w, x, yt, smem_budget, y, v, x_shift);
  if (::testing::Test::HasFatalFailure()) return;
  const auto cmp = compare(y, yt, oracle(x, w));
  expect_close(cmp, yt);
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

// 3:32 and 4:32 run specialised instances (compile-time N, M); 3:32's N does not divide the
// 32-slot tile, so its tiles cycle through window phases 0, 2, 1 (period 3 tiles). k = 4100 / 4700
// give 13 / 14 tiles per row (tails of 1 and 2 tiles after the last full period, partial last
// windows), several staging phases, n and m tails; 3:16 and 5:32 keep the generic path covered.
TEST(EwSpmm, SpecialisedWideWindowsAllPhasesAndTails) {
  EW_REQUIRE_DEVICE();
  for (auto [nn, mm, spec] : std::vector<std::tuple<int, int, bool>>{{3, 32, true}, {4, 32, true}, {3, 16, false}, {5, 32, false}}) {
    bool got = !spec;
    EXPECT_NE(cuda::ew::find_spmm(DType::f32, cuda::ew::spmv_bits(mm), nn, mm, &got), nullptr);
    EXPECT_EQ(got, spec) << nn << ":" << mm;
  }
  std::uint64_t seed = 1500;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (auto p : {Pattern::element(3, 32), Pattern::element(4, 32), Pattern::element(3, 16), Pattern::element(5, 32)})
      for (auto [n, k, m] : std::vector<std::tuple<int, int, int>>{{290, 4100, 37}, {513, 4700, 16}, {31, 95, 1}}) {
        check_spmm(p, n, k, m, t, t, ++seed);
        if (::testing::Test::HasFatalFailure()) return;
      }
  // A small budget still gets whole periods of 3 tiles per phase.
  check_spmm(Pattern::element(3, 32), 100, 4700, 20, DType::f32, DType::f32, ++seed, 4096);
  check_spmm(Pattern::element(4, 32), 100, 4700, 20, DType::f32, DType::f16, ++seed, 4096);
}

TEST(EwSpmm, PeriodicPatternPhasesAreWholePeriods) {
  EW_REQUIRE_DEVICE();
  const auto w = random_ew(Pattern::element(3, 32), 64, 4700, DType::f32, 1600);
  const auto packed = cuda::ew::pack_spmv(w);
  for (int budget : {0, 4096, 40000}) {
    cuda::ew::SpmvArgs a;
    const auto cfg = cuda::ew::plan_spmm(packed.layout, DType::f32, 20, a, budget);
    EXPECT_TRUE(cfg.specialised);
    EXPECT_EQ(a.tiles, 14);
    EXPECT_EQ(a.tiles_per_phase % 3, 0) << "budget " << budget;
  }
  // A launch with phases that split a period is refused before it runs.
  cuda::ew::SpmvArgs a;
  const auto cfg = cuda::ew::plan_spmm(packed.layout, DType::f32, 20, a);
  a.tiles_per_phase = 4;
  const auto fn = cuda::ew::find_spmm(DType::f32, 5, 3, 32);
  EXPECT_THROW(fn(a, cfg, nullptr), InvalidArgument);
}

/// Inf in X at a column that row 5 stores (in tile 1 of its row: window phase 2 for 3:32), NaN at
/// a column row 5 prunes and in the partial last window: the outputs follow the fp64 products.
TEST(EwSpmm, NanInfSpecialisedPatterns) {
  EW_REQUIRE_DEVICE();
  for (auto p : {Pattern::element(3, 32), Pattern::element(4, 32)})
    for (DType t : {DType::f32, DType::f16}) {
      SCOPED_TRACE(p.str() + " " + std::string(to_string(t)));
      const std::int64_t n = 96, k = 1500;  // last window: 28 columns
      auto w = random_ew(p, n, k, t, 1700);
      auto x = random_matrix(t, 18, k, 1701);
      if (!place_nan_inf(w, x)) return;
      std::vector<std::byte> y;
      run_spmm(w, x, t, 0, y);
      if (::testing::Test::HasFatalFailure()) return;
      const auto ref = oracle(x, w);
      const auto cmp = compare(y, t, ref);
      expect_close(cmp, t);
      EXPECT_TRUE(std::isinf(load_as_float(t, y.data(), std::size_t(3 * n + 5))));
      EXPECT_TRUE(std::isfinite(ref[std::size_t(7 * n + 5)]));  // row 5 prunes the NaN
      std::int64_t nonfinite = 0;
      for (std::size_t i = 0; i < ref.size(); ++i) nonfinite += !std::isfinite(ref[i]);
      EXPECT_GT(nonfinite, 0);
      EXPECT_LT(nonfinite, 3 * n);  // pruned positions contribute nothing
    }
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
  check_spmm(Pattern::element(3, 32), 40, 1100, 17, DType::f32, DType::f32, 9103);  // 4 tiles: a period + 1
  check_spmm(Pattern::element(4, 32), 40, 1100, 17, DType::bf16, DType::bf16, 9104);
}
}  // namespace

// ---- the fp32 async variants (X double-buffered by cp.async): ew_spmm_async (8 warps, 544-column
// buffers), ew_spmm_async16 (16 warps, 1088-column buffers) and ew_spmm_async_x4 (as async, X in
// planes of 4 rows read by LDS.128; 2:4, 4:8, 2:8, 1:8 only) ----
namespace {

using cuda::ew::SpmmVariant;
constexpr SpmmVariant kAsyncVariants[] = {SpmmVariant::async, SpmmVariant::async16, SpmmVariant::async_x4};

/// Which of the f32 members used here a variant serves: x4 only the patterns it is compiled for;
/// async (544-column buffers) not 3:32 (a 3-tile period spans 1056 columns) nor 1:16 (a tile
/// pair spans 1040); async16 all of them.
bool served(SpmmVariant v, const Pattern& p) {
  if (v == SpmmVariant::async_x4)
    return (p.n == 2 && p.m == 4) || (p.n == 4 && p.m == 8) || (p.n == 2 && p.m == 8) || (p.n == 1 && p.m == 8);
  if (v == SpmmVariant::async) return !((p.n == 3 && p.m == 32) || (p.n == 1 && p.m == 16));
  return true;
}

// Every family member the base kernel supports in f32, m tails (1, 16 = one CTA row, 37), n and k
// tails (290 rows: 9 full row groups + 2; k = 777: a partial last window, k % 4 != 0 so the
// 4-byte copies), and k = 4100 (k % 4 == 0: the 16-byte copies, several phases).
TEST(EwSpmmAsync, FamilyMembersTailsAndBothCopyWidths) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 2000;
  for (SpmmVariant v : kAsyncVariants)
    for (auto nm : std::vector<std::pair<int, int>>{{2, 4}, {4, 8}, {2, 8}, {1, 8}, {2, 16}, {1, 16}, {3, 32}, {8, 32},
                                                    {16, 32}, {4, 32}, {2, 5}, {3, 7}, {3, 10}, {1, 2}})
      for (auto [k, m] : std::vector<std::pair<int, int>>{{777, 1}, {777, 37}, {4100, 16}}) {
        const Pattern p = Pattern::element(nm.first, nm.second);
        if (!served(v, p)) {
          const auto w = random_ew(p, 64, k, DType::f32, ++seed);
          EXPECT_NE(cuda::ew::spmm_unsupported(cuda::ew::pack_spmv(w).layout, DType::f32, m, v), "") << p.str();
          continue;
        }
        check_spmm(p, 290, k, m, DType::f32, DType::f32, ++seed, 0, v);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// Phases: small buffers force many phases (pairs of tiles; whole 3-tile periods for 3:32),
// odd tile counts (the last phase ends on the first tile of a pair), misaligned X (the 16-byte
// path off although k % 4 == 0), f16 / bf16 outputs, m and n tails.
TEST(EwSpmmAsync, PhasesMisalignedXAndOutputDtypes) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 2100;
  for (SpmmVariant v : kAsyncVariants) {
    for (auto p : {Pattern::element(2, 8), Pattern::element(8, 32), Pattern::element(3, 32), Pattern::element(4, 32),
                   Pattern::element(1, 8), Pattern::element(5, 7)})
      for (int budget : {4096, 20000}) {
        if (!served(v, p)) continue;
        check_spmm(p, 300, 4000, 20, DType::f32, DType::f32, ++seed, budget, v);      // 16-byte copies
        check_spmm(p, 33, 4001, 17, DType::f32, DType::f32, ++seed, budget, v);       // 4-byte copies
        check_spmm(p, 65, 4700, 33, DType::f32, DType::f32, ++seed, budget, v, 1);    // misaligned X
        if (::testing::Test::HasFatalFailure()) return;
      }
    check_spmm(Pattern::element(2, 8), 200, 1000, 17, DType::f32, DType::f16, ++seed, 0, v);
    check_spmm(Pattern::element(served(v, Pattern::element(4, 32)) ? 4 : 1, served(v, Pattern::element(4, 32)) ? 32 : 8),
               200, 1000, 17, DType::f32, DType::bf16, ++seed, 0, v);
    for (auto [n, k, m] : std::vector<std::tuple<int, int, int>>{{31, 64, 130}, {513, 2051, 33}, {1, 7, 2}})
      check_spmm(Pattern::element(2, 8), n, k, m, DType::f32, DType::f32, ++seed, 0, v);
  }
}

TEST(EwSpmmAsync, UnsupportedAndRefusedLaunches) {
  EW_REQUIRE_DEVICE();
  const auto w16 = random_ew(Pattern::element(2, 8), 64, 1000, DType::f16, 2200);
  const auto l16 = cuda::ew::pack_spmv(w16).layout;
  for (SpmmVariant v : kAsyncVariants) {
    EXPECT_NE(cuda::ew::spmm_unsupported(l16, DType::f16, 32, v), "");
    EXPECT_EQ(cuda::ew::find_spmm(DType::f16, l16.bits, 2, 8, nullptr, v), nullptr);
  }
  // 1:32: one tile spans 33 windows = 1056 columns: over the 544-column pitch; async16 needs two tiles.
  const auto w = random_ew(Pattern::element(1, 32), 64, 3000, DType::f32, 2201);
  const auto l = cuda::ew::pack_spmv(w).layout;
  EXPECT_NE(cuda::ew::spmm_unsupported(l, DType::f32, 32, SpmmVariant::async), "");
  EXPECT_NE(cuda::ew::spmm_unsupported(l, DType::f32, 32, SpmmVariant::async16), "");
  EXPECT_EQ(cuda::ew::spmm_unsupported(l, DType::f32, 32, SpmmVariant::base), "");
  // A launch whose phases split a tile pair, or configured for another variant, is refused.
  const auto w8 = random_ew(Pattern::element(2, 8), 64, 4000, DType::f32, 2202);
  const auto p8 = cuda::ew::pack_spmv(w8);
  for (SpmmVariant v : kAsyncVariants) {
    cuda::ew::SpmvArgs a;
    const auto cfg = cuda::ew::plan_spmm(p8.layout, DType::f32, 20, a, 4096, v);
    EXPECT_EQ(a.tiles_per_phase % 2, 0);
    EXPECT_LT(a.tiles_per_phase, a.tiles);
    const auto fn = cuda::ew::find_spmm(DType::f32, p8.layout.bits, 2, 8, nullptr, v);
    ASSERT_NE(fn, nullptr);
    cuda::ew::SpmvArgs odd = a;
    odd.tiles_per_phase = 3;
    EXPECT_THROW(fn(odd, cfg, nullptr), InvalidArgument);
    cuda::ew::SpmvArgs base_args;
    const auto base_cfg = cuda::ew::plan_spmm(p8.layout, DType::f32, 20, base_args, 4096, SpmmVariant::base);
    EXPECT_THROW(fn(base_args, base_cfg, nullptr), InvalidArgument);
  }
}

/// Inf / NaN in X: Inf at a column row 5 stores, NaN at a column it prunes and in the partial last
/// window; the outputs follow the fp64 products (pruned positions contribute nothing).
TEST(EwSpmmAsync, NanInfFollowTheProductSemantics) {
  EW_REQUIRE_DEVICE();
  for (SpmmVariant v : kAsyncVariants)
    for (auto p : {Pattern::element(2, 8), Pattern::element(3, 32), Pattern::element(8, 32)}) {
      if (!served(v, p)) continue;
      SCOPED_TRACE(p.str() + " " + cuda::ew::spmm_variant_name(v));
      const std::int64_t n = 96, k = 1500;
      auto w = random_ew(p, n, k, DType::f32, 2300);
      auto x = random_matrix(DType::f32, 18, k, 2301);
      if (!place_nan_inf(w, x)) return;
      std::vector<std::byte> y;
      run_spmm(w, x, DType::f32, 0, y, v);
      if (::testing::Test::HasFatalFailure()) return;
      const auto ref = oracle(x, w);
      const auto cmp = compare(y, DType::f32, ref);
      expect_close(cmp, DType::f32);
      EXPECT_TRUE(std::isinf(load_as_float(DType::f32, y.data(), std::size_t(3 * n + 5))));
      EXPECT_TRUE(std::isfinite(ref[std::size_t(7 * n + 5)]));
    }
}

/// Through the plan: each variant forced by name, and the automatic choice names its pick.
TEST(EwSpmmAsync, PlanForcedAndAutomatic) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 2400;
  for (std::string kernel : {"cuda:ew_spmm_async", "cuda:ew_spmm_async16", "cuda:ew_spmm_async_x4", ""}) {
    SCOPED_TRACE(kernel);
    const int m = 40;
    const auto w = random_ew(kernel == "cuda:ew_spmm_async_x4" ? Pattern::element(2, 8) : Pattern::element(8, 32), 333,
                             1025, DType::f32, ++seed);
    const auto x = random_matrix(DType::f32, m, 1025, ++seed);
    MatmulDesc d;
    d.m = m;
    d.x_dtype = DType::f32;
    d.y_dtype = DType::f32;
    d.backend = Backend::cuda;
    d.kernel = kernel;
    const Plan plan = Plan::create(w, d);
    if (!kernel.empty()) EXPECT_EQ(plan.kernel(), kernel);
    else EXPECT_NE(plan.reason().find(plan.kernel()), std::string::npos) << plan.reason();
    Dev dx(x.size_bytes()), dy(std::size_t(m) * 333 * 4);
    EW_CUDA(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
    EW_CUDA(cudaMemset(dy.p, 0xFF, std::size_t(m) * 333 * 4));
    plan.run(dx.p, dy.p, nullptr);
    EW_CUDA(cudaGetLastError());
    EW_CUDA(cudaDeviceSynchronize());
    std::vector<std::byte> y(std::size_t(m) * 333 * 4);
    EW_CUDA(cudaMemcpy(y.data(), dy.p, y.size(), cudaMemcpyDeviceToHost));
    const auto cmp = compare(y, DType::f32, reference_matmul_f64(x.view(), w));
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_LT(cmp.rel_err, tolerance(DType::f32)) << plan.kernel() << ": " << plan.reason();
  }
  // x4 is opt-in: never the automatic choice, named as such in the reason.
  {
    const auto w = random_ew(Pattern::element(2, 8), 333, 1025, DType::f32, ++seed);
    MatmulDesc d;
    d.m = 64;
    d.x_dtype = DType::f32;
    d.y_dtype = DType::f32;
    d.backend = Backend::cuda;
    const Plan plan = Plan::create(w, d);
    EXPECT_NE(plan.kernel(), "cuda:ew_spmm_async_x4");
    EXPECT_NE(plan.reason().find("ew_spmm_async_x4 is opt-in"), std::string::npos) << plan.reason();
  }
  // f16 weights: the async variants are not in the race (named in the reason as unsupported).
  const auto w = random_ew(Pattern::element(2, 8), 64, 256, DType::f16, ++seed);
  MatmulDesc d;
  d.m = 64;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f16;
  d.backend = Backend::cuda;
  d.kernel = "cuda:ew_spmm_async";
  EXPECT_THROW(Plan::create(w, d), Error);
}

TEST(EwSpmmAsyncSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  for (SpmmVariant v : kAsyncVariants) {
    check_spmm(Pattern::element(2, 8), 70, 1000, 20, DType::f32, DType::f32, 9201, 4096, v);  // phases, 16-byte
    check_spmm(Pattern::element(1, 8), 33, 301, 17, DType::f32, DType::f32, 9205, 0, v, 1);   // tails, misaligned
    if (v == SpmmVariant::async_x4) continue;
    check_spmm(Pattern::element(3, 7), 33, 301, 17, DType::f32, DType::f32, 9202, 0, v);       // generic, 4-byte
    if (served(v, Pattern::element(3, 32)))
      check_spmm(Pattern::element(3, 32), 40, 4100, 17, DType::f32, DType::f32, 9203, 4096, v);  // periods
    check_spmm(Pattern::element(4, 32), 40, 1100, 17, DType::f32, DType::f16, 9204, 0, v, 1);  // misaligned
  }
}

}  // namespace
