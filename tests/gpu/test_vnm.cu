// sparsenm GPU tests — V:2:M (venom) SpMM on the sparse tensor cores (cuda:vnm_wgmma: transpose,
// cp.async gather, wgmma.mma_async.sp) and the persistent hardware 2:4 kernel
// (cuda:sptc_24_wgmma_p), against sparsenm::reference_matmul_f64. Every V, many M, both input
// dtypes, tails in m, n and k, every persistent tile shape, grids with several tiles per CTA, and
// NaN in X columns that no stored slot references. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdio>
#include <limits>
#include <set>

#include "cuda/common.cuh"
#include "cuda/sptc/pack.hpp"
#include "cuda/sptc/sptc.hpp"
#include "plan/registry.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/reference.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm::detail {
void register_sptc_kernels(KernelRegistry& r);
}

namespace sparsenm {
namespace {

namespace cs = cuda::sptc;

bool have_sm90() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 && cs::device_cc() == 90;
}
#define REQUIRE_SM90() \
  if (!have_sm90()) GTEST_SKIP() << "no sm_90 CUDA device: V:2:M / persistent wgmma tests skipped"

// A V:N:M weight packed for the wgmma kernels and uploaded: values, metadata and gather table on
// the device, the kernel's view of them and the values' tensor map for row groups of g.
struct DeviceVnm {
  sptc::PackedVnm p;
  cuda::DeviceBuffer values, meta, gt;
  cs::DeviceA a;
  CUtensorMap map;
  DeviceVnm(const CondensedMatrix& w, int g)
      : p(sptc::pack_venom(w, g, 128)), values(p.a.values.size() * 2), meta(p.a.meta.size() * 4), gt(p.gather.size() * 4) {
    values.upload(p.a.values.data(), values.size());
    meta.upload(p.a.meta.data(), meta.size());
    gt.upload(p.gather.data(), gt.size());
    a = cs::DeviceA{values.get(), meta.as<std::uint32_t>(), p.a.rows, p.a.rows_pad, p.a.k_pad};
    map = cs::make_values_map_rows(a, g);
  }
  struct Parts {
    const sptc::PackedVnm& p;
    const cs::DeviceA& a;
    const CUtensorMap& map;
    const cuda::DeviceBuffer& gt;
  };
  Parts parts() const { return {p, a, map, gt}; }
};

double tolerance(DType out) { return out == DType::f32 ? 1e-5 : out == DType::f16 ? 2e-3 : 1e-2; }

/// Random X of m x k; columns that no stored slot of w references become NaN when poison_unused.
DenseMatrix make_x(const CondensedMatrix& w, DType in, std::int64_t m, std::uint64_t seed, bool poison_unused) {
  DenseMatrix x = random_matrix(in, m, w.cols(), seed);
  if (poison_unused) {
    std::set<std::int64_t> used;
    for (std::int64_t r = 0; r < w.rows(); ++r)
      for (std::int64_t s = 0; s < w.layout.value_cols; ++s) used.insert(w.column_of(r, s));
    for (std::int64_t c = 0; c < w.cols(); ++c)
      if (!used.count(c))
        for (std::int64_t i = 0; i < m; ++i) x.set(i, c, std::numeric_limits<float>::quiet_NaN());
  }
  return x;
}

/// Uploads x, poisons y, runs, returns relative error vs the fp64 reference (inf if not finite).
template <class Run>
double run_and_compare(const CondensedMatrix& w, const DenseMatrix& x, DType out, Run&& run_fn,
                       const std::vector<double>* ref = nullptr) {  // ref: reference_matmul_f64(x, w), if already computed
  const std::int64_t m = x.rows(), n = w.rows();
  cuda::DeviceBuffer xd(x.size_bytes()), yd(std::size_t(m * n) * dtype_size(out));
  xd.upload(x.data(), x.size_bytes());
  SPARSENM_CUDA_CHECK(cudaMemset(yd.get(), 0xFF, yd.size()));  // NaN in every dtype
  run_fn(xd.get(), yd.get());
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  DenseMatrix y(out, m, n);
  yd.download(y.data(), y.size_bytes());
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      if (!std::isfinite(y.at(i, j))) return INFINITY;
  return ref ? relative_error(y.view(), *ref) : relative_error(y.view(), reference_matmul_f64(x.view(), w));
}

const detail::KernelCandidate& candidate(const detail::KernelRegistry& reg, const std::string& name) {
  for (const auto& k : reg.candidates())
    if (k.name == name) return k;
  throw std::runtime_error("no candidate " + name);
}

void check_plan_candidate(const std::string& name, const Pattern& pat, DType in, DType out, std::int64_t m,
                          std::int64_t n, std::int64_t k, std::uint64_t seed) {
  SCOPED_TRACE(name + " " + pat.str() + " " + std::string(to_string(in)) + "->" + std::string(to_string(out)) +
               " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  detail::KernelRegistry reg;
  detail::register_sptc_kernels(reg);
  const auto& cand = candidate(reg, name);
  const CondensedMatrix w = condense(random_pattern_matrix(pat, in, n, k, seed, 0.1).view(), pat);
  MatmulDesc d;
  d.m = m;
  d.x_dtype = in;
  d.y_dtype = out;
  ASSERT_EQ(cand.unsupported(w, d), "");
  auto inst = cand.create(w, d);
  const DenseMatrix x = make_x(w, in, m, seed + 7, true);
  const double err = run_and_compare(w, x, out, [&](void* xp, void* yp) { inst->run(xp, yp, nullptr); });
  EXPECT_LT(err, tolerance(out));
}

TEST(VnmGpu, EveryVAndManyMAgainstTheReference) {
  REQUIRE_SM90();
  std::uint64_t seed = 500;
  for (int v : {32, 64, 128, 256})
    for (int mw : {4, 5, 7, 8, 10, 16, 32, 100})
      for (DType in : {DType::f16, DType::bf16}) {
        const DType out = seed % 3 == 0 ? DType::f16 : seed % 3 == 1 ? DType::f32 : DType::bf16;
        check_plan_candidate("cuda:vnm_wgmma", Pattern::venom(v, mw), in, out, 131, 2 * v + 37, 37 * mw + 3, seed++);
        if (mw == 8 || mw == 32 || mw == 5)  // the column-group raster candidate on a subset
          check_plan_candidate("cuda:vnm_wgmma_mr", Pattern::venom(v, mw), in, out, 131, 2 * v + 37, 37 * mw + 3, seed++);
      }
}

// Tile orders (row groups of 8 / 3, column groups of 1 / 2 / 5) and the gather-index prefetch on
// and off give the same product: every tile shape, tails, grids with several tiles per CTA.
TEST(VnmGpu, SchedulesAgree) {
  REQUIRE_SM90();
  std::uint64_t seed = 1600;
  const cs::PSched scheds[] = {{8, false}, {8, true}, {3, true}, {-1, true}, {-2, true}, {-5, false}};
  for (cs::PTile tile : {cs::PTile::r128n256, cs::PTile::r128n128, cs::PTile::c64n256, cs::PTile::c64n128}) {
    const int g = cs::ptile_rows(tile);
    const int v = g == 128 ? 128 : 64;
    const std::int64_t m = 4100, n = 1100, k = 203 + 64 * (seed % 3);
    const Pattern pat = Pattern::venom(v, 8);
    const CondensedMatrix w = condense(random_pattern_matrix(pat, DType::f16, n, k, seed, 0.0).view(), pat);
    const DenseMatrix x = make_x(w, DType::f16, m, seed + 1, true);
    ++seed;
    const DeviceVnm dv(w, g);
    const auto& [p, a, map, gt] = dv.parts();
    const std::int64_t ldt = (m + 7) / 8 * 8;
    cuda::DeviceBuffer xt(std::size_t(k * ldt) * 2);
    const std::vector<double> ref = reference_matmul_f64(x.view(), w);  // once for the six schedules
    for (cs::PSched q : scheds) {
      SCOPED_TRACE(std::string(cs::to_string(tile)) + " raster " + std::to_string(q.raster) + " prefetch " +
                   std::to_string(q.prefetch));
      const double err = run_and_compare(w, x, DType::f32, [&](void* xp, void* yp) {
        cs::transpose_x(xp, m, k, xt.get(), ldt, nullptr);
        cs::Problem pr{DType::f16, DType::f32, xt.get(), yp, m, n, k, ldt};
        cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), p.rows_per_group, tile, pr, nullptr, 0, q);
      }, &ref);
      EXPECT_LT(err, 1e-5);
    }
  }
  // bad schedules and tiles are refused
  const Pattern pat = Pattern::venom(128, 8);
  const CondensedMatrix w = condense(random_pattern_matrix(pat, DType::f16, 128, 64, 3, 0.0).view(), pat);
  const DeviceVnm dv(w, 128);
  const auto& [p, a, map, gt] = dv.parts();
  cuda::DeviceBuffer xt(64 * 8 * 2),
      yb(8 * 128 * 2);
  cs::Problem pr{DType::f16, DType::f16, xt.get(), yb.get(), 8, 128, 64, 8};
  EXPECT_THROW(cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), 128, cs::PTile::r128n128, pr, nullptr, 0, {0, true}),
               InvalidArgument);
  EXPECT_THROW(cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), 128, cs::PTile::r128n256x2, pr, nullptr), InvalidArgument);
}

TEST(VnmGpu, EveryTileShapeWithTailsAndSeveralTilesPerCta) {
  REQUIRE_SM90();
  struct C {
    int v, mw;
    std::int64_t m, n, k;
  };
  std::uint64_t seed = 600;
  for (cs::PTile tile : {cs::PTile::r128n256, cs::PTile::r128n128, cs::PTile::c64n256, cs::PTile::c64n128}) {
    const int g = cs::ptile_rows(tile);
    for (C c : {C{128, 8, 300, 333, 520}, C{256, 16, 7, 256, 1000}, C{64, 10, 2100, 1100, 203}, C{32, 7, 517, 200, 333}}) {
      if (c.v < g && !(c.v == 32 && g == 64)) continue;  // a tile never spans two slabs
      const Pattern pat = Pattern::venom(c.v, c.mw);
      SCOPED_TRACE(std::string(cs::to_string(tile)) + " " + pat.str() + " m=" + std::to_string(c.m));
      const CondensedMatrix w = condense(random_pattern_matrix(pat, DType::f16, c.n, c.k, seed, 0.0).view(), pat);
      const DenseMatrix x = make_x(w, DType::f16, c.m, seed + 1, true);
      ++seed;
      const DeviceVnm dv(w, g);
      const auto& [p, a, map, gt] = dv.parts();
      const std::int64_t ldt = (c.m + 7) / 8 * 8;
      const int rpt = p.rows_per_group;
      cuda::DeviceBuffer xt(std::size_t(c.k * ldt) * 2);
      const double err = run_and_compare(w, x, DType::f32, [&](void* xp, void* yp) {
        cs::transpose_x(xp, c.m, c.k, xt.get(), ldt, nullptr);
        cs::Problem pr{DType::f16, DType::f32, xt.get(), yp, c.m, c.n, c.k, ldt};
        cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), rpt, tile, pr, nullptr);
      });
      EXPECT_LT(err, 1e-5);
    }
  }
}

// The experimental gather modes (2: no proxy fence, 3: TMA rows) on tails and several tiles per
// CTA, V = 32 spread included (f16 only).
TEST(VnmGpu, GatherModesAgree) {
  REQUIRE_SM90();
  std::uint64_t seed = 650;
  for (int mode : {2, 3})
    for (auto [v, mw, m, n, k] : {std::array<int, 5>{128, 8, 2100, 1100, 203}, {32, 10, 517, 200, 333}, {256, 32, 300, 300, 1000}}) {
      const cs::PTile tile = v >= 128 ? cs::PTile::r128n256 : cs::PTile::c64n256;
      const int g = cs::ptile_rows(tile);
      const Pattern pat = Pattern::venom(v, mw);
      SCOPED_TRACE("mode " + std::to_string(mode) + " " + pat.str() + " m=" + std::to_string(m));
      const CondensedMatrix w = condense(random_pattern_matrix(pat, DType::f16, n, k, seed, 0.0).view(), pat);
      const DenseMatrix x = make_x(w, DType::f16, m, seed + 1, true);
      ++seed;
      const DeviceVnm dv(w, g);
      const auto& [p, a, map, gt] = dv.parts();
      const std::int64_t ldt = (m + 7) / 8 * 8;
      cuda::DeviceBuffer xt(std::size_t(k * ldt) * 2);
      const double err = run_and_compare(w, x, DType::f16, [&](void* xp, void* yp) {
        cs::transpose_x(xp, m, k, xt.get(), ldt, nullptr);
        cs::Problem pr{DType::f16, DType::f16, xt.get(), yp, m, n, k, ldt};
        cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), p.rows_per_group, tile, pr, nullptr, mode);
      });
      EXPECT_LT(err, 2e-3);
    }
}

// The session-4 gather modes (6: streamlined cp.async producer, what cuda:vnm_wgmma(_mr) run; 8: the
// same with commit/wait_group and one arrival per warp; 7: hybrid, producer warp 0 by 128-byte TMA
// boxes and warps 1..3 by cp.async; 7 and 8 are tested experiments, not plan candidates): every tile shape, f16 and bf16 in, every out dtype, tails in m/n/k,
// V = 32 spread, -1 gather columns (k tails, M > k), NaN in X columns no stored slot uses, grids
// with several tiles per CTA and the ring running on across tiles.
// Session 4b adds 9 (early release), 10 (9 + 5 stages at p128x256, 32-row epilogue staging), 11
// (6 + 5 stages, f16 only) and the gather indices through shared memory (PSched::smem_index) on 6 / 9
// / 10, and the register transpose (variant 1) on the cases with k % 8 == 0.
TEST(VnmGpu, Session4GatherModesEveryTileAndDtype) {
  REQUIRE_SM90();
  struct C {
    int v, mw;
    std::int64_t m, n, k;
  };
  std::uint64_t seed = 4000;
  for (int mode : {6, 7, 8, 9, 10, 11})
    for (cs::PTile tile : {cs::PTile::r128n256, cs::PTile::r128n128, cs::PTile::c64n256, cs::PTile::c64n128}) {
      const int g = cs::ptile_rows(tile);
      for (C c : {C{128, 8, 4100, 1100, 203}, C{256, 16, 7, 256, 1000}, C{64, 10, 517, 300, 333}, C{32, 7, 300, 200, 333},
                  C{128, 100, 131, 300, 1000}}) {
        if (c.v < g && !(c.v == 32 && g == 64)) continue;  // a tile never spans two slabs
        if (c.v >= 128 && g == 64) continue;                 // 128-row slabs take the 128-row tiles
        const DType in = mode == 11 ? DType::f16 : seed % 2 ? DType::bf16 : DType::f16;
        const DType out = mode == 11 ? DType::f16 : seed % 3 == 0 ? DType::f16 : seed % 3 == 1 ? DType::f32 : DType::bf16;
        const Pattern pat = Pattern::venom(c.v, c.mw);
        SCOPED_TRACE("mode " + std::to_string(mode) + " " + cs::to_string(tile) + " " + pat.str() + " " +
                     std::string(to_string(in)) + "->" + std::string(to_string(out)) + " m=" + std::to_string(c.m));
        const CondensedMatrix w = condense(random_pattern_matrix(pat, in, c.n, c.k, seed, 0.0).view(), pat);
        const DenseMatrix x = make_x(w, in, c.m, seed + 1, true);
        ++seed;
        const DeviceVnm dv(w, g);
        const auto& [p, a, map, gt] = dv.parts();
        const std::int64_t ldt = (c.m + 7) / 8 * 8;
        cuda::DeviceBuffer xt(std::size_t(c.k * ldt) * 2);
        const bool sidx_ok = mode == 6 || mode == 9 || mode == 10 || mode == 11;
        for (cs::PSched q : {cs::PSched{-2, true}, cs::PSched{8, true}, cs::PSched{-2, true, true}, cs::PSched{3, true, true}}) {
          if (q.smem_index && !sidx_ok) continue;
          const int tv = q.smem_index ? 1 : 0;  // the register transpose (falls back to variant 0 where k % 8 != 0)
          const double err = run_and_compare(w, x, out, [&](void* xp, void* yp) {
            cs::transpose_x(xp, c.m, c.k, xt.get(), ldt, nullptr, tv);
            cs::Problem pr{in, out, xt.get(), yp, c.m, c.n, c.k, ldt};
            cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), p.rows_per_group, tile, pr, nullptr, mode, q);
          });
          EXPECT_LT(err, tolerance(out)) << "raster " << q.raster << " smem_index " << q.smem_index;
        }
      }
    }
  // the diagnostic modes (wrong products by design) run, but only on f16 and the 128 x 256 tile
  const Pattern pat = Pattern::venom(128, 8);
  const CondensedMatrix w = condense(random_pattern_matrix(pat, DType::f16, 300, 520, 7, 0.0).view(), pat);
  const DeviceVnm dv(w, 128);
  const auto& [p, a, map, gt] = dv.parts();
  cuda::DeviceBuffer xt(520 * 304 * 2),
      yb(300 * 300 * 4);
  SPARSENM_CUDA_CHECK(cudaMemset(xt.get(), 0, xt.size()));
  cs::Problem pr{DType::f16, DType::f16, xt.get(), yb.get(), 300, 300, 520, 304};
  for (int mode : {4, 5}) {
    cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), 128, cs::PTile::r128n256, pr, nullptr, mode);
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_THROW(cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), 128, cs::PTile::r128n128, pr, nullptr, mode), InvalidArgument);
    cs::Problem pb = pr;
    pb.out = DType::f32;
    EXPECT_THROW(cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), 128, cs::PTile::r128n256, pb, nullptr, mode), InvalidArgument);
  }
  EXPECT_THROW(cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), 128, cs::PTile::r128n256, pr, nullptr, 12), InvalidArgument);
  EXPECT_THROW(cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), 128, cs::PTile::r128n256, pr, nullptr, 1, {8, true, true}),
               InvalidArgument);  // the shared-memory index ring needs the streamlined producer
  cs::Problem pb = pr;
  pb.in = DType::bf16;
  EXPECT_THROW(cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), 128, cs::PTile::r128n256, pb, nullptr, 11), InvalidArgument);
}

// The register transpose (variant 1) writes exactly what the shared-memory one (variant 0) writes,
// zero columns m..ldt-1 included: tails in m and k, ldt > m + 8, a grid-stride loop (m, k large
// enough for several warp tiles per warp is not needed: any size checks the mapping).
TEST(VnmGpu, RegisterTransposeMatchesTheTiledOne) {
  REQUIRE_SM90();
  struct C {
    std::int64_t m, k, ldt;
  };
  for (C c : {C{1, 8, 8}, C{7, 16, 8}, C{33, 72, 48}, C{150, 300, 152}, C{513, 1000, 528}, C{2049, 4104, 2056}}) {
    SCOPED_TRACE("m=" + std::to_string(c.m) + " k=" + std::to_string(c.k) + " ldt=" + std::to_string(c.ldt));
    std::vector<std::uint16_t> x(std::size_t(c.m * c.k));
    std::uint32_t r = 12345u + std::uint32_t(c.m);
    for (auto& e : x) e = std::uint16_t((r = r * 1664525u + 1013904223u) >> 16);
    cuda::DeviceBuffer xd(x.size() * 2), t0(std::size_t(c.k * c.ldt) * 2), t1(std::size_t(c.k * c.ldt) * 2);
    xd.upload(x.data(), xd.size());
    SPARSENM_CUDA_CHECK(cudaMemset(t0.get(), 0xFF, t0.size()));
    SPARSENM_CUDA_CHECK(cudaMemset(t1.get(), 0xFF, t1.size()));
    cs::transpose_x(xd.get(), c.m, c.k, t0.get(), c.ldt, nullptr, 0);
    cs::transpose_x(xd.get(), c.m, c.k, t1.get(), c.ldt, nullptr, 1);
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> h0(std::size_t(c.k * c.ldt)), h1(h0.size());
    t0.download(h0.data(), t0.size());
    t1.download(h1.data(), t1.size());
    std::int64_t bad = 0;
    for (std::int64_t kk = 0; kk < c.k; ++kk)
      for (std::int64_t i = 0; i < c.ldt; ++i) {
        const std::uint16_t want = i < c.m ? x[std::size_t(i * c.k + kk)] : 0;
        bad += h1[std::size_t(kk * c.ldt + i)] != want;
        bad += h0[std::size_t(kk * c.ldt + i)] != want;
      }
    EXPECT_EQ(bad, 0);
  }
  cuda::DeviceBuffer xt(64);
  EXPECT_THROW(cs::transpose_x(xt.get(), 2, 8, xt.get(), 8, nullptr, 2), InvalidArgument);
}

TEST(VnmGpu, PersistentHw24EveryTileShape) {
  REQUIRE_SM90();
  std::uint64_t seed = 700;
  for (cs::PTile tile : {cs::PTile::r128n256, cs::PTile::r128n128, cs::PTile::c64n256, cs::PTile::c64n128})
    for (auto [m, n, k] : {std::array<std::int64_t, 3>{300, 130, 520}, {4100, 1100, 256}, {7, 70, 64}}) {
      SCOPED_TRACE(std::string(cs::to_string(tile)) + " m=" + std::to_string(m) + " n=" + std::to_string(n));
      const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), DType::bf16, n, k, seed, 0.0).view(), Pattern::hw24());
      const DenseMatrix x = make_x(w, DType::bf16, m, seed + 1, false);
      ++seed;
      sptc::Packed24 p = sptc::pack_hw24(w, 128);
      cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4);
      v.upload(p.values.data(), v.size());
      mt.upload(p.meta.data(), mt.size());
      cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
      const CUtensorMap map = cs::make_values_map_rows(a, cs::ptile_rows(tile));
      const std::vector<double> ref = reference_matmul_f64(x.view(), w);  // once for every schedule and output type
      for (cs::PSched q : {cs::PSched{8, true}, cs::PSched{-2, true}, cs::PSched{-1, true}, cs::PSched{3, true}}) {
        if (q.raster != 8 && m < 4000) continue;  // other tile orders: on the case with several tiles per CTA
        for (DType out : {DType::f32, DType::f16}) {
          if (out == DType::f16 && q.raster != 8) continue;
          SCOPED_TRACE("raster " + std::to_string(q.raster) + " out " + std::string(to_string(out)));
          const double err = run_and_compare(w, x, out, [&](void* xp, void* yp) {
            cs::Problem pr{DType::bf16, out, xp, yp, m, n, k, k};
            cs::run_sptc24_wgmma_persistent(a, map, tile, pr, nullptr, q);
          }, &ref);
          EXPECT_LT(err, out == DType::f32 ? 1e-5 : 2e-3);
        }
      }
    }
}

/// Runs the 192 x 256 kernel in both variants (one tile per CTA / stream-k last wave) on one problem, each `reps` times (a race or a
/// stale stream-k flag shows as a changing or wrong result), against one fp64 reference.
void check_w3_variants(const CondensedMatrix& w, const DenseMatrix& x, DType in, DType out, int reps) {
  const std::int64_t m = x.rows(), n = w.rows(), k = w.cols();
  const std::vector<double> ref = reference_matmul_f64(x.view(), w);
  sptc::Packed24 p = sptc::pack_hw24(w, 192);
  cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4), ws(cs::sptc24_wgmma3_workspace_bytes());
  v.upload(p.values.data(), v.size());
  mt.upload(p.meta.data(), mt.size());
  SPARSENM_CUDA_CHECK(cudaMemset(ws.get(), 0, ws.size()));
  cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
  const CUtensorMap map = cs::make_values_map_rows(a, 192);
  cuda::DeviceBuffer xd(x.size_bytes()), yd(std::size_t(m * n) * dtype_size(out));
  xd.upload(x.data(), x.size_bytes());
  for (const cs::W3Opts o : {cs::W3Opts{false}, cs::W3Opts{true}})
    for (int rep = 0; rep < reps; ++rep) {
      SPARSENM_CUDA_CHECK(cudaMemset(yd.get(), 0xFF, yd.size()));  // NaN in every dtype
      cs::Problem pr{in, out, xd.get(), yd.get(), m, n, k, k};
      cs::run_sptc24_wgmma3(a, map, pr, nullptr, o, ws.get());
      SPARSENM_CUDA_CHECK(cudaGetLastError());
      SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      DenseMatrix y(out, m, n);
      yd.download(y.data(), y.size_bytes());
      double err = 0;
      for (std::int64_t i = 0; i < m && std::isfinite(err); ++i)
        for (std::int64_t j = 0; j < n; ++j)
          if (!std::isfinite(y.at(i, j))) err = INFINITY;
      if (std::isfinite(err)) err = relative_error(y.view(), ref);
      EXPECT_LT(err, tolerance(out)) << "stream_k " << o.stream_k << " rep " << rep;
    }
}

// The 192 x 256 three-warpgroup 2:4 kernel, every variant: tails in m, n and k, one and many
// k-blocks (fewer and more than the 4 ring slots), many tiles, every output dtype. Stream-k grids
// (132 SMs): fewer tiles than SMs (every tile split), a whole number of waves (no split), and
// whole-tile waves followed by a split last wave (4600 x 3000: 288 tiles = 1 wave + 156 split).
TEST(SptcGpu3, Hw24ThreeWarpgroups) {
  REQUIRE_SM90();
  std::uint64_t seed = 1700;
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{300, 130, 520}, {4100, 1100, 256}, {7, 70, 64}, {2000, 4000, 1000},
                         {513, 385, 4096}, {256, 192, 128}, {3000, 2100, 64}, {3000, 4600, 128}})
    for (DType in : {DType::f16, DType::bf16})
      for (DType out : {DType::f32, DType::f16, DType::bf16}) {
        if (in == DType::bf16 && out == DType::f16) continue;
        if (m * n * k > 100000000 && !(in == DType::f16 && out == DType::f32)) continue;  // large: one dtype pair
        SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " " +
                     std::string(to_string(in)) + "->" + std::string(to_string(out)));
        const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), in, n, k, seed, 0.0).view(), Pattern::hw24());
        const DenseMatrix x = make_x(w, in, m, seed + 1, false);
        ++seed;
        check_w3_variants(w, x, in, out, 2);
      }
  // a weight packed for 128-row tiles is refused
  const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), DType::f16, 130, 64, 1, 0.0).view(), Pattern::hw24());
  sptc::Packed24 p = sptc::pack_hw24(w, 128);
  cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4), xb(64 * 8 * 2), yb(8 * 130 * 2);
  cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
  const CUtensorMap map = cs::make_values_map_rows(a, 128);
  cs::Problem pr{DType::f16, DType::f16, xb.get(), yb.get(), 8, 130, 64, 64};
  EXPECT_THROW(cs::run_sptc24_wgmma3(a, map, pr, nullptr), InvalidArgument);
  // stream-k without its workspace is refused
  sptc::Packed24 p3 = sptc::pack_hw24(w, 192);
  cuda::DeviceBuffer v3(p3.values.size() * 2), mt3(p3.meta.size() * 4);
  cs::DeviceA a3{v3.get(), mt3.as<std::uint32_t>(), p3.rows, p3.rows_pad, p3.k_pad};
  const CUtensorMap map3 = cs::make_values_map_rows(a3, 192);
  EXPECT_THROW(cs::run_sptc24_wgmma3(a3, map3, pr, nullptr, cs::W3Opts{true}, nullptr), InvalidArgument);
}

// Small launches of every 192 x 256 variant for compute-sanitizer racecheck: k = 1000 (16 k-blocks:
// the 4-slot ring is reused) on one-tile grids; stream-k with 6 tiles x 125 k-blocks over the
// SMs (~6 iterations per CTA: ring reuse, a split tile per CTA, owners adding partials).
TEST(SptcGpu3, SmallForRacecheck) {
  REQUIRE_SM90();
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{150, 200, 1000}, {300, 400, 8000}}) {
    SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
    const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), DType::f16, n, k, 910, 0.0).view(), Pattern::hw24());
    const DenseMatrix x = make_x(w, DType::f16, m, 911, false);
    check_w3_variants(w, x, DType::f16, DType::f16, 1);
  }
}

// meta_global (docs/PERF-sptc.md, "Session 4d"): the 128 x 256 and 192 x 256 2:4 kernels with each
// consumer thread's metadata word loaded from global memory into a register instead of the
// bulk-copied shared-memory slot. Both kernels, `reps` launches each (a race shows as a moving or
// wrong result), against the fp64 reference.
void check_meta_global(const CondensedMatrix& w, const DenseMatrix& x, DType in, DType out, int reps) {
  const std::int64_t m = x.rows(), n = w.rows(), k = w.cols();
  const std::vector<double> ref = reference_matmul_f64(x.view(), w);
  for (int bm : {128, 192}) {
    sptc::Packed24 p = sptc::pack_hw24(w, bm);
    cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4);
    v.upload(p.values.data(), v.size());
    mt.upload(p.meta.data(), mt.size());
    cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
    const CUtensorMap map = cs::make_values_map_rows(a, bm);
    for (int rep = 0; rep < reps; ++rep) {
      const double err = run_and_compare(
          w, x, out,
          [&](void* xp, void* yp) {
            cs::Problem pr{in, out, xp, yp, m, n, k, k};
            if (bm == 128)
              cs::run_sptc24_wgmma(a, map, cs::WgTile::m128n256, pr, nullptr, true);
            else
              cs::run_sptc24_wgmma3(a, map, pr, nullptr, cs::W3Opts{false, true});
          },
          &ref);
      EXPECT_LT(err, tolerance(out)) << "tile rows " << bm << " rep " << rep;
    }
  }
}

// Tails in m, n and k; one k-block, an odd and an even number of k-blocks; ring reuse (k >= 1000:
// 16+ k-blocks over the 4/5-slot rings); f16 and bf16; every output dtype once.
TEST(SptcMetaGlobal, Hw24MatchesReference) {
  REQUIRE_SM90();
  std::uint64_t seed = 4400;
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{300, 130, 520}, {7, 70, 64}, {129, 257, 1000}, {513, 385, 2040},
                         {1000, 600, 4096}, {260, 130, 1200}})
    for (auto [in, out] : {std::pair{DType::f16, DType::f32}, {DType::bf16, DType::bf16}, {DType::f16, DType::f16},
                           {DType::bf16, DType::f32}}) {
      SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " " +
                   std::string(to_string(in)) + "->" + std::string(to_string(out)));
      const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), in, n, k, seed, 0.0).view(), Pattern::hw24());
      const DenseMatrix x = make_x(w, in, m, seed + 1, false);
      ++seed;
      check_meta_global(w, x, in, out, 2);
    }
  // refused where it is not built
  const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), DType::f16, 130, 64, 1, 0.0).view(), Pattern::hw24());
  sptc::Packed24 p = sptc::pack_hw24(w, 192);
  cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4), xb(64 * 8 * 2), yb(8 * 130 * 2),
      ws(cs::sptc24_wgmma3_workspace_bytes());
  cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
  cs::Problem pr{DType::f16, DType::f16, xb.get(), yb.get(), 8, 130, 64, 64};
  EXPECT_THROW(cs::run_sptc24_wgmma3(a, cs::make_values_map_rows(a, 192), pr, nullptr, cs::W3Opts{true, true}, ws.get()),
               InvalidArgument);
  EXPECT_THROW(cs::run_sptc24_wgmma(a, cs::make_values_map_rows(a, 64), cs::WgTile::m64n128, pr, nullptr, true),
               InvalidArgument);
}

// Small launches for compute-sanitizer racecheck: k = 1000 (16 k-blocks: ring reuse), several tiles.
// If racecheck reports nothing here while SptcGpu3.SmallForRacecheck still reports the bulk-copy
// pair, the reports are tied to generic reads of bulk-copy-written memory (docs "Session 4d").
TEST(SptcMetaGlobal, SmallForRacecheck) {
  REQUIRE_SM90();
  const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), DType::f16, 200, 1000, 912, 0.0).view(), Pattern::hw24());
  const DenseMatrix x = make_x(w, DType::f16, 150, 913, false);
  check_meta_global(w, x, DType::f16, DType::f16, 1);
}

// Experiment: 2x1 clusters with the X tile multicast (PTile::r128n256x2). Kept in its own suite so
// that device scripts can run it apart, under a short timeout (a wrong cluster protocol hangs).
TEST(SptcClusterExperimental, Hw24Multicast) {
  REQUIRE_SM90();
  std::uint64_t seed = 750;
  // odd number of 128-row tiles (the last pair has a tile past the matrix), m tails, > 1 unit per cluster
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{300, 130, 520}, {4100, 1100, 256}, {7, 390, 64}, {2000, 4096, 1000}}) {
    SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
    const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), DType::f16, n, k, seed, 0.0).view(), Pattern::hw24());
    const DenseMatrix x = make_x(w, DType::f16, m, seed + 1, false);
    ++seed;
    sptc::Packed24 p = sptc::pack_hw24(w, 128);
    cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4);
    v.upload(p.values.data(), v.size());
    mt.upload(p.meta.data(), mt.size());
    cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
    const CUtensorMap map = cs::make_values_map_rows(a, 128);
    for (int rep = 0; rep < 3; ++rep) {  // repeated: a race shows as a moving error
      const double err = run_and_compare(w, x, DType::f32, [&](void* xp, void* yp) {
        cs::Problem pr{DType::f16, DType::f32, xp, yp, m, n, k, k};
        cs::run_sptc24_wgmma_persistent(a, map, cs::PTile::r128n256x2, pr, nullptr);
      });
      EXPECT_LT(err, 1e-5);
    }
  }
}

TEST(VnmGpu, PersistentHw24PlanCandidate) {
  REQUIRE_SM90();
  check_plan_candidate("cuda:sptc_24_wgmma_p", Pattern::hw24(), DType::f16, DType::f16, 129, 257, 1000, 800);
  check_plan_candidate("cuda:sptc_24_wgmma_p", Pattern::hw24(), DType::bf16, DType::f32, 520, 384, 2044, 801);
  check_plan_candidate("cuda:sptc_24_wgmma_3", Pattern::hw24(), DType::f16, DType::f16, 129, 257, 1000, 802);
  check_plan_candidate("cuda:sptc_24_wgmma_3", Pattern::hw24(), DType::bf16, DType::bf16, 520, 384, 2044, 803);
  check_plan_candidate("cuda:sptc_24_wgmma_3", Pattern::element(2, 8), DType::f16, DType::f32, 3000, 1000, 600, 804);
}

// Small launches of both persistent paths, for compute-sanitizer (memcheck / racecheck) runs.
TEST(VnmGpu, SmallForSanitizers) {
  REQUIRE_SM90();
  for (cs::PTile tile : {cs::PTile::r128n128, cs::PTile::c64n128}) {
    const Pattern pat = Pattern::venom(128, 8);
    const CondensedMatrix w = condense(random_pattern_matrix(pat, DType::f16, 200, 300, 900, 0.0).view(), pat);
    const DenseMatrix x = make_x(w, DType::f16, 150, 901, false);
    const int g = cs::ptile_rows(tile);
    const DeviceVnm dv(w, g);
    const auto& [p, a, map, gt] = dv.parts();
    cuda::DeviceBuffer xt(300 * 152 * 2);
    for (int mode : {1, 2, 3, 6, 7, 8})
      for (cs::PSched q : {cs::PSched{8, true}, cs::PSched{-2, true}, cs::PSched{8, false}}) {
        if (mode != 1 && !q.prefetch) continue;
        const double err = run_and_compare(w, x, DType::f16, [&](void* xp, void* yp) {
          cs::transpose_x(xp, 150, 300, xt.get(), 152, nullptr);
          cs::Problem pr{DType::f16, DType::f16, xt.get(), yp, 150, 200, 300, 152};
          cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), p.rows_per_group, tile, pr, nullptr, mode, q);
        });
        EXPECT_LT(err, 2e-3) << cs::to_string(tile) << " gather mode " << mode << " raster " << q.raster;
      }
  }
  check_plan_candidate("cuda:sptc_24_wgmma_p", Pattern::hw24(), DType::f16, DType::f16, 150, 200, 256, 902);
  check_plan_candidate("cuda:sptc_24_wgmma_3", Pattern::hw24(), DType::f16, DType::f16, 150, 200, 1000, 903);  // refills the ring
}

// Session 4b's options under the sanitizers (scripts/vnm-4b-device-run: memcheck and racecheck):
// early release (9), + 5 stages / 32-row epilogue on p128x256 (10), 5 stages alone (11), the
// shared-memory index ring (smem_index) and the register transpose; k = 1200: 10 k blocks, so the
// stage ring and the index ring both wrap.
TEST(VnmGpu, SmallForSanitizers4b) {
  REQUIRE_SM90();
  for (cs::PTile tile : {cs::PTile::r128n256, cs::PTile::r128n128}) {
    const Pattern pat = Pattern::venom(128, 8);
    const CondensedMatrix w = condense(random_pattern_matrix(pat, DType::f16, 200, 1200, 904, 0.0).view(), pat);
    const DenseMatrix x = make_x(w, DType::f16, 150, 905, false);
    const DeviceVnm dv(w, 128);
    const auto& [p, a, map, gt] = dv.parts();
    cuda::DeviceBuffer xt(1200 * 152 * 2);
    for (int mode : {6, 9, 10, 11})
      for (bool sidx : {false, true}) {
        if (mode == 6 && !sidx) continue;
        const double err = run_and_compare(w, x, DType::f16, [&](void* xp, void* yp) {
          cs::transpose_x(xp, 150, 1200, xt.get(), 152, nullptr, 1);
          cs::Problem pr{DType::f16, DType::f16, xt.get(), yp, 150, 200, 1200, 152};
          cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), p.rows_per_group, tile, pr, nullptr, mode, {-2, true, sidx});
        });
        EXPECT_LT(err, 2e-3) << cs::to_string(tile) << " gather mode " << mode << " smem_index " << sidx;
      }
  }
}

TEST(VnmGpu, UnsupportedInputsAreReported) {
  REQUIRE_SM90();
  detail::KernelRegistry reg;
  detail::register_sptc_kernels(reg);
  const auto& cand = candidate(reg, "cuda:vnm_wgmma");
  const CondensedMatrix w24 = condense(random_pattern_matrix(Pattern::hw24(), DType::f16, 8, 16, 1, 0.0).view(), Pattern::hw24());
  MatmulDesc d;
  d.m = 4;
  EXPECT_NE(cand.unsupported(w24, d).find("venom"), std::string::npos);
  const CondensedMatrix wv = condense(random_pattern_matrix(Pattern::venom(64, 8), DType::f16, 70, 40, 2, 0.0).view(), Pattern::venom(64, 8));
  d.x_dtype = DType::bf16;
  EXPECT_NE(cand.unsupported(wv, d), "");
  d.x_dtype = DType::f16;
  d.accumulate = Accumulate::f64;
  EXPECT_NE(cand.unsupported(wv, d), "");
  d.accumulate = Accumulate::f32;
  EXPECT_EQ(cand.unsupported(wv, d), "");
  cuda::DeviceBuffer xt(64);
  EXPECT_THROW(cs::transpose_x(xt.get(), 4, 4, xt.get(), 6, nullptr), InvalidArgument);
}


// ---- V:2:M weights on the hardware 2:4 candidates (issue 4: repack when every aligned group of 4
// holds <= 2 nonzeros; sptc_pack.cpp) and in the plan's automatic race. X here is finite: the 2:4
// operand multiplies its zero fill slots against X columns the V:2:M weight never stores (like the
// dense cuBLAS candidate does), so they are candidates only for finite X (MatmulDesc::x_finite,
// FORMAT.md section 8; docs/PERF-sptc.md, "V:2:M on the 2:4 kernels").

/// The venom weight of random_pattern_matrix with every nonzero past the second of an aligned
/// group of 4 zeroed (still V:2:M: condense stores those slots as zeros), so M % 4 != 0 packs.
CondensedMatrix packable_venom(const Pattern& pat, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  DenseMatrix d = random_pattern_matrix(pat, t, rows, cols, seed, 0.1);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t g = 0; g < cols; g += 4) {
      int nz = 0;
      for (std::int64_t c = g; c < std::min(cols, g + 4); ++c)
        if (d.at(r, c) != 0.f && ++nz > 2) d.set(r, c, 0.f);
    }
  return condense(d.view(), pat);
}

/// Plan::create (kernel forced by name, or "" = the CUDA race), poisoned Y, fp64 reference.
Plan check_venom_plan(const std::string& kernel, const CondensedMatrix& w, DType out, std::int64_t m, std::uint64_t seed) {
  MatmulDesc d;
  d.m = m;
  d.x_dtype = w.dtype;
  d.y_dtype = out;
  d.backend = Backend::cuda;
  d.kernel = kernel;
  Plan plan = Plan::create(w, d);
  if (!kernel.empty()) EXPECT_EQ(plan.kernel(), kernel);
  const DenseMatrix x = make_x(w, w.dtype, m, seed, false);
  const double err = run_and_compare(w, x, out, [&](void* xp, void* yp) { plan.run(xp, yp, nullptr); });
  EXPECT_LT(err, tolerance(out)) << "kernel " << plan.kernel() << " (" << plan.reason() << ")";
  return plan;
}

TEST(VnmGpu, VenomOnThe24CandidatesForcedByName) {
  REQUIRE_SM90();
  struct C {
    int v, mw;
    DType in, out;
    std::int64_t m, n, k;
  };
  // tails in m, n (not a multiple of V or of the 128/192-row tiles) and k (not a multiple of M or 8)
  const C cases[] = {{128, 8, DType::f16, DType::f16, 131, 293, 299},    {64, 16, DType::bf16, DType::f32, 300, 165, 595},
                     {32, 4, DType::f16, DType::bf16, 70, 100, 66},      {256, 32, DType::bf16, DType::bf16, 257, 600, 1000},
                     {128, 5, DType::f16, DType::f32, 129, 300, 203},    {64, 100, DType::bf16, DType::f16, 64, 200, 303},
                     {128, 7, DType::f16, DType::f16, 520, 390, 1001},   {32, 10, DType::bf16, DType::f32, 33, 97, 95}};
  std::uint64_t seed = 1200;
  for (const char* name : {"cuda:sptc_24_wgmma", "cuda:sptc_24_wgmma_p", "cuda:sptc_24_wgmma_3", "cuda:sptc_24_mma"})
    for (const C& c : cases) {
      const Pattern pat = Pattern::venom(c.v, c.mw);
      SCOPED_TRACE(std::string(name) + " " + pat.str() + " " + std::string(to_string(c.in)) + "->" +
                   std::string(to_string(c.out)) + " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
                   " k=" + std::to_string(c.k));
      const CondensedMatrix w = packable_venom(pat, c.in, c.n, c.k, seed++);
      ASSERT_EQ(sptc::hw24_unsupported(w), "");
      check_venom_plan(name, w, c.out, c.m, seed++);
    }
  // 3 nonzeros in an aligned group of 4 (64:2:5, row 3: columns 3, 4 | 5, 6): refused by name, never run
  DenseMatrix d(DType::f16, 70, 12);
  for (std::int64_t c : {3, 4, 5, 6}) d.set(3, c, float(c));
  const CondensedMatrix bad = condense(d.view(), Pattern::venom(64, 5));
  MatmulDesc desc;
  desc.m = 16;
  desc.backend = Backend::cuda;
  desc.kernel = "cuda:sptc_24_wgmma";
  try {
    (void)Plan::create(bad, desc);
    ADD_FAILURE() << "a venom weight with 3 nonzeros in a group of 4 was accepted by the 2:4 kernel";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("more than 2 nonzeros in an aligned group of 4"), std::string::npos) << e.what();
  }
}

TEST(VnmGpu, PlanRaceOnVenomIncludesThe24CandidatesAndIsCorrect) {
  REQUIRE_SM90();
  struct C {
    int v, mw;
    std::int64_t m, n, k;
    bool packable;
  };
  const C cases[] = {{128, 8, 2048, 1100, 1030, true}, {128, 32, 600, 1000, 2000, true}, {64, 16, 300, 700, 900, true},
                     {128, 5, 512, 640, 1003, false}};
  std::uint64_t seed = 1300;
  for (const C& c : cases) {
    const Pattern pat = Pattern::venom(c.v, c.mw);
    SCOPED_TRACE(pat.str() + " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k));
    const CondensedMatrix w = c.packable ? packable_venom(pat, DType::f16, c.n, c.k, seed++)
                                         : condense(random_pattern_matrix(pat, DType::f16, c.n, c.k, seed++, 0.0).view(), pat);
    const Plan plan = check_venom_plan("", w, DType::f16, c.m, seed++);
    const std::string& why = plan.reason();
    std::printf("[plan] %s m=%lld %lldx%lld -> %s (%s)\n", pat.str().c_str(), (long long)c.m, (long long)c.n,
                (long long)c.k, plan.kernel().c_str(), why.c_str());
    EXPECT_NE(why.find("fastest of"), std::string::npos) << why;
    EXPECT_NE(why.find(plan.kernel() + " "), std::string::npos) << why;  // the report names the choice
    const std::string raced = why.substr(0, why.find("; not supported"));
    EXPECT_NE(raced.find("cuda:vnm_wgmma "), std::string::npos) << why;
    EXPECT_NE(raced.find("cuda:vnm_wgmma_mr "), std::string::npos) << why;
    EXPECT_NE(raced.find("cuda:cublas_dense "), std::string::npos) << why;
    if (c.packable) {
      EXPECT_NE(raced.find("cuda:sptc_24_wgmma "), std::string::npos) << why;
      EXPECT_NE(raced.find("cuda:sptc_24_wgmma_p "), std::string::npos) << why;
    } else if (sptc::hw24_unsupported(w) != "") {
      EXPECT_EQ(raced.find("cuda:sptc_24_wgmma "), std::string::npos) << why;
      EXPECT_NE(why.find("cuda:sptc_24_wgmma (row "), std::string::npos) << why;  // listed as not supported, with the row
    }
  }
}

}  // namespace
}  // namespace sparsenm
