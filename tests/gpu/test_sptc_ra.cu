// sparsenm GPU tests — the register-A hardware 2:4 kernel (wgmma_ra.cuh, run_sptc24_wgmma_ra;
// no plan candidate: slower than the shared-memory kernels, docs/PERF-sptc.md session 4) against
// an fp64 reference: every tile x both forms (per-stage fence; RaOpts::batched), f16/bf16 in and
// f32/f16/bf16 out, tails in m, n and k, k-block counts around the ring depth (ring reuse) and
// around the register-buffer depth, poisoned outputs, repeated launches, and the error paths.
// Skips without a device. (The per-stage form passed on the H200 at fa61bfc; the batched form
// has not run on a device yet.)
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

constexpr cs::RaOpts kForms[] = {cs::RaOpts{false}, cs::RaOpts{true}};

/// The register-A operand of `w` on the device (pack_hw24 with the tile's row alignment, then
/// pack_ra with k padded to the k-block multiple of the form).
struct RaOperand {
  cuda::DeviceBuffer frags, meta;
  cs::DeviceRa a;
  RaOperand(const CondensedMatrix& w, cs::RaTile tile, cs::RaOpts o = {}) {
    const sptc::Packed24 p = sptc::pack_hw24(w, cs::ra_tile_rows(tile));
    const sptc::PackedRa r = sptc::pack_ra(p, cs::ra_kblock_multiple(tile, o));
    frags = cuda::DeviceBuffer(r.frags.size() * 4);
    frags.upload(r.frags.data(), frags.size());
    meta = cuda::DeviceBuffer(r.meta.size() * 4);
    meta.upload(r.meta.data(), meta.size());
    a = cs::DeviceRa{frags.get(), meta.as<std::uint32_t>(), p.rows, p.rows_pad, r.k_pad};
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
  for (cs::RaOpts form : kForms)
  for (cs::RaTile tile : kTiles)
    for (DType in : {DType::f16, DType::bf16})
      for (DType out : {DType::f32, DType::f16, DType::bf16})
        for (const Case& c : kRaCases) {
          // every case in f16 -> f32 (the exact check), the other dtype pairs on a subset
          if (!(in == DType::f16 && out == DType::f32) && c.m * c.n * c.k > 30000000) continue;
          SCOPED_TRACE(std::string(cs::to_string(tile)) + (form.batched ? " batched " : " per-stage ") +
                       std::string(to_string(in)) + "->" + std::string(to_string(out)));
          Result r = check(Pattern::hw24(), in, out, c, seed++, [&](const CondensedMatrix& w, void* x, void* y) {
            RaOperand op(w, tile, form);
            cs::Problem pr{in, out, x, y, c.m, c.n, c.k, c.k};
            cs::run_sptc24_wgmma_ra(op.a, tile, pr, nullptr, form);
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
  for (cs::RaOpts form : kForms)
  for (cs::RaTile tile : kTiles) {
    std::vector<std::uint16_t> first;
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<std::uint16_t> got(std::size_t(c.m * c.n));
      Result r = check(Pattern::hw24(), DType::bf16, DType::bf16, c, 900, [&](const CondensedMatrix& w, void* x, void* y) {
        RaOperand op(w, tile, form);
        cs::Problem pr{DType::bf16, DType::bf16, x, y, c.m, c.n, c.k, c.k};
        cs::run_sptc24_wgmma_ra(op.a, tile, pr, nullptr, form);
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

TEST(SptcRaGpu, SmallForSanitizers) {
  REQUIRE_DEVICE();
  if (!sm90()) GTEST_SKIP() << "the register-A wgmma kernel needs sm_90";
  for (cs::RaOpts form : kForms)
  for (cs::RaTile tile : kTiles)
    for (const Case& c : {Case{300, 130, 520}, Case{129, 257, 1000}}) {
      Result r = check(Pattern::hw24(), DType::f16, DType::f16, c, 950, [&](const CondensedMatrix& w, void* x, void* y) {
        RaOperand op(w, tile, form);
        cs::Problem pr{DType::f16, DType::f16, x, y, c.m, c.n, c.k, c.k};
        cs::run_sptc24_wgmma_ra(op.a, tile, pr, nullptr, form);
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
  p.k = 200;  // more than the packed k (128: the per-stage form pads to 64 only)
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
  // the batched form needs k_pad / 64 to be a multiple of ra_kblock_multiple (6 at 128 x 256)
  EXPECT_EQ(cs::ra_kblock_multiple(cs::RaTile::r128n256, cs::RaOpts{true}), 6);
  EXPECT_EQ(cs::ra_kblock_multiple(cs::RaTile::r256n128, cs::RaOpts{true}), 4);
  EXPECT_EQ(cs::ra_kblock_multiple(cs::RaTile::r128n256, cs::RaOpts{false}), 1);
  EXPECT_THROW(cs::run_sptc24_wgmma_ra(op.a, cs::RaTile::r128n256, good, nullptr, cs::RaOpts{true}), InvalidArgument);
}

}  // namespace
}  // namespace sparsenm
