// sparsenm GPU tests — the native V:2:M stream-K SpMV ("cuda:vnm_spmv_sk" / "cuda:vnm_spmv_skr",
// ew_spmv_sk_kernel with SkTraits::VM = M; weight packed by format/vnm_sk_pack.hpp). Against the
// fp64 reference of the venom weight on fresh random data: 128:2:8, 128:2:16, 64:2:8, 32:2:16 in
// f16 and bf16, tails in n (not a multiple of 32 or V) and k (not a multiple of M or of the
// 16-window tile); direct launches with forced grids (many stream-K splits: head and tail partials
// in every slab position), X surrounded by NaN and misaligned (the threads' X copy), poisoned Y and
// guard bytes, the workspace zero again after three launches; plans forced and automatic, with
// Inf in X at a column the first slab does not store and NaN at a column it selects that only some
// of its rows store (those rows must be NaN, the others finite: FORMAT.md section 8); the reasons when
// the candidates decline.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda/ew/spmv_sk_kernel.cuh"
#include "cuda/ew/spmv_vnm_sk.hpp"
#include "ew_support.hpp"
#include "format/vnm_sk_pack.hpp"
#include "sk_test_support.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/reference.hpp"
#include "support/random_pattern.hpp"

namespace {

using namespace sparsenm;
using namespace ewtest;
namespace sew = sparsenm::cuda::ew;

CondensedMatrix random_venom(int V, int M, std::int64_t n, std::int64_t k, DType t, std::uint64_t seed) {
  const Pattern p = Pattern::venom(V, M);
  return condense(random_pattern_matrix(p, t, n, k, seed, 0.05).view(), p);
}

void expect_close(const std::vector<std::byte>& y, DType yt, const std::vector<double>& ref, const std::string& what) {
  const Compare c = compare(y, yt, ref);
  EXPECT_EQ(c.unwritten, 0) << what;
  EXPECT_EQ(c.class_mismatch, 0) << what;
  EXPECT_LT(c.rel_err, tolerance(yt)) << what;
}

TEST(VnmSpmvSk, DirectLaunchesMatchTheReference) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9100;
  struct Case {
    int v, m;
  };
  for (const Case c : {Case{128, 8}, Case{128, 16}, Case{64, 8}, Case{32, 16}})
    for (DType t : {DType::f16, DType::bf16})
      for (int ring : {0, 3}) {
        // tails: n not a multiple of 32 or V; k not a multiple of M or of the 16-window tile
        const std::int64_t n = 2 * c.v + 77, k = 16 * c.m * 3 + 5 * c.m + 3;
        const CondensedMatrix w = random_venom(c.v, c.m, n, k, t, ++seed);
        const detail::VnmSkPacked pk = detail::pack_vnm_sk(w);
        const sew::SkLaunchFn fn = sew::find_vnm_sk(t, c.m, ring);
        ASSERT_NE(fn, nullptr);
        DeviceMem tab(pk.table.size());
        EW_CUDA(cudaMemcpy(tab.p, pk.table.data(), pk.table.size(), cudaMemcpyHostToDevice));
        const DenseMatrix x = random_matrix(t, 1, k, ++seed);
        const std::vector<double> ref = reference_matmul_f64(x.view(), w);
        for (int grid : {0, 1, 3, 7, 29})
          for (DType yt : {t, DType::f32})
            for (bool misaligned : {false, true}) {
              if (misaligned && (grid == 1 || grid == 7 || yt == DType::f32)) continue;  // a subset is enough
              const std::string what = std::to_string(c.v) + ":2:" + std::to_string(c.m) + " " + std::string(to_string(t)) +
                                       " ring " + std::to_string(ring) + " grid " + std::to_string(grid) + " y " +
                                       std::string(to_string(yt)) + (misaligned ? " misaligned X" : "");
              SCOPED_TRACE(what);
              sew::SkArgs a;
              const sew::SkConfig cfg = sew::plan_vnm_sk(pk.layout, t, sms(), ring, a, grid);
              a.tab = static_cast<const unsigned char*>(tab.p);
              std::vector<std::byte> y;
              run_stream_k(pk, x, misaligned, yt, std::size_t(n) * dtype_size(yt), 64, sew::vnm_sk_ws_bytes(pk.layout),
                           sew::vnm_sk_cnt_bytes(pk.layout), a, cfg, fn, y);
              if (HasFatalFailure()) return;
              expect_close(y, yt, ref, what);
            }
      }
}

/// X of one row for w: random, with Inf at the first column no row of the first slab stores (other
/// slabs may store it: their rows become Inf or NaN, as the reference says) and NaN at a column that
/// the first slab selects and that some but not all of its rows store. Returns false when the
/// weight offers no such columns.
bool poison_x(const CondensedMatrix& w, DenseMatrix& x) {
  const std::int64_t k = w.cols(), V = w.pattern().v, rows = std::min<std::int64_t>(V, w.rows());
  std::vector<int> stored_by(std::size_t(k), 0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < w.layout.value_cols; ++j)
      if (const auto c = w.column_of(r, j); c < k) ++stored_by[std::size_t(c)];
  std::int64_t inf_col = -1, nan_col = -1;
  for (std::int64_t c = 0; c < k; ++c) {
    if (inf_col < 0 && stored_by[std::size_t(c)] == 0) inf_col = c;
    if (nan_col < 0 && stored_by[std::size_t(c)] > 0 && stored_by[std::size_t(c)] < rows) nan_col = c;
  }
  if (inf_col < 0 || nan_col < 0) return false;
  store_from_float(x.dtype(), x.data(), std::size_t(inf_col), std::numeric_limits<float>::infinity());
  store_from_float(x.dtype(), x.data(), std::size_t(nan_col), std::numeric_limits<float>::quiet_NaN());
  return true;
}

TEST(VnmSpmvSk, PlansForcedAndAutomaticWithNonFiniteX) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9200;
  for (const char* kernel : {"cuda:vnm_spmv_sk", "cuda:vnm_spmv_skr", ""})
    for (int M : {8, 16})
      for (DType t : {DType::f16, DType::bf16}) {
        const std::string what = std::string(*kernel ? kernel : "automatic") + " 128:2:" + std::to_string(M) + " " +
                                 std::string(to_string(t));
        SCOPED_TRACE(what);
        const std::int64_t n = 1000, k = 16 * M * 4 + 3 * M + 5;
        const CondensedMatrix w = random_venom(128, M, n, k, t, ++seed);
        DenseMatrix x = random_matrix(t, 1, k, ++seed);
        ASSERT_TRUE(poison_x(w, x)) << "test setup: no column to poison";
        const std::vector<double> ref = reference_matmul_f64(x.view(), w);
        std::int64_t nan_rows = 0;
        for (double v : ref) nan_rows += std::isnan(v) ? 1 : 0;
        EXPECT_GT(nan_rows, 0);
        EXPECT_LT(nan_rows, n);
        MatmulDesc d = cuda_desc(1, t, kernel);
        d.x_finite = false;  // only kernels that skip pruned positions race (FORMAT.md section 8)
        const Plan plan = Plan::create(w, d);
        if (*kernel) {
          EXPECT_EQ(plan.kernel(), kernel);
          EXPECT_NE(plan.reason().find("native V:2:M"), std::string::npos) << plan.reason();
        } else {
          // both native candidates were timed beside the element-form ones
          EXPECT_NE(plan.reason().find("cuda:vnm_spmv_sk ["), std::string::npos) << plan.reason();
          EXPECT_NE(plan.reason().find("cuda:vnm_spmv_skr ["), std::string::npos) << plan.reason();
          EXPECT_NE(plan.reason().find("cuda:ew_spmv_sk ["), std::string::npos) << plan.reason();
        }
        std::vector<std::byte> y;
        run_plan_thrice(plan, x, std::size_t(n) * dtype_size(t), y);
        expect_close(y, t, ref, what + " (" + plan.kernel() + ")");
      }
}

void expect_declined(const CondensedMatrix& w, std::int64_t m, const char* kernel, const std::string& why) {
  try {
    (void)Plan::create(w, cuda_desc(m, w.dtype, kernel));
    ADD_FAILURE() << "forcing " << kernel << " on " << w.pattern().str() << " m = " << m << " did not throw";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(VnmSpmvSk, SaysWhyItDeclines) {
  EW_REQUIRE_DEVICE();
  const CondensedMatrix v8 = random_venom(128, 8, 200, 300, DType::f16, 9300);
  expect_declined(v8, 2, "cuda:vnm_spmv_sk", "vnm_spmv_sk serves m = 1 only");
  expect_declined(v8, 4, "cuda:vnm_spmv_skr", "vnm_spmv_skr serves m = 1 only");
  expect_declined(random_venom(64, 32, 100, 300, DType::f16, 9301), 1, "cuda:vnm_spmv_sk", "M <= 16");
  expect_declined(random_venom(64, 10, 100, 300, DType::f16, 9302), 1, "cuda:vnm_spmv_sk", "no compiled instance for 64:2:10");
  expect_declined(random_venom(64, 8, 100, 300, DType::f32, 9303), 1, "cuda:vnm_spmv_skr", "f16 or bf16");
  const Pattern e28 = Pattern::element(2, 8);
  expect_declined(condense(random_pattern_matrix(e28, DType::f16, 64, 64, 9304).view(), e28), 1, "cuda:vnm_spmv_sk",
                  "needs a venom V:2:M pattern");
  // X past the shared-memory budget: 128:2:16 with k = 64 Ki columns (2 B each > 96 KiB)
  const FormatLayout big = FormatLayout::of(Pattern::venom(128, 16), 32, 65536);
  EXPECT_NE(sew::vnm_sk_unsupported(big, DType::f16, 1, 0).find("exceeds the shared-memory budget"), std::string::npos);
}

}  // namespace
