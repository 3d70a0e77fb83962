// sparsenm GPU tests — the register-A hardware 2:4 kernel (wgmma_ra.cuh, plan candidate
// cuda:sptc_24_wgmma_ra) against an fp64 reference: every tile it ships, f16/bf16 in and
// f32/f16/bf16 out, tails in m, n and k, k-block counts around the ring depth (ring reuse) and
// around the register-buffer depth (loop remainders), poisoned outputs, repeated launches, and
// the error paths. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/sptc/pack.hpp"
#include "cuda/sptc/sptc.hpp"
#include "gpu/sptc_support.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

namespace cs = cuda::sptc;
using namespace sptc_test;

constexpr cs::RaTile kTiles[] = {cs::RaTile::r128n256, cs::RaTile::r192n192, cs::RaTile::r256n128};

/// The register-A operand of `w` on the device (pack_hw24 with the tile's row alignment).
struct RaOperand {
  cuda::DeviceBuffer frags, meta;
  cs::DeviceRa a;
  RaOperand(const CondensedMatrix& w, cs::RaTile tile) {
    const sptc::Packed24 p = sptc::pack_hw24(w, cs::ra_tile_rows(tile));
    const std::vector<std::uint32_t> f = sptc::pack_ra_frags(p);
    frags = cuda::DeviceBuffer(f.size() * 4);
    frags.upload(f.data(), frags.size());
    meta = cuda::DeviceBuffer(p.meta.size() * 4);
    meta.upload(p.meta.data(), meta.size());
    a = cs::DeviceRa{frags.get(), meta.as<std::uint32_t>(), p.rows, p.rows_pad, p.k_pad};
  }
};

bool sm90() { return have_device() && cs::device_cc() == 90; }

// k: 24 and 64 (1 k-block), 192 (3: below the register depth 4), 520 (9: ring of 6/8 slots reused,
// remainder 1), 1200 (19: remainder 3), 2048 (32); m and n with tails against every tile.
const Case kRaCases[] = {{1, 64, 64},      {37, 200, 136},   {300, 130, 520}, {129, 257, 1000},
                         {520, 384, 2048}, {64, 128, 24},    {513, 200, 192}, {260, 390, 1200},
                         {7, 70, 64},      {1000, 600, 256}};

TEST(SptcRaGpu, EveryTileEveryDtypeWithTails) {
  REQUIRE_DEVICE();
  if (!sm90()) GTEST_SKIP() << "the register-A wgmma kernel needs sm_90";
  std::uint64_t seed = 700;
  for (cs::RaTile tile : kTiles)
    for (DType in : {DType::f16, DType::bf16})
      for (DType out : {DType::f32, DType::f16, DType::bf16})
        for (const Case& c : kRaCases) {
          // every case in f16 -> f32 (the exact check), the other dtype pairs on a subset
          if (!(in == DType::f16 && out == DType::f32) && c.m * c.n * c.k > 30000000) continue;
          SCOPED_TRACE(std::string(cs::to_string(tile)) + " " + std::string(to_string(in)) + "->" +
                       std::string(to_string(out)));
          Result r = check(Pattern::hw24(), in, out, c, seed++, [&](const CondensedMatrix& w, void* x, void* y) {
            RaOperand op(w, tile);
            cs::Problem pr{in, out, x, y, c.m, c.n, c.k, c.k};
            cs::run_sptc24_wgmma_ra(op.a, tile, pr, nullptr);
            SPARSENM_CUDA_CHECK(cudaGetLastError());
            SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
          });
          EXPECT_LT(r.rel_fro, tolerance(out)) << cs::to_string(tile) << " m=" << c.m << " n=" << c.n << " k=" << c.k;
          EXPECT_LT(r.max_rel, 10 * tolerance(out)) << cs::to_string(tile) << " m=" << c.m << " n=" << c.n << " k=" << c.k;
        }
}

TEST(SptcRaGpu, RepeatedLaunchesGiveIdenticalBits) {
  REQUIRE_DEVICE();
  if (!sm90()) GTEST_SKIP() << "the register-A wgmma kernel needs sm_90";
  const Case c{300, 200, 1600};  // 25 k-blocks: ring wraps 3-4 times, remainder 1 of the depth-4 loop
  for (cs::RaTile tile : kTiles) {
    std::vector<std::uint16_t> first;
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<std::uint16_t> got(std::size_t(c.m * c.n));
      Result r = check(Pattern::hw24(), DType::bf16, DType::bf16, c, 900, [&](const CondensedMatrix& w, void* x, void* y) {
        RaOperand op(w, tile);
        cs::Problem pr{DType::bf16, DType::bf16, x, y, c.m, c.n, c.k, c.k};
        cs::run_sptc24_wgmma_ra(op.a, tile, pr, nullptr);
        SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
        SPARSENM_CUDA_CHECK(cudaMemcpy(got.data(), y, got.size() * 2, cudaMemcpyDeviceToHost));
      });
      EXPECT_LT(r.rel_fro, tolerance(DType::bf16)) << cs::to_string(tile);
      if (rep == 0)
        first = got;
      else
        EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * 2), 0) << cs::to_string(tile) << " run " << rep;
    }
  }
}

TEST(SptcRaGpu, PlanCandidateAllCasesAndDtypes) {
  REQUIRE_DEVICE();
  std::uint64_t seed = 800;
  for (DType in : {DType::f16, DType::bf16})
    for (DType out : {DType::f32, DType::f16, DType::bf16})
      for (const Case& c : {Case{1, 64, 64}, Case{37, 200, 136}, Case{129, 257, 1000}, Case{64, 128, 24}, Case{77, 190, 333}}) {
        SCOPED_TRACE(std::string(to_string(in)) + "->" + std::string(to_string(out)));
        run_candidate("cuda:sptc_24_wgmma_ra", Pattern::hw24(), in, out, c, seed++);  // k = 333: padded X workspace
      }
  run_candidate("cuda:sptc_24_wgmma_ra", Pattern::element(2, 8), DType::f16, DType::f32, {77, 190, 333}, 850);
}

TEST(SptcRaGpu, SmallForSanitizers) {
  REQUIRE_DEVICE();
  if (!sm90()) GTEST_SKIP() << "the register-A wgmma kernel needs sm_90";
  for (cs::RaTile tile : kTiles)
    for (const Case& c : {Case{300, 130, 520}, Case{129, 257, 1000}}) {
      Result r = check(Pattern::hw24(), DType::f16, DType::f16, c, 950, [&](const CondensedMatrix& w, void* x, void* y) {
        RaOperand op(w, tile);
        cs::Problem pr{DType::f16, DType::f16, x, y, c.m, c.n, c.k, c.k};
        cs::run_sptc24_wgmma_ra(op.a, tile, pr, nullptr);
        SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      });
      EXPECT_LT(r.rel_fro, tolerance(DType::f16)) << cs::to_string(tile) << " m=" << c.m;
    }
}

TEST(SptcRaGpu, BadOperandsAreRejected) {
  REQUIRE_DEVICE();
  if (!sm90()) GTEST_SKIP() << "the register-A wgmma kernel needs sm_90";
  DenseMatrix wd = random_pattern_matrix(Pattern::hw24(), DType::f16, 100, 128, 5, 0.0);
  const CondensedMatrix w = condense(wd.view(), Pattern::hw24());
  RaOperand op(w, cs::RaTile::r128n256);  // rows_pad 128
  cuda::DeviceBuffer x(std::size_t(16 * 128) * 2), y(std::size_t(16 * 100) * 4);
  const cs::Problem good{DType::f16, DType::f32, x.get(), y.get(), 16, 100, 128, 128};
  EXPECT_NO_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r128n256, good, nullptr));
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r192n192, good, nullptr), InvalidArgument);  // 128 % 192
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r256n128, good, nullptr), InvalidArgument);  // 128 % 256
  cs::Problem p = good;
  p.ldx = 130;  // not a multiple of 8
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r128n256, p, nullptr), InvalidArgument);
  p = good;
  p.in = DType::f32;
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r128n256, p, nullptr), InvalidArgument);
  p = good;
  p.out = DType::u8;
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r128n256, p, nullptr), InvalidArgument);
  p = good;
  p.x_trans = true;
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r128n256, p, nullptr), InvalidArgument);
  p = good;
  p.k = 200;  // more than the packed k
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r128n256, p, nullptr), InvalidArgument);
  p = good;
  p.n = 99;  // not the packed rows
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r128n256, p, nullptr), InvalidArgument);
  cs::DeviceRa bad = op.a;
  bad.frags = nullptr;
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(bad, cs::RaTile::r128n256, good, nullptr), InvalidArgument);
  bad = op.a;
  bad.frags = static_cast<const std::uint8_t*>(op.a.frags) + 4;  // misaligned
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(bad, cs::RaTile::r128n256, good, nullptr), InvalidArgument);
}

}  // namespace
}  // namespace sparsenm
