// GPU tests: MVUE 2:4 + compression (src/cuda/train/mvue24.cuh) — bit-exact against a host
// implementation of the estimator spelled out in train.hpp (same Philox-4x32-10 stream), both
// input layouts agree, tails, reproducibility, unbiasedness and the analytic variance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/train/philox.hpp"
#include "cuda/train/train_common.cuh"
#include "sparsenm/error.hpp"
#include "sparsenm/train.hpp"
#include "support/mvue_reference.hpp"
#include "train_test_util.hpp"

namespace sparsenm::test {
namespace {

/// Reference hw24 of MVUE(G^T) for G given as [tokens][features] (token-major host matrix):
/// condense (format.hpp rule: nonzero raw words first, then the lowest free positions, raw
/// values copied) of the dense MVUE output in the matrix dtype.
Hw24 host_mvue24(const HostMat& g_tm, std::uint64_t seed) {
  const std::int64_t T = g_tm.rows, N = g_tm.cols, W = (T + 3) / 4;
  const std::uint32_t mag = g_tm.dtype == DType::f32 ? 0x7fffffffu : 0x7fffu;
  Hw24 out(N, T);
  for (std::int64_t f = 0; f < N; ++f)
    for (std::int64_t w = 0; w < W; ++w) {
      float x[4], y[4];
      for (int i = 0; i < 4; ++i) x[i] = 4 * w + i < T ? g_tm.at(4 * w + i, f) : 0.f;
      ref_mvue(x, train::mvue_uniform(seed, std::uint64_t(f), std::uint64_t(w)), y);
      std::uint32_t r[4];
      for (int i = 0; i < 4; ++i) r[i] = raw_of(g_tm.dtype, y[i]);
      int pos[2], n = 0;
      for (int i = 0; i < 4 && n < 2; ++i)
        if (r[i] & mag) pos[n++] = i;
      for (int i = 0; i < 4 && n < 2; ++i)
        if (!(r[i] & mag) && (n == 0 || pos[0] != i)) pos[n++] = i;
      std::sort(pos, pos + 2);
      out.put(f, w, pos[0], pos[1], r[pos[0]], r[pos[1]]);
    }
  return out;
}

HostMat transpose(const HostMat& m) {
  HostMat t(m.dtype, m.cols, m.rows);
  for (std::int64_t r = 0; r < m.rows; ++r)
    for (std::int64_t c = 0; c < m.cols; ++c) std::memcpy(t.bytes.data() + std::size_t(c * m.rows + r) * m.esz(),
                                                          m.bytes.data() + std::size_t(r * m.cols + c) * m.esz(), m.esz());
  return t;
}

/// variant 0: the API (sparsenm::train::mvue24); else that kernel variant (Mvue24Args::variant, kMvue24Variants)
/// with the arguments the API builds; max_ctas: Mvue24Args::max_ctas_per_sm (the occupancy control);
/// guarded: Mvue24Args::aligned forced off (every chunk / tile takes the guarded loads and stores);
/// only: 1 = values alone (indices nullptr), 2 = indices alone (the other output stays poisoned).
std::pair<std::vector<std::byte>, std::vector<std::uint8_t>> run_gpu(const HostMat& g, train::GradLayout layout,
                                                                     std::int64_t tokens, std::int64_t features,
                                                                     std::uint64_t seed, int variant = 0, int max_ctas = 0,
                                                                     bool guarded = false, int only = 0) {
  const std::size_t vb = std::size_t(features * train::hw24_value_cols(tokens)) * g.esz();
  const std::size_t ib = std::size_t(features * train::hw24_index_row_bytes(tokens));
  auto dg = upload(g.bytes.data(), g.bytes.size());
  auto dv = poisoned(vb), di = poisoned(ib);
  if (variant == 0) {
    train::mvue24(g.dtype, dg.get(), tokens, features, layout, seed, {dv.get(), di.as<std::uint8_t>()});
  } else {
    train::detail::Mvue24Args a =
        train::detail::make_mvue24_args(dg.get(), tokens, features, layout, seed, {dv.get(), di.as<std::uint8_t>()});
    a.variant = variant;
    a.max_ctas_per_sm = max_ctas;
    if (guarded) a.aligned = false;
    if (only == 1) a.indices = nullptr;
    if (only == 2) a.values = nullptr;
    if (g.dtype == DType::f16) train::detail::launch_mvue24<__half>(a, nullptr);
    else if (g.dtype == DType::bf16) train::detail::launch_mvue24<__nv_bfloat16>(a, nullptr);
    else train::detail::launch_mvue24<float>(a, nullptr);
  }
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  return {download<std::byte>(dv, vb), download<std::uint8_t>(di, ib)};
}

using Case = std::tuple<DType, std::int64_t, std::int64_t>;  // dtype, tokens, features
class Mvue24 : public ::testing::TestWithParam<Case> {};

TEST_P(Mvue24, BitExactAgainstHostForBothLayouts) {
  SPARSENM_REQUIRE_GPU();
  const auto [t, T, N] = GetParam();
  HostMat g = random_mat(t, T, N, 31 + std::uint64_t(T * 3 + N));
  // sprinkle the special cases: zero groups, one-nonzero groups, one dominant element
  for (std::int64_t f = 0; f < N; f += 7)
    for (std::int64_t i = 0; i < std::min<std::int64_t>(T, 4); ++i) g.set(i, f, 0.f);
  for (std::int64_t f = 3; f < N; f += 11)
    if (T > 5) g.set(4, f, 0.f), g.set(5, f, 0.f), g.set(6, f, 0.f);
  for (std::int64_t f = 1; f < N; f += 5) g.set(0, f, 8.f);
  const std::uint64_t seed = 0x1234abcd5678ull;
  const Hw24 ref = host_mvue24(g, seed);
  const auto [v1, i1] = run_gpu(g, train::GradLayout::token_major, T, N, seed);
  expect_hw24_equal(ref, v1, i1, g.esz(), "token_major");
  const auto [v2, i2] = run_gpu(transpose(g), train::GradLayout::feature_major, T, N, seed);
  expect_hw24_equal(ref, v2, i2, g.esz(), "feature_major");
  // reproducible; another seed gives another sample
  const auto [v3, i3] = run_gpu(g, train::GradLayout::token_major, T, N, seed);
  EXPECT_EQ(v3, v1);
  EXPECT_EQ(i3, i1);
  const auto [v4, i4] = run_gpu(g, train::GradLayout::token_major, T, N, seed + 1);
  if (T * N >= 256) EXPECT_NE(i4, i1);
}

// Shapes cover: token_major interior 128 x 128 tiles (tokens % 32 == 0, features % 4 == 0) and
// edge tiles; feature_major 32 tokens per thread (tokens % 32 == 0), 16 (tokens % 32 == 16) and
// the scalar path (tokens % 16 != 0); tails in both dimensions.
INSTANTIATE_TEST_SUITE_P(Shapes, Mvue24,
                         ::testing::Values(Case{DType::f16, 256, 128}, Case{DType::f16, 128, 64}, Case{DType::f16, 70, 45},
                                           Case{DType::f16, 160, 66}, Case{DType::f16, 3, 5}, Case{DType::f16, 40, 33},
                                           Case{DType::bf16, 256, 192}, Case{DType::bf16, 33, 17},
                                           Case{DType::f32, 128, 128}, Case{DType::f32, 50, 9}, Case{DType::f32, 48, 16},
                                           Case{DType::f16, 384, 260}, Case{DType::f16, 80, 12}, Case{DType::bf16, 512, 256},
                                           Case{DType::bf16, 208, 132}, Case{DType::f32, 256, 260}, Case{DType::f32, 96, 8},
                                           // n % 128 == 0, n >= 4096: the API's token-major defaults 18 (bf16) / 23 (f16, session 8)
                                           Case{DType::bf16, 512, 4096}, Case{DType::f16, 256, 4096}));

/// Every kind of group the rule distinguishes, at the positions of both fast layouts (token_major
/// interior tiles, feature_major 32-token threads): 0-4 nonzeros (signed zeros), equal values,
/// a dominant element, subnormals, values whose sum overflows (bf16 / f32), NaN and +-inf.
HostMat special_groups(DType t, std::int64_t T, std::int64_t N, std::uint64_t seed) {
  HostMat g = random_mat(t, T, N, seed);
  std::mt19937_64 r(seed ^ 0x5eedu);
  const float huge = t == DType::f16 ? 60000.f : 3.0e38f, tiny = t == DType::f16 ? 6e-8f : (t == DType::bf16 ? 1e-39f : 1e-44f);
  for (std::int64_t f = 0; f < N; ++f)
    for (std::int64_t w = 0; w < T / 4; ++w) {
      const int kind = int(r() % 16);
      if (kind >= 10) continue;  // random group
      for (int i = 0; i < 4; ++i) {
        const std::int64_t tok = 4 * w + i;
        const float x = g.at(tok, f);
        float v = x;
        switch (kind) {
          case 0: v = (r() & 1) ? -0.f : 0.f; break;                     // zeros (some groups all zero)
          case 1: v = i == int(r() % 4) ? x : 0.f; break;                // <= 1 nonzero (mostly)
          case 2: v = (i == 1 || i == 3) ? x : -0.f; break;              // exactly 2 nonzeros
          case 3: v = i == 2 ? 0.f : x; break;                           // 3 nonzeros
          case 4: v = 0.5f; break;                                       // all equal
          case 5: v = i == 0 ? 8.f * (x < 0 ? -1.f : 1.f) : x * 0.01f; break;  // dominant element
          case 6: v = x * tiny; break;                                   // subnormal range
          case 7: v = (i % 2 ? -huge : huge) * (0.6f + 0.4f * std::fabs(x)); break;  // sum overflows
          case 8: v = i == int(r() % 4) ? NAN : x; break;
          default: v = i == 3 ? ((r() & 1) ? INFINITY : -INFINITY) : x; break;
        }
        g.set(tok, f, v);
      }
    }
  return g;
}

TEST(Mvue24Special, AllGroupKindsBitExactBothLayouts) {
  SPARSENM_REQUIRE_GPU();
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{256, 256}, {96, 132}, {48, 20}};
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (const auto& [T, N] : shapes) {
      const HostMat g = special_groups(t, T, N, 7 + std::uint64_t(T + N));
      const std::uint64_t seed = 0xfeedull + std::uint64_t(T);
      const Hw24 ref = host_mvue24(g, seed);
      const std::string what = std::string(to_string(t)) + " " + std::to_string(T) + "x" + std::to_string(N);
      const auto [v1, i1] = run_gpu(g, train::GradLayout::token_major, T, N, seed);
      expect_hw24_equal(ref, v1, i1, g.esz(), (what + " token_major").c_str());
      const auto [v2, i2] = run_gpu(transpose(g), train::GradLayout::feature_major, T, N, seed);
      expect_hw24_equal(ref, v2, i2, g.esz(), (what + " feature_major").c_str());
    }
}

TEST(Mvue24Variants, EveryKernelBitExactBothLayouts) {
  // Every kept variant (kMvue24Variants): 1 (one chunk / tile per thread / CTA), 3 (whole-line
  // stores: 256 x 64 token-major tiles, 16-token units per lane in feature-major), 6 / 7 (the
  // ALU-lean fast path in 1 and in 3 under the 4-CTA cap; f32 runs 1 / 3), 10 (feature-major
  // register-lean chunks; token-major and tokens % 32 != 0 run 6), 18 / 23 / 24 (token-major
  // short-live-range kernels; feature-major runs 6), and variant 1 under the occupancy control,
  // against the host rule in both layouts: shapes with more tiles than resident CTAs, edge
  // tiles, the 16-token feature-major path (tokens % 32 == 16), the scalar path (tokens % 16 !=
  // 0), and every group kind (special_groups).
  SPARSENM_REQUIRE_GPU();
  const Case cases[] = {Case{DType::f16, 2048, 2200}, Case{DType::bf16, 256, 2000}, Case{DType::f32, 1024, 1000},
                        Case{DType::f16, 80, 12},     Case{DType::bf16, 70, 45},    Case{DType::bf16, 1056, 1028}};
  for (int special = 0; special < 2; ++special)
    for (const auto& [t, T, N] : cases) {
      if (special && T * N > 600000) continue;
      const HostMat g = special ? special_groups(t, T, N, 11 + std::uint64_t(T)) : random_mat(t, T, N, 13 + std::uint64_t(T + N));
      const std::uint64_t seed = 0xabcdef01ull + std::uint64_t(N);
      const Hw24 ref = host_mvue24(g, seed);
      const HostMat gt = transpose(g);
      // {variant, max_ctas_per_sm}: every kept variant, and variant 1 limited to 2 CTAs per SM
      static constexpr int kEntries[][2] = {{1, 0}, {3, 0}, {6, 0}, {7, 0}, {10, 0}, {18, 0}, {23, 0}, {24, 0}, {1, 2}};
      for (const auto& [variant, max_ctas] : kEntries) {
        const std::string what = std::string(to_string(t)) + " " + std::to_string(T) + "x" + std::to_string(N) + " variant " +
                                 std::to_string(variant) + (max_ctas ? " (2 CTAs / SM)" : "") + (special ? " special" : "");
        const auto [v1, i1] = run_gpu(g, train::GradLayout::token_major, T, N, seed, variant, max_ctas);
        expect_hw24_equal(ref, v1, i1, g.esz(), (what + " token_major").c_str());
        const auto [v2, i2] = run_gpu(gt, train::GradLayout::feature_major, T, N, seed, variant, max_ctas);
        expect_hw24_equal(ref, v2, i2, g.esz(), (what + " feature_major").c_str());
      }
    }
}

TEST(Mvue24Variants, JitKernelMatchesVariant6AndTheHostRule) {
  // Variant 10 (session 6b: variant 6 with the Philox words made just in time and the rare full
  // rule re-reading its chunk per 16-token half, under a 5-CTA register cap; guarded chunks run
  // the full rule directly) against the host rule and variant 6: fresh random data (fast path), every special group kind
  // (NaN, +-inf, signed zeros, subnormals, overflowing sums, <= 2 nonzeros: nearly every chunk
  // falls back), and random data with a special group planted in about one chunk in eight, in
  // either half (fast and fallback threads in one warp; a chunk whose other half was valid),
  // tokens % 32 == 0 (the variant-10 kernel), a last chunk past the tokens of the grid's last CTA
  // (T = 2080), odd feature counts, the guarded path (aligned forced off), values or indices
  // alone, and for tokens % 32 != 0 and token-major the fallback to variant 6.
  SPARSENM_REQUIRE_GPU();
  const Case cases[] = {Case{DType::bf16, 4096, 37}, Case{DType::f16, 2080, 333}, Case{DType::bf16, 2080, 129},
                        Case{DType::bf16, 96, 1001}, Case{DType::f16, 48, 77},    Case{DType::bf16, 1040, 3},
                        Case{DType::f16, 1024, 64}};
  for (int mode = 0; mode < 3; ++mode)
    for (const auto& [t, T, N] : cases) {
      HostMat g = mode == 1 ? special_groups(t, T, N, 401 + std::uint64_t(T + N)) : random_mat(t, T, N, 503 + std::uint64_t(T * 5 + N));
      if (mode == 2) {  // one special window in about one 32-token chunk in eight
        const HostMat s = special_groups(t, T, N, 607 + std::uint64_t(T + N));
        std::mt19937_64 r(0x9e9u + std::uint64_t(T * N));
        for (std::int64_t f = 0; f < N; ++f)
          for (std::int64_t c = 0; c < T / 32; ++c) {
            const std::uint64_t h = r();
            if (h % 8 != 0) continue;
            const std::int64_t w = 8 * c + std::int64_t((h >> 3) % 8);
            for (int i = 0; i < 4; ++i) g.set(4 * w + i, f, s.at(4 * w + i, f));
          }
      }
      const std::uint64_t seed = 0x6b6bu + std::uint64_t(T * N + mode);
      const Hw24 ref = host_mvue24(g, seed);
      const HostMat gt = transpose(g);
      static const char* const kMode[] = {" random", " special", " mixed"};
      for (bool guarded : {false, true}) {
        const std::string what = std::string(to_string(t)) + " " + std::to_string(T) + "x" + std::to_string(N) + kMode[mode] +
                                 (guarded ? " guarded" : "");
        const auto [v10, i10] = run_gpu(gt, train::GradLayout::feature_major, T, N, seed, 10, 0, guarded);
        expect_hw24_equal(ref, v10, i10, g.esz(), (what + " variant 10").c_str());
        const auto [v6, i6] = run_gpu(gt, train::GradLayout::feature_major, T, N, seed, 6, 0, guarded);
        EXPECT_EQ(v6, v10) << what << ": variant 10 values differ from variant 6";
        EXPECT_EQ(i6, i10) << what << ": variant 10 indices differ from variant 6";
        EXPECT_EQ(run_gpu(gt, train::GradLayout::feature_major, T, N, seed, 10, 0, guarded, 1).first, v10)
            << what << ": variant 10 values alone";
        EXPECT_EQ(run_gpu(gt, train::GradLayout::feature_major, T, N, seed, 10, 0, guarded, 2).second, i10)
            << what << ": variant 10 indices alone";
      }
      // token-major: variant 10 runs variant 6 there
      const auto [vt, it] = run_gpu(g, train::GradLayout::token_major, T, N, seed, 10);
      expect_hw24_equal(ref, vt, it, g.esz(), (std::string(to_string(t)) + " token_major variant 10").c_str());
    }
}

TEST(Mvue24Variants, TokenMajorJitKernelsMatchVariant6AndTheHostRule) {
  // Variants 18, 23, 24 (sessions 7b / 7c / 8: variant 6's 16 x 4 threads with the Philox words
  // just in time and the full rule re-reading its words, at 4 CTAs per SM on 256 x 64 tiles,
  // feature 0's Philox words between the loads and their first use, the fast path's PRMT
  // selectors data-dependent on them; 23: the bf16 conversions on the FMA pipe and the token
  // tiles along blockIdx.x; 24: the token tiles along blockIdx.x) against the host rule and
  // variant 6 (the lean 128 x 128 token-major kernel): fresh random data, every special group kind
  // (nearly every feature falls back), random data with one special window planted in about one
  // 16-token group in eight (fast and fallback threads in one warp), interior tiles
  // (T % 256 == 0, N % 64 == 0) and edge tiles in either dimension (odd N; T % 256 != 0 with
  // T % 32 == 0), T % 32 != 0 (no aligned path), the guarded path (aligned forced off), values or
  // indices alone, and the fallbacks: feature-major runs variant 6, f32 variant 1. (Session 7's
  // 16-token x 2-feature kernels, variants 12-14, and variants 15-17, 19-22 were dropped in
  // session 9; their shapes stay.)
  SPARSENM_REQUIRE_GPU();
  const Case cases[] = {Case{DType::bf16, 512, 192}, Case{DType::f16, 384, 320}, Case{DType::bf16, 160, 100},
                        Case{DType::f16, 256, 37},   Case{DType::bf16, 70, 130}, Case{DType::f16, 1024, 64},
                        Case{DType::bf16, 96, 1001}, Case{DType::f32, 256, 128}, Case{DType::f16, 256, 256},
                        Case{DType::bf16, 512, 384}};
  for (int mode = 0; mode < 3; ++mode)
    for (const auto& [t, T, N] : cases) {
      HostMat g = mode == 1 ? special_groups(t, T, N, 701 + std::uint64_t(T + N)) : random_mat(t, T, N, 803 + std::uint64_t(T * 5 + N));
      if (mode == 2) {  // one special window in about one 16-token group in eight
        const HostMat s = special_groups(t, T, N, 907 + std::uint64_t(T + N));
        std::mt19937_64 r(0x7a7u + std::uint64_t(T * N));
        for (std::int64_t f = 0; f < N; ++f)
          for (std::int64_t c = 0; c < T / 16; ++c) {
            const std::uint64_t h = r();
            if (h % 8 != 0) continue;
            const std::int64_t w = 4 * c + std::int64_t((h >> 3) % 4);
            for (int i = 0; i < 4; ++i) g.set(4 * w + i, f, s.at(4 * w + i, f));
          }
      }
      const std::uint64_t seed = 0x7c7cu + std::uint64_t(T * N + mode);
      const Hw24 ref = host_mvue24(g, seed);
      static const char* const kMode[] = {" random", " special", " mixed"};
      for (bool guarded : {false, true}) {
        const std::string what = std::string(to_string(t)) + " " + std::to_string(T) + "x" + std::to_string(N) + kMode[mode] +
                                 (guarded ? " guarded" : "");
        const auto [v6, i6] = run_gpu(g, train::GradLayout::token_major, T, N, seed, 6, 0, guarded);
        for (int v : {18, 23, 24}) {
          const std::string wv = what + " variant " + std::to_string(v);
          const auto [vv, iv] = run_gpu(g, train::GradLayout::token_major, T, N, seed, v, 0, guarded);
          expect_hw24_equal(ref, vv, iv, g.esz(), wv.c_str());
          EXPECT_EQ(vv, v6) << wv << ": values differ from variant 6";
          EXPECT_EQ(iv, i6) << wv << ": indices differ from variant 6";
          if (mode == 2) {
            EXPECT_EQ(run_gpu(g, train::GradLayout::token_major, T, N, seed, v, 0, guarded, 1).first, vv) << wv << ": values alone";
            EXPECT_EQ(run_gpu(g, train::GradLayout::token_major, T, N, seed, v, 0, guarded, 2).second, iv) << wv << ": indices alone";
          }
        }
      }
      // feature-major: variants 18, 23, 24 run variant 6 there (f32: variant 1)
      const HostMat gt = transpose(g);
      for (int v : {18, 23, 24}) {
        const auto [vf, i_f] = run_gpu(gt, train::GradLayout::feature_major, T, N, seed, v);
        expect_hw24_equal(ref, vf, i_f, g.esz(), (std::string(to_string(t)) + " feature_major variant " + std::to_string(v)).c_str());
      }
    }
}

TEST(Mvue24Variants, DroppedOrUnknownVariantsAreRefused) {
  // The launcher checks Mvue24Args::variant before any CUDA call (variants.hpp): a dropped
  // (session 9) or unknown number throws InvalidArgument naming "variant", the value and the
  // valid set, for every dtype; no device needed.
  int dummy[4] = {};
  for (int v : {2, 4, 5, 8, 9, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 25, -1, 99}) {
    train::detail::Mvue24Args a =
        train::detail::make_mvue24_args(dummy, 256, 128, train::GradLayout::token_major, 1, {dummy, nullptr});
    a.variant = v;
    for (int d = 0; d < 3; ++d) {
      try {
        if (d == 0) train::detail::launch_mvue24<__half>(a, nullptr);
        else if (d == 1) train::detail::launch_mvue24<__nv_bfloat16>(a, nullptr);
        else train::detail::launch_mvue24<float>(a, nullptr);
        ADD_FAILURE() << "variant " << v << " (dtype " << d << ") was accepted";
      } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.argument(), "variant");
        const std::string what = e.what();
        EXPECT_NE(what.find("got " + std::to_string(v)), std::string::npos) << what;
        EXPECT_NE(what.find("{0, 1, 3, 6, 7, 10, 18, 23, 24}"), std::string::npos) << what;
      }
    }
  }
}

TEST(Mvue24Special, UnalignedPointersTakeTheScalarPath) {
  SPARSENM_REQUIRE_GPU();
  // the input one element past a 16-byte boundary: every tile / thread takes the scalar loads
  const std::int64_t T = 128, N = 132;
  const HostMat g = special_groups(DType::f16, T, N, 3);
  const Hw24 ref = host_mvue24(g, 5);
  for (auto layout : {train::GradLayout::token_major, train::GradLayout::feature_major}) {
    const HostMat src = layout == train::GradLayout::token_major ? g : transpose(g);
    std::vector<std::byte> shifted(src.bytes.size() + 2);
    std::memcpy(shifted.data() + 2, src.bytes.data(), src.bytes.size());
    auto dg = upload(shifted.data(), shifted.size());
    const std::size_t vb = std::size_t(N * train::hw24_value_cols(T)) * 2, ib = std::size_t(N * train::hw24_index_row_bytes(T));
    auto dv = poisoned(vb), di = poisoned(ib);
    train::mvue24(DType::f16, static_cast<const std::byte*>(dg.get()) + 2, T, N, layout, 5, {dv.get(), di.as<std::uint8_t>()});
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    expect_hw24_equal(ref, download<std::byte>(dv, vb), download<std::uint8_t>(di, ib), 2,
                      layout == train::GradLayout::token_major ? "unaligned token_major" : "unaligned feature_major");
  }
}

TEST(Mvue24Special, ValuesOrIndicesAlone) {
  SPARSENM_REQUIRE_GPU();
  const std::int64_t T = 256, N = 128;
  const HostMat g = random_mat(DType::bf16, T, N, 17);
  const auto [v_ref, i_ref] = run_gpu(g, train::GradLayout::token_major, T, N, 9);
  for (auto layout : {train::GradLayout::token_major, train::GradLayout::feature_major}) {
    const HostMat src = layout == train::GradLayout::token_major ? g : transpose(g);
    auto dg = upload(src.bytes.data(), src.bytes.size());
    const std::size_t vb = std::size_t(N * train::hw24_value_cols(T)) * 2, ib = std::size_t(N * train::hw24_index_row_bytes(T));
    auto dv = poisoned(vb), di = poisoned(ib);
    train::mvue24(DType::bf16, dg.get(), T, N, layout, 9, {dv.get(), nullptr});
    train::mvue24(DType::bf16, dg.get(), T, N, layout, 9, {nullptr, di.as<std::uint8_t>()});
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    EXPECT_EQ(download<std::byte>(dv, vb), v_ref);
    EXPECT_EQ(download<std::uint8_t>(di, ib), i_ref);
  }
}

TEST(Mvue24Stats, UnbiasedWithTheAnalyticVariance) {
  SPARSENM_REQUIRE_GPU();
  // one group pattern of 4 tokens per test vector, repeated over many features: every copy has
  // its own counter, so the copies are independent samples.
  const float groups[5][4] = {{0.6f, -0.1f, 0.3f, -0.5f},   // uncapped
                              {3.0f, 0.5f, -0.25f, 0.25f},  // capped (one dominant element)
                              {1.f, 1.f, 1.f, 1.f},         // all equal
                              {0.f, 0.f, 2.f, -1.f},        // two nonzeros: both always kept
                              {0.f, 0.7f, 0.f, 0.f}};       // one nonzero
  const std::int64_t copies = 40000, T = 4 * 5;
  HostMat g(DType::f32, copies, T);  // feature_major: [features][tokens]
  for (std::int64_t f = 0; f < copies; ++f)
    for (int k = 0; k < 5; ++k)
      for (int i = 0; i < 4; ++i) g.set(f, 4 * k + i, groups[k][i]);
  const auto [vb, ib] = run_gpu(g, train::GradLayout::feature_major, T, copies, 99);
  const float* v = reinterpret_cast<const float*>(vb.data());
  for (int k = 0; k < 5; ++k) {
    double sum[4] = {}, sq[4] = {};
    for (std::int64_t f = 0; f < copies; ++f) {
      const std::uint8_t byte = ib[std::size_t(f * ((5 + 1) / 2) + k / 2)];
      const unsigned nib = (byte >> (4 * (k & 1))) & 0xfu;
      const int lo = nib & 3, hi = nib >> 2;
      ASSERT_LT(lo, hi);
      double d[4] = {0, 0, 0, 0};
      d[lo] = v[f * 10 + 2 * k];
      d[hi] = v[f * 10 + 2 * k + 1];
      for (int i = 0; i < 4; ++i) sum[i] += d[i], sq[i] += d[i] * d[i];
    }
    double a[4], S = 0;
    for (int i = 0; i < 4; ++i) S += a[i] = std::fabs(groups[k][i]);
    double am = *std::max_element(a, a + 4);
    for (int i = 0; i < 4; ++i) {
      const double x = groups[k][i];
      const double p = (2 * am >= S) ? (a[i] == am ? 1.0 : a[i] / (S - am)) : 2 * a[i] / S;
      const double var = p > 0 ? x * x * (1 / p - 1) : 0;
      const double mean = sum[i] / copies, evar = sq[i] / copies - mean * mean;
      EXPECT_NEAR(mean, x, 5 * std::sqrt(var / copies) + 1e-6) << "group " << k << " elem " << i;
      EXPECT_NEAR(evar, var, 0.08 * var + 1e-6) << "group " << k << " elem " << i;
    }
  }
}

TEST(Mvue24Nan, NonFiniteGroupsKeepTheNonFiniteValue) {
  SPARSENM_REQUIRE_GPU();
  HostMat g = random_mat(DType::f32, 8, 8, 4);
  g.set(1, 2, NAN);
  g.set(5, 3, INFINITY);
  const auto [vb, ib] = run_gpu(g, train::GradLayout::token_major, 8, 8, 1);
  const float* v = reinterpret_cast<const float*>(vb.data());
  EXPECT_TRUE(std::isnan(v[2 * 4 + 0]) || std::isnan(v[2 * 4 + 1]));  // feature 2, window 0
  EXPECT_TRUE(std::isinf(v[3 * 4 + 2]) || std::isinf(v[3 * 4 + 3]));  // feature 3, window 1
  EXPECT_FALSE(std::isnan(v[0]));
  expect_hw24_equal(host_mvue24(g, 1), vb, ib, 4, "non-finite");
}

TEST(Mvue24Args, ErrorsNameTheArgument) {
  int dummy = 0;
  const train::Compressed24View out{&dummy, nullptr};
  EXPECT_THROW(train::mvue24(DType::f16, nullptr, 8, 8, train::GradLayout::token_major, 1, out), InvalidArgument);
  EXPECT_THROW(train::mvue24(DType::f64, &dummy, 8, 8, train::GradLayout::token_major, 1, out), InvalidArgument);
  EXPECT_THROW(train::mvue24(DType::f16, &dummy, 0, 8, train::GradLayout::token_major, 1, out), InvalidArgument);
  EXPECT_THROW(train::mvue24(DType::f16, &dummy, 8, 8, train::GradLayout::token_major, 1, {}), InvalidArgument);
}

}  // namespace
}  // namespace sparsenm::test
