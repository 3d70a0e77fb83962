// sparsenm GPU tests — EW-N:M SpMV m = 2..8, stream-K form on CUDA cores (cuda:ew_spmv_sk_mb / _mb2):
// every compiled pattern x f16 / bf16 x m in {2, 3, 5, 8} (MB = 4 and 8, padded rows), tails in n and
// k, k chunks forced through a small shared-memory budget, grids from 1 CTA per chunk (head, whole and
// tail segments per warp) to more warps than units, output dtypes, misaligned X and odd k (16-bit
// staging loads instead of column pairs), poisoned Y with a guard row, repeated launches (the
// workspace and counters must come back to zero), NaN/Inf semantics, forced plans and the
// unsupported reasons. Reference: the fp64 oracle of ew_support.hpp.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cuda/ew/spmv_skm.hpp"
#include "cuda/ew/spmv_skm_kernel.cuh"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "ew_support.hpp"
#include "sk_test_support.hpp"

namespace {

using namespace sparsenm;
using namespace ewtest;
namespace sew = ::sparsenm::cuda::ew;

struct SkmCase {
  Pattern pattern;
  std::int64_t n, k;
  int m;
  DType t, yt;
  int per_chunk = 0;     ///< 0: the plan's CTAs per chunk
  int min_chunks = 1;
  int smem_budget = 0;   ///< 0: the device's limit; > 0 forces more chunks
  bool misaligned_x = false;
};

std::string name(const SkmCase& c) {
  return c.pattern.str() + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " m=" + std::to_string(c.m) + " " +
         std::string(to_string(c.t)) + "->" + std::string(to_string(c.yt)) + " per_chunk=" + std::to_string(c.per_chunk) +
         " min_chunks=" + std::to_string(c.min_chunks) + " budget=" + std::to_string(c.smem_budget) +
         (c.misaligned_x ? " misaligned-x" : "");
}

/// Runs three launches (Y poisoned before each, plus one guard row that must stay untouched);
/// returns Y of the last launch and the plan's chunk count.
void run_skm(const CondensedMatrix& w, const DenseMatrix& x, const SkmCase& c, std::vector<std::byte>& y, int& chunks) {
  const auto packed = sew::pack_spmv(w);
  const auto& l = packed.layout;
  sew::SkmArgs a;
  const auto cfg = sew::plan_spmv_skm(l, c.t, c.m, sms(), c.min_chunks, a, c.per_chunk, c.smem_budget);
  chunks = a.chunks;
  const auto fn = sew::find_spmv_skm(c.t, c.pattern.n, c.pattern.m, cfg.mb);
  ASSERT_NE(fn, nullptr);
  ASSERT_GE(cfg.grid, a.chunks);
  ASSERT_EQ(cfg.grid, a.chunks * a.ctas_per_chunk);
  ASSERT_GE(std::int64_t(a.chunks) * a.chunk_tiles, l.tiles);
  const std::size_t ybytes = std::size_t(c.m) * std::size_t(c.n) * dtype_size(c.yt),
                    extra = std::size_t(c.n) * dtype_size(c.yt);
  run_stream_k(packed, x, c.misaligned_x, c.yt, ybytes, extra, sew::spmv_skm_ws_bytes(l, cfg.mb),
               sew::spmv_skm_cnt_bytes(l), a, cfg, fn, y);
}

/// Checks one case against the fp64 oracle; returns the plan's chunk count (0 on a fatal failure).
int check_case(const SkmCase& c, std::uint64_t seed) {
  SCOPED_TRACE(name(c));
  const auto w = random_ew(c.pattern, c.n, c.k, c.t, seed);
  const auto x = random_matrix(c.t, c.m, c.k, seed + 1);
  EXPECT_EQ(sew::spmv_skm_unsupported(sew::SpmvLayout::of(w.layout, c.t), c.t, c.m), "");
  std::vector<std::byte> y;
  int chunks = 0;
  run_skm(w, x, c, y, chunks);
  if (::testing::Test::HasFatalFailure()) return 0;
  const auto cmp = compare(y, c.yt, oracle(x, w));
  expect_close(cmp, c.yt);
  return chunks;
}

TEST(EwSpmvSkm, EveryPatternDtypeMAndTail) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9100;
  for (const Pattern& p : sk_compiled_patterns())
    for (DType t : {DType::f16, DType::bf16})
      for (int m : {2, 3, 5, 8})
        for (auto shape : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 9}, {77, 1001}, {300, 4099}})
          check_case({p, shape.first, shape.second, m, t, t}, ++seed);
  check_case({Pattern::hw24(), 95, 130, 4, DType::f16, DType::f16}, ++seed);
}

TEST(EwSpmvSkm, ChunksGridsAndOutputDtypes) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9300;
  // A budget of a few tiles' columns forces many chunks (the last one shorter: k = 2050 is not a
  // multiple of the chunk); 1 CTA per chunk: each warp walks several groups (head, middle segments
  // flushed in the loop, tail); 3 / 17: odd cuts; 150: more warps than units (empty ranges).
  for (int m : {2, 8})
    for (int per_chunk : {1, 3, 17, 150})
      for (auto p : {Pattern::element(2, 8), Pattern::element(1, 16)}) {
        const int mb = sew::spmv_skm_mb(m);
        const int tile_bytes = 32 / p.n * p.m * 2 * mb;
        const int chunks = check_case({p, 1000, 2050, m, DType::f16, DType::f16, per_chunk, 1, 2 * tile_bytes + sew::kSkmXAlign}, ++seed);
        if (!::testing::Test::HasFailure()) EXPECT_GE(chunks, 3);
      }
  // One chunk with 1 CTA: whole groups are stored straight to Y between head and tail.
  for (int m : {3, 7}) EXPECT_EQ(check_case({Pattern::element(2, 8), 1000, 2050, m, DType::f16, DType::f16, 1}, ++seed), 1);
  // The forced 2-chunk form.
  for (int m : {4, 8}) EXPECT_EQ(check_case({Pattern::element(2, 16), 4100, 8195, m, DType::f16, DType::f16, 0, 2}, ++seed), 2);
  check_case({Pattern::element(2, 8), 257, 3001, 8, DType::f16, DType::f32}, ++seed);
  check_case({Pattern::element(1, 8), 257, 3001, 6, DType::bf16, DType::f16}, ++seed);
  check_case({Pattern::element(2, 16), 257, 3001, 2, DType::f16, DType::bf16}, ++seed);
  check_case({Pattern::element(2, 4), 257, 3001, 4, DType::bf16, DType::f32}, ++seed);
}

TEST(EwSpmvSkm, MisalignedXOddKAndLargeShape) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9500;
  for (int per_chunk : {0, 5}) {
    check_case({Pattern::element(2, 8), 333, 1027, 8, DType::f16, DType::f16, per_chunk, 1, 0, true}, ++seed);
    check_case({Pattern::element(2, 16), 333, 1024, 3, DType::bf16, DType::bf16, per_chunk, 1, 0, true}, ++seed);
    check_case({Pattern::element(1, 8), 333, 1023, 5, DType::f16, DType::f16, per_chunk}, ++seed);  // odd k, aligned X
  }
  check_case({Pattern::element(1, 8), 4096, 12288, 8, DType::f16, DType::f16}, ++seed);
  check_case({Pattern::element(2, 8), 2100, 11008, 4, DType::bf16, DType::bf16}, ++seed);
}

TEST(EwSpmvSkm, NanInfFollowTheProductSemantics) {
  EW_REQUIRE_DEVICE();
  for (DType t : {DType::f16, DType::bf16}) {
    const Pattern p = Pattern::element(2, 8);
    const std::int64_t n = 64, k = 203;  // last window has 3 columns
    const int m = 5;
    auto w = random_ew(p, n, k, t, 9601);
    auto x = random_matrix(t, m, k, 9602);
    const auto& l = w.layout;
    const std::int64_t col_kept = get_packed(w.indices.data() + 5 * l.index_row_bytes, 0, l.index_bits);
    x.set(3, col_kept, INFINITY);  // row 5 stores this column: Y[3][5] is non-finite
    x.set(1, col_kept, NAN);       // and Y[1][5] is NaN
    SkmCase c{p, n, k, m, t, t, 3};
    std::vector<std::byte> y;
    int chunks = 0;
    run_skm(w, x, c, y, chunks);
    if (::testing::Test::HasFatalFailure()) return;
    const auto ref = oracle(x, w);
    const auto cmp = compare(y, t, ref);
    expect_close(cmp, t);
    EXPECT_FALSE(std::isfinite(load_as_float(t, y.data(), 3 * n + 5)));
    EXPECT_TRUE(std::isnan(load_as_float(t, y.data(), 1 * n + 5)));
    for (int r : {0, 2, 4}) EXPECT_TRUE(std::isfinite(load_as_float(t, y.data(), std::size_t(r) * n + 5)));
    std::int64_t nonfinite = 0;
    for (double v : ref) nonfinite += !std::isfinite(v);
    EXPECT_GT(nonfinite, 0);
    EXPECT_LT(nonfinite, 2 * n);  // rows that do not store the column stay finite
  }
}

TEST(EwSpmvSkm, ForcedPlansAndUnsupportedReasons) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 9700;
  for (const char* kernel : {"cuda:ew_spmv_sk_mb", "cuda:ew_spmv_sk_mb2"})
    for (DType t : {DType::f16, DType::bf16})
      for (int m : {2, 8}) {
        SCOPED_TRACE(std::string(kernel) + " " + std::string(to_string(t)) + " m=" + std::to_string(m));
        const std::int64_t n = 999, k = 2051;
        const auto w = random_ew(Pattern::element(2, 8), n, k, t, ++seed);
        const auto x = random_matrix(t, m, k, ++seed);
        const Plan plan = Plan::create(w, cuda_desc(m, t, kernel));
        EXPECT_EQ(plan.kernel(), kernel);
        EXPECT_GT(plan.workspace_bytes(), 0u);
        std::vector<std::byte> y;
        run_plan_thrice(plan, x, std::size_t(m) * std::size_t(n) * dtype_size(t), y);
        if (::testing::Test::HasFatalFailure()) return;
        const auto cmp = compare(y, t, oracle(x, w));
        EXPECT_EQ(cmp.unwritten, 0);
        EXPECT_LT(cmp.rel_err, tolerance(t));
      }
  {  // the automatic choice never takes the opt-in 2-chunk variant
    const auto w = random_ew(Pattern::element(1, 8), 999, 2051, DType::f16, ++seed);
    const Plan plan = Plan::create(w, cuda_desc(8, DType::f16));
    EXPECT_NE(plan.kernel(), "cuda:ew_spmv_sk_mb2") << plan.reason();
  }
  const auto l = sew::SpmvLayout::of(ew_layout(Pattern::element(2, 8), 64, 64), DType::f16);
  EXPECT_NE(sew::spmv_skm_unsupported(l, DType::f16, 1), "");   // m = 2..8 only
  EXPECT_NE(sew::spmv_skm_unsupported(l, DType::f16, 9), "");
  EXPECT_NE(sew::spmv_skm_unsupported(l, DType::f32, 4), "");   // f16 / bf16 only
  EXPECT_EQ(sew::spmv_skm_unsupported(l, DType::bf16, 8), "");
  const auto odd = sew::SpmvLayout::of(ew_layout(Pattern::element(3, 7), 64, 64), DType::f16);
  EXPECT_NE(sew::spmv_skm_unsupported(odd, DType::f16, 4), "");  // no compiled instance
  const auto w = random_ew(Pattern::element(2, 8), 64, 64, DType::f16, 9800);
  MatmulDesc d = cuda_desc(1, DType::f16, "cuda:ew_spmv_sk_mb");
  EXPECT_THROW(Plan::create(w, d), Unsupported);
  d.m = 4;
  d.x_dtype = DType::bf16;  // X dtype must equal the weight dtype
  EXPECT_THROW(Plan::create(w, d), Error);
}

}  // namespace

namespace {
// Small cases for compute-sanitizer (memcheck): column-pair and 16-bit staging, chunks, partial
// groups through the workspace, empty ranges, MB = 4 and 8.
TEST(EwSpmvSkmSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 70, 1030, 8, DType::f16, DType::f16, 3}, 9901);
  check_case({Pattern::element(1, 16), 33, 515, 3, DType::bf16, DType::f32, 0, 1, 0, true}, 9902);
  check_case({Pattern::element(2, 16), 40, 300, 5, DType::f16, DType::f16, 50}, 9903);
  check_case({Pattern::element(1, 8), 100, 700, 2, DType::f16, DType::f16, 2, 1, 2 * 32 * 8 * 8 + sew::kSkmXAlign}, 9904);
}
}  // namespace
