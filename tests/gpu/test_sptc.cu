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
#include "gpu/sptc_support.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

namespace cs = cuda::sptc;
using namespace sptc_test;

const Case kCases[] = {{1, 64, 64}, {37, 200, 136}, {300, 130, 520}, {129, 257, 1000}, {520, 384, 2048}, {64, 128, 24}};

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
