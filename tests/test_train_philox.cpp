// CPU tests of the training RNG (src/cuda/train/philox.hpp, shared by host and device):
// Philox-4x32-10 known-answer vectors (Salmon et al. 2011 / Random123 kat_vectors) and the
// MVUE uniform's counter layout (that of the CPU reference src/prune/philox.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "cuda/train/philox.hpp"

namespace sparsenm::train {
namespace {

TEST(Philox4x32_10, KnownAnswerVectors) {
  const Philox4 a = philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(a.v[0], 0x6627e8d5u);
  EXPECT_EQ(a.v[1], 0xe169c58du);
  EXPECT_EQ(a.v[2], 0xbc57ac4cu);
  EXPECT_EQ(a.v[3], 0x9b00dbd8u);
  const Philox4 b = philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  EXPECT_EQ(b.v[0], 0x408f276du);
  EXPECT_EQ(b.v[1], 0x41c83b0eu);
  EXPECT_EQ(b.v[2], 0xa20bc7c6u);
  EXPECT_EQ(b.v[3], 0x6d5451fdu);
  const Philox4 c = philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(c.v[0], 0xd16cfe09u);
  EXPECT_EQ(c.v[1], 0x94fdccebu);
  EXPECT_EQ(c.v[2], 0x5001e420u);
  EXPECT_EQ(c.v[3], 0x24126ea1u);
}

TEST(MvueUniform, FollowsTheCpuReferenceCounterLayout) {
  const std::uint64_t seed = 0x0123456789abcdefull;
  for (std::uint64_t row : {0ull, 3ull, (1ull << 35) + 1})
    for (std::uint64_t g : {0ull, 1ull, 77ull, (1ull << 33) + 5}) {
      const std::uint64_t q = g / 4;  // one Philox call per 4 groups, word g % 4
      const Philox4 r = philox4x32_10(std::uint32_t(q), std::uint32_t(q >> 32), std::uint32_t(row),
                                      std::uint32_t(row >> 32), std::uint32_t(seed), std::uint32_t(seed >> 32));
      const float want = float(r.v[g % 4] >> 9) * (1.0f / 8388608.0f);
      const float u = mvue_uniform(seed, row, g);
      EXPECT_EQ(u, want);
      EXPECT_GE(u, 0.0f);
      EXPECT_LT(u, 1.0f);
    }
  EXPECT_NE(mvue_uniform(seed, 0, 5), mvue_uniform(seed + 1, 0, 5));
  EXPECT_NE(mvue_uniform(seed, 0, 5), mvue_uniform(seed, 1, 5));
  float u4[4];
  mvue_uniform4(seed, 9, 6, u4);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(u4[j], mvue_uniform(seed, 9, 24 + std::uint64_t(j)));
  EXPECT_NE(u4[0], u4[1]);
}

TEST(Philox, PrecomputedRoundKeysGiveTheSameStream) {
  for (std::uint64_t seed : {0ull, 1ull, 0x0123456789abcdefull, ~0ull}) {
    const PhiloxKeys k = philox_keys(seed);
    for (std::uint32_t c : {0u, 7u, 0xdeadbeefu}) {
      const Philox4 a = philox4x32_10(c, c + 1, c * 3, ~c, std::uint32_t(seed), std::uint32_t(seed >> 32));
      const Philox4 b = philox4x32_10(c, c + 1, c * 3, ~c, k);
      for (int j = 0; j < 4; ++j) EXPECT_EQ(a.v[j], b.v[j]);
    }
    float u1[4], u2[4];
    mvue_uniform4(seed, 12345, 678, u1);
    mvue_uniform4(k, 12345, 678, u2);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(u1[j], u2[j]);
  }
}

TEST(MvueUniform, RoughlyUniform) {
  double sum = 0, sq = 0;
  const int n = 1 << 16;
  for (int g = 0; g < n; ++g) {
    const double u = mvue_uniform(42, 3, std::uint64_t(g));
    sum += u;
    sq += u * u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
  EXPECT_NEAR(sq / n - (sum / n) * (sum / n), 1.0 / 12, 0.003);
}

}  // namespace
}  // namespace sparsenm::train

#include "sparsenm/error.hpp"
#include "sparsenm/train.hpp"

namespace sparsenm::train {
namespace {
TEST(TrainApi, LayoutHelpers) {
  EXPECT_EQ(hw24_value_cols(8), 4);
  EXPECT_EQ(hw24_value_cols(9), 6);
  EXPECT_EQ(hw24_index_row_bytes(8), 1);
  EXPECT_EQ(hw24_index_row_bytes(9), 2);
  EXPECT_EQ(hw24_index_row_bytes(1), 1);
  EXPECT_EQ(mask24_words(37, 45), 10 * 12);
}
#if !defined(SPARSENM_WITH_CUDA)
TEST(TrainApi, WithoutCudaEveryEntryPointIsUnsupported) {
  int dummy = 0;
  EXPECT_THROW(transposable_mask24(DType::f16, &dummy, 4, 4, nullptr, {}, {}), Unsupported);
  EXPECT_THROW(mvue24(DType::f16, &dummy, 4, 4, GradLayout::token_major, 1, {}), Unsupported);
  EXPECT_THROW(flip_count(nullptr, nullptr, 4, 4, nullptr), Unsupported);
}
#endif
}  // namespace
}  // namespace sparsenm::train
