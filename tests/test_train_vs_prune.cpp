// The GPU training rules (host+device code in src/cuda/train/) against the CPU reference of the
// prune family (src/prune), bit for bit: transposable 2:4 masks, the MVUE uniform and the MVUE
// group estimator. Compiled in only once src/prune is present (it lands separately); before
// that the test skips with a message. (Checked against the prune branch at 5174534 while
// writing: 0 mismatches in 300000 random / tie / NaN / wide-range cases.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "cuda/train/mvue_rule.hpp"
#include "cuda/train/pattern24.cuh"
#include "cuda/train/philox.hpp"

#if __has_include("prune/mvue.hpp") && __has_include("prune/transposable.hpp")
#define SPARSENM_HAVE_PRUNE 1
#include "prune/common.hpp"
#include "prune/mvue.hpp"
#include "prune/philox.hpp"
#include "prune/transposable.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/prune.hpp"
#endif

namespace sparsenm {
namespace {

#if SPARSENM_HAVE_PRUNE
float draw(std::mt19937& g, int mode) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  switch (mode) {
    case 0: return d(g);
    case 1: return float(int(g() % 5) - 2) * 0.25f;
    case 2: return float(g() % 2);
    case 3: return std::ldexp(d(g), int(g() % 40) - 20);
    default: return (g() % 6 == 0) ? NAN : ((g() % 9 == 0) ? -INFINITY : d(g));
  }
}

TEST(TrainVsPrune, TransposableBlocksBitForBit) {
  std::mt19937 g(5);
  const auto& pats = prune_detail::transposable_patterns();
  int bad = 0;
  for (int it = 0; it < 50000; ++it) {
    float mag[4][4];
    float a[4][4];
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) {
        const float x = draw(g, it % 5);
        mag[r][c] = prune_detail::rank_magnitude_f32(x);
        a[r][c] = train::detail::rank_magnitude24(x);
      }
    bad += pats[std::size_t(prune_detail::best_transposable_pattern(mag))] != train::detail::best_pattern24(a);
  }
  EXPECT_EQ(bad, 0);
}

TEST(TrainVsPrune, TransposableMatrixWithTails) {
  DenseMatrix w = random_matrix(DType::f16, 37, 45, 9);
  const auto ref = transposable_24_mask(w.view());
  for (std::int64_t bi = 0; bi < 10; ++bi)
    for (std::int64_t bj = 0; bj < 12; ++bj) {
      float a[4][4];
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
          const std::int64_t rr = 4 * bi + r, cc = 4 * bj + c;
          a[r][c] = rr < 37 && cc < 45 ? train::detail::rank_magnitude24(w.at(rr, cc)) : 0.f;
        }
      const unsigned m = train::detail::best_pattern24(a);
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
          const std::int64_t rr = 4 * bi + r, cc = 4 * bj + c;
          if (rr < 37 && cc < 45) ASSERT_EQ(ref[std::size_t(rr * 45 + cc)], (m >> (4 * r + c)) & 1u) << rr << "," << cc;
        }
    }
}

TEST(TrainVsPrune, MvueUniformAndGroupBitForBit) {
  std::mt19937 g(6);
  int bad_u = 0, bad_v = 0, bad_fast = 0, fast_groups = 0, fast_candidates = 0;
  for (int it = 0; it < 100000; ++it) {
    const std::uint64_t row = g() % 5000, grp = g();
    const float u1 = prune_detail::mvue_uniform(77, row, grp), u2 = train::mvue_uniform(77, row, grp);
    bad_u += std::memcmp(&u1, &u2, 4) != 0;
    float x[4];
    for (int i = 0; i < 4; ++i) {
      x[i] = draw(g, it % 5 == 4 ? 4 : 0);
      if (it % 5 == 1 && i) x[i] *= 1e-3f;
      if (it % 5 == 2 && (g() & 1)) x[i] = 0.f;
      if (it % 5 == 3) x[i] = float(int(g() % 3) - 1);
    }
    float y1[4], y2[4];
    const float xs[4] = {x[0], x[1], x[2], x[3]};
    prune_detail::mvue_group(x, u1, y1);
    train::detail::mvue_group_dense(xs, u1, y2);
    bad_v += std::memcmp(y1, y2, sizeof y1) != 0;
    // the kernels' fast path (mvue_pick): where it claims validity, the same pair and values
    int nonzero = 0;
    bool finite = true;
    for (int i = 0; i < 4; ++i) {
      nonzero += xs[i] != 0.f;
      finite = finite && std::isfinite(xs[i]);
    }
    float c = 0.f;
    std::uint32_t tf = 0, ts = 0;
    const std::uint32_t word = std::uint32_t(u1 * 8388608.0f) << 9;  // the Philox word behind u1
    ASSERT_EQ(train::mvue_u23(word), u1);
    const bool fast = train::detail::mvue_pick(xs[0], xs[1], xs[2], xs[3], word, c, tf, ts);
    if (!(finite && nonzero >= 2)) ASSERT_FALSE(fast) << it;
    fast_candidates += finite && nonzero >= 2;
    if (fast) {
      ++fast_groups;
      const int lo = train::detail::mvue_first(tf), hi = train::detail::mvue_second(ts);
      ASSERT_LT(lo, hi);
      ASSERT_LE(hi, 3);
      float y3[4] = {0.f, 0.f, 0.f, 0.f};
      for (int i : {lo, hi}) y3[i] = std::copysign(std::max(std::fabs(xs[i]), c), xs[i]);
      if (nonzero == 2)  // unchanged, zeros included
        for (int i = 0; i < 4; ++i)
          if (xs[i] == 0.f) y3[i] = xs[i];
      bad_fast += std::memcmp(y1, y3, sizeof y1) != 0;
    }
  }
  EXPECT_EQ(bad_u, 0);
  EXPECT_EQ(bad_v, 0);
  EXPECT_EQ(bad_fast, 0);
  EXPECT_GT(fast_groups, 50000);
  EXPECT_GT(fast_groups, fast_candidates * 99 / 100);  // the full rule only for rare roundings
}

TEST(TrainVsPrune, MvueMatrixRowsAreFeatures) {
  // sparsenm::mvue24 of a [features][tokens] matrix uses (row = feature, group = token / 4):
  // exactly the stream the GPU kernel uses for dZ^T.
  DenseMatrix gt = random_matrix(DType::f32, 9, 50, 3);
  const DenseMatrix ref = mvue24(gt.view(), 1234);
  for (std::int64_t f = 0; f < 9; ++f)
    for (std::int64_t w = 0; w < 13; ++w) {
      float x[4], y[4];
      for (int i = 0; i < 4; ++i) x[i] = 4 * w + i < 50 ? gt.at(f, 4 * w + i) : 0.f;
      train::detail::mvue_group_dense(x, train::mvue_uniform(1234, std::uint64_t(f), std::uint64_t(w)), y);
      for (int i = 0; i < 4 && 4 * w + i < 50; ++i) ASSERT_EQ(ref.at(f, 4 * w + i), y[i]) << f << "," << w;
    }
}
#else
TEST(TrainVsPrune, NeedsThePruneFamily) { GTEST_SKIP() << "src/prune not in this tree yet: comparison skipped"; }
#endif

}  // namespace
}  // namespace sparsenm
