// sparsenm GPU tests — cuda:ew_spmv_tc_sk (tensor-core tiles on the stream-K ring, m = 1..8): every
// compiled pattern (2:8, 1:8, 2:16, 1:16), f16 and bf16, m = 1..8, tails (n not a multiple of 16, k
// not a multiple of M or of the tile), forced grids / warps / k chunks (ranges that cross chunk and
// row-block boundaries, more than 32 pending segments per warp, empty ranges, the whole-row store),
// both X staging paths, output dtypes, repeated launches (the workspace and counters must come back
// to zero), poisoned outputs, NaN / Inf from stored slots; the unit-order reorder and the plan's
// bounds on the host; the plan race and a forced run. The same cases for cuda:ew_spmv_tc_sp (the tile on
// the sparse tensor cores, session 8b; EwSpmvTcSp*), plus a CPU check of its decode tables, and for the
// 24-warp shapes of the dense kernel (3 and 2 ring stages, session 8c; EwSpmvTcSkW*), and for the session-9b
// prologue / settle fixes (EwSpmvTcSkB*: X staged in pieces on mbarriers, 16-byte REDs and plain read-back), with
// cases on the piece path (k % 8 == 0, x aligned): m = 1..8, split rows at CTA and warp boundaries, more than 32
// tiles of X per CTA (pieces of 2 tiles), empty CTAs, multi-chunk plans.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <string>

#include "cuda/ew/spmv_tc.hpp"
#include "cuda/ew/spmv_tc_traits.cuh"
#include "cuda/ew/spmv_tcsk.hpp"
#include "cuda/ew/spmv_tcsk_kernel.cuh"
#include "cuda/ew/spmv_tcsp_decode.cuh"
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
  bool sp = false;                  ///< cuda:ew_spmv_tc_sp (sparse tensor cores) instead of tc_sk
  sew::TcSkShape shape = sew::TcSkShape::w16r3;  ///< warps x ring stages (dense only)
};

const char* shape_name(sew::TcSkShape s) {
  switch (s) {
    case sew::TcSkShape::w24r3: return " w24r3";
    case sew::TcSkShape::w24r2: return " w24r2";
    case sew::TcSkShape::w16r4: return " w16r4";
    case sew::TcSkShape::w16r3s: return " w16r3s";
    case sew::TcSkShape::w16r4b: return " w16r4b";
    case sew::TcSkShape::w16r4s: return " w16r4s";
    case sew::TcSkShape::w24r2s: return " w24r2s";
    case sew::TcSkShape::w16r4c: return " w16r4c";
    default: return "";
  }
}

std::string name(const SkCase& c) {
  return c.pattern.str() + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " m=" + std::to_string(c.m) + " " +
         std::string(to_string(c.t)) + "->" + std::string(to_string(c.yt)) + " grid=" + std::to_string(c.grid) +
         " warps=" + std::to_string(c.warps) + " kc=" + std::to_string(c.kc) + (c.misalign_x ? " misaligned x" : "") + (c.sp ? " tc_sp" : " tc_sk") + shape_name(c.shape);
}

int smem_limit() {
  int dev = 0, b = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&b, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
    return 0;
  return b;
}

/// Runs an f16 -> f16 plan twice on device copies of x, y poisoned before each run; checks both
/// against the fp64 oracle.
void run_plan_twice_and_check(const Plan& plan, const DenseMatrix& x, const CondensedMatrix& w) {
  const std::int64_t m = x.rows(), n = w.rows();
  DeviceMem dx(x.size_bytes()), dy(std::size_t(m * n) * 2);
  EW_CUDA(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  for (int rep = 0; rep < 2; ++rep) {
    EW_CUDA(cudaMemset(dy.p, 0xFF, std::size_t(m * n) * 2));
    plan.run(dx.p, dy.p, nullptr);
    EW_CUDA(cudaGetLastError());
    EW_CUDA(cudaDeviceSynchronize());
    std::vector<std::byte> y(std::size_t(m * n) * 2);
    EW_CUDA(cudaMemcpy(y.data(), dy.p, y.size(), cudaMemcpyDeviceToHost));
    const auto cmp = compare(y, DType::f16, oracle(x, w));
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_LT(cmp.rel_err, tolerance(DType::f16));
  }
}

/// `kernel` forced through the descriptor: the plan takes it, runs it twice correctly, and refuses it
/// when x may hold NaN / Inf (the tc kernels need finite x).
void check_forced_kernel(const CondensedMatrix& w, const MatmulDesc& d, const std::string& kernel, const DenseMatrix& x) {
  SCOPED_TRACE(kernel);
  MatmulDesc forced = d;
  forced.kernel = kernel;
  const Plan plan = Plan::create(w, forced);
  EXPECT_EQ(plan.kernel(), kernel);
  run_plan_twice_and_check(plan, x, w);
  MatmulDesc nf = forced;
  nf.x_finite = false;
  EXPECT_THROW(Plan::create(w, nf), Unsupported);
}

/// Cases the kernel ran / the plan refused for lack of shared memory (counted for the session-8c shapes).
int g_wide_ran = 0, g_wide_unfit = 0;

/// Runs the kernel `reps` times on one workspace, y poisoned (0xFF) before each launch with one extra
/// guard row; checks each launch against `ref`.
void run_and_check(const CondensedMatrix& w, const DenseMatrix& x, const SkCase& c, const std::vector<double>& ref,
                   int reps = 3, sew::TcSkArgs* plan_out = nullptr) {
  const auto packed = sew::pack_spmv_tc(w);
  sew::TcSkArgs a;
  sew::TcSkConfig cfg;
  try {
    cfg = sew::plan_spmv_tcsk(packed.layout, c.m, sms(), smem_limit(), a, c.grid, c.warps, c.kc, c.sp, c.shape);
  } catch (const InvalidArgument& e) {
    // The session-8c shapes hold more ring stages per CTA: a case whose table + rings + X tile does not
    // fit is refused by the plan (the candidate's support check says the same); the shipped shape must
    // fit every case of these tests.
    if (c.shape == sew::TcSkShape::w16r3) throw;
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
    ++g_wide_unfit;
    return;
  }
  ++g_wide_ran;
  if (plan_out) *plan_out = a;
  EXPECT_EQ(a.cta_warps, c.warps > 0 ? c.warps : sew::tcsk_shape_warps(c.shape));
  if (c.kc > 0) EXPECT_EQ(a.kc, c.kc);
  EXPECT_EQ(a.chunks, int((packed.layout.tiles + a.kc - 1) / a.kc));
  EXPECT_LE(cfg.smem_bytes, smem_limit());
  std::vector<std::byte> vals;
  std::vector<std::uint32_t> idx;
  sew::reorder_spmv_tcsk(packed, a.kc, vals, idx);
  const auto fn = sew::find_spmv_tcsk(c.t, c.pattern.n, c.pattern.m, c.sp, c.shape);
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
    expect_close(cmp, c.yt);
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
  ASSERT_EQ(sew::spmv_tcsk_unsupported(w.layout, c.t, c.m, c.sp), "");
  run_and_check(w, x, c, oracle(x, w));
}

const std::vector<Pattern>& compiled() {
  static const std::vector<Pattern> p = {Pattern::element(2, 8), Pattern::element(1, 8), Pattern::element(2, 16),
                                         Pattern::element(1, 16)};
  return p;
}

void every_pattern_m_and_dtype(bool sp, sew::TcSkShape shape = sew::TcSkShape::w16r3) {
  std::uint64_t seed = (sp ? 150 : 100) + 1000 * std::uint64_t(shape);
  for (const Pattern& p : compiled())
    for (DType t : {DType::f16, DType::bf16})
      for (int m : {1, 2, 3, 5, 8}) {
        SkCase c{p, 77, 1003, m, t, t};
        c.sp = sp;
        c.shape = shape;
        check(c, seed++);
      }
}
TEST(EwSpmvTcSk, EveryPatternMAndDtype) {
  EW_REQUIRE_DEVICE();
  every_pattern_m_and_dtype(false);
}
TEST(EwSpmvTcSp, EveryPatternMAndDtype) {
  EW_REQUIRE_DEVICE();
  every_pattern_m_and_dtype(true);
}

void forced_grids_warps_and_chunks(bool sp, sew::TcSkShape shape = sew::TcSkShape::w16r3) {
  std::uint64_t seed = (sp ? 350 : 300) + 1000 * std::uint64_t(shape);
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
       }) {
    SkCase cc = c;
    cc.sp = sp;
    cc.shape = shape;
    cc.warps = std::min(cc.warps, sew::tcsk_shape_warps(shape));
    check(cc, seed++);
  }
  if (shape == sew::TcSkShape::w16r3) return;
  // The session-8c shapes: full and partial CTAs (up to 24 warps: warps 16..23 hold ring stages past
  // the 16-warp layout), ranges across chunks and row blocks, the default kc, element staging.
  for (const SkCase& c : std::vector<SkCase>{
           {Pattern::element(2, 8), 150, 3001, 8, DType::f16, DType::f16, 2, 24, 1},   // 48 warps, 120 units: some empty
           {Pattern::element(2, 8), 300, 6001, 7, DType::bf16, DType::f32, 3, 24, 5},  // 19 rb x 24 tiles over 72 warps
           {Pattern::element(1, 8), 180, 5000, 8, DType::f16, DType::bf16, 1, 20, 3},
           {Pattern::element(2, 16), 200, 4100, 5, DType::bf16, DType::bf16, 2, 17, 0},
           {Pattern::element(1, 16), 100, 9000, 8, DType::f16, DType::f16, 1, 24, 2, true},
       }) {
    SkCase cc = c;
    cc.warps = std::min(cc.warps, sew::tcsk_shape_warps(shape));
    cc.shape = shape;
    check(cc, seed++);
  }
}
TEST(EwSpmvTcSk, ForcedGridsWarpsAndChunks) {
  EW_REQUIRE_DEVICE();
  forced_grids_warps_and_chunks(false);
}
TEST(EwSpmvTcSp, ForcedGridsWarpsAndChunks) {
  EW_REQUIRE_DEVICE();
  forced_grids_warps_and_chunks(true);
}

// Shapes whose X does not fit one chunk under the default plan (the plan must cut k into chunks).
void default_plan_multi_chunk(bool sp, sew::TcSkShape shape = sew::TcSkShape::w16r3) {
  sew::TcSkArgs a;
  {
    SkCase c{Pattern::element(2, 8), 520, 16390, 8, DType::f16, DType::f16};
    c.sp = sp;
    c.shape = shape;
    SCOPED_TRACE(name(c));
    const auto w = random_ew(c.pattern, c.n, c.k, c.t, 501);
    const auto x = random_matrix(c.t, c.m, c.k, 502);
    const int unfit = g_wide_unfit;
    run_and_check(w, x, c, oracle(x, w), 2, &a);
    if (g_wide_unfit == unfit) {  // ran (not refused for lack of shared memory)
      EXPECT_GT(a.chunks, 1);
      EXPECT_EQ(a.cta_warps, sew::tcsk_shape_warps(shape));
    }
  }
  {
    SkCase c{Pattern::element(2, 16), 300, 20000, 5, DType::bf16, DType::bf16};
    c.sp = sp;
    c.shape = shape;
    SCOPED_TRACE(name(c));
    const auto w = random_ew(c.pattern, c.n, c.k, c.t, 503);
    const auto x = random_matrix(c.t, c.m, c.k, 504);
    const int unfit = g_wide_unfit;
    run_and_check(w, x, c, oracle(x, w), 2, &a);
    if (g_wide_unfit == unfit) EXPECT_GT(a.chunks, 1);
  }
}
TEST(EwSpmvTcSk, DefaultPlanMultiChunk) {
  EW_REQUIRE_DEVICE();
  default_plan_multi_chunk(false);
}
TEST(EwSpmvTcSp, DefaultPlanMultiChunk) {
  EW_REQUIRE_DEVICE();
  default_plan_multi_chunk(true);
}

void large_shape(bool sp, sew::TcSkShape shape = sew::TcSkShape::w16r3) {
  SkCase a{Pattern::element(2, 8), 4096, 4096, 8, DType::f16, DType::f16};
  SkCase b{Pattern::element(1, 8), 2100, 8200, 8, DType::bf16, DType::f16};
  SkCase c{Pattern::element(1, 16), 1000, 12290, 8, DType::f16, DType::f16};
  a.sp = b.sp = c.sp = sp;
  a.shape = b.shape = c.shape = shape;
  check(a, 601);
  check(b, 602);
  if (sp || shape != sew::TcSkShape::w16r3) check(c, 603);
}
TEST(EwSpmvTcSk, LargeShape) {
  EW_REQUIRE_DEVICE();
  large_shape(false);
}
TEST(EwSpmvTcSp, LargeShape) {
  EW_REQUIRE_DEVICE();
  large_shape(true);
}

void nan_inf_propagate(bool sp, sew::TcSkShape shape = sew::TcSkShape::w16r3, std::int64_t k = 203) {
  for (DType t : {DType::f16, DType::bf16})
    for (const Pattern& p : compiled()) {
      SCOPED_TRACE(p.str());
      const std::int64_t n = 64;
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
        c.sp = sp;
        c.shape = shape;
        SCOPED_TRACE(name(c));
        run_and_check(w, x, c, ref, 2);
      }
      std::int64_t dense_bad = 0;
      for (double v : ref) dense_bad += !std::isfinite(v);
      EXPECT_GT(dense_bad, 0);
    }
}
TEST(EwSpmvTcSk, NanInfPropagate) {
  EW_REQUIRE_DEVICE();
  nan_inf_propagate(false);
}
// tc_sp with finite X (its plan requires desc.x_finite: the padding slots of the 2:4 groups multiply X
// at real positions, so a non-finite X is neither the dense nor the sparse product): NaN / Inf stored
// in the weight reach exactly the rows that store them, in both row halves of a tile and every slot.
TEST(EwSpmvTcSp, NanInfInWeightPropagate) {
  EW_REQUIRE_DEVICE();
  for (DType t : {DType::f16, DType::bf16})
    for (const Pattern& p : compiled()) {
      SCOPED_TRACE(p.str());
      const std::int64_t n = 64, k = 203;
      auto w = random_ew(p, n, k, t, 711);
      const auto x = random_matrix(t, 3, k, 712);
      const std::int64_t vc = w.layout.value_cols;
      store_from_float(t, w.values.data(), std::size_t(5 * vc + 0), INFINITY);   // row 5 (row half 0), slot 0
      store_from_float(t, w.values.data(), std::size_t(12 * vc + vc - 1), NAN);  // row 12 (half 1), last slot
      store_from_float(t, w.values.data(), std::size_t(40 * vc + 7), -INFINITY);
      // keep the stored slots' columns inside the matrix (a slot past k must hold 0)
      for (std::int64_t r : {5, 12, 40})
        for (std::int64_t sl = 0; sl < vc; ++sl)
          if (w.column_of(r, sl) >= k) store_from_float(t, w.values.data(), std::size_t(r * vc + sl), 0.0f);
      const auto ref = oracle(x, w);
      std::int64_t bad = 0;
      for (double v : ref) bad += !std::isfinite(v);
      EXPECT_GT(bad, 0);
      for (int kc : {0, 1}) {
        SkCase c{p, n, k, 3, t, t, 2, 3, kc};
        c.sp = true;
        SCOPED_TRACE(name(c));
        run_and_check(w, x, c, ref, 2);
      }
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
  const MatmulDesc d = f16_desc(8);
  unsetenv("SPARSENM_RACE_TC_SKW");
  const Plan autoplan = Plan::create(w, d);
  // session 9: the lean-settle form is raced, the session-8 kernel opt-in (slower than it on the H200)
  EXPECT_NE(autoplan.reason().find("cuda:ew_spmv_tc_sks ["), std::string::npos) << autoplan.reason();
  EXPECT_NE(autoplan.reason().find("ew_spmv_tc_sk is opt-in"), std::string::npos) << autoplan.reason();
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
  run_plan_twice_and_check(plan, x, w);
  const auto w48 = random_ew(Pattern::element(4, 8), n, k, DType::f16, 903);
  const Plan other = Plan::create(w48, d);
  EXPECT_NE(other.reason().find("ew_spmv_tc_sk: pattern 4:8 is not compiled"), std::string::npos) << other.reason();
}

// The tc_sp tables decode every index code to the window's values (CPU emulation of PRMT, the
// metadata exchange of the quad and the 2:4 expansion): every stored value lands at its column, every
// other column of the window is 0, every nibble is ordered, and zero slots hold 0.
TEST(EwSpmvTcSpHost, TablesDecodeEveryCode) {
  namespace tsp = sew::tcsp;
  auto prmt = [](std::uint32_t w, std::uint32_t sel) {
    const std::uint64_t src = w;  // bytes 4..7 zero
    std::uint32_t d = 0;
    for (int i = 0; i < 4; ++i) d |= std::uint32_t((src >> (8 * ((sel >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return d;
  };
  for (const Pattern& p : compiled()) {
    SCOPED_TRACE(p.str());
    const int N = p.n, M = p.m, b = M == 16 ? 4 : 3, G = M / 4;
    const int cb = tsp::copy_bytes(N, M), wpc = cb / 4;
    EXPECT_EQ(tsp::table_bytes(N, M) % 128, 0);
    // windows of one quad for rows g (h = 0) and g + 8 (h = 1): lane t, row h -> positions
    const int codes = N == 2 ? (1 << (2 * b)) : (1 << b);
    for (int trial = 0; trial < 400; ++trial) {
      int pos[4][2][2], npos[4][2];
      std::uint16_t val[4][2][2];
      std::uint32_t E[4][2][4] = {}, word[4][2] = {};
      for (int t = 0; t < 4; ++t)
        for (int h = 0; h < 2; ++h) {
          int code = (trial * 7 + t * 13 + h * 29 + trial * trial) % codes;
          if (N == 2) {
            int p0 = code & ((1 << b) - 1), p1 = code >> b;
            if (p0 == p1) p1 = (p1 + 1) % M;
            if (p0 > p1) std::swap(p0, p1);
            pos[t][h][0] = p0, pos[t][h][1] = p1, npos[t][h] = 2;
          } else {
            pos[t][h][0] = code, npos[t][h] = 1;
          }
          for (int j = 0; j < npos[t][h]; ++j) val[t][h][j] = std::uint16_t(0x3c00 + 17 * t + 5 * h + j + 1);
        }
      for (int t = 0; t < 4; ++t) {
        const int copy = t + 4 * (trial % (128 / cb / 4));  // any copy of lane t
        for (int h = 0; h < 2; ++h) {
          int e = 0, wofs = 0;
          if (N == 2) {
            e = pos[t][h][0] | (pos[t][h][1] << b);
            word[t][h] = val[t][h][0] | (std::uint32_t(val[t][h][1]) << 16);
          } else if (M == 8) {
            e = pos[t][0][0] | (pos[t][1][0] << b), wofs = 2 * h;
            word[t][h] = val[t][0][0] | (std::uint32_t(val[t][1][0]) << 16);
          } else {
            e = 16 * h + pos[t][h][0];
            word[t][h] = val[t][0][0] | (std::uint32_t(val[t][1][0]) << 16);
          }
          for (int q = 0; q < G; ++q)
            E[t][h][q] = tsp::table_word(N, M, e, copy, N == 1 && M == 8 ? wofs + q : q);
          (void)wpc;
        }
      }
      // metadata words per (step s, half H) as the quad exchange builds them
      const int steps = M / 8;
      for (int s = 0; s < steps; ++s)
        for (int H = 0; H < 2; ++H) {
          std::uint32_t meta = 0;
          for (int t = 0; t < 4; ++t) {  // lane t's slot for a receiver with (s, H): group q = 2s + H swapped
            const int rs = M == 16 ? (2 * s + H) ^ t : (H ^ (t & 1));
            const std::uint32_t slot = ((E[t][0][rs] >> 16) & 0xffffu) | (E[t][1][rs] & 0xffff0000u);
            meta |= slot;
          }
          for (int t = 0; t < 4; ++t)
            for (int h = 0; h < 2; ++h) {
              const int q = 2 * s + H;
              const std::uint32_t a = prmt(word[t][h], E[t][h][q] & 0xffffu);
              const std::uint32_t nib = (meta >> (16 * h + 4 * t)) & 15u;
              const int i0 = int(nib & 3), i1 = int(nib >> 2);
              EXPECT_LT(i0, i1);
              double dense[4] = {0, 0, 0, 0};
              dense[i0] += fp16_bits_to_float(std::uint16_t(a & 0xffff));
              dense[i1] += fp16_bits_to_float(std::uint16_t(a >> 16));
              double want[4] = {0, 0, 0, 0};
              for (int j = 0; j < npos[t][h]; ++j) {
                const int pp = N == 2 ? pos[t][h][j] : pos[t][h][0];
                if (tsp::group_of(M, pp) == q) want[tsp::lpos_of(M, pp)] = fp16_bits_to_float(val[t][h][N == 2 ? j : 0]);
              }
              for (int l = 0; l < 4; ++l) EXPECT_EQ(dense[l], want[l]) << "t " << t << " h " << h << " q " << q << " l " << l;
            }
        }
    }
    // the physical order covers each window position once
    int seen[16] = {};
    for (int pp = 0; pp < M; ++pp) ++seen[tsp::group_of(M, pp) * 4 + tsp::lpos_of(M, pp)];
    for (int i = 0; i < M; ++i) EXPECT_EQ(seen[i], 1);
  }
  // invalid (padding) 2:M codes decode to an empty window
  EXPECT_EQ(tsp::table_word(2, 8, 0, 0, 0), 0x4444u | (0x4u << 16));
}

// The whole decode of a tile on the CPU: the kernel's own unit_operands (table lookups, PRMT, X reads at
// the kernel's lane offsets, metadata slots) with byte-level PRMT / loads, the quad exchange and
// mma.sp.m16n8k32 emulated from the PTX fragment layouts (A: lane 4g + t holds rows g / g + 8 of groups
// t / t + 4; metadata from lane 4g + 2 sel + H, nibble 4 q + 16 h for row g + 8h, group 4H + q; B
// register i of lane 4n + t: k = 8i + 2t, +1): one row block against the fp64 oracle, with row and
// column tails, every pattern, f16 and bf16.
struct HostOps {
  static std::uint32_t prmt0(std::uint32_t w, std::uint32_t sel) {
    std::uint32_t d = 0;
    for (int i = 0; i < 4; ++i) {
      const unsigned b = (sel >> (4 * i)) & 7u;
      d |= (b < 4 ? (w >> (8 * b)) & 0xffu : 0u) << (8 * i);
    }
    return d;
  }
  static std::uint32_t hi_halves(std::uint32_t a, std::uint32_t b) { return (a >> 16) | (b & 0xffff0000u); }
  static uint4 ld4(const unsigned char* p) {
    uint4 u;
    std::memcpy(&u, p, 16);
    return u;
  }
  static uint2 ld2(const unsigned char* p) {
    uint2 u;
    std::memcpy(&u, p, 8);
    return u;
  }
};

template <int N, int M>
void emulate_tcsp(DType t, std::int64_t rows, std::int64_t k, int m, std::uint64_t seed) {
  using Tr = sew::TcSkTraits<__half, N, M, true>;  // the decode does not depend on the element type
  SCOPED_TRACE(std::to_string(N) + ":" + std::to_string(M) + " " + std::string(to_string(t)) + " rows " + std::to_string(rows) +
               " k " + std::to_string(k) + " m " + std::to_string(m));
  const auto w = random_ew(Pattern::element(N, M), rows, k, t, seed);
  const auto x = random_matrix(t, m, k, seed + 1);
  const auto ref = oracle(x, w);
  const auto p = sew::pack_spmv_tc(w);
  const auto& l = p.layout;
  ASSERT_EQ(l.row_blocks, 1);
  // the table, as fill_table writes it
  std::vector<unsigned char> tab(std::size_t(Tr::kTabBytes));
  for (int i = 0; i < Tr::kTabBytes / 4; ++i) {
    const int wpc = Tr::kTabCopyBytes / 4, e = i >> 5, copy = (i & 31) / wpc, wd = i % wpc;
    const std::uint32_t v = sew::tcsp::table_word(N, M, e, copy, wd);
    std::memcpy(tab.data() + 4 * i, &v, 4);
  }
  // X staged as the kernel stages it: 8 rows at the plan's pitch, zeros past m and k
  const int cols = int(l.tiles * l.tile_cols), pitch = sew::spmv_tc_pitch(cols, M / 2);
  std::vector<unsigned char> xs(std::size_t(8 * pitch), 0);
  for (int r = 0; r < m; ++r)
    std::memcpy(xs.data() + r * pitch, static_cast<const unsigned char*>(x.data()) + std::size_t(r * k) * 2, std::size_t(k) * 2);
  auto f16 = [&](std::uint32_t bits) {
    return t == DType::f16 ? double(fp16_bits_to_float(std::uint16_t(bits))) : double(bf16_bits_to_float(std::uint16_t(bits)));
  };
  double acc[16][8] = {};
  for (std::int64_t tt = 0; tt < l.tiles; ++tt) {
    sew::tc_detail::Tile<Tr> tile[32];
    for (int lane = 0; lane < 32; ++lane) {
      for (int q = 0; q < 4; ++q)
        std::memcpy(&tile[lane].v[4 * q], p.values.data() + std::size_t(((tt * 4 + q) * 32 + lane) * 16), 16);
      for (int wd = 0; wd < Tr::B; ++wd) tile[lane].i[wd] = p.indices[l.index_word_offset(0, tt, lane, wd)];
    }
    for (int u = 0; u < sew::tcsp::kUnitsPerTile<Tr>; ++u) {
      std::uint32_t A[32][2][4], Bx[32][2][4], S[32][4], meta[32];
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, tq = lane & 3;
        const unsigned char* xw = xs.data() + g * pitch + tq * Tr::kXLaneBytes + tt * l.tile_cols * 2;
        const std::uint32_t co = std::uint32_t(Tr::kTabCopyBytes) * std::uint32_t(lane & Tr::kTabCopyMask);
        sew::tcsp::unit_operands<Tr, sew::tc_detail::Tile<Tr>, HostOps>(tile[lane], u, xw, tab.data(), co, tq, A[lane],
                                                                         Bx[lane], S[lane]);
      }
      for (int lane = 0; lane < 32; ++lane)
        meta[lane] = S[lane][0] | S[lane ^ 1][1] | S[lane ^ 2][2] | S[lane ^ 3][3];
      for (int sel = 0; sel < 2; ++sel)
        for (int r = 0; r < 16; ++r)
          for (int G = 0; G < 8; ++G) {
            const std::uint32_t mw = meta[4 * (r % 8) + 2 * sel + G / 4];
            const std::uint32_t nib = (mw >> (16 * (r / 8) + 4 * (G % 4))) & 15u;
            const int i0 = int(nib & 3u), i1 = int(nib >> 2);
            ASSERT_LT(i0, i1) << "ordered metadata";
            const std::uint32_t a = A[4 * (r % 8) + G % 4][sel][2 * (G / 4) + r / 8];
            for (int n = 0; n < 8; ++n) {
              auto bval = [&](int kk) {
                const std::uint32_t reg = Bx[4 * n + (kk % 8) / 2][sel][kk / 8];
                return f16((kk & 1) ? reg >> 16 : reg & 0xffffu);
              };
              acc[r][n] += f16(a & 0xffffu) * bval(4 * G + i0) + f16(a >> 16) * bval(4 * G + i1);
            }
          }
    }
  }
  double num = 0, den = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (int i = 0; i < m; ++i) {
      const double e = ref[std::size_t(i * rows + r)], g = acc[r][i];
      num += (g - e) * (g - e);
      den += e * e;
    }
  EXPECT_LT(std::sqrt(num / std::max(den, 1e-300)), 1e-9);
  for (std::int64_t r = rows; r < 16; ++r)
    for (int i = 0; i < 8; ++i) EXPECT_EQ(acc[r][i], 0.0) << "padding row " << r;
}

TEST(EwSpmvTcSpHost, EmulatedTileMatchesTheOracle) {
  for (DType t : {DType::f16, DType::bf16}) {
    emulate_tcsp<2, 8>(t, 16, 1003, 8, 1201);
    emulate_tcsp<2, 8>(t, 13, 2500, 5, 1202);
    emulate_tcsp<1, 8>(t, 16, 1100, 8, 1203);
    emulate_tcsp<1, 8>(t, 9, 3000, 3, 1204);
    emulate_tcsp<2, 16>(t, 16, 1030, 8, 1205);
    emulate_tcsp<2, 16>(t, 11, 2100, 7, 1206);
    emulate_tcsp<1, 16>(t, 16, 2050, 8, 1207);
    emulate_tcsp<1, 16>(t, 15, 1025, 1, 1208);
  }
}

TEST(EwSpmvTcSpHost, PlanBounds) {
  const auto w = random_ew(Pattern::element(2, 8), 28672 / 64, 8192, DType::f16, 804);
  const auto l = sew::SpmvTcLayout::of(w.layout, DType::f16);
  sew::TcSkArgs a;
  const auto cfg = sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, 0, 0, true);
  EXPECT_LE(cfg.smem_bytes, 232448);
  EXPECT_EQ(a.x_off, sew::tcsp::table_bytes(2, 8));
  EXPECT_EQ(a.pitch % 128, 32);  // 8-byte B reads: rows 32 bytes apart modulo 128
  const auto w16 = random_ew(Pattern::element(2, 16), 64, 8192, DType::f16, 805);
  const auto cfg16 = sew::plan_spmv_tcsk(sew::SpmvTcLayout::of(w16.layout, DType::f16), 8, 132, 232448, a, 0, 0, 0, true);
  EXPECT_LE(cfg16.smem_bytes, 232448);
  EXPECT_EQ(a.x_off, sew::tcsp::table_bytes(2, 16));
  EXPECT_EQ(a.pitch % 128, 64);
  EXPECT_NE(sew::spmv_tcsk_unsupported(w.layout, DType::f16, 9, true).find("ew_spmv_tc_sp serves m = 1..8"), std::string::npos);
  const auto w48 = random_ew(Pattern::element(4, 8), 32, 256, DType::f16, 806);
  EXPECT_NE(sew::spmv_tcsk_unsupported(w48.layout, DType::f16, 8, true).find("not compiled"), std::string::npos);
}

TEST(EwSpmvTcSpPlan, RaceAndForcedRun) {
  EW_REQUIRE_DEVICE();
  const std::int64_t n = 300, k = 1024;
  for (const Pattern& p : {Pattern::element(2, 8), Pattern::element(1, 16)}) {
    SCOPED_TRACE(p.str());
    const auto w = random_ew(p, n, k, DType::f16, 911);
    const MatmulDesc d = f16_desc(8);
    // opt-in until validated on a GPU (register.cu); SPARSENM_RACE_TC_SP=1 lets the plan race it
    unsetenv("SPARSENM_RACE_TC_SP");
    const Plan optin = Plan::create(w, d);
    EXPECT_NE(optin.reason().find("ew_spmv_tc_sp is opt-in"), std::string::npos) << optin.reason();
    EXPECT_NE(optin.kernel(), "cuda:ew_spmv_tc_sp");
    setenv("SPARSENM_RACE_TC_SP", "1", 1);
    const Plan autoplan = Plan::create(w, d);
    unsetenv("SPARSENM_RACE_TC_SP");
    // raced and timed (a timed entry carries its describe() in brackets; a failed one would not)
    EXPECT_NE(autoplan.reason().find("cuda:ew_spmv_tc_sp ["), std::string::npos) << autoplan.reason();
    MatmulDesc nf = d;
    nf.x_finite = false;
    nf.kernel = "cuda:ew_spmv_tc_sp";
    EXPECT_THROW(Plan::create(w, nf), Unsupported);
    const auto x = random_matrix(DType::f16, 8, k, 912);
    MatmulDesc forced = d;
    forced.kernel = "cuda:ew_spmv_tc_sp";
    const Plan plan = Plan::create(w, forced);
    EXPECT_EQ(plan.kernel(), "cuda:ew_spmv_tc_sp");
    run_plan_twice_and_check(plan, x, w);
  }
}

TEST(EwSpmvTcSpSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  for (SkCase c : std::vector<SkCase>{
           {Pattern::element(2, 8), 150, 3001, 8, DType::f16, DType::f16, 3, 5, 5},
           {Pattern::element(1, 8), 50, 2000, 5, DType::bf16, DType::bf16, 2, 16, 0},
           {Pattern::element(2, 16), 70, 4100, 8, DType::f16, DType::bf16, 0, 0, 0},
           {Pattern::element(1, 16), 33, 3000, 3, DType::bf16, DType::f32, 4, 7, 2, true},
       }) {
    c.sp = true;
    check(c, 1101);
  }
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

// Session 8c: the dense kernel at 24 warps per CTA with 3 (tc_sk24) and 2 (tc_sk24r2) ring stages, and
// at 16 warps with 4 stages (tc_sk16r4).
const sew::TcSkShape kWide[] = {sew::TcSkShape::w24r3, sew::TcSkShape::w24r2, sew::TcSkShape::w16r4};

// Runs `body` for each shape of `shapes` (default: the session-8c ones); a case the planner refuses for
// lack of shared memory is counted, and most cases must run.
void for_wide_shapes(void (*body)(bool, sew::TcSkShape),
                     const std::vector<sew::TcSkShape>& shapes = std::vector<sew::TcSkShape>(std::begin(kWide), std::end(kWide))) {
  g_wide_ran = g_wide_unfit = 0;
  for (auto s : shapes) body(false, s);
  EXPECT_GT(g_wide_ran, 2 * g_wide_unfit) << "most cases must fit these shapes";
  if (g_wide_unfit > 0) std::printf("  %d case(s) refused by the plan for lack of shared memory\n", g_wide_unfit);
}

TEST(EwSpmvTcSkW, EveryPatternMAndDtype) {
  EW_REQUIRE_DEVICE();
  for_wide_shapes(every_pattern_m_and_dtype);
}
TEST(EwSpmvTcSkW, ForcedGridsWarpsAndChunks) {
  EW_REQUIRE_DEVICE();
  for_wide_shapes(forced_grids_warps_and_chunks);
}
TEST(EwSpmvTcSkW, DefaultPlanMultiChunk) {
  EW_REQUIRE_DEVICE();
  for_wide_shapes(default_plan_multi_chunk);
}
TEST(EwSpmvTcSkW, LargeShape) {
  EW_REQUIRE_DEVICE();
  for_wide_shapes(large_shape);
}
TEST(EwSpmvTcSkW, NanInfPropagate) {
  EW_REQUIRE_DEVICE();
  for (auto s : kWide) nan_inf_propagate(false, s);
}

TEST(EwSpmvTcSkWHost, PlanBounds) {
  const auto w = random_ew(Pattern::element(2, 8), 28672 / 64, 8192, DType::f16, 812);
  const auto l = sew::SpmvTcLayout::of(w.layout, DType::f16);
  for (auto s : kWide) {
    SCOPED_TRACE(shape_name(s));
    sew::TcSkArgs a;
    const auto cfg = sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, 0, 0, false, s);
    const int cw = sew::tcsk_shape_warps(s);
    EXPECT_EQ(a.cta_warps, cw);
    EXPECT_EQ(a.warps_total, 132 * cw);
    EXPECT_LE(cfg.smem_bytes, 232448);
    EXPECT_EQ(a.x_off, sew::spmv_tc_table_bytes(sew::kDecPrmt, 2, 8));
    EXPECT_GE(a.ring_off, a.x_off + 8 * a.pitch);
    EXPECT_EQ(cfg.smem_bytes, a.ring_off + cw * sew::tcsk_shape_ring(s) * (2048 + 3 * 128));
    EXPECT_THROW(sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, cw + 1, 0, false, s), InvalidArgument);
  }
  sew::TcSkArgs a;
  EXPECT_THROW(sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, 0, 0, true, sew::TcSkShape::w24r3), InvalidArgument);
  EXPECT_EQ(sew::find_spmv_tcsk(DType::f16, 2, 8, true, sew::TcSkShape::w24r3), nullptr);
  EXPECT_NE(sew::find_spmv_tcsk(DType::bf16, 1, 16, false, sew::TcSkShape::w24r2), nullptr);
}

TEST(EwSpmvTcSkWPlan, OptInAndForcedRun) {
  EW_REQUIRE_DEVICE();
  const std::int64_t n = 300, k = 1024;
  const auto w = random_ew(Pattern::element(2, 8), n, k, DType::f16, 911);
  const MatmulDesc d = f16_desc(8);
  unsetenv("SPARSENM_RACE_TC_SKW");
  const Plan optin = Plan::create(w, d);
  EXPECT_NE(optin.reason().find("ew_spmv_tc_sk24 is opt-in"), std::string::npos) << optin.reason();
  EXPECT_NE(optin.reason().find("ew_spmv_tc_sk16r4 is opt-in"), std::string::npos) << optin.reason();
  for (const char* kn : {"cuda:ew_spmv_tc_sk24r2 [", "cuda:ew_spmv_tc_sk24r2s [", "cuda:ew_spmv_tc_sk16r4s ["})  // raced by default
    EXPECT_NE(optin.reason().find(kn), std::string::npos) << optin.reason();
  setenv("SPARSENM_RACE_TC_SKW", "1", 1);
  const Plan raced = Plan::create(w, d);
  unsetenv("SPARSENM_RACE_TC_SKW");
  // raced and timed (a timed entry carries its describe() in brackets)
  for (const char* kn : {"cuda:ew_spmv_tc_sk24 [", "cuda:ew_spmv_tc_sk24r2 [", "cuda:ew_spmv_tc_sk16r4 ["})
    EXPECT_NE(raced.reason().find(kn), std::string::npos) << raced.reason();
  const auto x = random_matrix(DType::f16, 8, k, 912);
  for (const char* kn : {"cuda:ew_spmv_tc_sk24", "cuda:ew_spmv_tc_sk24r2", "cuda:ew_spmv_tc_sk16r4"}) {
    check_forced_kernel(w, d, kn, x);
  }
}

// Small cases for compute-sanitizer memcheck of the 24-warp shapes.
TEST(EwSpmvTcSkWSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  for (auto s : kWide) {
    std::uint64_t seed = 1201 + 10 * std::uint64_t(s);
    for (SkCase c : std::vector<SkCase>{
             {Pattern::element(2, 8), 150, 3001, 8, DType::f16, DType::f16, 3, 24, 5},
             {Pattern::element(2, 8), 40, 2000, 8, DType::f16, DType::f16, 1, 1, 1},
             {Pattern::element(1, 16), 33, 3000, 3, DType::bf16, DType::f32, 4, 7, 2, true},
             {Pattern::element(2, 16), 70, 4100, 8, DType::f16, DType::bf16, 0, 0, 0},
             {Pattern::element(1, 8), 50, 2000, 5, DType::bf16, DType::bf16, 2, 20, 0},
         }) {
      c.shape = s;
      if (c.warps > sew::tcsk_shape_warps(s)) c.warps = sew::tcsk_shape_warps(s);
      check(c, seed++);
    }
  }
}

// Session 9b: the lean settle on the three shipped shapes (tc_sks, tc_sk16r4s, tc_sk24r2s) and with X staged in
// pieces too on the 16 x 4 shape (tc_sk16r4b). (The run at d721585 also tested tc_skp, tc_skb, tc_sk24r2b, dropped
// after it.)
const std::vector<sew::TcSkShape> kFixShapes = {sew::TcSkShape::w16r3s, sew::TcSkShape::w16r4b, sew::TcSkShape::w16r4s,
                                                sew::TcSkShape::w24r2s, sew::TcSkShape::w16r4c};

TEST(EwSpmvTcSkB, EveryPatternMAndDtype) {
  EW_REQUIRE_DEVICE();
  for_wide_shapes(every_pattern_m_and_dtype, kFixShapes);
}
TEST(EwSpmvTcSkB, ForcedGridsWarpsAndChunks) {
  EW_REQUIRE_DEVICE();
  for_wide_shapes(forced_grids_warps_and_chunks, kFixShapes);
}
TEST(EwSpmvTcSkB, DefaultPlanMultiChunk) {
  EW_REQUIRE_DEVICE();
  for_wide_shapes(default_plan_multi_chunk, kFixShapes);
}
TEST(EwSpmvTcSkB, LargeShape) {
  EW_REQUIRE_DEVICE();
  for_wide_shapes(large_shape, kFixShapes);
}
TEST(EwSpmvTcSkB, NanInfPropagate) {
  EW_REQUIRE_DEVICE();
  for (auto s : kFixShapes) {
    nan_inf_propagate(false, s);       // the whole-span X path (k % 8 != 0)
    nan_inf_propagate(false, s, 200);  // the X-piece path
  }
}

// The X-piece path needs k % 8 == 0 and an aligned x (the cases above mostly take the whole-span path): every
// pattern, f16 / bf16, m = 1..8, row tails and k not a multiple of the tile; forced grids / warps / chunks whose
// ranges split row blocks at warp and CTA boundaries and cross chunks; a span of more than 32 tiles (pieces of 2
// tiles); more warps than units (empty ranges and CTAs).
void piece_path_cases(sew::TcSkShape shape, std::uint64_t seed) {
  const int cw = sew::tcsk_shape_warps(shape);
  for (const Pattern& p : compiled())
    for (DType t : {DType::f16, DType::bf16})
      for (int m = 1; m <= 8; ++m) {
        SkCase c{p, 83 + 8 * m, 1000 + 8 * m, m, t, m % 3 == 0 ? DType::f32 : t};
        c.shape = shape;
        if (m % 2 == 0) {  // split rows at warp and CTA boundaries, chunks
          c.grid = 2 + m % 5;
          c.warps = std::min(cw, 3 + m);
          const std::int64_t tc = 64 * p.m / p.n, tiles = (c.k + tc - 1) / tc;
          c.kc = int(std::min<std::int64_t>(1 + m % 3, tiles));
        }
        check(c, seed++);
      }
  for (SkCase c : std::vector<SkCase>{
           {Pattern::element(2, 8), 150, 3000, 8, DType::f16, DType::f16, 3, 5, 5},     // ranges cross chunks and row blocks
           {Pattern::element(2, 8), 150, 3000, 8, DType::f16, DType::f16, 1, 1, 1},     // one warp, > 32 pending segments
           {Pattern::element(2, 8), 100, 10248, 5, DType::f16, DType::f16, 3, 4, 0},    // 41 tiles of X: pieces of 2 tiles
           {Pattern::element(2, 8), 64, 8200, 8, DType::bf16, DType::bf16, 2, 2, 0},    // 33 tiles: 17 pieces, the last of 1
           {Pattern::element(2, 8), 150, 3000, 8, DType::f16, DType::f16, 17, 16, 2},   // 272 warps for 120 units
           {Pattern::element(2, 16), 200, 4104, 7, DType::bf16, DType::f32, 5, 2, 1},
           {Pattern::element(1, 16), 33, 9000, 3, DType::f16, DType::f16, 4, 7, 2},
           {Pattern::element(2, 8), 64, 2048, 8, DType::f16, DType::f16, 2, 2, 0},      // no tails
           {Pattern::element(2, 8), 300, 6000, 6, DType::bf16, DType::bf16, 3, 24, 5},  // 24-warp CTAs (16 on w16)
       }) {
    c.shape = shape;
    c.warps = std::min(c.warps, cw);
    check(c, seed++);
  }
}
TEST(EwSpmvTcSkB, PiecePathEveryMAndBoundary) {
  EW_REQUIRE_DEVICE();
  g_wide_ran = g_wide_unfit = 0;
  std::uint64_t seed = 1400;
  for (auto s : kFixShapes) {
    SCOPED_TRACE(shape_name(s));
    piece_path_cases(s, seed);
    seed += 100;
  }
  EXPECT_GT(g_wide_ran, 2 * g_wide_unfit);
  // the old kernel on the same cases (the comparison of the two forms runs the same inputs)
  piece_path_cases(sew::TcSkShape::w16r3, 1400);
}

// Plan bounds of the fixed shapes (H200: 132 SMs, 227 KiB): the rings as their base shapes, the mbarriers after the
// rings (kTcSkBarBytes, the prologue fix only), at most the opt-in shared memory.
TEST(EwSpmvTcSkBHost, PlanBounds) {
  const auto w = random_ew(Pattern::element(2, 8), 28672 / 64, 8192, DType::f16, 832);
  const auto l = sew::SpmvTcLayout::of(w.layout, DType::f16);
  for (auto s : kFixShapes) {
    SCOPED_TRACE(shape_name(s));
    sew::TcSkArgs a;
    const auto cfg = sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, 0, 0, false, s);
    const int cw = sew::tcsk_shape_warps(s);
    const bool pro = (sew::tcsk_shape_fix(s) & sew::kTcSkFixPrologue) != 0;
    EXPECT_EQ(a.cta_warps, cw);
    EXPECT_LE(cfg.smem_bytes, 232448);
    EXPECT_GE(a.ring_off, a.x_off + 8 * a.pitch);
    const int rings = cw * sew::tcsk_shape_ring(s) * (2048 + 3 * 128);
    EXPECT_EQ(a.bar_off, pro ? a.ring_off + rings : 0);
    EXPECT_EQ(cfg.smem_bytes, a.ring_off + rings + (pro ? sew::kTcSkBarBytes : 0));
    EXPECT_EQ(a.bar_off % 8, 0);
    EXPECT_THROW(sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, cw + 1, 0, false, s), InvalidArgument);
    EXPECT_THROW(sew::plan_spmv_tcsk(l, 8, 132, 232448, a, 0, 0, 0, true, s), InvalidArgument);
    for (DType t : {DType::f16, DType::bf16})
      for (const Pattern& p : compiled()) EXPECT_NE(sew::find_spmv_tcsk(t, p.n, p.m, false, s), nullptr) << p.str();
  }
  EXPECT_EQ(sew::tcsk_shape_fix(sew::TcSkShape::w16r3), 0);
  EXPECT_EQ(sew::tcsk_shape_fix(sew::TcSkShape::w16r4b), sew::kTcSkFixPrologue | sew::kTcSkFixSettle);
  EXPECT_EQ(sew::tcsk_shape_fix(sew::TcSkShape::w16r3s), sew::kTcSkFixSettle);
  EXPECT_EQ(sew::tcsk_shape_ring(sew::TcSkShape::w24r2s), 2);
  EXPECT_EQ(sew::tcsk_shape_warps(sew::TcSkShape::w24r2s), 24);
  EXPECT_EQ(sew::tcsk_shape_ring(sew::TcSkShape::w16r4s), 4);
  EXPECT_EQ(sew::tcsk_shape_ring(sew::TcSkShape::w16r4b), 4);
}

TEST(EwSpmvTcSkBPlan, RacedOptInAndForcedRun) {
  EW_REQUIRE_DEVICE();
  const std::int64_t n = 300, k = 1024;
  const auto w = random_ew(Pattern::element(2, 8), n, k, DType::f16, 931);
  const MatmulDesc d = f16_desc(8);
  unsetenv("SPARSENM_RACE_TC_SKW");
  const Plan plan0 = Plan::create(w, d);
  for (const char* kn : {"cuda:ew_spmv_tc_sks [", "cuda:ew_spmv_tc_sk16r4s [", "cuda:ew_spmv_tc_sk24r2s ["})  // raced
    EXPECT_NE(plan0.reason().find(kn), std::string::npos) << plan0.reason();
  for (const char* kn : {"ew_spmv_tc_sk16r4b is opt-in", "ew_spmv_tc_sk16r4c is opt-in"})
    EXPECT_NE(plan0.reason().find(kn), std::string::npos) << plan0.reason();
  const auto x = random_matrix(DType::f16, 8, k, 932);
  run_plan_twice_and_check(plan0, x, w);
  for (auto s : kFixShapes) {
    const std::string kn = sew::tcsk_shape_kernel(s);
    check_forced_kernel(w, d, kn, x);
  }
}

// Small cases for compute-sanitizer memcheck / racecheck of the fixed shapes: the piece path (k % 8 == 0) with split
// rows at warp and CTA boundaries, chunks, > 32 pending segments, pieces of 2 tiles, m < 8; the whole-span path.
TEST(EwSpmvTcSkBSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  for (auto s : kFixShapes) {
    std::uint64_t seed = 1501 + 10 * std::uint64_t(s);
    for (SkCase c : std::vector<SkCase>{
             {Pattern::element(2, 8), 150, 3000, 8, DType::f16, DType::f16, 3, 24, 5},
             {Pattern::element(2, 8), 40, 2000, 8, DType::f16, DType::f16, 1, 1, 1},
             {Pattern::element(2, 8), 100, 10248, 5, DType::f16, DType::f16, 3, 4, 0},
             {Pattern::element(1, 16), 33, 3000, 3, DType::bf16, DType::f32, 4, 7, 2},
             {Pattern::element(2, 16), 70, 4104, 8, DType::f16, DType::bf16, 0, 0, 0},
             {Pattern::element(1, 8), 50, 2001, 5, DType::bf16, DType::bf16, 2, 20, 0},
         }) {
      c.shape = s;
      c.warps = std::min(c.warps, sew::tcsk_shape_warps(s));
      check(c, seed++);
    }
  }
}

// A smaller set for compute-sanitizer racecheck (the settle and the X pieces are synchronization changes), on the
// piece path with split rows at warp and CTA boundaries, 2 chunks, m = 5 / 8: the X pieces (tc_sk16r4b),
// the settle alone (tc_sks, whose shared memory use is the old kernel's) and the old kernel, one test each so that
// the tool's reports can be told apart by test.
void race_cases(sew::TcSkShape s) {
  SkCase c{Pattern::element(2, 8), 150, 3000, 5, DType::f16, DType::f16, 3, 6, 5};
  c.shape = s;
  check(c, 1601 + std::uint64_t(s));
  SkCase d{Pattern::element(1, 16), 40, 4104, 8, DType::bf16, DType::f32, 2, 3, 2};
  d.shape = s;
  check(d, 1611 + std::uint64_t(s));
}
TEST(EwSpmvTcSkBRace, Pieces) {
  EW_REQUIRE_DEVICE();
  race_cases(sew::TcSkShape::w16r4b);
  race_cases(sew::TcSkShape::w16r4c);
}
TEST(EwSpmvTcSkBRace, SettleOnly) {
  EW_REQUIRE_DEVICE();
  race_cases(sew::TcSkShape::w16r3s);
}
TEST(EwSpmvTcSkBRace, OldKernel) {
  EW_REQUIRE_DEVICE();
  race_cases(sew::TcSkShape::w16r3);
}

}  // namespace
