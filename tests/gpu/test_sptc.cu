// sparsenm GPU tests — hardware 2:4 SpMM on the sparse tensor cores (cuda:sptc_24_wgmma on sm_90,
// cuda:sptc_24_mma on sm_80+) against an fp64 reference, with tails in m, n and k, every tile
// shape of the wgmma kernel, f16/bf16 in and f32/f16/bf16 out. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cuda/common.cuh"
#include "cuda/sptc/pack.hpp"
#include "cuda/sptc/sptc.hpp"
#include "plan/registry.hpp"
#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm::detail {
void register_sptc_kernels(KernelRegistry& r);
}

namespace sparsenm {
namespace {

namespace cs = cuda::sptc;

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define REQUIRE_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device: sparse tensor-core tests skipped"

struct Case {
  std::int64_t m, n, k;
};

struct Result {
  double rel_fro = 0, max_rel = 0;
};

/// Runs `run(x_dev, y_dev)` on random data and compares with the fp64 product.
template <class Run>
Result check(const Pattern& pat, DType in, DType out, const Case& c, std::uint64_t seed, Run&& run_fn) {
  DenseMatrix wd = random_pattern_matrix(pat, in, c.n, c.k, seed, 0.1);
  const CondensedMatrix w = condense(wd.view(), pat);
  DenseMatrix x = random_matrix(in, c.m, c.k, seed + 1);
  std::vector<double> ref(std::size_t(c.m * c.n), 0.0);
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (std::int64_t q = 0; q < c.k; ++q) s += double(x.at(i, q)) * double(wd.at(j, q));
      ref[std::size_t(i * c.n + j)] = s;
    }
  cuda::DeviceBuffer xd(x.size_bytes()), yd(std::size_t(c.m * c.n) * dtype_size(out));
  xd.upload(x.data(), x.size_bytes());
  SPARSENM_CUDA_CHECK(cudaMemset(yd.get(), 0xFF, yd.size()));  // poison (NaN in every dtype)
  run_fn(w, xd.get(), yd.get());
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  DenseMatrix y(out, c.m, c.n);
  yd.download(y.data(), y.size_bytes());
  double num = 0, den = 0, maxerr = 0, maxref = 0;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      const double g = y.at(i, j), r = ref[std::size_t(i * c.n + j)];
      if (!std::isfinite(g)) return {INFINITY, INFINITY};
      num += (g - r) * (g - r);
      den += r * r;
      maxerr = std::max(maxerr, std::abs(g - r));
      maxref = std::max(maxref, std::abs(r));
    }
  return {std::sqrt(num / std::max(den, 1e-300)), maxerr / std::max(maxref, 1e-300)};
}

double tolerance(DType out) { return out == DType::f32 ? 1e-5 : out == DType::f16 ? 2e-3 : 1e-2; }

const Case kCases[] = {{1, 64, 64}, {37, 200, 136}, {300, 130, 520}, {129, 257, 1000}, {520, 384, 2048}, {64, 128, 24}};

void run_candidate(const std::string& name, const Pattern& pat, DType in, DType out, const Case& c, std::uint64_t seed) {
  detail::KernelRegistry reg;
  detail::register_sptc_kernels(reg);
  const detail::KernelCandidate* cand = nullptr;
  for (const auto& k : reg.candidates())
    if (k.name == name) cand = &k;
  ASSERT_NE(cand, nullptr);
  MatmulDesc d;
  d.m = c.m;
  d.x_dtype = in;
  d.y_dtype = out;
  bool skipped = false;
  Result r = check(pat, in, out, c, seed, [&](const CondensedMatrix& w, void* x, void* y) {
    const std::string why = cand->unsupported(w, d);
    if (!why.empty()) {
      skipped = true;
      return;
    }
    auto inst = cand->create(w, d);
    inst->run(x, y, nullptr);
  });
  if (skipped) GTEST_SKIP() << name << " unsupported here";
  EXPECT_LT(r.rel_fro, tolerance(out)) << name << " m=" << c.m << " n=" << c.n << " k=" << c.k;
  EXPECT_LT(r.max_rel, 10 * tolerance(out)) << name << " m=" << c.m << " n=" << c.n << " k=" << c.k;
}

TEST(SptcGpu, Wgmma24AllCasesAndDtypes) {
  REQUIRE_DEVICE();
  std::uint64_t seed = 100;
  for (DType in : {DType::f16, DType::bf16})
    for (DType out : {DType::f32, DType::f16, DType::bf16})
      for (const Case& c : kCases) {
        SCOPED_TRACE(std::string(to_string(in)) + "->" + std::string(to_string(out)));
        run_candidate("cuda:sptc_24_wgmma", Pattern::hw24(), in, out, c, seed++);
      }
}

TEST(SptcGpu, Mma24AllCasesAndDtypes) {
  REQUIRE_DEVICE();
  std::uint64_t seed = 200;
  for (DType in : {DType::f16, DType::bf16})
    for (DType out : {DType::f32, DType::bf16})
      for (const Case& c : kCases) run_candidate("cuda:sptc_24_mma", Pattern::hw24(), in, out, c, seed++);
}

TEST(SptcGpu, ElementPatternsRepackedTo24) {
  REQUIRE_DEVICE();
  run_candidate("cuda:sptc_24_wgmma", Pattern::element(2, 8), DType::f16, DType::f32, {77, 190, 333}, 300);
  run_candidate("cuda:sptc_24_wgmma", Pattern::element(1, 4), DType::bf16, DType::bf16, {300, 64, 96}, 301);
  run_candidate("cuda:sptc_24_mma", Pattern::element(2, 16), DType::f16, DType::f16, {65, 100, 512}, 302);
}

TEST(SptcGpu, EveryWgmmaTileShape) {
  REQUIRE_DEVICE();
  if (cs::device_cc() != 90) GTEST_SKIP() << "wgmma needs sm_90";
  for (cs::WgTile tile : {cs::WgTile::m128n256, cs::WgTile::m128n128, cs::WgTile::m64n256, cs::WgTile::m64n128}) {
    for (const Case& c : {Case{300, 130, 520}, Case{513, 200, 192}, Case{7, 70, 64}, Case{260, 130, 1200}}) {
      Result r = check(Pattern::hw24(), DType::f16, DType::f32, c, 400 + int(tile), [&](const CondensedMatrix& w, void* x, void* y) {
        sptc::Packed24 p = sptc::pack_hw24(w, 128);
        cuda::DeviceBuffer v(p.values.size() * 2), mt(p.meta.size() * 4);
        v.upload(p.values.data(), v.size());
        mt.upload(p.meta.data(), mt.size());
        cs::DeviceA a{v.get(), mt.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
        CUtensorMap map = cs::make_values_map(a, DType::f16, tile);
        cs::Problem pr{DType::f16, DType::f32, x, y, c.m, c.n, c.k, c.k};
        cs::run_sptc24_wgmma(a, map, tile, pr, nullptr);
        SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      });
      EXPECT_LT(r.rel_fro, 1e-5) << cs::to_string(tile) << " m=" << c.m << " n=" << c.n << " k=" << c.k;
    }
  }
}

TEST(SptcGpu, UnsupportedInputsAreReportedNotRun) {
  REQUIRE_DEVICE();
  detail::KernelRegistry reg;
  detail::register_sptc_kernels(reg);
  DenseMatrix wd = random_pattern_matrix(Pattern::hw24(), DType::f16, 8, 16, 1, 0.0);
  CondensedMatrix w = condense(wd.view(), Pattern::hw24());
  for (const auto& k : reg.candidates()) {
    MatmulDesc d;
    d.m = 4;
    d.x_dtype = DType::bf16;  // differs from the weight
    EXPECT_FALSE(k.unsupported(w, d).empty()) << k.name;
    d.x_dtype = DType::f16;
    d.accumulate = Accumulate::f64;
    EXPECT_FALSE(k.unsupported(w, d).empty()) << k.name;
  }
}

}  // namespace
}  // namespace sparsenm
