// sparsenm GPU tests — cuda:sptc_24_wgmma_dec (hardware 2:4 at m <= 32, wgmma.mma_async.sp with a
// stream-K split reduced by fp32 atomics) against an fp64 reference: f16 / bf16 in, f32 / f16 / bf16
// out, every BN (m = 1 / 7 / 8 / 9 / 16 / 17 / 32), tails in n (rows) and k, capped grids (segments
// spanning tiles), every accumulator-set count (1 / 2 / 4 / 8) on ranges not a multiple of it and on
// segments shorter than it, repeated runs on one instance (the workspace must come back to zero), poisoned
// outputs; unsupported problems are reported, not run. Skips without an sm_90 device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cuda/common.cuh"
#include "cuda/sptc/sptc.hpp"
#include "gpu/sptc_support.hpp"
#include "plan/registry.hpp"
#include "sparsenm/format.hpp"

namespace sparsenm::detail {
void register_sptc_dec_kernels(KernelRegistry& r);
std::unique_ptr<KernelInstance> create_sptc_dec(const CondensedMatrix& w, const MatmulDesc& d, int grid_limit, int sets);
}  // namespace sparsenm::detail

namespace sparsenm {
namespace {

namespace cs = cuda::sptc;
using namespace sptc_test;

#define REQUIRE_SM90()                                                                   \
  REQUIRE_DEVICE();                                                                      \
  if (cs::device_cc() != 90) GTEST_SKIP() << "cuda:sptc_24_wgmma_dec needs an sm_90 device"

/// One case through a fresh instance (grid_limit 0: the plan's grid), `runs` launches in a row on
/// the poisoned output (each must give the product: the workspace returns to zero).
void run_case(DType in, DType out, const Case& c, std::uint64_t seed, int grid_limit = 0, int runs = 1,
              const Pattern& pat = Pattern::hw24(), int sets = 0) {
  MatmulDesc d;
  d.m = c.m;
  d.x_dtype = in;
  d.y_dtype = out;
  std::string what;
  Result r = check(pat, in, out, c, seed, [&](const CondensedMatrix& w, void* x, void* y) {
    auto inst = detail::create_sptc_dec(w, d, grid_limit, sets);
    what = inst->describe();
    for (int i = 0; i < runs; ++i) {
      if (i > 0) SPARSENM_CUDA_CHECK(cudaMemset(y, 0xFF, std::size_t(c.m * c.n) * dtype_size(out)));
      inst->run(x, y, nullptr);
      SPARSENM_CUDA_CHECK(cudaGetLastError());
    }
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  });
  EXPECT_LT(r.rel_fro, tolerance(out)) << to_string(in) << "->" << to_string(out) << " m=" << c.m << " n=" << c.n
                                       << " k=" << c.k << " grid_limit=" << grid_limit << " sets=" << sets << " [" << what << "]";
  EXPECT_LT(r.max_rel, 10 * tolerance(out)) << to_string(in) << "->" << to_string(out) << " m=" << c.m << " n=" << c.n
                                            << " k=" << c.k << " [" << what << "]";
}

TEST(SptcDecGpu, EveryMAndDtypeWithTails) {
  REQUIRE_SM90();
  std::uint64_t seed = 7100;
  for (DType in : {DType::f16, DType::bf16})
    for (std::int64_t m : {1, 7, 8, 9, 16, 17, 32})
      for (const Case& shape : {Case{0, 200, 132}, Case{0, 300, 1000}, Case{0, 1024, 2048}}) {
        const DType out = m % 3 == 0 ? DType::f32 : (m % 3 == 1 ? in : DType::f16);
        run_case(in, out, Case{m, shape.n, shape.k}, seed++);
      }
}

TEST(SptcDecGpu, CappedGridsSplitTilesAcrossCtas) {
  REQUIRE_SM90();
  // 3 tiles x 9 k-blocks = 27 units: 4 CTAs (ranges cross tile ends), 5, 27 (one unit each: every
  // tile reduced over 9 CTAs) and 1 (one CTA runs every tile in turn)
  std::uint64_t seed = 7300;
  for (int limit : {1, 4, 5, 27})
    for (std::int64_t m : {3, 16, 25}) run_case(DType::f16, DType::f32, Case{m, 300, 520}, seed++, limit);
}

TEST(SptcDecGpu, EveryAccumulatorSetCount) {
  REQUIRE_SM90();
  // sets 1 / 2 / 4 / 8 (unit i of a segment into set i % sets, sets - 1 groups in flight): 3 tiles x
  // 9 k-blocks = 27 units over 1 / 4 / 5 / 27 CTAs (ranges of 27, 6-7, 5-6 and 1 units, segments of
  // 1..9 units: never a multiple of 8, mostly not of 2 or 4), every BN; tiny k (1 and 2 k-blocks: a
  // segment shorter than the sets); one repeated run per count (the workspace returns to zero)
  std::uint64_t seed = 7700;
  for (int sets : {1, 2, 4, 8}) {
    for (int limit : {1, 4, 5, 27})
      for (std::int64_t m : {3, 16, 25})
        run_case(DType::f16, DType::f32, Case{m, 300, 520}, seed++, limit, 1, Pattern::hw24(), sets);
    for (std::int64_t k : {8, 40, 100, 136})
      for (std::int64_t m : {1, 12, 32})
        run_case(DType::bf16, DType::f16, Case{m, 260, k}, seed++, 0, 1, Pattern::hw24(), sets);
    run_case(DType::f16, DType::bf16, Case{29, 700, 1500}, seed++, 7, 2, Pattern::hw24(), sets);
  }
}

TEST(SptcDecGpu, RepeatedRunsReuseTheWorkspace) {
  REQUIRE_SM90();
  run_case(DType::f16, DType::f16, Case{32, 700, 1500}, 7400, 0, 3);
  run_case(DType::bf16, DType::f32, Case{5, 260, 640}, 7401, 7, 3);
}

TEST(SptcDecGpu, ElementPatternRepackedTo24) {
  REQUIRE_SM90();
  run_case(DType::f16, DType::f32, Case{12, 190, 336}, 7500, 0, 1, Pattern::element(2, 8));
}

TEST(SptcDecGpu, Tiny) {  // the compute-sanitizer memcheck case
  REQUIRE_SM90();
  run_case(DType::f16, DType::f16, Case{9, 70, 100}, 7600, 0, 2);
  run_case(DType::bf16, DType::f32, Case{32, 130, 200}, 7601, 3, 2);
  run_case(DType::f16, DType::f32, Case{8, 200, 600}, 7602, 2, 2, Pattern::hw24(), 4);  // 20 units, 10 per CTA
  run_case(DType::bf16, DType::f16, Case{20, 130, 1000}, 7603, 3, 1, Pattern::hw24(), 8);
}

TEST(SptcDecGpu, UnsupportedProblemsAreReportedNotRun) {
  REQUIRE_SM90();
  detail::KernelRegistry reg;
  detail::register_sptc_dec_kernels(reg);
  ASSERT_EQ(reg.candidates().size(), 1u);
  const auto& cand = reg.candidates()[0];
  EXPECT_EQ(cand.name, "cuda:sptc_24_wgmma_dec");
  DenseMatrix wd = random_pattern_matrix(Pattern::hw24(), DType::f16, 64, 64, 1, 0.0);
  CondensedMatrix w = condense(wd.view(), Pattern::hw24());
  MatmulDesc d;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f16;
  d.m = 33;
  EXPECT_NE(cand.unsupported(w, d).find("m must be"), std::string::npos);
  EXPECT_THROW(cand.create(w, d), InvalidArgument);
  d.m = 8;
  EXPECT_EQ(cand.unsupported(w, d), "");
  d.x_dtype = DType::bf16;
  EXPECT_NE(cand.unsupported(w, d), "");
  EXPECT_THROW(cand.create(w, d), InvalidArgument);
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f64;
  EXPECT_NE(cand.unsupported(w, d), "");
  // a weight that is not 2:4-representable (element 3:4)
  DenseMatrix w34 = random_pattern_matrix(Pattern::element(3, 4), DType::f16, 64, 64, 2, 0.0);
  CondensedMatrix c34 = condense(w34.view(), Pattern::element(3, 4));
  d.y_dtype = DType::f16;
  EXPECT_NE(cand.unsupported(c34, d), "");
  EXPECT_THROW(cand.create(c34, d), InvalidArgument);
  // the launcher's own checks
  cs::DeviceA a{nullptr, nullptr, 64, 100, 64};
  cs::Problem p{DType::f16, DType::f16, nullptr, nullptr, 8, 64, 64, 64};
  EXPECT_THROW(cs::run_sptc24_wgmma_dec(a, CUtensorMap{}, p, nullptr, nullptr, 0, true), InvalidArgument);  // rows_pad % 128
  a.rows_pad = 128;
  p.m = 40;
  EXPECT_THROW(cs::run_sptc24_wgmma_dec(a, CUtensorMap{}, p, nullptr, nullptr, 0, true), InvalidArgument);  // m > 32
  p.m = 8;
  EXPECT_THROW(cs::run_sptc24_wgmma_dec(a, CUtensorMap{}, p, nullptr, nullptr, 0, false), InvalidArgument);  // no workspace
  EXPECT_THROW(cs::run_sptc24_wgmma_dec(a, CUtensorMap{}, p, nullptr, nullptr, 0, true, 3), InvalidArgument);  // sets
  EXPECT_EQ(cs::run_sptc24_wgmma_dec(a, CUtensorMap{}, p, nullptr, nullptr, 0, true, 2).sets, 2);
  EXPECT_EQ(cs::run_sptc24_wgmma_dec(a, CUtensorMap{}, p, nullptr, nullptr, 0, true).sets, cs::dec_default_sets(8));
}

}  // namespace
}  // namespace sparsenm
