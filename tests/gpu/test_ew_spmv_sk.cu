// sparsenm GPU tests — EW-N:M SpMV m = 1, stream-K form (cuda:ew_spmv_sk / _sk4): every compiled
// pattern x f16 / bf16, tails in n and k, grids from 1 CTA (many groups per warp: head, whole and
// tail groups) to more warps than units (empty ranges; a group shared by many warps), waves 1 / 4,
// output dtypes, misaligned X (the threads' copy instead of cp.async.bulk), poisoned Y with a guard
// row, repeated launches (the workspace and counters must come back to zero), NaN/Inf semantics,
// forced plans and the unsupported reasons. The shared-memory ring variants (RING = 3 / 4,
// "cuda:ew_spmv_skr") run the same cases plus ranges of 0 / 1 / 2 / 3 tiles per warp (shorter than
// the ring's prologue). The value ring ("cuda:ew_spmv_skv": RING 3, index words through registers,
// loop unrolled by 3) runs every ring case too, plus ranges of 4..7 tiles (the unroll boundary).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cuda/ew/spmv_sk.hpp"
#include "cuda/ew/spmv_sk_kernel.cuh"
#include "format/sk_grid_order.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "ew_support.hpp"
#include "sk_test_support.hpp"

namespace {

using namespace sparsenm;
using namespace ewtest;
namespace sew = ::sparsenm::cuda::ew;

struct SkCase {
  Pattern pattern;
  std::int64_t n, k;
  DType t, yt;
  int grid = 0;  ///< 0: the plan's grid
  int waves = 1;
  bool misaligned_x = false;
  int ring = 0;  ///< 0: register ring; 3 / 4: shared-memory ring stages
  bool vals = false;  ///< ring of value vectors only, index words through registers (ring 3)
  int warps = 8;      ///< warps per CTA (32: "cuda:ew_spmv_skw")
  bool grid_order = false;  ///< the weight reordered into the grid order ("cuda:ew_spmv_skg" / "_skrg" / "_skwg")
};

struct RingForm {
  int ring;
  bool vals;
  int warps;
};
/// The shared-memory ring forms: skr (3), ring 4, skv (3, values only), skw (the same, 32 warps).
const std::vector<RingForm>& ring_forms() {
  static const std::vector<RingForm> f = {{3, false, 8}, {4, false, 8}, {3, true, 8}, {3, true, 32}};
  return f;
}

std::string name(const SkCase& c) {
  return c.pattern.str() + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " " +
         std::string(to_string(c.t)) + "->" + std::string(to_string(c.yt)) + " grid=" + std::to_string(c.grid) +
         " waves=" + std::to_string(c.waves) + (c.misaligned_x ? " misaligned-x" : "") + " ring=" + std::to_string(c.ring) +
         (c.vals ? " values-only" : "") + " warps=" + std::to_string(c.warps) + (c.grid_order ? " grid-order" : "");
}

/// Runs three launches (Y poisoned before each, plus one guard row that must stay untouched);
/// returns Y of the last launch.
void run_sk(const CondensedMatrix& w, const DenseMatrix& x, const SkCase& c, std::vector<std::byte>& y) {
  auto packed = sew::pack_spmv(w);
  const auto& l = packed.layout;
  sew::SkArgs a;
  const auto cfg = sew::plan_spmv_sk(l, c.t, sms(), c.waves, a, c.grid, c.ring, c.vals, c.warps);
  const auto fn = sew::find_spmv_sk(c.t, c.pattern.n, c.pattern.m, c.ring, c.vals, c.warps, c.grid_order);
  if (c.grid_order) {
    const auto before = packed.values;
    const auto before_idx = packed.indices;
    sew::spmv_sk_grid_order(packed, a);
    ASSERT_EQ(a.grid_lmin, a.units / a.warps_total);
    // Every tile (values and index words) at its grid-order slot for this grid (an identity when
    // the grid order is one, e.g. one step per warp and the only long warp last).
    const std::size_t vt = std::size_t(l.vecs) * 32 * 16, it = std::size_t(l.bits) * 32;
    for (long long u = 0; u < a.units; ++u) {
      const auto s = std::size_t(::sparsenm::detail::sk_grid_slot(a.units, a.warps_total, u));
      ASSERT_TRUE(std::equal(before.begin() + u * vt, before.begin() + (u + 1) * vt, packed.values.begin() + s * vt));
      ASSERT_TRUE(std::equal(before_idx.begin() + u * it, before_idx.begin() + (u + 1) * it, packed.indices.begin() + s * it));
    }
  }
  if (c.ring > 0) {
    ASSERT_EQ(a.ring_off % 128, 0);
    ASSERT_GE(a.ring_off, a.x_cols * 2);
    ASSERT_EQ(cfg.smem_bytes, sew::spmv_sk_smem_bytes(l, c.ring, c.vals, c.warps));
    ASSERT_EQ(a.warps_total, cfg.grid * c.warps);
  }
  ASSERT_NE(fn, nullptr);
  ASSERT_GE(cfg.grid, 1);
  const std::size_t ybytes = std::size_t(c.n) * dtype_size(c.yt), extra = std::size_t(c.n) * dtype_size(c.yt);
  run_stream_k(packed, x, c.misaligned_x, c.yt, ybytes, extra, sew::spmv_sk_ws_bytes(l), sew::spmv_sk_cnt_bytes(l), a,
               cfg, fn, y);
}

void check_case(const SkCase& c, std::uint64_t seed) {
  SCOPED_TRACE(name(c));
  const auto w = random_ew(c.pattern, c.n, c.k, c.t, seed);
  const auto x = random_matrix(c.t, 1, c.k, seed + 1);
  ASSERT_EQ(sew::spmv_sk_unsupported(sew::SpmvLayout::of(w.layout, c.t), c.t, 1), "");
  std::vector<std::byte> y;
  run_sk(w, x, c, y);
  if (::testing::Test::HasFatalFailure()) return;
  const auto cmp = compare(y, c.yt, oracle(x, w));
  expect_close(cmp, c.yt);
}

TEST(EwSpmvSk, EveryPatternDtypeAndTail) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 7100;
  for (const Pattern& p : sk_compiled_patterns())
    for (DType t : {DType::f16, DType::bf16})
      for (auto shape : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 9}, {77, 1001}, {300, 4099}})
        check_case({p, shape.first, shape.second, t, t}, ++seed);
  check_case({Pattern::hw24(), 95, 130, DType::f16, DType::f16}, ++seed);
}

TEST(EwSpmvSk, GridsWavesAndOutputDtypes) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 7300;
  // 1 CTA: every warp walks several groups (head partial, whole groups stored directly, tail partial);
  // 3 / 17 CTAs: ranges cut groups at odd places; 400 CTAs: more warps than units (empty ranges,
  // many warps per group).
  for (int grid : {1, 3, 17, 400})
    for (auto p : {Pattern::element(2, 8), Pattern::element(1, 16)})
      check_case({p, 1000, 2050, DType::f16, DType::f16, grid}, ++seed);
  for (int waves : {1, 4}) check_case({Pattern::element(2, 8), 4100, 8195, DType::f16, DType::f16, 0, waves}, ++seed);
  check_case({Pattern::element(2, 8), 257, 3001, DType::f16, DType::f32}, ++seed);
  check_case({Pattern::element(1, 8), 257, 3001, DType::bf16, DType::f16}, ++seed);
  check_case({Pattern::element(2, 16), 257, 3001, DType::f16, DType::bf16}, ++seed);
}

TEST(EwSpmvSk, MisalignedXAndLargeShape) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 7500;
  for (int grid : {0, 5}) {
    check_case({Pattern::element(2, 8), 333, 1027, DType::f16, DType::f16, grid, 1, true}, ++seed);
    check_case({Pattern::element(2, 16), 333, 1024, DType::bf16, DType::bf16, grid, 1, true}, ++seed);
  }
  check_case({Pattern::element(1, 8), 4096, 12288, DType::f16, DType::f16}, ++seed);
  check_case({Pattern::element(2, 8), 2100, 11008, DType::f16, DType::f16, 0, 4}, ++seed);
}

TEST(EwSpmvSk, NanInfFollowTheProductSemantics) {
  EW_REQUIRE_DEVICE();
  for (DType t : {DType::f16, DType::bf16}) {
    const Pattern p = Pattern::element(2, 8);
    const std::int64_t n = 64, k = 203;  // last window has 3 columns
    auto w = random_ew(p, n, k, t, 7601);
    auto x = random_matrix(t, 1, k, 7602);
    const auto& l = w.layout;
    const std::int64_t col_kept = get_packed(w.indices.data() + 5 * l.index_row_bytes, 0, l.index_bits);
    x.set(0, col_kept, INFINITY);  // row 5 stores this column: its output is non-finite
    SkCase c{p, n, k, t, t, 3};
    std::vector<std::byte> y;
    run_sk(w, x, c, y);
    if (::testing::Test::HasFatalFailure()) return;
    const auto ref = oracle(x, w);
    const auto cmp = compare(y, t, ref);
    expect_close(cmp, t);
    EXPECT_FALSE(std::isfinite(load_as_float(t, y.data(), 5)));
    std::int64_t nonfinite = 0;
    for (double v : ref) nonfinite += !std::isfinite(v);
    EXPECT_GT(nonfinite, 0);
    EXPECT_LT(nonfinite, n);  // rows that do not store the column stay finite
  }
}

TEST(EwSpmvSk, ForcedPlansAndUnsupportedReasons) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 7700;
  for (const char* kernel : {"cuda:ew_spmv_sk", "cuda:ew_spmv_sk4"})
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(std::string(kernel) + " " + std::string(to_string(t)));
      const std::int64_t n = 999, k = 2051;
      const auto w = random_ew(Pattern::element(2, 8), n, k, t, ++seed);
      const auto x = random_matrix(t, 1, k, ++seed);
      const Plan plan = Plan::create(w, cuda_desc(1, t, kernel));
      EXPECT_EQ(plan.kernel(), kernel);
      EXPECT_GT(plan.workspace_bytes(), 0u);
      std::vector<std::byte> y;
      run_plan_thrice(plan, x, std::size_t(n) * dtype_size(t), y);
      if (::testing::Test::HasFatalFailure()) return;
      const auto cmp = compare(y, t, oracle(x, w));
      EXPECT_EQ(cmp.unwritten, 0);
      EXPECT_LT(cmp.rel_err, tolerance(t));
    }
  {  // the automatic choice never takes the opt-in 4-wave variant (measured slower)
    const auto w = random_ew(Pattern::element(2, 8), 999, 2051, DType::f16, ++seed);
    const Plan plan = Plan::create(w, cuda_desc(1, DType::f16));
    EXPECT_NE(plan.kernel(), "cuda:ew_spmv_sk4") << plan.reason();
  }
  const auto l = sew::SpmvLayout::of(ew_layout(Pattern::element(2, 8), 64, 64), DType::f16);
  EXPECT_NE(sew::spmv_sk_unsupported(l, DType::f16, 2), "");   // m = 1 only
  EXPECT_NE(sew::spmv_sk_unsupported(l, DType::f32, 1), "");   // f16 / bf16 only
  const auto odd = sew::SpmvLayout::of(ew_layout(Pattern::element(3, 7), 64, 64), DType::f16);
  EXPECT_NE(sew::spmv_sk_unsupported(odd, DType::f16, 1), "");  // no compiled instance
  const auto wide = sew::SpmvLayout::of(ew_layout(Pattern::element(2, 8), 64, 60000), DType::f16);
  EXPECT_NE(sew::spmv_sk_unsupported(wide, DType::f16, 1), "");  // X over the shared budget
  const auto w = random_ew(Pattern::element(2, 8), 64, 64, DType::f16, 7800);
  EXPECT_THROW(Plan::create(w, cuda_desc(2, DType::f16, "cuda:ew_spmv_sk")), Unsupported);
}

TEST(EwSpmvSkRing, EveryPatternDtypeAndTail) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 8100;
  for (auto [ring, vals, warps] : ring_forms())
    for (const Pattern& p : sk_compiled_patterns())
      for (DType t : {DType::f16, DType::bf16})
        for (auto shape : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 9}, {77, 1001}, {300, 4099}})
          check_case({p, shape.first, shape.second, t, t, 0, 1, false, ring, vals, warps}, ++seed);
  check_case({Pattern::hw24(), 95, 130, DType::f16, DType::f16, 0, 1, false, 3}, ++seed);
}

TEST(EwSpmvSkRing, GridsSmallRangesAndOutputDtypes) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 8300;
  for (auto [ring, vals, warps] : ring_forms()) {
    for (int grid : {1, 3, 17, 400})
      for (auto p : {Pattern::element(2, 8), Pattern::element(1, 16)})
        check_case({p, 1000, 2050, DType::f16, DType::f16, grid, 1, false, ring, vals, warps}, ++seed);
    // 8 row groups of 1 .. 7 tiles (2:8: 32 slots per 128 columns) on 1 or 2 CTAs: ranges of
    // 0 .. 7 tiles per warp, i.e. shorter than the ring's prologue and across the value ring's
    // unroll-by-3 boundary.
    for (std::int64_t k : {128, 256, 300, 512, 640, 700, 896})
      for (int grid : {1, 2})
        check_case({Pattern::element(2, 8), 256, k, DType::f16, DType::f16, grid, 1, false, ring, vals, warps}, ++seed);
    check_case({Pattern::element(2, 8), 4100, 8195, DType::f16, DType::f16, 0, 1, false, ring, vals, warps}, ++seed);
    check_case({Pattern::element(2, 8), 257, 3001, DType::f16, DType::f32, 0, 1, false, ring, vals, warps}, ++seed);
    check_case({Pattern::element(1, 8), 257, 3001, DType::bf16, DType::f16, 0, 1, false, ring, vals, warps}, ++seed);
    check_case({Pattern::element(2, 16), 257, 3001, DType::f16, DType::bf16, 0, 1, false, ring, vals, warps}, ++seed);
    check_case({Pattern::element(2, 4), 257, 3001, DType::bf16, DType::bf16, 0, 1, false, ring, vals, warps}, ++seed);
  }
}

TEST(EwSpmvSkRing, MisalignedXLargeShapeAndNanInf) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 8500;
  for (auto [ring, vals, warps] : ring_forms()) {
    for (int grid : {0, 5}) {
      check_case({Pattern::element(2, 8), 333, 1027, DType::f16, DType::f16, grid, 1, true, ring, vals, warps}, ++seed);
      check_case({Pattern::element(2, 16), 333, 1024, DType::bf16, DType::bf16, grid, 1, true, ring, vals, warps}, ++seed);
    }
    check_case({Pattern::element(1, 8), 4096, 12288, DType::f16, DType::f16, 0, 1, false, ring, vals, warps}, ++seed);
    check_case({Pattern::element(2, 8), 2080, 12290, DType::bf16, DType::bf16, 0, 1, false, ring, vals, warps}, ++seed);
    if (warps == 8)  // X 47 KiB + 32 warps x 3 stages exceed one CTA's shared memory (checked below)
      check_case({Pattern::element(8, 32), 1000, 24000, DType::bf16, DType::bf16, 0, 1, false, ring, vals, warps}, ++seed);
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE("nan/inf ring " + std::to_string(ring) + (vals ? " values-only" : "") + " warps " +
                   std::to_string(warps));
      const Pattern p = Pattern::element(2, 8);
      const std::int64_t n = 64, k = 203;
      auto w = random_ew(p, n, k, t, ++seed);
      auto x = random_matrix(t, 1, k, ++seed);
      const auto& l = w.layout;
      const std::int64_t col_kept = get_packed(w.indices.data() + 9 * l.index_row_bytes, 1, l.index_bits);
      x.set(0, col_kept, NAN);  // row 9 stores this column (slot 1, window 0): its output is NaN
      SkCase c{p, n, k, t, t, 3, 1, false, ring, vals, warps};
      std::vector<std::byte> y;
      run_sk(w, x, c, y);
      if (::testing::Test::HasFatalFailure()) return;
      const auto ref = oracle(x, w);
      const auto cmp = compare(y, t, ref);
      expect_close(cmp, t);
      EXPECT_TRUE(std::isnan(load_as_float(t, y.data(), 9)));
    }
  }
}

TEST(EwSpmvSkRing, ForcedPlanAndRaced) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 8700;
  for (DType t : {DType::f16, DType::bf16}) {
    const std::int64_t n = 999, k = 2051;
    const auto w = random_ew(Pattern::element(2, 8), n, k, t, ++seed);
    const auto x = random_matrix(t, 1, k, ++seed);
    const Plan plan = Plan::create(w, cuda_desc(1, t, "cuda:ew_spmv_skr"));
    EXPECT_EQ(plan.kernel(), "cuda:ew_spmv_skr");
    std::vector<std::byte> y;
    run_plan_thrice(plan, x, std::size_t(n) * dtype_size(t), y);
    if (::testing::Test::HasFatalFailure()) return;
    const auto cmp = compare(y, t, oracle(x, w));
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_LT(cmp.rel_err, tolerance(t));
  }
  const auto w = random_ew(Pattern::element(2, 8), 999, 2051, DType::f16, ++seed);
  MatmulDesc d = cuda_desc(1, DType::f16);
  const Plan plan = Plan::create(w, d);
  // Raced beside the register form: timed in the automatic choice (its reason lists every timed one).
  EXPECT_NE(plan.reason().find("cuda:ew_spmv_skr ["), std::string::npos) << plan.reason();
  d.m = 2;
  d.kernel = "cuda:ew_spmv_skr";
  EXPECT_THROW(Plan::create(w, d), Unsupported);
  const auto l = sew::SpmvLayout::of(ew_layout(Pattern::element(2, 8), 64, 64), DType::f16);
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 2, 8, 2), nullptr);  // only rings of 3 and 4 are compiled
  EXPECT_GT(sew::spmv_sk_smem_bytes(l, 4), sew::spmv_sk_smem_bytes(l, 3));
}

TEST(EwSpmvSkVals, ForcedPlanRacedAndOccupancy) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 8900;
  for (const char* kernel : {"cuda:ew_spmv_skv", "cuda:ew_spmv_skw"})
  for (DType t : {DType::f16, DType::bf16})
    for (const Pattern& p : {Pattern::element(2, 8), Pattern::element(1, 8), Pattern::element(2, 16)}) {
      SCOPED_TRACE(std::string(kernel) + " " + p.str());
      const std::int64_t n = 999, k = 2051;
      const auto w = random_ew(p, n, k, t, ++seed);
      const auto x = random_matrix(t, 1, k, ++seed);
      const Plan plan = Plan::create(w, cuda_desc(1, t, kernel));
      EXPECT_EQ(plan.kernel(), kernel);
      std::vector<std::byte> y;
      run_plan_thrice(plan, x, std::size_t(n) * dtype_size(t), y);
      if (::testing::Test::HasFatalFailure()) return;
      const auto cmp = compare(y, t, oracle(x, w));
      EXPECT_EQ(cmp.unwritten, 0);
      EXPECT_LT(cmp.rel_err, tolerance(t));
    }
  const auto w = random_ew(Pattern::element(2, 8), 999, 2051, DType::f16, ++seed);
  MatmulDesc d = cuda_desc(1, DType::f16);
  const Plan plan = Plan::create(w, d);
  // skv is opt-in (forced only: never the fastest form, docs/PERF.md session 7); skw is raced.
  EXPECT_NE(plan.reason().find("ew_spmv_skv is opt-in"), std::string::npos) << plan.reason();
  EXPECT_EQ(plan.reason().find("cuda:ew_spmv_skv ["), std::string::npos) << plan.reason();
  EXPECT_NE(plan.reason().find("cuda:ew_spmv_skw ["), std::string::npos) << plan.reason();
  d.m = 2;
  d.kernel = "cuda:ew_spmv_skv";
  EXPECT_THROW(Plan::create(w, d), Unsupported);
  d.kernel = "cuda:ew_spmv_skw";
  EXPECT_THROW(Plan::create(w, d), Unsupported);
  // X + 32 warps x 3 value stages must fit one CTA: k = 24000 (X 47 KiB) does not.
  d.m = 1;
  const auto wide = random_ew(Pattern::element(2, 8), 64, 24000, DType::f16, ++seed);
  EXPECT_THROW(Plan::create(wide, d), Unsupported);
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 2, 8, 4, true), nullptr);  // only the 3-stage value ring
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 2, 8, 0, true), nullptr);
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 2, 8, 3, false, 32), nullptr);  // 32 warps: value ring only
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 2, 8, 3, true, 16), nullptr);
  // Why the form exists: at k = 12288 the value ring fits 3 CTAs per SM where the full ring fits 2
  // (on a device with 228 KB of shared memory per SM, the H100 / H200).
  const auto l = sew::SpmvLayout::of(ew_layout(Pattern::element(2, 8), 12288, 12288), DType::f16);
  const int sv = sew::spmv_sk_smem_bytes(l, 3, true), sr = sew::spmv_sk_smem_bytes(l, 3);
  EXPECT_EQ(sr - sv, 8 * 3 * 3 * 32 * 4);  // the index words of 8 warps x 3 stages (b = 3)
  const int ov = sew::find_spmv_sk_occupancy(DType::f16, 2, 8, 3, true)(sv);
  const int orr = sew::find_spmv_sk_occupancy(DType::f16, 2, 8, 3)(sr);
  EXPECT_GE(ov, orr);
  int dev = 0, per_sm = 0;
  EW_CUDA(cudaGetDevice(&dev));
  EW_CUDA(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  if (per_sm == 228 * 1024) {
    EXPECT_EQ(ov, 3);
    EXPECT_EQ(orr, 2);
  }
}

}  // namespace

namespace {

/// The grid-ordered forms: sk, skr, skw (register ring / 3-stage ring / value ring on 32 warps).
const std::vector<RingForm>& grid_forms() {
  static const std::vector<RingForm> f = {{0, false, 8}, {3, false, 8}, {3, true, 32}};
  return f;
}

TEST(EwSpmvSkGrid, EveryPatternDtypeAndTail) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9300;
  for (auto [ring, vals, warps] : grid_forms())
    for (const Pattern& p : sk_compiled_patterns())
      for (DType t : {DType::f16, DType::bf16})
        for (auto shape : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 9}, {77, 1001}, {300, 4099}})
          check_case({p, shape.first, shape.second, t, t, 0, 1, false, ring, vals, warps, true}, ++seed);
  check_case({Pattern::hw24(), 95, 130, DType::f16, DType::f16, 0, 1, false, 0, false, 8, true}, ++seed);
}

TEST(EwSpmvSkGrid, GridsRaggedRangesAndOutputDtypes) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9500;
  for (auto [ring, vals, warps] : grid_forms()) {
    // 1 .. 400 CTAs: one warp's range over many groups, ragged +-1 ranges cutting groups at odd
    // places (the long warps' last tile stored after the full steps), more warps than units.
    for (int grid : {1, 2, 3, 17, 132, 400})
      for (auto p : {Pattern::element(2, 8), Pattern::element(1, 16)})
        check_case({p, 1000, 2050, DType::f16, DType::f16, grid, 1, false, ring, vals, warps, true}, ++seed);
    // 8 row groups of 1 .. 7 tiles on 1 or 2 CTAs: ranges of 0 .. 7 tiles per warp, lmin = 0 (all
    // tiles are "long" last steps) up to 7, ragged at every k.
    for (std::int64_t k : {128, 256, 300, 512, 640, 700, 896})
      for (int grid : {1, 2})
        check_case({Pattern::element(2, 8), 256, k, DType::f16, DType::f16, grid, 1, false, ring, vals, warps, true}, ++seed);
    check_case({Pattern::element(2, 8), 4100, 8195, DType::f16, DType::f16, 0, 1, false, ring, vals, warps, true}, ++seed);
    check_case({Pattern::element(2, 8), 257, 3001, DType::f16, DType::f32, 0, 1, false, ring, vals, warps, true}, ++seed);
    check_case({Pattern::element(1, 8), 257, 3001, DType::bf16, DType::f16, 0, 1, false, ring, vals, warps, true}, ++seed);
    check_case({Pattern::element(2, 16), 257, 3001, DType::f16, DType::bf16, 0, 1, false, ring, vals, warps, true}, ++seed);
    check_case({Pattern::element(2, 4), 257, 3001, DType::bf16, DType::bf16, 0, 1, false, ring, vals, warps, true}, ++seed);
    check_case({Pattern::element(2, 8), 333, 1027, DType::f16, DType::f16, 5, 1, true, ring, vals, warps, true}, ++seed);
    check_case({Pattern::element(1, 8), 4096, 12288, DType::f16, DType::f16, 0, 1, false, ring, vals, warps, true}, ++seed);
  }
}

TEST(EwSpmvSkGrid, ForcedPlansAndRaced) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9700;
  for (const char* kernel : {"cuda:ew_spmv_skg", "cuda:ew_spmv_skrg", "cuda:ew_spmv_skwg"})
    for (DType t : {DType::f16, DType::bf16})
      for (const Pattern& p : {Pattern::element(2, 8), Pattern::element(1, 8), Pattern::element(2, 16)}) {
        SCOPED_TRACE(std::string(kernel) + " " + std::string(to_string(t)) + " " + p.str());
        const std::int64_t n = 999, k = 2051;
        const auto w = random_ew(p, n, k, t, ++seed);
        const auto x = random_matrix(t, 1, k, ++seed);
        const Plan plan = Plan::create(w, cuda_desc(1, t, kernel));
        EXPECT_EQ(plan.kernel(), kernel);
        EXPECT_NE(plan.reason().find("tiles in grid order"), std::string::npos) << plan.reason();
        std::vector<std::byte> y;
        run_plan_thrice(plan, x, std::size_t(n) * dtype_size(t), y);
        if (::testing::Test::HasFatalFailure()) return;
        const auto cmp = compare(y, t, oracle(x, w));
        expect_close(cmp, t);
      }
  const auto w = random_ew(Pattern::element(2, 8), 999, 2051, DType::f16, ++seed);
  const Plan plan = Plan::create(w, cuda_desc(1, DType::f16));
  for (const char* kernel : {"cuda:ew_spmv_skrg [", "cuda:ew_spmv_skwg ["})
    EXPECT_NE(plan.reason().find(kernel), std::string::npos) << plan.reason();  // raced
  // The register form on the grid order is opt-in (slower than sk on the H200).
  EXPECT_EQ(plan.reason().find("cuda:ew_spmv_skg ["), std::string::npos) << plan.reason();
  EXPECT_NE(plan.reason().find("ew_spmv_skg is opt-in"), std::string::npos) << plan.reason();
  EXPECT_THROW(Plan::create(w, cuda_desc(2, DType::f16, "cuda:ew_spmv_skg")), Unsupported);
  // Compiled only for the three forms.
  EXPECT_NE(sew::find_spmv_sk(DType::f16, 2, 8, 0, false, 8, true), nullptr);
  EXPECT_NE(sew::find_spmv_sk(DType::bf16, 2, 8, 3, false, 8, true), nullptr);
  EXPECT_NE(sew::find_spmv_sk(DType::f16, 2, 16, 3, true, 32, true), nullptr);
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 2, 8, 4, false, 8, true), nullptr);
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 2, 8, 3, true, 8, true), nullptr);
  // The reorder needs a planned grid.
  auto packed = sew::pack_spmv(random_ew(Pattern::element(2, 8), 64, 256, DType::f16, ++seed));
  sew::SkArgs a;
  EXPECT_THROW(sew::spmv_sk_grid_order(packed, a), InvalidArgument);
}

// Small cases for compute-sanitizer: the grid order with ragged ranges, empty ranges, lmin = 0.
TEST(EwSpmvSkGridSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  for (auto [ring, vals, warps] : grid_forms()) {
    check_case({Pattern::element(2, 8), 70, 1030, DType::f16, DType::f16, 3, 1, false, ring, vals, warps, true}, 9901);
    check_case({Pattern::element(2, 8), 256, 700, DType::f16, DType::f16, 1, 1, false, ring, vals, warps, true}, 9902);
    check_case({Pattern::element(1, 16), 33, 515, DType::bf16, DType::f32, 0, 1, true, ring, vals, warps, true}, 9903);
    check_case({Pattern::element(2, 16), 40, 300, DType::f16, DType::f16, 50, 1, false, ring, vals, warps, true}, 9904);
  }
}

// Small cases for compute-sanitizer (memcheck): bulk copy and the threads' copy of X, partial
// groups through the workspace, empty ranges.
TEST(EwSpmvSkSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 70, 1030, DType::f16, DType::f16, 3}, 7901);
  check_case({Pattern::element(1, 16), 33, 515, DType::bf16, DType::f32, 0, 1, true}, 7902);
  check_case({Pattern::element(2, 16), 40, 300, DType::f16, DType::f16, 50}, 7903);
}
// The shared-memory ring: partial groups, ranges shorter than the ring, misaligned X, 4 stages.
TEST(EwSpmvSkRingSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 70, 1030, DType::f16, DType::f16, 3, 1, false, 3}, 7911);
  check_case({Pattern::element(2, 8), 256, 300, DType::f16, DType::f16, 2, 1, false, 3}, 7912);
  check_case({Pattern::element(1, 16), 33, 515, DType::bf16, DType::f32, 0, 1, true, 4}, 7913);
  check_case({Pattern::element(2, 16), 40, 300, DType::f16, DType::f16, 50, 1, false, 4}, 7914);
}
// The value ring: partial groups, ranges of 0 .. 7 tiles, misaligned X, bf16 -> f32.
TEST(EwSpmvSkValsSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 70, 1030, DType::f16, DType::f16, 3, 1, false, 3, true}, 7921);
  check_case({Pattern::element(2, 8), 256, 896, DType::f16, DType::f16, 1, 1, false, 3, true}, 7922);
  check_case({Pattern::element(1, 16), 33, 515, DType::bf16, DType::f32, 0, 1, true, 3, true}, 7923);
  check_case({Pattern::element(2, 16), 40, 300, DType::f16, DType::f16, 50, 1, false, 3, true}, 7924);
  check_case({Pattern::element(2, 8), 70, 1030, DType::f16, DType::f16, 2, 1, false, 3, true, 32}, 7925);
  check_case({Pattern::element(1, 16), 33, 515, DType::bf16, DType::f32, 0, 1, true, 3, true, 32}, 7926);
}

// 3:32 (session 10h): N does not divide the 32-slot tile, so tiles start mid-window (phases 0, 2, 1
// by t % 3; spmv_sk_kernel.cuh "N not dividing 32"). Every compiled form, f16 / bf16, k with a
// partial last window and tiles % 3 in {0, 1, 2} (X padded to ceil(32 tiles / 3) windows).
struct Sk332Form {
  const char* kernel;
  int ring;
  bool vals;
  int warps;
  bool grid;
  int waves;
};
const std::vector<Sk332Form>& sk332_forms() {
  static const std::vector<Sk332Form> f = {
      {"cuda:ew_spmv_sk", 0, false, 8, false, 1},    {"cuda:ew_spmv_sk4", 0, false, 8, false, 4},
      {"cuda:ew_spmv_skr", 3, false, 8, false, 1},   {"cuda:ew_spmv_skr4", 4, false, 8, false, 1},
      {"cuda:ew_spmv_skv", 3, true, 8, false, 1},    {"cuda:ew_spmv_skw", 3, true, 32, false, 1},
      {"cuda:ew_spmv_skg", 0, false, 8, true, 1},    {"cuda:ew_spmv_skrg", 3, false, 8, true, 1},
      {"cuda:ew_spmv_skwg", 3, true, 32, true, 1}};
  return f;
}

TEST(EwSpmvSk332, EveryFormDtypeAndTail) {
  EW_REQUIRE_DEVICE();
  const Pattern p = Pattern::element(3, 32);
  std::uint64_t seed = 10300;
  for (const auto& f : sk332_forms()) {
    SCOPED_TRACE(f.kernel);
    ASSERT_NE(sew::find_spmv_sk(DType::f16, 3, 32, f.ring, f.vals, f.warps, f.grid), nullptr);
    ASSERT_NE(sew::find_spmv_sk(DType::bf16, 3, 32, f.ring, f.vals, f.warps, f.grid), nullptr);
    for (DType t : {DType::f16, DType::bf16})
      // k = 9: 1 tile (X to 352 columns); 1001: 3 tiles; 4099: 13 (ends in phase 0); 2100: 7; 33: 1 + 1 window
      for (auto shape : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 9}, {77, 1001}, {300, 4099}, {95, 2100}, {40, 33}})
        check_case({p, shape.first, shape.second, t, t, 0, f.waves, false, f.ring, f.vals, f.warps, f.grid}, ++seed);
    // 1 CTA (head / whole / tail groups), odd cuts, more warps than units; misaligned X; output dtypes.
    for (int grid : {1, 3, 17, 400})
      check_case({p, 1000, 2050, DType::f16, DType::f16, grid, 1, false, f.ring, f.vals, f.warps, f.grid}, ++seed);
    check_case({p, 333, 1027, DType::bf16, DType::bf16, 5, 1, true, f.ring, f.vals, f.warps, f.grid}, ++seed);
    check_case({p, 257, 3001, DType::f16, DType::f32, 0, 1, false, f.ring, f.vals, f.warps, f.grid}, ++seed);
    check_case({p, 257, 3001, DType::bf16, DType::f16, 0, 1, false, f.ring, f.vals, f.warps, f.grid}, ++seed);
  }
  // A decode-sized row: 12288 columns = 384 windows, 1152 slots, 36 tiles.
  check_case({p, 2048, 12288, DType::f16, DType::f16}, ++seed);
  check_case({p, 2048, 12288, DType::bf16, DType::bf16, 0, 1, false, 3, true, 32, true}, ++seed);
}

TEST(EwSpmvSk332, NanInfInEveryPhase) {
  EW_REQUIRE_DEVICE();
  const Pattern p = Pattern::element(3, 32);
  for (DType t : {DType::f16, DType::bf16})
    for (const auto& f : sk332_forms()) {
      SCOPED_TRACE(std::string(f.kernel) + " " + std::string(to_string(t)));
      const std::int64_t n = 64, k = 1100;  // 35 windows (the last of 12 columns), 105 slots, 4 tiles
      auto w = random_ew(p, n, k, t, 10701);
      auto x = random_matrix(t, 1, k, 10702);
      const auto& l = w.layout;
      // Row 5: Inf at the column of its slot 0 (tile 0, phase 0); row 9: NaN at slot 40 (tile 1, phase 2:
      // slot 8 of the tile, window 13); row 20: Inf at slot 70 (tile 2, phase 1: slot 6, window 23).
      const auto col = [&](std::int64_t r, std::int64_t s) {
        return (s / 3) * 32 + std::int64_t(get_packed(w.indices.data() + r * l.index_row_bytes, s, l.index_bits));
      };
      x.set(0, col(5, 0), INFINITY);
      x.set(0, col(9, 40), NAN);
      x.set(0, col(20, 70), -INFINITY);
      SkCase c{p, n, k, t, t, 3, f.waves, false, f.ring, f.vals, f.warps, f.grid};
      std::vector<std::byte> y;
      run_sk(w, x, c, y);
      if (::testing::Test::HasFatalFailure()) return;
      const auto ref = oracle(x, w);
      const auto cmp = compare(y, t, ref);
      expect_close(cmp, t);
      for (int r : {5, 9, 20}) EXPECT_FALSE(std::isfinite(load_as_float(t, y.data(), r))) << "row " << r;
      std::int64_t nonfinite = 0;
      for (double v : ref) nonfinite += !std::isfinite(v);
      EXPECT_LT(nonfinite, n);
    }
}

TEST(EwSpmvSk332, ForcedPlansAndRaced) {
  EW_REQUIRE_DEVICE();
  const Pattern p = Pattern::element(3, 32);
  std::uint64_t seed = 10800;
  for (const auto& f : sk332_forms()) {
    if (std::string(f.kernel) == "cuda:ew_spmv_skr4") continue;  // not a plan candidate (the kernel tests run it)
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(std::string(f.kernel) + " " + std::string(to_string(t)));
      const std::int64_t n = 999, k = 2051;
      const auto w = random_ew(p, n, k, t, ++seed);
      const auto x = random_matrix(t, 1, k, ++seed);
      const Plan plan = Plan::create(w, cuda_desc(1, t, f.kernel));
      EXPECT_EQ(plan.kernel(), f.kernel);
      std::vector<std::byte> y;
      run_plan_thrice(plan, x, std::size_t(n) * dtype_size(t), y);
      if (::testing::Test::HasFatalFailure()) return;
      const auto cmp = compare(y, t, oracle(x, w));
      expect_close(cmp, t);
    }
  }
  for (DType t : {DType::f16, DType::bf16}) {
    const auto w = random_ew(p, 4096, 4096, t, ++seed);
    const auto x = random_matrix(t, 1, 4096, ++seed);
    const Plan plan = Plan::create(w, cuda_desc(1, t));
    SCOPED_TRACE(plan.reason());
    // The stream-K forms race beside the CUDA-core ew_spmv (its generic b = 5 instance).
    for (const char* k : {"cuda:ew_spmv_sk [", "cuda:ew_spmv_skr [", "cuda:ew_spmv_skw [", "cuda:ew_spmv_skrg [",
                          "cuda:ew_spmv_skwg ["})
      EXPECT_NE(plan.reason().find(k), std::string::npos) << k;
    EXPECT_EQ(plan.reason().find("cuda:ew_spmv_sk4 ["), std::string::npos);
    std::vector<std::byte> y;
    run_plan_thrice(plan, x, std::size_t(4096) * dtype_size(t), y);
    if (::testing::Test::HasFatalFailure()) return;
    const auto cmp = compare(y, t, oracle(x, w));
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_LT(cmp.rel_err, tolerance(t));
  }
  // N not dividing 32 is compiled for 3:32 only; f32 has no stream-K form.
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 3, 16), nullptr);
  EXPECT_EQ(sew::find_spmv_sk(DType::f16, 5, 32), nullptr);
  const auto l = sew::SpmvLayout::of(ew_layout(p, 64, 4099), DType::f32);
  EXPECT_NE(sew::spmv_sk_unsupported(l, DType::f32, 1), "");
  // X past k: ceil(32 tiles / 3) windows (13 tiles -> 139 windows = 4448 columns).
  sew::SkArgs a;
  (void)sew::plan_spmv_sk(sew::SpmvLayout::of(ew_layout(p, 64, 4099), DType::f16), DType::f16, 132, 1, a);
  EXPECT_EQ(a.x_cols, 139 * 32);
}

// Small 3:32 cases for compute-sanitizer: every phase, partial groups, ranges shorter than a ring,
// misaligned X, the grid order.
TEST(EwSpmvSk332Smoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  const Pattern p = Pattern::element(3, 32);
  std::uint64_t seed = 10900;
  for (const auto& f : sk332_forms()) {
    SCOPED_TRACE(f.kernel);
    check_case({p, 70, 1030, DType::f16, DType::f16, 3, 1, false, f.ring, f.vals, f.warps, f.grid}, ++seed);
    check_case({p, 33, 515, DType::bf16, DType::f32, 0, 1, true, f.ring, f.vals, f.warps, f.grid}, ++seed);
    check_case({p, 40, 300, DType::f16, DType::f16, 50, 1, false, f.ring, f.vals, f.warps, f.grid}, ++seed);
  }
}
}  // namespace
