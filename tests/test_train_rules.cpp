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
#include "sparsenm/dtype.hpp"
#include "support/mvue_reference.hpp"

namespace sparsenm::train {
namespace {

/// The 90 transposable masks in ascending 16-bit value (the CPU reference's order).
std::vector<std::uint16_t> all_patterns() {
  std::vector<std::uint16_t> v;
  for (std::uint32_t m = 0; m < 65536; ++m) {
    bool ok = true;
    for (int i = 0; i < 4 && ok; ++i) ok = __builtin_popcount((m >> (4 * i)) & 0xfu) == 2;
    for (int j = 0; j < 4 && ok; ++j) ok = __builtin_popcount(m & (0x1111u << j)) == 2;
    if (ok) v.push_back(std::uint16_t(m));
  }
  return v;
}

/// The CPU reference's rule (transposable.hpp): fp32 magnitudes (NaN -> inf), pair sums,
/// B = s0 + s1, T = s2 + s3, V = T + B; largest V, then smallest top half, then largest B, then
/// smallest bottom half (pats ascending).
unsigned brute(const float (&w)[4][4], const std::vector<std::uint16_t>& pats) {
  float best = -1.0f, best_b = -1.0f;
  unsigned bm = pats[0];
  for (auto m : pats) {
    float s[4];
    for (int r = 0; r < 4; ++r) {
      const unsigned row = (m >> (4 * r)) & 0xfu;
      const int lo = __builtin_ctz(row), hi = 31 - __builtin_clz(row);
      auto mag = [](float x) { return std::isnan(x) ? INFINITY : std::fabs(x); };
      s[r] = mag(w[r][lo]) + mag(w[r][hi]);
    }
    const float b = s[0] + s[1], v = (s[2] + s[3]) + b;
    if (v > best || (v == best && (m >> 8) == (bm >> 8) && b > best_b)) best = v, best_b = b, bm = m;
  }
  return bm;
}

unsigned gpu_rule(const float (&w)[4][4]) {
  float a[4][4];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) a[r][c] = detail::rank_magnitude24(w[r][c]);
  return detail::best_pattern24(a);
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

TEST(TrainRules, NinetyPatterns) {
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
    const int mode = it % 5;
    for (auto& row : a)
      for (auto& x : row) {
        if (mode == 0) x = d(g) - 0.5f;
        else if (mode == 1) x = float(int(g() % 5) - 2) * 0.25f;  // many exact ties, signs
        else if (mode == 2) x = float(g() % 2);
        else if (mode == 3) x = std::ldexp(d(g), int(g() % 40) - 20);  // wide exponent range
        else x = (g() % 6 == 0) ? NAN : ((g() % 7 == 0) ? -INFINITY : d(g));
      }
    bad += gpu_rule(a) != brute(a, pats);
  }
  EXPECT_EQ(bad, 0);
  float zero[4][4] = {};
  EXPECT_EQ(gpu_rule(zero), pats[0]);
}

TEST(TrainRules, MaskSearchNaNStillTransposable) {
  std::mt19937 g(2);
  for (int it = 0; it < 2000; ++it) {
    float a[4][4];
    for (auto& row : a)
      for (auto& x : row) x = (g() % 4 == 0) ? NAN : float(g() % 100);
    EXPECT_TRUE(transposable(gpu_rule(a)));
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

TEST(TrainRules, QuadPositionsTableAndMaskColumns) {
  for (unsigned m = 0; m < 16; ++m) {  // the documented rule, spelled out
    int pos[2], n = 0;
    for (int i = 0; i < 4 && n < 2; ++i)
      if (m & (1u << i)) pos[n++] = i;
    for (int i = 0; i < 4 && n < 2; ++i)
      if (!(m & (1u << i)) && (n == 0 || pos[0] != i)) pos[n++] = i;
    const int lo = std::min(pos[0], pos[1]), hi = std::max(pos[0], pos[1]);
    const auto q = detail::quad_positions(m | 0x30u);  // high bits ignored
    EXPECT_EQ(q.lo, lo) << m;
    EXPECT_EQ(q.hi, hi) << m;
  }
  for (unsigned m = 0; m < 65536; ++m)
    for (int c = 0; c < 4; ++c) {
      unsigned want = 0;
      for (int r = 0; r < 4; ++r) want |= ((m >> (4 * r + c)) & 1u) << r;
      ASSERT_EQ(detail::mask_column(m, c), want) << m << "," << c;
    }
}

TEST(TrainRules, PatternCodeCarriesTheTransposedMask) {
  // best_pattern24_code = mask | transpose << 16 (the session-3 mask kernel builds its column
  // keys from the upper half); transpose16 = the column quads of mask_column.
  for (unsigned m = 0; m < 65536; m += 7) {
    unsigned want = 0;
    for (int c = 0; c < 4; ++c) want |= detail::mask_column(m, c) << (4 * c);
    ASSERT_EQ(detail::transpose16(m), want) << m;
    ASSERT_EQ(detail::pattern_code(m), m | (want << 16)) << m;
  }
  std::mt19937 g(5);
  for (int it = 0; it < 20000; ++it) {
    float a[4][4];
    for (auto& row : a)
      for (auto& x : row) x = float(g() % 9) * 0.125f;  // many ties
    const unsigned code = detail::best_pattern24_code(a);
    ASSERT_EQ(code & 0xffffu, detail::best_pattern24(a));
    ASSERT_EQ(code >> 16, detail::transpose16(code & 0xffffu));
  }
}

TEST(TrainRules, QuadPairTableGivesSelectorsNibblesAndBadCounts) {
  // Entry k (= quad a | quad b << 4) of the session-3 kernel's compression table: the byte
  // permute selector of each quad picks the two stored 16-bit values (positions of
  // quad_positions), z holds the hw24 index byte and the number of quads not keeping exactly 2.
  auto perm = [](std::uint64_t eight_bytes, unsigned sel) {  // prmt's default mode, bit 3 clear
    std::uint32_t out = 0;
    for (int i = 0; i < 4; ++i) {
      const unsigned s = (sel >> (4 * i)) & 0xfu;
      EXPECT_LT(s, 8u);
      out |= std::uint32_t((eight_bytes >> (8 * s)) & 0xffu) << (8 * i);
    }
    return out;
  };
  const std::uint64_t quad = 0x4444333322221111ull;  // values v_i = 0x1111 * (i + 1)
  for (unsigned k = 0; k < 256; ++k) {
    const auto e = detail::quad_pair_entry(k);
    const auto qa = detail::quad_positions(k & 0xfu), qb = detail::quad_positions(k >> 4);
    EXPECT_EQ(perm(quad, e.x), (0x1111u * unsigned(qa.lo + 1)) | ((0x1111u * unsigned(qa.hi + 1)) << 16)) << k;
    EXPECT_EQ(perm(quad, e.y), (0x1111u * unsigned(qb.lo + 1)) | ((0x1111u * unsigned(qb.hi + 1)) << 16)) << k;
    EXPECT_EQ(e.z & 0xffu, unsigned(qa.lo | (qa.hi << 2)) | (unsigned(qb.lo | (qb.hi << 2)) << 4)) << k;
    EXPECT_EQ(e.z >> 16, unsigned(qa.bad) + unsigned(qb.bad)) << k;
    EXPECT_EQ((e.z >> 8) & 0xffu, 0u);
  }
}

TEST(TrainRules, MvueRuleMatchesTheCpuReferenceBitForBit) {
  std::mt19937 g(3);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  int bad = 0;
  for (int it = 0; it < 200000; ++it) {
    float x[4];
    for (int i = 0; i < 4; ++i) {
      x[i] = d(g);
      if (it % 5 == 1 && i) x[i] *= 1e-3f;  // capped
      if (it % 5 == 2 && (g() & 1)) x[i] = 0.f;
      if (it % 5 == 3) x[i] = float(int(g() % 3) - 1);
      if (it % 5 == 4 && g() % 8 == 0) x[i] = (g() & 1) ? NAN : -INFINITY;
    }
    const float u = mvue_uniform(7, std::uint64_t(it % 97), std::uint64_t(it));
    float y[4], r[4];
    const float xs[4] = {x[0], x[1], x[2], x[3]};
    detail::mvue_group_dense(xs, u, y);
    sparsenm::test::ref_mvue(x, u, r);
    bad += std::memcmp(y, r, sizeof y) != 0;
    int nz = 0;
    for (float v : y) nz += v != 0.f || std::isnan(v);
    ASSERT_LE(nz, 2);
  }
  EXPECT_EQ(bad, 0);
}

TEST(TrainRules, MvueUnbiasedWithAnalyticVariance) {
  const float groups[3][4] = {{0.6f, -0.1f, 0.3f, -0.5f}, {3.0f, 0.5f, -0.25f, 0.25f}, {1.f, 1.f, 1.f, 1.f}};
  const int n = 200000;
  for (const auto& x : groups) {
    double sum[4] = {}, sq[4] = {};
    for (int it = 0; it < n; ++it) {
      float y[4];
      detail::mvue_group_dense(x, mvue_uniform(11, 0, std::uint64_t(it)), y);
      for (int i = 0; i < 4; ++i) sum[i] += y[i], sq[i] += double(y[i]) * y[i];
    }
    double a[4], S = 0;
    for (int i = 0; i < 4; ++i) S += a[i] = std::fabs(x[i]);
    const double am = *std::max_element(a, a + 4);
    for (int i = 0; i < 4; ++i) {
      const double p = (am > S - am) ? (a[i] == am ? 1.0 : a[i] / (S - am)) : 2 * a[i] / S;
      const double var = x[i] * x[i] * (1 / p - 1), mean = sum[i] / n;
      EXPECT_NEAR(mean, x[i], 5 * std::sqrt(var / n) + 1e-6);
      EXPECT_NEAR(sq[i] / n - mean * mean, var, 0.04 * var + 1e-6);
    }
  }
}

TEST(TrainRules, MvueSelectorAndNibbleArithmetic) {
  // counts as sums of FSET.BF words (0x3f800000 each), all 9 (first, second - 1) combinations
  for (std::uint32_t f = 0; f < 3; ++f)
    for (std::uint32_t s1 = 0; s1 < 3; ++s1) {
      const std::uint32_t tf = f * 0x3f800000u, ts = s1 * 0x3f800000u, s = s1 + 1;
      const std::uint32_t want_sel = (2 * f) | ((2 * f + 1) << 4) | ((2 * s) << 8) | ((2 * s + 1) << 12);
      EXPECT_EQ(detail::mvue_selector(tf, ts), want_sel) << f << "," << s;
      EXPECT_EQ(detail::mvue_first(tf), int(f));
      EXPECT_EQ(detail::mvue_second(ts), int(s));
      for (int pos = 0; pos < 4; ++pos) {
        const std::uint32_t acc = 0x4444u ^ (0x4u << (4 * pos));  // other nibbles: 4
        EXPECT_EQ(detail::mvue_nibble_add(0x4444u, tf, ts, pos), acc | ((f | (s << 2)) << (4 * pos)));
      }
      // the ALU-lean form (session 5): float counts, exact small-integer float arithmetic
      EXPECT_EQ(detail::mvue_selector_lean(float(f), float(s1)) & 0xffffu, want_sel) << f << "," << s;
      for (int pos = 0; pos < 4; ++pos) {
        const std::uint32_t acc = 0x4444u ^ (0x4u << (4 * pos));
        const float nibf = detail::mvue_nibble_add_lean(detail::kMvueLeanNib0, float(f), float(s1), pos);
        EXPECT_EQ(detail::f32_bits(nibf), 0x4B000000u | acc | ((f | (s << 2)) << (4 * pos)));
      }
      // the selector picks halves f and s of (x0 | x1 << 16, x2 | x3 << 16)
      const std::uint32_t w01 = 0x11110000u, w23 = 0x33332222u;
      const std::uint32_t pair = detail::prmt(w01, w23, detail::mvue_selector(tf, ts));
      EXPECT_EQ(pair & 0xffffu, 0x1111u * f);
      EXPECT_EQ(pair >> 16, 0x1111u * s);
    }
}

/// Random 16-bit / 32-bit words with the special cases of the MVUE windows: zeros (0-4 per
/// group), subnormals, equal values, a dominant element, huge values (sum overflow for bf16 /
/// f32), NaN and +-inf.
std::uint32_t special_word(std::mt19937& g, int mode, bool bf16, bool f32) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  float v = d(g);
  switch (mode) {
    case 1: v = (g() % 2) ? 0.f : v; break;
    case 2: v = (g() % 4 == 0) ? v : ((g() & 1) ? -0.f : 0.f); break;
    case 3: v = float(int(g() % 3) - 1); break;
    case 4: v = (g() % 4 == 0) ? v * 1000.f : v * 1e-3f; break;
    case 5: v = std::ldexp(v, f32 ? -140 : (bf16 ? -130 : -20)); break;  // subnormals
    case 6: v = (g() % 2 ? 1.f : -1.f) * (f32 || bf16 ? 3.0e38f : 60000.f) * (0.5f + 0.5f * std::fabs(v)); break;
    case 7: v = (g() % 5 == 0) ? NAN : ((g() % 5 == 0) ? -INFINITY : ((g() % 7 == 0) ? INFINITY : v)); break;
    case 8: v = std::ldexp(v, int(g() % 60) - 30); break;
    default: break;
  }
  if (f32) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
  }
  return bf16 ? float_to_bf16_bits(v) : float_to_fp16_bits(v);
}

/// The reference window: ref_mvue on the float values, stored in the dtype, condensed.
void reference_window(const std::uint32_t (&raw)[4], int kind, std::uint32_t v, std::uint32_t& lo_raw,
                      std::uint32_t& hi_raw, std::uint32_t& nib) {
  float x[4], y[4];
  for (int i = 0; i < 4; ++i) {
    if (kind == 2) std::memcpy(&x[i], &raw[i], 4);
    else x[i] = kind == 1 ? bf16_bits_to_float(std::uint16_t(raw[i])) : fp16_bits_to_float(std::uint16_t(raw[i]));
  }
  sparsenm::test::ref_mvue(x, mvue_u23(v), y);
  std::uint32_t r[4];
  for (int i = 0; i < 4; ++i) {
    if (kind == 2) std::memcpy(&r[i], &y[i], 4);
    else r[i] = kind == 1 ? float_to_bf16_bits(y[i]) : float_to_fp16_bits(y[i]);
  }
  const std::uint32_t mag = kind == 2 ? 0x7fffffffu : 0x7fffu;
  int pos[2], n = 0;
  for (int i = 0; i < 4 && n < 2; ++i)
    if (r[i] & mag) pos[n++] = i;
  for (int i = 0; i < 4 && n < 2; ++i)
    if (!(r[i] & mag) && (n == 0 || pos[0] != i)) pos[n++] = i;
  std::sort(pos, pos + 2);
  lo_raw = r[pos[0]];
  hi_raw = r[pos[1]];
  nib = unsigned(pos[0]) | (unsigned(pos[1]) << 2);
}

TEST(TrainRules, MvueWindowsFastAndFullMatchTheReference) {
  // The kernels' per-window code (host emulation of the 16-bit helpers: same arithmetic): the
  // fast path wherever it claims validity, and the full path always, equal the reference.
  std::mt19937 g(21);
  for (int kind = 0; kind < 3; ++kind) {  // f16, bf16, f32
    int bad_full = 0, bad_fast = 0, fast = 0, random_fast = 0, random_total = 0, bad_fast2 = 0, fast2 = 0, bad_lean = 0;
    std::uint32_t prev_w01 = 0x3c003c00u, prev_w23 = 0x3c003c00u, prev_v = 0, prev_pair = 0, prev_nib = 0;
    if (kind != 2) {  // a valid previous group to start with: (1, 1, 1, 1) -> kept (f, s) by v = 0
      std::uint32_t lo0, hi0;
      const std::uint32_t one = kind == 1 ? 0x3f80u : 0x3c00u, r0[4] = {one, one, one, one};
      prev_w01 = prev_w23 = one | (one << 16);
      reference_window(r0, kind, prev_v, lo0, hi0, prev_nib);
      prev_pair = lo0 | (hi0 << 16);
    }
    for (int it = 0; it < 120000; ++it) {
      const int mode = it % 9;
      std::uint32_t raw[4];
      for (auto& r : raw) r = special_word(g, mode, kind == 1, kind == 2);
      const std::uint32_t v = std::uint32_t(g());
      std::uint32_t want_lo, want_hi, want_nib;
      reference_window(raw, kind, v, want_lo, want_hi, want_nib);
      std::uint32_t lo, hi, nib, acc = 0x4444u;
      bool ok;
      if (kind == 2) {
        detail::mvue_window32_full(raw, v, lo, hi, nib);
        bad_full += lo != want_lo || hi != want_hi || nib != want_nib;
        ok = detail::mvue_window32(raw, v, lo, hi, acc, it % 4);
      } else {
        const std::uint32_t w01 = raw[0] | (raw[1] << 16), w23 = raw[2] | (raw[3] << 16);
        std::uint32_t pair;
        if (kind == 1) detail::mvue_window16_full<true>(w01, w23, v, pair, nib);
        else detail::mvue_window16_full<false>(w01, w23, v, pair, nib);
        bad_full += (pair & 0xffffu) != want_lo || (pair >> 16) != want_hi || nib != want_nib;
        ok = kind == 1 ? detail::mvue_window16<true>(w01, w23, v, pair, acc, it % 4)
                       : detail::mvue_window16<false>(w01, w23, v, pair, acc, it % 4);
        lo = pair & 0xffffu;
        hi = pair >> 16;
        // the kernels' two-window form (one F2FP for both levels): this group as a (position
        // pos) and the previous one as b (position pos ^ 1)
        std::uint32_t pa, pb, acc2 = 0x4444u;
        const int pos = it % 4;
        const bool ok2 = kind == 1 ? detail::mvue_window16x2<true>(w01, w23, v, prev_w01, prev_w23, prev_v, pa, pb, acc2, pos, pos ^ 1)
                                   : detail::mvue_window16x2<false>(w01, w23, v, prev_w01, prev_w23, prev_v, pa, pb, acc2, pos, pos ^ 1);
        // the ALU-lean two-window form (variants 6 / 7): same validity, pairs and nibbles
        std::uint32_t la, lb;
        float nibf = detail::kMvueLeanNib0;
        const bool okl = kind == 1 ? detail::mvue_window16x2_lean<true>(w01, w23, v, prev_w01, prev_w23, prev_v, la, lb, nibf, pos, pos ^ 1)
                                   : detail::mvue_window16x2_lean<false>(w01, w23, v, prev_w01, prev_w23, prev_v, la, lb, nibf, pos, pos ^ 1);
        bad_lean += okl != ok2;
        // the session-8 form (variant 23): bf16 conversions on the FMA pipe (device only; the host
        // emulation is the same arithmetic)
        std::uint32_t ma, mb;
        float nibm = detail::kMvueLeanNib0;
        const bool okm =
            kind == 1 ? detail::mvue_window16x2_lean<true, true>(w01, w23, v, prev_w01, prev_w23, prev_v, ma, mb, nibm, pos, pos ^ 1)
                      : detail::mvue_window16x2_lean<false, true>(w01, w23, v, prev_w01, prev_w23, prev_v, ma, mb, nibm, pos, pos ^ 1);
        bad_lean += okm != ok2;
        if (ok2) bad_lean += ma != la || mb != lb || detail::f32_bits(nibm) != detail::f32_bits(nibf);
        if (ok2) {
          ++fast2;
          const std::uint32_t want_acc = (0x4444u & ~(0xfu << (4 * pos)) & ~(0xfu << (4 * (pos ^ 1)))) |
                                         (want_nib << (4 * pos)) | (prev_nib << (4 * (pos ^ 1)));
          bad_fast2 += pa != (want_lo | (want_hi << 16)) || pb != prev_pair || acc2 != want_acc;
          bad_lean += la != pa || lb != pb || detail::f32_bits(nibf) != (0x4B000000u | want_acc);
        }
        prev_w01 = w01, prev_w23 = w23, prev_v = v, prev_pair = want_lo | (want_hi << 16), prev_nib = want_nib;
      }
      if (mode == 0) ++random_total, random_fast += ok;
      if (ok) {
        ++fast;
        const int pos = it % 4;
        const std::uint32_t got_nib = (acc >> (4 * pos)) & 0xfu;
        const bool bad = lo != want_lo || hi != want_hi || got_nib != want_nib ||
                         (acc & ~(0xfu << (4 * pos))) != (0x4444u & ~(0xfu << (4 * pos)));
        if (bad && bad_fast < 5)
          ADD_FAILURE() << "kind " << kind << " mode " << mode << ": raw " << std::hex << raw[0] << " " << raw[1]
                        << " " << raw[2] << " " << raw[3] << " v " << v << " got " << lo << "/" << hi << "/"
                        << got_nib << " want " << want_lo << "/" << want_hi << "/" << want_nib;
        bad_fast += bad;
      }
    }
    EXPECT_EQ(bad_full, 0) << "kind " << kind;
    EXPECT_EQ(bad_fast, 0) << "kind " << kind;
    EXPECT_EQ(bad_fast2, 0) << "kind " << kind;
    EXPECT_EQ(bad_lean, 0) << "kind " << kind;
    if (kind != 2) EXPECT_GT(fast2, 50000) << "kind " << kind;
    EXPECT_GT(fast, 60000) << "kind " << kind;
    EXPECT_GE(random_fast, random_total - 2) << "kind " << kind;  // random groups: the fast path
  }
}

TEST(TrainRules, CondensePositions) {
  int lo, hi;
  const std::uint16_t a[4] = {0, 0x8000, 0x3c00, 0};  // -0 is zero: positions (0, 2)
  detail::condense_positions<std::uint16_t>(a, lo, hi);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 2);
  const std::uint16_t b[4] = {0, 0x3c00, 0, 0x7e00};  // NaN is nonzero
  detail::condense_positions<std::uint16_t>(b, lo, hi);
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 3);
}

}  // namespace
}  // namespace sparsenm::train
