// sparsenm GPU tests — cuda:ew_spmv_tc_sk (tensor-core tiles on the stream-K ring, m = 1..8): every
// compiled pattern (2:8, 1:8, 2:16, 1:16), f16 and bf16, m = 1..8, tails (n not a multiple of 16, k
// not a multiple of M or of the tile), forced grids / warps / k chunks (ranges that cross chunk and
// row-block boundaries, more than 32 pending segments per warp, empty ranges, the whole-row store),
// both X staging paths, output dtypes, repeated launches (the workspace and counters must come back
// to zero), poisoned outputs, NaN / Inf from stored slots; the unit-order reorder and the plan's
// bounds on the host; the plan race and a forced run.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cuda/ew/spmv_tc.hpp"
#include "cuda/ew/spmv_tc_traits.cuh"
#include "cuda/ew/spmv_tcsk.hpp"
#include "ew_support.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"

namespace sew = ::sparsenm::cuda::ew;

namespace {

using namespace sparsenm;
using namespace ewtest;

struct SkCase {
  Pattern pattern;
  std::int64_t n, k;
  int m;
  DType t, yt;
  int grid = 0, warps = 0, kc = 0;  ///< > 0: plan overrides
  bool misalign_x = false;          ///< x at a 2-byte offset: the element staging path
};

std::string name(const SkCase& c) {
  return c.pattern.str() + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " m=" + std::to_string(c.m) + " " +
         std::string(to_string(c.t)) + "->" + std::string(to_string(c.yt)) + " grid=" + std::to_string(c.grid) +
         " warps=" + std::to_string(c.warps) + " kc=" + std::to_string(c.kc) + (c.misalign_x ? " misaligned x" : "");
}

int smem_limit() {
  int dev = 0, b = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&b, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
    return 0;
  return b;
}

/// Runs the kernel `reps` times on one workspace, y poisoned (0xFF) before each launch with one extra
/// guard row; checks each launch against `ref`.
void run_and_check(const CondensedMatrix& w, const DenseMatrix& x, const SkCase& c, const std::vector<double>& ref,
                   int reps = 3, sew::TcSkArgs* plan_out = nullptr) {
  const auto packed = sew::pack_spmv_tc(w);
  sew::TcSkArgs a;
  const auto cfg = sew::plan_spmv_tcsk(packed.layout, c.m, sms(), smem_limit(), a, c.grid, c.warps, c.kc);
  if (plan_out) *plan_out = a;
  if (c.kc > 0) EXPECT_EQ(a.kc, c.kc);
  EXPECT_EQ(a.chunks, int((packed.layout.tiles + a.kc - 1) / a.kc));
  EXPECT_LE(cfg.smem_bytes, smem_limit());
  std::vector<std::byte> vals;
  std::vector<std::uint32_t> idx;
  sew::reorder_spmv_tcsk(packed, a.kc, vals, idx);
  const auto fn = sew::find_spmv_tcsk(c.t, c.pattern.n, c.pattern.m);
  ASSERT_NE(fn, nullptr);
  DeviceMem dv(vals.size()), di(idx.size() * 4), dx(x.size_bytes() + 16);
  DeviceMem dws(sew::spmv_tcsk_ws_bytes(packed.layout)), dcnt(sew::spmv_tcsk_cnt_bytes(packed.layout));
  const std::size_t ybytes = std::size_t(c.m * c.n) * dtype_size(c.yt), extra = std::size_t(c.n) * dtype_size(c.yt);
  DeviceMem dy(ybytes + extra);
  void* xp = static_cast<char*>(dx.p) + (c.misalign_x ? 2 : 0);
  EW_CUDA(cudaMemcpy(dv.p, vals.data(), vals.size(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(di.p, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(xp, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemset(dws.p, 0, sew::spmv_tcsk_ws_bytes(packed.layout)));
  EW_CUDA(cudaMemset(dcnt.p, 0, sew::spmv_tcsk_cnt_bytes(packed.layout)));
  a.values = dv.p;
  a.indices = static_cast<const std::uint32_t*>(di.p);
  a.ws = static_cast<float*>(dws.p);
  a.cnt = static_cast<unsigned*>(dcnt.p);
  a.x = xp;
  a.y_dtype = c.yt == DType::f32 ? 0 : c.yt == DType::f16 ? 1 : 2;
  a.x_vec = sew::spmv_tc_x_vec(xp, c.k);
  if (c.misalign_x) EXPECT_EQ(a.x_vec, 0);
  for (int rep = 0; rep < reps; ++rep) {
    SCOPED_TRACE("launch " + std::to_string(rep));
    EW_CUDA(cudaMemset(dy.p, 0xFF, ybytes + extra));
    a.y = dy.p;
    fn(a, cfg, nullptr);
    EW_CUDA(cudaGetLastError());
    EW_CUDA(cudaDeviceSynchronize());
    std::vector<std::byte> y;
    read_back_guarded(dy.p, ybytes, extra, y);
    if (::testing::Test::HasFatalFailure()) return;
    const auto cmp = compare(y, c.yt, ref);
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_EQ(cmp.class_mismatch, 0);
    EXPECT_LT(cmp.rel_err, tolerance(c.yt));
  }
  // The workspace and the counters are back to zero.
  std::vector<float> ws(sew::spmv_tcsk_ws_bytes(packed.layout) / 4);
  std::vector<unsigned> cnt(sew::spmv_tcsk_cnt_bytes(packed.layout) / 4);
  EW_CUDA(cudaMemcpy(ws.data(), dws.p, ws.size() * 4, cudaMemcpyDeviceToHost));
  EW_CUDA(cudaMemcpy(cnt.data(), dcnt.p, cnt.size() * 4, cudaMemcpyDeviceToHost));
  std::int64_t ws_left = 0, cnt_left = 0;
  for (float f : ws) ws_left += f != 0.0f;
  for (unsigned u : cnt) cnt_left += u != 0u;
  EXPECT_EQ(ws_left, 0);
  EXPECT_EQ(cnt_left, 0);
}

void check(const SkCase& c, std::uint64_t seed) {
  SCOPED_TRACE(name(c));
  const auto w = random_ew(c.pattern, c.n, c.k, c.t, seed);
  const auto x = random_matrix(c.t, c.m, c.k, seed + 1);
  ASSERT_EQ(sew::spmv_tcsk_unsupported(w.layout, c.t, c.m), "");
  run_and_check(w, x, c, oracle(x, w));
}

const std::vector<Pattern>& compiled() {
  static const std::vector<Pattern> p = {Pattern::element(2, 8), Pattern::element(1, 8), Pattern::element(2, 16),
                                         Pattern::element(1, 16)};
  return p;
}

TEST(EwSpmvTcSk, EveryPatternMAndDtype) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 100;
  for (const Pattern& p : compiled())
    for (DType t : {DType::f16, DType::bf16})
      for (int m : {1, 2, 3, 5, 8}) check({p, 77, 1003, m, t, t}, seed++);
}

TEST(EwSpmvTcSk, ForcedGridsWarpsAndChunks) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 300;
  // 2:8, 150 x 3001: 10 row blocks x 12 tiles = 120 units.
  for (const SkCase& c : std::vector<SkCase>{
           {Pattern::element(2, 8), 150, 3001, 8, DType::f16, DType::f16, 1, 1, 0},    // one warp, whole rows
           {Pattern::element(2, 8), 150, 3001, 8, DType::f16, DType::f16, 1, 1, 1},    // one warp, 120 segments (> 32)
           {Pattern::element(2, 8), 150, 3001, 7, DType::f16, DType::f32, 3, 5, 5},    // ranges cross chunks and row blocks
           {Pattern::element(2, 8), 150, 3001, 4, DType::bf16, DType::bf16, 7, 3, 12}, // one chunk, split rows
           {Pattern::element(2, 8), 150, 3001, 8, DType::f16, DType::f16, 17, 16, 2},  // 272 warps for 120 units
           {Pattern::element(1, 8), 45, 5000, 6, DType::f16, DType::bf16, 2, 4, 3},
           {Pattern::element(2, 16), 200, 4100, 8, DType::bf16, DType::f32, 5, 2, 1},
           {Pattern::element(1, 16), 33, 9000, 3, DType::f16, DType::f16, 4, 7, 2},
           {Pattern::element(2, 8), 64, 2048, 8, DType::f16, DType::f16, 2, 2, 0},     // no tails
           {Pattern::element(1, 16), 31, 1111, 2, DType::bf16, DType::bf16, 3, 1, 0, true},  // element staging
           {Pattern::element(2, 8), 90, 1501, 8, DType::f16, DType::f16, 5, 3, 2, true},
       })
    check(c, seed++);
}

// Shapes whose X does not fit one chunk under the default plan (the plan must cut k into chunks).
TEST(EwSpmvTcSk, DefaultPlanMultiChunk) {
  EW_REQUIRE_DEVICE();
  sew::TcSkArgs a;
  {
    const SkCase c{Pattern::element(2, 8), 520, 16390, 8, DType::f16, DType::f16};
    SCOPED_TRACE(name(c));
    const auto w = random_ew(c.pattern, c.n, c.k, c.t, 501);
    const auto x = random_matrix(c.t, c.m, c.k, 502);
    run_and_check(w, x, c, oracle(x, w), 2, &a);
    EXPECT_GT(a.chunks, 1);
    EXPECT_EQ(a.cta_warps, sew::kTcSkMaxWarps);
  }
  {
    const SkCase c{Pattern::element(2, 16), 300, 20000, 5, DType::bf16, DType::bf16};
    SCOPED_TRACE(name(c));
    const auto w = random_ew(c.pattern, c.n, c.k, c.t, 503);
    const auto x = random_matrix(c.t, c.m, c.k, 504);
    run_and_check(w, x, c, oracle(x, w), 2, &a);
    EXPECT_GT(a.chunks, 1);
  }
}

TEST(EwSpmvTcSk, LargeShape) {
  EW_REQUIRE_DEVICE();
  check({Pattern::element(2, 8), 4096, 4096, 8, DType::f16, DType::f16}, 601);
  check({Pattern::element(1, 8), 2100, 8200, 8, DType::bf16, DType::f16}, 602);
}

TEST(EwSpmvTcSk, NanInfPropagate) {
  EW_REQUIRE_DEVICE();
  for (DType t : {DType::f16, DType::bf16})
    for (const Pattern& p : compiled()) {
      SCOPED_TRACE(p.str());
      const std::int64_t n = 64, k = 203;
      const auto w = random_ew(p, n, k, t, 701);
      auto x = random_matrix(t, 3, k, 702);
      const auto& l = w.layout;
      const std::int64_t col_kept = get_packed(w.indices.data() + 5 * l.index_row_bytes, 0, l.index_bits);
      x.set(0, col_kept, INFINITY);  // row 5 stores this column
      x.set(1, k - 1, NAN);          // in the partial last window
      x.set(2, 100, -INFINITY);
      const auto ref = dense_oracle(x, w);
      // split over warps so that the non-finite partials go through the workspace too
      for (int kc : {0, 1}) {
        SkCase c{p, n, k, 3, t, t, 2, 3, kc};
        SCOPED_TRACE(name(c));
        run_and_check(w, x, c, ref, 2);
      }
      std::int64_t dense_bad = 0;
      for (double v : ref) dense_bad += !std::isfinite(v);
      EXPECT_GT(dense_bad, 0);
    }
}

TEST(EwSpmvTcSkHost, ReorderIsTheUnitOrder) {
  const auto w = random_ew(Pattern::element(2, 8), 50, 1500, DType::f16, 801);
  const auto p = sew::pack_spmv_tc(w);
  const auto& l = p.layout;
  for (int kc : {1, 2, 4, int(l.tiles)}) {
    SCOPED_TRACE(kc);
    std::vector<std::byte> v;
    std::vector<std::uint32_t> ix;
    sew::reorder_spmv_tcsk(p, kc, v, ix);
    ASSERT_EQ(v.size(), p.values.size());
    ASSERT_EQ(ix.size(), p.indices.size());
    const std::int64_t rk = l.row_blocks * kc;
    for (std::int64_t u = 0; u < l.row_blocks * l.tiles; ++u) {
      const std::int64_t c = u / rk, tcn = std::min<std::int64_t>(kc, l.tiles - c * kc);
      EXPECT_EQ(sew::tcsk_chunk_of(u, l.row_blocks, kc), c);
      const std::int64_t rb = (u - c * rk) / tcn, tt = (u - c * rk) % tcn, src = rb * l.tiles + c * kc + tt;
      EXPECT_EQ(std::memcmp(v.data() + u * 2048, p.values.data() + src * 2048, 2048), 0) << u;
      EXPECT_EQ(std::memcmp(ix.data() + u * l.bits * 32, p.indices.data() + src * l.bits * 32, std::size_t(l.bits) * 128), 0) << u;
    }
  }
  std::vector<std::byte> v;
  std::vector<std::uint32_t> ix;
  EXPECT_THROW(sew::reorder_spmv_tcsk(p, 0, v, ix), InvalidArgument);
  EXPECT_THROW(sew::reorder_spmv_tcsk(p, int(l.tiles) + 1, v, ix), InvalidArgument);
}

TEST(EwSpmvTcSkHost, PlanBoundsAndReasons) {
  const auto w = random_ew(Pattern::element(2, 8), 28672 / 64, 8192, DType::f16, 802);
  const auto l = sew::SpmvTcLayout::of(w.layout, DType::f16);
  sew::TcSkArgs a;
  const auto cfg = sew::plan_spmv_tcsk(l, 8, 132, 232448, a);
  EXPECT_EQ(cfg.grid, 132);
  EXPECT_EQ(a.warps_total, 132 * 16);
  EXPECT_LE(cfg.smem_bytes, 232448);
  EXPECT_EQ(a.x_off, sew::spmv_tc_table_bytes(sew::kDecPrmt, 2, 8));
  EXPECT_GE(a.ring_off, a.x_off + 8 * a.pitch);
  EXPECT_EQ(cfg.smem_bytes, a.ring_off + 16 * sew::kTcSkRing * (2048 + 3 * 128));
  EXPECT_THROW(sew::plan_spmv_tcsk(l, 8, 132, 100000, a), InvalidArgument);  // the rings alone exceed it
  EXPECT_THROW(sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, 17), InvalidArgument);
  EXPECT_THROW(sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, 0, int(l.tiles) + 1), InvalidArgument);
  EXPECT_NE(sew::spmv_tcsk_unsupported(w.layout, DType::f16, 9).find("m = 1..8"), std::string::npos);
  const auto w48 = random_ew(Pattern::element(4, 8), 32, 256, DType::f16, 803);
  EXPECT_NE(sew::spmv_tcsk_unsupported(w48.layout, DType::f16, 8).find("not compiled"), std::string::npos);
}

TEST(EwSpmvTcSkPlan, RaceAndForcedRun) {
  EW_REQUIRE_DEVICE();
  const std::int64_t n = 300, k = 1024;
  const auto w = random_ew(Pattern::element(2, 8), n, k, DType::f16, 901);
  MatmulDesc d;
  d.m = 8;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f16;
  const Plan autoplan = Plan::create(w, d);
  EXPECT_NE(autoplan.reason().find("cuda:ew_spmv_tc_sk "), std::string::npos) << autoplan.reason();
  EXPECT_EQ(autoplan.reason().find("cuda:ew_spmv_tc_sk (opt-in"), std::string::npos) << autoplan.reason();
  MatmulDesc nf = d;
  nf.x_finite = false;
  const Plan finite_off = Plan::create(w, nf);
  EXPECT_NE(finite_off.kernel(), "cuda:ew_spmv_tc_sk");
  nf.kernel = "cuda:ew_spmv_tc_sk";
  EXPECT_THROW(Plan::create(w, nf), Unsupported);
  const auto x = random_matrix(DType::f16, 8, k, 902);
  MatmulDesc forced = d;
  forced.kernel = "cuda:ew_spmv_tc_sk";
  const Plan plan = Plan::create(w, forced);
  EXPECT_EQ(plan.kernel(), "cuda:ew_spmv_tc_sk");
  DeviceMem dx(x.size_bytes()), dy(std::size_t(8 * n) * 2);
  EW_CUDA(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  for (int rep = 0; rep < 2; ++rep) {
    EW_CUDA(cudaMemset(dy.p, 0xFF, std::size_t(8 * n) * 2));
    plan.run(dx.p, dy.p, nullptr);
    EW_CUDA(cudaGetLastError());
    EW_CUDA(cudaDeviceSynchronize());
    std::vector<std::byte> y(std::size_t(8 * n) * 2);
    EW_CUDA(cudaMemcpy(y.data(), dy.p, y.size(), cudaMemcpyDeviceToHost));
    const auto cmp = compare(y, DType::f16, oracle(x, w));
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_LT(cmp.rel_err, tolerance(DType::f16));
  }
  const auto w48 = random_ew(Pattern::element(4, 8), n, k, DType::f16, 903);
  const Plan other = Plan::create(w48, d);
  EXPECT_NE(other.reason().find("ew_spmv_tc_sk: pattern 4:8 is not compiled"), std::string::npos) << other.reason();
}

// Small cases for compute-sanitizer memcheck: chunks, pending overflow, element staging, tails.
TEST(EwSpmvTcSkSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  check({Pattern::element(2, 8), 150, 3001, 8, DType::f16, DType::f16, 3, 5, 5}, 1001);
  check({Pattern::element(2, 8), 40, 2000, 8, DType::f16, DType::f16, 1, 1, 1}, 1002);
  check({Pattern::element(1, 16), 33, 3000, 3, DType::bf16, DType::f32, 4, 7, 2, true}, 1003);
  check({Pattern::element(2, 16), 70, 4100, 8, DType::f16, DType::bf16, 0, 0, 0}, 1004);
  check({Pattern::element(1, 8), 50, 2000, 5, DType::bf16, DType::bf16, 2, 16, 0}, 1005);
}

}  // namespace
