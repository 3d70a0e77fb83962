// sparsenm GPU tests — EW-N:M SpMV (cuda:ew_spmv): every family member incl. odd M, dtypes, tails,
// m = 1..8, split-k clusters, multi-phase X staging, poisoned outputs, NaN/Inf semantics; and the
// packed layout on the CPU (runs without a device).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "cuda/ew/spmv.hpp"
#include "sparsenm/error.hpp"
#include "ew_support.hpp"

namespace {

using namespace sparsenm;
using namespace ewtest;

struct SpmvCase {
  Pattern pattern;
  std::int64_t n, k;
  int m;
  DType t, yt;
  int smem_budget = 0, max_split = 0;
};

std::string name(const SpmvCase& c) {
  return c.pattern.str() + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " m=" + std::to_string(c.m) +
         " " + std::string(to_string(c.t)) + "->" + std::string(to_string(c.yt));
}

/// Runs the kernel on (w, x) with y poisoned (0xFF bytes = NaN) including one extra row past m
/// that must stay untouched; returns y (m rows) on the host.
void run_spmv(const CondensedMatrix& w, const DenseMatrix& x, const SpmvCase& c, std::vector<std::byte>& y) {
  const auto packed = cuda::ew::pack_spmv(w);
  cuda::ew::SpmvArgs a;
  const auto cfg = cuda::ew::plan_spmv(packed.layout, c.t, c.m, sms(), a, c.smem_budget, c.max_split);
  const auto fn = cuda::ew::find_spmv(c.t, cfg.mr, packed.layout.bits, c.pattern.n, c.pattern.m);
  ASSERT_NE(fn, nullptr);
  DeviceMem dv(packed.values.size()), di(packed.indices.size() * 4), dx(x.size_bytes());
  const std::size_t ybytes = std::size_t(c.m * c.n) * dtype_size(c.yt), extra = std::size_t(c.n) * dtype_size(c.yt);
  DeviceMem dy(ybytes + extra);
  EW_CUDA(cudaMemcpy(dv.p, packed.values.data(), packed.values.size(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(di.p, packed.indices.data(), packed.indices.size() * 4, cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  for (int rep = 0; rep < 2; ++rep) {  // twice: a stale partial from a previous run must not leak
    EW_CUDA(cudaMemset(dy.p, 0xFF, ybytes + extra));
    a.values = dv.p;
    a.indices = static_cast<const std::uint32_t*>(di.p);
    a.x = dx.p;
    a.y = dy.p;
    a.y_dtype = c.yt == DType::f32 ? 0 : c.yt == DType::f16 ? 1 : 2;
    fn(a, cfg, nullptr);
    EW_CUDA(cudaGetLastError());
    EW_CUDA(cudaDeviceSynchronize());
  }
  read_back_guarded(dy.p, ybytes, extra, y);
}

void check_case(const SpmvCase& c, std::uint64_t seed) {
  SCOPED_TRACE(name(c));
  const auto w = random_ew(c.pattern, c.n, c.k, c.t, seed);
  const auto x = random_matrix(c.t, c.m, c.k, seed + 1);
  const auto layout = cuda::ew::SpmvLayout::of(w.layout, c.t);
  ASSERT_EQ(cuda::ew::spmv_unsupported(layout, c.t, c.m), "");
  std::vector<std::byte> y;
  run_spmv(w, x, c, y);
  if (::testing::Test::HasFatalFailure()) return;
  const auto cmp = compare(y, c.yt, oracle(x, w));
  expect_close(cmp, c.yt);
}

TEST(EwSpmvLayout, PackRoundTripsEveryField) {
  for (auto p : {Pattern::element(2, 8), Pattern::element(3, 7), Pattern::element(16, 32), Pattern::element(1, 256),
                 Pattern::element(5, 10), Pattern::hw24()}) {
    for (DType t : {DType::f16, DType::f32}) {
      SCOPED_TRACE(p.str());
      const auto w = random_ew(p, 45, 301, t, 7);
      const auto packed = cuda::ew::pack_spmv(w);
      const auto& l = packed.layout;
      EXPECT_EQ(l.tiles, (w.layout.value_cols + 31) / 32);
      EXPECT_EQ(l.row_groups, 2);
      for (std::int64_t r = 0; r < w.rows(); ++r)
        for (std::int64_t s = 0; s < w.layout.value_cols; ++s) {
          ASSERT_EQ(cuda::ew::unpack_spmv_index(packed, r, s),
                    get_packed(w.indices.data() + r * w.layout.index_row_bytes, s, w.layout.index_bits));
          ASSERT_EQ(std::memcmp(packed.values.data() + l.value_offset(r, s) * l.elem_bytes,
                                w.values.data() + std::size_t(r * w.layout.value_cols + s) * l.elem_bytes, l.elem_bytes),
                    0);
        }
      // Footprint: only the row / slot tails are added.
      const double canonical = double(w.values.size() + w.indices.size());
      const double ours = double(packed.values.size() + packed.indices.size() * 4);
      EXPECT_LT(ours, canonical * 1.5 + 32.0 * 64 * 4 * 8);
    }
  }
}

TEST(EwSpmvLayout, RejectsOtherPatterns) {
  FormatLayout l = ew_layout(Pattern::element(2, 4), 8, 8);
  l.pattern = Pattern::vector(2, 4, 4);
  EXPECT_THROW(cuda::ew::SpmvLayout::of(l, DType::f16), InvalidArgument);
  const auto ok = cuda::ew::SpmvLayout::of(ew_layout(Pattern::element(2, 4), 8, 8), DType::f16);
  EXPECT_NE(cuda::ew::spmv_unsupported(ok, DType::f16, 9), "");
  EXPECT_NE(cuda::ew::spmv_unsupported(ok, DType::f16, 0), "");
  const auto wide = cuda::ew::SpmvLayout::of(ew_layout(Pattern::element(1, 256), 8, 1024), DType::f32);
  EXPECT_NE(cuda::ew::spmv_unsupported(wide, DType::f32, 8), "");  // one tile spans 8448 columns x 32 B
}

TEST(EwSpmv, EveryFamilyMemberF16) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 100;
  for (auto nm : std::vector<std::pair<int, int>>{{1, 2}, {2, 4}, {1, 4}, {3, 4}, {4, 8}, {2, 8}, {1, 8}, {2, 16},
                                                  {1, 16}, {3, 32}, {8, 32}, {16, 32}, {2, 5}, {3, 7}, {3, 10},
                                                  {7, 100}, {1, 256}, {100, 256}, {31, 32}})
    for (int m : {1, 3}) {
      if (nm == std::pair<int, int>{1, 256} && m == 3) continue;  // one tile's X span exceeds the budget (below)
      check_case({Pattern::element(nm.first, nm.second), 300, 1000 + nm.second / 3, m, DType::f16, DType::f16}, ++seed);
    }
  const auto wide = cuda::ew::SpmvLayout::of(ew_layout(Pattern::element(1, 256), 300, 1085), DType::f16);
  EXPECT_NE(cuda::ew::spmv_unsupported(wide, DType::f16, 3), "");
  check_case({Pattern::hw24(), 77, 130, 1, DType::f16, DType::f16}, ++seed);
}

TEST(EwSpmv, EveryMAndDtype) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 200;
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (int m = 1; m <= 8; ++m)
      for (auto p : {Pattern::element(2, 8), Pattern::element(3, 32), Pattern::element(5, 7)})
        check_case({p, 261, 517, m, t, t}, ++seed);
}

TEST(EwSpmv, OutputDtypeDiffers) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 100, 256, 2, DType::f16, DType::f32}, 301);
  check_case({Pattern::element(1, 16), 100, 250, 1, DType::bf16, DType::f16}, 302);
  check_case({Pattern::element(2, 4), 100, 250, 5, DType::f32, DType::bf16}, 303);
}

TEST(EwSpmv, TailsSplitKAndPhases) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 400;
  // rows not multiples of 32 / 256, k not a multiple of M, split-k clusters of 1..8, small budgets
  for (auto shape : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 9}, {31, 4099}, {33, 8191}, {257, 3001},
                                                                       {1000, 2050}})
    for (int split : {1, 3, 8})
      for (auto p : {Pattern::element(2, 8), Pattern::element(3, 10)})
        check_case({p, shape.first, shape.second, split == 3 ? 8 : 1, DType::f16, DType::f16, 0, split}, ++seed);
  // X staged in several phases (tiny shared budget)
  for (int m : {1, 4, 8})
    check_case({Pattern::element(2, 16), 500, 5003, m, DType::f32, DType::f32, 3000, 2}, ++seed);
  check_case({Pattern::element(1, 8), 700, 9000, 8, DType::bf16, DType::bf16, 2048, 1}, ++seed);
}

TEST(EwSpmv, LargeShape) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 4096, 4096, 1, DType::f16, DType::f16}, 501);
  check_case({Pattern::element(1, 16), 2100, 11008, 8, DType::f16, DType::f16}, 502);
}

TEST(EwSpmv, NanInfFollowTheProductSemantics) {
  EW_REQUIRE_DEVICE();
  for (DType t : {DType::f16, DType::f32}) {
    const Pattern p = Pattern::element(2, 8);
    const std::int64_t n = 64, k = 203;  // last window has 3 columns
    auto w = random_ew(p, n, k, t, 601);
    auto x = random_matrix(t, 2, k, 602);
    // Row 0 of X: Inf at a column row 5 stores, NaN at a column row 5 does not store.
    const auto& l = w.layout;
    const std::int64_t col_kept = get_packed(w.indices.data() + 5 * l.index_row_bytes, 0, l.index_bits);
    x.set(0, col_kept, INFINITY);
    x.set(1, k - 1, NAN);  // in the partial last window
    SpmvCase c{p, n, k, 2, t, t};
    std::vector<std::byte> y;
    run_spmv(w, x, c, y);
    if (::testing::Test::HasFatalFailure()) return;
    const auto ref = oracle(x, w);
    const auto cmp = compare(y, t, ref);
    expect_close(cmp, t);
    EXPECT_FALSE(std::isfinite(load_as_float(t, y.data(), 5)));
    std::int64_t nonfinite = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) nonfinite += !std::isfinite(ref[i]);
    EXPECT_GT(nonfinite, 0);
    EXPECT_LT(nonfinite, 2 * n);  // pruned positions contribute nothing
  }
}

}  // namespace

namespace {
// Small cases run under compute-sanitizer (memcheck, racecheck) on the device: split-k clusters
// with DSMEM reduction, multi-phase staging, odd M, tails.
TEST(EwSpmvSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 33, 4099, 3, DType::f16, DType::f16, 0, 8}, 9001);
  check_case({Pattern::element(3, 10), 70, 3001, 8, DType::f32, DType::f32, 2048, 4}, 9002);
  check_case({Pattern::element(1, 16), 257, 515, 1, DType::bf16, DType::f32, 0, 1}, 9003);
}
}  // namespace
