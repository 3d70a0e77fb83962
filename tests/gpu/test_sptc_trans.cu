// sparsenm GPU tests — the transposed-operand (x_trans: X given as X^T [k][ldx], MN-major B) and
// transposed-output (y_trans: Y^T [n][m] written) options of the sm_90a wgmma 2:4 kernel
// (src/cuda/sptc/sptc24_wgmma.cu; used by the FST layer's weight-gradient GEMM) against an fp64
// reference: tails in m, n and k, the three tiles, f16 and bf16, NaN in the unread padding of
// X^T, poisoned outputs and a poisoned guard region past Y^T. Argument errors run without a
// device (they are thrown before any CUDA call).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/sptc/pack.hpp"
#include "cuda/sptc/sptc.hpp"
#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

namespace cs = cuda::sptc;

bool have_sm90() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return false;
  return cs::device_cc() == 90;
}
#define REQUIRE_SM90() \
  if (!have_sm90()) GTEST_SKIP() << "no sm_90 CUDA device: wgmma x_trans / y_trans tests skipped"

struct Case {
  std::int64_t m, n, k;
};

std::uint16_t raw16(const DenseMatrix& a, std::int64_t r, std::int64_t c) {
  std::uint16_t v;
  std::memcpy(&v, static_cast<const std::uint8_t*>(a.data()) + (r * a.cols() + c) * 2, 2);
  return v;
}

struct Outcome {
  double rel_fro = 0, max_rel = 0;
  bool finite = true, guard_intact = true;
};

/// y (or y^T) of the 2:4 product on random data, compared with fp64; x^T padding columns and the
/// region past y hold NaN bytes (0xFFFF is a NaN in f16 and bf16).
Outcome run_case(DType dt, cs::WgTile tile, const Case& c, bool xt, bool yt, std::int64_t ld_extra, std::uint64_t seed) {
  const Pattern pat = Pattern::hw24();
  DenseMatrix wd = random_pattern_matrix(pat, dt, c.n, c.k, seed, 0.1);
  const CondensedMatrix w = condense(wd.view(), pat);
  DenseMatrix x = random_matrix(dt, c.m, c.k, seed + 1);
  std::vector<double> ref(std::size_t(c.m * c.n), 0.0);  // ref[i][j] = (x . W^T)[i][j]
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (std::int64_t q = 0; q < c.k; ++q) s += double(x.at(i, q)) * double(wd.at(j, q));
      ref[std::size_t(i * c.n + j)] = s;
    }

  std::int64_t ldx = c.k;
  std::vector<std::uint16_t> xh;
  if (xt) {
    ldx = (c.m + 7) / 8 * 8 + ld_extra;
    xh.assign(std::size_t(c.k * ldx), 0xFFFFu);  // columns m..ldx-1: NaN, must never be read
    for (std::int64_t q = 0; q < c.k; ++q)
      for (std::int64_t i = 0; i < c.m; ++i) xh[std::size_t(q * ldx + i)] = raw16(x, i, q);
  } else {
    xh.resize(std::size_t(c.m * c.k));
    std::memcpy(xh.data(), x.data(), x.size_bytes());
  }
  sptc::Packed24 p = sptc::pack_hw24(w, 128);
  cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4), xd(xh.size() * 2);
  v.upload(p.values.data(), v.size());
  mt.upload(p.meta.data(), mt.size());
  xd.upload(xh.data(), xd.size());
  const std::size_t guard = 4096;  // elements past y, must stay poisoned
  const std::size_t yelems = std::size_t(c.m * c.n);
  cuda::DeviceBuffer yd((yelems + guard) * 2);
  SPARSENM_CUDA_CHECK(cudaMemset(yd.get(), 0xFF, yd.size()));

  cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
  const CUtensorMap map = cs::make_values_map(a, dt, tile);
  cs::Problem pr{dt, dt, xd.get(), yd.get(), c.m, c.n, c.k, ldx};
  pr.x_trans = xt;
  pr.y_trans = yt;
  cs::run_sptc24_wgmma(a, map, tile, pr, nullptr);
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<std::uint16_t> yh(yelems + guard);
  yd.download(yh.data(), yd.size());
  Outcome o;
  for (std::size_t e = yelems; e < yh.size(); ++e)
    if (yh[e] != 0xFFFFu) o.guard_intact = false;
  DenseMatrix y(dt, yt ? c.n : c.m, yt ? c.m : c.n);
  std::memcpy(y.data(), yh.data(), y.size_bytes());
  double num = 0, den = 0, maxerr = 0, maxref = 0;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      const double g = yt ? y.at(j, i) : y.at(i, j), r = ref[std::size_t(i * c.n + j)];
      if (!std::isfinite(g)) {
        o.finite = false;
        return o;
      }
      num += (g - r) * (g - r);
      den += r * r;
      maxerr = std::max(maxerr, std::abs(g - r));
      maxref = std::max(maxref, std::abs(r));
    }
  o.rel_fro = std::sqrt(num / std::max(den, 1e-300));
  o.max_rel = maxerr / std::max(maxref, 1e-300);
  return o;
}

const cs::WgTile kTiles[] = {cs::WgTile::m128n256, cs::WgTile::m128n128, cs::WgTile::m64n128};
// tails in every dimension: k not a multiple of 64 (zero fill past k), m not a multiple of 8 / BN,
// n not a multiple of 64 / 128; k = 24 < one k-block
const Case kCases[] = {{300, 130, 520}, {513, 200, 192}, {7, 70, 64}, {64, 128, 24}, {129, 257, 1000}, {1, 64, 64}};

void sweep(bool xt, bool yt) {
  std::uint64_t seed = 900 + 10 * xt + 20 * yt;
  for (DType dt : {DType::f16, DType::bf16})
    for (cs::WgTile tile : kTiles)
      for (const Case& c : kCases)
        for (std::int64_t extra : {std::int64_t(0), std::int64_t(24)}) {
          if (!xt && extra) continue;
          const Outcome o = run_case(dt, tile, c, xt, yt, extra, seed++);
          const double tol = dt == DType::f16 ? 2e-3 : 1e-2;
          const std::string where = std::string(to_string(dt)) + " tile " + cs::to_string(tile) + " m=" +
                                    std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
                                    " ldx extra " + std::to_string(extra);
          EXPECT_TRUE(o.finite) << "non-finite output (poison left or NaN padding read): " << where;
          EXPECT_TRUE(o.guard_intact) << "write past y: " << where;
          EXPECT_LT(o.rel_fro, tol) << where;
          EXPECT_LT(o.max_rel, 10 * tol) << where;
        }
}

TEST(SptcTransGpu, TransposedOperand) {
  REQUIRE_SM90();
  sweep(true, false);
}

TEST(SptcTransGpu, TransposedOutput) {
  REQUIRE_SM90();
  sweep(false, true);
}

TEST(SptcTransGpu, TransposedOperandAndOutput) {
  REQUIRE_SM90();
  sweep(true, true);
}

/// The FST weight-gradient shape class: k = tokens (tails), m = in features, f16 and bf16.
TEST(SptcTransGpu, WeightGradientShapes) {
  REQUIRE_SM90();
  for (const Case& c : {Case{1280 / 4, 640, 8192 / 16 + 45}, Case{136, 1024, 2048}, Case{1024, 136, 257}}) {
    const Outcome o = run_case(DType::f16, cs::WgTile::m128n256, c, true, true, 0, 77 + c.k);
    EXPECT_TRUE(o.finite && o.guard_intact) << c.m << "x" << c.n << "x" << c.k;
    EXPECT_LT(o.rel_fro, 2e-3) << c.m << "x" << c.n << "x" << c.k;
  }
}

// ---- argument errors: thrown before any CUDA call, so they run without a device ----

cs::Problem trans_problem(void* x, void* y) {
  cs::Problem p{DType::f16, DType::f16, x, y, 100, 64, 64, 104};
  p.x_trans = true;
  p.y_trans = true;
  return p;
}

TEST(SptcTransErrors, RejectedBeforeLaunch) {
  alignas(16) static std::uint16_t dummy[64];
  cs::DeviceA a{dummy, reinterpret_cast<const std::uint32_t*>(dummy), 64, 128, 64};
  const CUtensorMap map{};
  cs::Problem p = trans_problem(dummy, dummy);
  p.ldx = 96;  // < m with x_trans
  EXPECT_THROW(cs::run_sptc24_wgmma(a, map, cs::WgTile::m128n256, p, nullptr), InvalidArgument);
  p = trans_problem(dummy, dummy);
  p.out = DType::f32;  // transposed variants are instantiated for y dtype == x dtype only
  EXPECT_THROW(cs::run_sptc24_wgmma(a, map, cs::WgTile::m128n256, p, nullptr), InvalidArgument);
  p = trans_problem(dummy, dummy);
  EXPECT_THROW(cs::run_sptc24_wgmma(a, map, cs::WgTile::m64n256, p, nullptr), InvalidArgument);
  p = trans_problem(dummy, dummy);
  p.ldx = 101;  // not a multiple of 8
  EXPECT_THROW(cs::run_sptc24_wgmma(a, map, cs::WgTile::m128n256, p, nullptr), InvalidArgument);
  p = trans_problem(dummy, dummy);
  EXPECT_THROW(cs::run_sptc24_mma(a, p, nullptr), InvalidArgument);  // sm_80 path has no such options
  p.x_trans = false;
  EXPECT_THROW(cs::run_sptc24_mma(a, p, nullptr), InvalidArgument);
}

}  // namespace
}  // namespace sparsenm
