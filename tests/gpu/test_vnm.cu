// sparsenm GPU tests — V:2:M (venom) SpMM on the sparse tensor cores (cuda:vnm_wgmma: transpose,
// cp.async gather, wgmma.mma_async.sp) and the persistent hardware 2:4 kernel
// (cuda:sptc_24_wgmma_p), against sparsenm::reference_matmul_f64. Every V, many M, both input
// dtypes, tails in m, n and k, every persistent tile shape, grids with several tiles per CTA, and
// NaN in X columns that no stored slot references. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <array>
#include <limits>
#include <set>

#include "cuda/common.cuh"
#include "cuda/sptc/pack.hpp"
#include "cuda/sptc/sptc.hpp"
#include "plan/registry.hpp"
#include "sparsenm/format.hpp"
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
double run_and_compare(const CondensedMatrix& w, const DenseMatrix& x, DType out, Run&& run_fn) {
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
  return relative_error(y.view(), reference_matmul_f64(x.view(), w));
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
    sptc::PackedVnm p = sptc::pack_venom(w, g, 128);
    cuda::DeviceBuffer vb(p.a.values.size() * 2), mt(p.a.meta.size() * 4), gt(p.gather.size() * 4);
    vb.upload(p.a.values.data(), vb.size());
    mt.upload(p.a.meta.data(), mt.size());
    gt.upload(p.gather.data(), gt.size());
    cs::DeviceA a{vb.get(), mt.as<std::uint32_t>(), p.a.rows, p.a.rows_pad, p.a.k_pad};
    const CUtensorMap map = cs::make_values_map_rows(a, g);
    const std::int64_t ldt = (m + 7) / 8 * 8;
    cuda::DeviceBuffer xt(std::size_t(k * ldt) * 2);
    for (cs::PSched q : scheds) {
      SCOPED_TRACE(std::string(cs::to_string(tile)) + " raster " + std::to_string(q.raster) + " prefetch " +
                   std::to_string(q.prefetch));
      const double err = run_and_compare(w, x, DType::f32, [&](void* xp, void* yp) {
        cs::transpose_x(xp, m, k, xt.get(), ldt, nullptr);
        cs::Problem pr{DType::f16, DType::f32, xt.get(), yp, m, n, k, ldt};
        cs::run_vnm_wgmma(a, map, gt.as<std::int32_t>(), p.rows_per_group, tile, pr, nullptr, 0, q);
      });
      EXPECT_LT(err, 1e-5);
    }
  }
  // bad schedules and tiles are refused
  const Pattern pat = Pattern::venom(128, 8);
  const CondensedMatrix w = condense(random_pattern_matrix(pat, DType::f16, 128, 64, 3, 0.0).view(), pat);
  sptc::PackedVnm p = sptc::pack_venom(w, 128, 128);
  cuda::DeviceBuffer vb(p.a.values.size() * 2), mt(p.a.meta.size() * 4), gt(p.gather.size() * 4), xt(64 * 8 * 2),
      yb(8 * 128 * 2);
  cs::DeviceA a{vb.get(), mt.as<std::uint32_t>(), p.a.rows, p.a.rows_pad, p.a.k_pad};
  const CUtensorMap map = cs::make_values_map_rows(a, 128);
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
      sptc::PackedVnm p = sptc::pack_venom(w, g, 128);
      cuda::DeviceBuffer v(p.a.values.size() * 2), mt(p.a.meta.size() * 4), gt(p.gather.size() * 4);
      v.upload(p.a.values.data(), v.size());
      mt.upload(p.a.meta.data(), mt.size());
      gt.upload(p.gather.data(), gt.size());
      cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.a.rows, p.a.rows_pad, p.a.k_pad};
      const CUtensorMap map = cs::make_values_map_rows(a, g);
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
      sptc::PackedVnm p = sptc::pack_venom(w, g, 128);
      cuda::DeviceBuffer vb(p.a.values.size() * 2), mt(p.a.meta.size() * 4), gt(p.gather.size() * 4);
      vb.upload(p.a.values.data(), vb.size());
      mt.upload(p.a.meta.data(), mt.size());
      gt.upload(p.gather.data(), gt.size());
      cs::DeviceA a{vb.get(), mt.as<std::uint32_t>(), p.a.rows, p.a.rows_pad, p.a.k_pad};
      const CUtensorMap map = cs::make_values_map_rows(a, g);
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
      for (cs::PSched q : {cs::PSched{8, true}, cs::PSched{-2, true}, cs::PSched{-1, true}, cs::PSched{3, true}}) {
        if (q.raster != 8 && m < 4000) continue;  // other tile orders: on the case with several tiles per CTA
        for (DType out : {DType::f32, DType::f16}) {
          if (out == DType::f16 && q.raster != 8) continue;
          SCOPED_TRACE("raster " + std::to_string(q.raster) + " out " + std::string(to_string(out)));
          const double err = run_and_compare(w, x, out, [&](void* xp, void* yp) {
            cs::Problem pr{DType::bf16, out, xp, yp, m, n, k, k};
            cs::run_sptc24_wgmma_persistent(a, map, tile, pr, nullptr, q);
          });
          EXPECT_LT(err, out == DType::f32 ? 1e-5 : 2e-3);
        }
      }
    }
}

// The 192 x 256 three-warpgroup 2:4 kernel: tails in m, n and k, one and many k-blocks (fewer and
// more than the 4 ring slots), many tiles, every output dtype.
TEST(SptcGpu3, Hw24ThreeWarpgroups) {
  REQUIRE_SM90();
  std::uint64_t seed = 1700;
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{300, 130, 520}, {4100, 1100, 256}, {7, 70, 64}, {2000, 4000, 1000},
                         {513, 385, 4096}, {256, 192, 128}})
    for (DType in : {DType::f16, DType::bf16})
      for (DType out : {DType::f32, DType::f16, DType::bf16}) {
        if (in == DType::bf16 && out == DType::f16) continue;
        if (m * n * k > 100000000 && !(in == DType::f16 && out == DType::f32)) continue;  // large: one dtype pair
        SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " " +
                     std::string(to_string(in)) + "->" + std::string(to_string(out)));
        const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), in, n, k, seed, 0.0).view(), Pattern::hw24());
        const DenseMatrix x = make_x(w, in, m, seed + 1, false);
        ++seed;
        sptc::Packed24 p = sptc::pack_hw24(w, 192);
        cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4);
        v.upload(p.values.data(), v.size());
        mt.upload(p.meta.data(), mt.size());
        cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
        const CUtensorMap map = cs::make_values_map_rows(a, 192);
        const double err = run_and_compare(w, x, out, [&](void* xp, void* yp) {
          cs::Problem pr{in, out, xp, yp, m, n, k, k};
          cs::run_sptc24_wgmma3(a, map, pr, nullptr);
        });
        EXPECT_LT(err, tolerance(out));
      }
  // a weight packed for 128-row tiles is refused
  const CondensedMatrix w = condense(random_pattern_matrix(Pattern::hw24(), DType::f16, 130, 64, 1, 0.0).view(), Pattern::hw24());
  sptc::Packed24 p = sptc::pack_hw24(w, 128);
  cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4), xb(64 * 8 * 2), yb(8 * 130 * 2);
  cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
  const CUtensorMap map = cs::make_values_map_rows(a, 128);
  cs::Problem pr{DType::f16, DType::f16, xb.get(), yb.get(), 8, 130, 64, 64};
  EXPECT_THROW(cs::run_sptc24_wgmma3(a, map, pr, nullptr), InvalidArgument);
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
    sptc::PackedVnm p = sptc::pack_venom(w, g, 128);
    cuda::DeviceBuffer v(p.a.values.size() * 2), mt(p.a.meta.size() * 4), gt(p.gather.size() * 4), xt(300 * 152 * 2);
    v.upload(p.a.values.data(), v.size());
    mt.upload(p.a.meta.data(), mt.size());
    gt.upload(p.gather.data(), gt.size());
    cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.a.rows, p.a.rows_pad, p.a.k_pad};
    const CUtensorMap map = cs::make_values_map_rows(a, g);
    for (int mode : {1, 2, 3})
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

}  // namespace
}  // namespace sparsenm
