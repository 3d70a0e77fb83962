// CPU tests of the per-block / per-group rules that the training kernels compile (host and
// device share src/cuda/train/pattern24.cuh and mvue_rule.hpp; the PTX of the kernels is the one
// measured on the H200): the two-level transposable-mask search against a brute force over the
// 90 patterns (random, tie-heavy and NaN blocks), the quad-position rule, and the MVUE rule
// against an independent implementation of train.hpp's text plus its statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/train/mvue_rule.hpp"
#include "cuda/train/pattern24.cuh"
#include "cuda/train/philox.hpp"

namespace sparsenm::train {
namespace {

constexpr int kPa[6] = {0, 0, 0, 1, 1, 2}, kPb[6] = {1, 2, 3, 2, 3, 3};

std::vector<std::uint16_t> all_patterns() {
  std::vector<std::uint16_t> v;
  for (int p0 = 0; p0 < 6; ++p0)
    for (int p1 = 0; p1 < 6; ++p1)
      for (int p2 = 0; p2 < 6; ++p2)
        for (int p3 = 0; p3 < 6; ++p3) {
          int cnt[4] = {0, 0, 0, 0};
          unsigned m = 0;
          const int p[4] = {p0, p1, p2, p3};
          for (int r = 0; r < 4; ++r) {
            ++cnt[kPa[p[r]]], ++cnt[kPb[p[r]]];
            m |= ((1u << kPa[p[r]]) | (1u << kPb[p[r]])) << (4 * r);
          }
          if (cnt[0] == 2 && cnt[1] == 2 && cnt[2] == 2 && cnt[3] == 2) v.push_back(std::uint16_t(m));
        }
  return v;
}

unsigned brute(const float (&a)[4][4], const std::vector<std::uint16_t>& pats) {
  float best = -INFINITY;
  unsigned bm = pats[0];
  for (auto m : pats) {
    float s[4];
    for (int r = 0; r < 4; ++r) {
      const unsigned row = (m >> (4 * r)) & 0xfu;
      const int lo = __builtin_ctz(row), hi = 31 - __builtin_clz(row);
      s[r] = a[r][lo] + a[r][hi];
    }
    const float v = (s[0] + s[1]) + (s[2] + s[3]);
    if (v > best) best = v, bm = m;
  }
  return bm;
}

bool transposable(unsigned m) {
  for (int i = 0; i < 4; ++i) {
    if (__builtin_popcount((m >> (4 * i)) & 0xfu) != 2) return false;
    int n = 0;
    for (int r = 0; r < 4; ++r) n += (m >> (4 * r + i)) & 1u;
    if (n != 2) return false;
  }
  return true;
}

TEST(TrainRules, NinetyPatternsInLexicographicOrder) {
  const auto p = all_patterns();
  EXPECT_EQ(p.size(), 90u);
  for (auto m : p) EXPECT_TRUE(transposable(m));
}

TEST(TrainRules, MaskSearchEqualsBruteForce) {
  const auto pats = all_patterns();
  std::mt19937 g(1);
  std::uniform_real_distribution<float> d(0.f, 1.f);
  int bad = 0;
  for (int it = 0; it < 60000; ++it) {
    float a[4][4];
    const int mode = it % 4;
    for (auto& row : a)
      for (auto& x : row) {
        if (mode == 0) x = d(g);
        else if (mode == 1) x = float(g() % 3) * 0.25f;  // many exact ties
        else if (mode == 2) x = float(g() % 2);
        else x = std::ldexp(d(g), int(g() % 60) - 30);  // wide exponent range: rounded sums
      }
    bad += detail::best_pattern24(a) != brute(a, pats);
  }
  EXPECT_EQ(bad, 0);
  float zero[4][4] = {};
  EXPECT_EQ(detail::best_pattern24(zero), pats[0]);
}

TEST(TrainRules, MaskSearchNaNStillTransposable) {
  std::mt19937 g(2);
  for (int it = 0; it < 2000; ++it) {
    float a[4][4];
    for (auto& row : a)
      for (auto& x : row) x = (g() % 4 == 0) ? NAN : float(g() % 100);
    EXPECT_TRUE(transposable(detail::best_pattern24(a)));
  }
}

TEST(TrainRules, QuadPositions) {
  for (unsigned m = 0; m < 16; ++m) {
    const auto q = detail::quad_positions(m);
    EXPECT_LT(q.lo, q.hi);
    EXPECT_EQ(q.bad, __builtin_popcount(m) != 2);
    if (__builtin_popcount(m) == 2) EXPECT_EQ((1u << q.lo) | (1u << q.hi), m);
  }
  EXPECT_EQ(detail::quad_positions(0xf).lo, 0);
  EXPECT_EQ(detail::quad_positions(0xf).hi, 1);
  EXPECT_EQ(detail::quad_positions(0x8).lo, 0);
  EXPECT_EQ(detail::quad_positions(0x8).hi, 3);
}

struct Ref {
  int lo, hi;
  float vlo, vhi;
};
/// train.hpp's text, written independently of mvue_rule.hpp.
Ref ref_mvue(const float x[4], float u) {
  float a[4];
  for (int i = 0; i < 4; ++i) a[i] = std::fabs(x[i]);
  const float S = ((a[0] + a[1]) + a[2]) + a[3];
  if (!std::isfinite(S)) return {0, 1, NAN, NAN};
  if (S == 0.f) return {0, 1, 0.f, 0.f};
  const int m = int(std::max_element(a, a + 4) - a);
  const float R = S - a[m];
  const bool capped = a[m] + a[m] >= S;
  if (capped && R == 0.f) {
    const int j = m == 0 ? 1 : 0;
    return m < j ? Ref{m, j, x[m], 0.f} : Ref{j, m, 0.f, x[m]};
  }
  const float k = capped ? 1.0f / R : 2.0f / S;
  float p[4];
  for (int i = 0; i < 4; ++i) p[i] = (capped && i == m) ? 1.0f : a[i] * k;
  const float c1 = p[0], c2 = c1 + p[1], c3 = c2 + p[2], u2 = u + 1.0f;
  int i1 = (u >= c1) + (u >= c2) + (u >= c3), i2 = (u2 >= c1) + (u2 >= c2) + (u2 >= c3);
  if (i2 <= i1) i2 = i1 + 1;
  if (i2 > 3) i1 = 2, i2 = 3;
  const float scale = capped ? R : S * 0.5f;
  auto v = [&](int i) { return (capped && i == m) ? x[m] : (a[i] == 0.f ? 0.f : std::copysign(scale, x[i])); };
  return {i1, i2, v(i1), v(i2)};
}

TEST(TrainRules, MvueRuleMatchesTheSpecBitForBit) {
  std::mt19937 g(3);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  int bad = 0;
  for (int it = 0; it < 200000; ++it) {
    float x[4];
    for (int i = 0; i < 4; ++i) {
      x[i] = d(g);
      if (it % 4 == 1 && i) x[i] *= 1e-3f;  // capped
      if (it % 4 == 2 && (g() & 1)) x[i] = 0.f;
      if (it % 4 == 3) x[i] = float(int(g() % 3) - 1);
    }
    const float u = mvue_uniform(7, std::uint64_t(it));
    const auto o = detail::mvue_group(x[0], x[1], x[2], x[3], u);
    const Ref r = ref_mvue(x, u);
    bad += o.lo != r.lo || o.hi != r.hi || std::memcmp(&o.vlo, &r.vlo, 4) != 0 || std::memcmp(&o.vhi, &r.vhi, 4) != 0;
    ASSERT_TRUE(o.lo >= 0 && o.lo < o.hi && o.hi <= 3);
  }
  EXPECT_EQ(bad, 0);
}

TEST(TrainRules, MvueUnbiasedWithAnalyticVariance) {
  const float groups[3][4] = {{0.6f, -0.1f, 0.3f, -0.5f}, {3.0f, 0.5f, -0.25f, 0.25f}, {1.f, 1.f, 1.f, 1.f}};
  const int n = 200000;
  for (const auto& x : groups) {
    double sum[4] = {}, sq[4] = {};
    for (int it = 0; it < n; ++it) {
      const auto o = detail::mvue_group(x[0], x[1], x[2], x[3], mvue_uniform(11, std::uint64_t(it)));
      double v[4] = {0, 0, 0, 0};
      v[o.lo] = o.vlo;
      v[o.hi] = o.vhi;
      for (int i = 0; i < 4; ++i) sum[i] += v[i], sq[i] += v[i] * v[i];
    }
    double a[4], S = 0;
    for (int i = 0; i < 4; ++i) S += a[i] = std::fabs(x[i]);
    const double am = *std::max_element(a, a + 4);
    for (int i = 0; i < 4; ++i) {
      const double p = (2 * am >= S) ? (a[i] == am ? 1.0 : a[i] / (S - am)) : 2 * a[i] / S;
      const double var = x[i] * x[i] * (1 / p - 1), mean = sum[i] / n;
      EXPECT_NEAR(mean, x[i], 5 * std::sqrt(var / n) + 1e-6);
      EXPECT_NEAR(sq[i] / n - mean * mean, var, 0.04 * var + 1e-6);
    }
  }
}

}  // namespace
}  // namespace sparsenm::train
