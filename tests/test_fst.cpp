// CPU tests of the FST layer's host logic: the step schedule (fst.hpp) and the hw24 -> sparse
// tensor-core repack arithmetic (src/cuda/train/fst_layout.hpp) against sptc::pack24.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/sptc/layout.hpp"
#include "cuda/train/fst_layout.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/fst.hpp"

namespace sparsenm::train {
namespace {

TEST(FstSchedule, DenseFromAndPhases) {
  FstSchedule s;  // l = 40, fraction 1/6
  s.total_steps = 300000;
  EXPECT_EQ(s.dense_from(), 250000);  // the toolkit's switch point (iter 250000 of 300000)
  EXPECT_EQ(s.phase(249999), FstPhase::sparse);
  EXPECT_EQ(s.phase(250000), FstPhase::dense);
  s.total_steps = 7;
  s.dense_fraction = 0.5;  // round(3.5) = 4 dense steps
  EXPECT_EQ(s.dense_from(), 3);
  s.dense_fraction = 0.0;
  EXPECT_EQ(s.dense_from(), 7);
  s.dense_fraction = 1.0;
  EXPECT_EQ(s.dense_from(), 0);
  EXPECT_EQ(s.phase(0), FstPhase::dense);
  s.total_steps = 0;  // never dense
  EXPECT_EQ(s.phase(std::int64_t(1) << 60), FstPhase::sparse);
}

TEST(FstSchedule, Refresh) {
  FstSchedule s;
  s.mask_interval = 40;
  s.total_steps = 120;
  s.dense_fraction = 1.0 / 6.0;  // dense from 100
  EXPECT_TRUE(s.refreshes_mask(0, false));
  EXPECT_TRUE(s.refreshes_mask(0, true));
  EXPECT_FALSE(s.refreshes_mask(1, true));
  EXPECT_FALSE(s.refreshes_mask(39, true));
  EXPECT_TRUE(s.refreshes_mask(40, true));
  EXPECT_TRUE(s.refreshes_mask(17, false));  // resume: no mask yet
  EXPECT_TRUE(s.refreshes_mask(80, true));
  EXPECT_FALSE(s.refreshes_mask(120, true));  // dense
  EXPECT_FALSE(s.refreshes_mask(100, false));
  s.mask_interval = 1;
  for (int t = 0; t < 100; ++t) EXPECT_TRUE(s.refreshes_mask(t, true));
}

TEST(FstSchedule, Validate) {
  FstSchedule s;
  EXPECT_NO_THROW(s.validate());
  s.mask_interval = 0;
  EXPECT_THROW(s.validate(), InvalidArgument);
  s = {};
  s.total_steps = -1;
  EXPECT_THROW(s.validate(), InvalidArgument);
  s = {};
  s.dense_fraction = 1.5;
  EXPECT_THROW(s.validate(), InvalidArgument);
  s.dense_fraction = std::nan("");
  EXPECT_THROW(s.validate(), InvalidArgument);
  try {
    s.validate();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dense_fraction");
  }
}

#if !defined(SPARSENM_WITH_CUDA)
TEST(FstLinear, NoCudaThrowsUnsupported) {
  FstConfig c;
  c.in_features = c.out_features = c.max_tokens = 8;
  EXPECT_THROW(FstLinear{c}, Unsupported);
}
#endif

// Random hw24 matrix (rows x k): per group two ascending positions; tail-group positions may
// land in the padding (value 0 there, as format.hpp requires). Index bits past the last group
// are 0 (train.hpp).
struct HostHw24 {
  std::int64_t rows, k, groups, irb;
  std::vector<std::uint16_t> values;
  std::vector<std::uint8_t> idx;
  std::vector<int> pos;  // [rows][groups][2]
};
HostHw24 random_hw24(std::int64_t rows, std::int64_t k, std::uint64_t seed) {
  HostHw24 h{rows, k, (k + 3) / 4, ((k + 3) / 4 + 1) / 2, {}, {}, {}};
  h.values.assign(std::size_t(rows * 2 * h.groups), 0);
  h.idx.assign(std::size_t(rows * h.irb), 0);
  h.pos.assign(std::size_t(rows * h.groups * 2), 0);
  std::mt19937_64 g(seed);
  const int pairs[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t gi = 0; gi < h.groups; ++gi) {
      const int* p = pairs[g() % 6];
      for (int s = 0; s < 2; ++s) {
        h.pos[std::size_t((r * h.groups + gi) * 2 + s)] = p[s];
        const bool pad = gi * 4 + p[s] >= k;
        h.values[std::size_t(r * 2 * h.groups + 2 * gi + s)] = pad ? 0 : std::uint16_t(1 + g() % 0xFFFE);
      }
      h.idx[std::size_t(r * h.irb + gi / 2)] |= std::uint8_t((p[0] | (p[1] << 2)) << (4 * (gi & 1)));
    }
  return h;
}

void check_repack(std::int64_t rows, std::int64_t k, std::uint64_t seed) {
  SCOPED_TRACE("rows " + std::to_string(rows) + " k " + std::to_string(k));
  const HostHw24 h = random_hw24(rows, k, seed);
  const detail::PackGeom geo = detail::pack_geom(rows, k);
  EXPECT_EQ(geo.rows_pad % 128, 0);
  EXPECT_EQ(geo.k_pad % 64, 0);
  EXPECT_EQ(geo.direct(), (k + 3) / 4 * 4 % 64 == 0);
  // reference: pack24 with the same slots, rows padded to 128
  const sptc::Packed24 ref = sptc::pack24(rows, h.groups, 128, [&](std::int64_t r, std::vector<sptc::Slot>& slots) {
    for (std::int64_t gi = 0; gi < h.groups; ++gi)
      for (int s = 0; s < 2; ++s)
        slots[std::size_t(2 * gi + s)] = {gi, h.pos[std::size_t((r * h.groups + gi) * 2 + s)],
                                          h.values[std::size_t(r * 2 * h.groups + 2 * gi + s)]};
  });
  ASSERT_EQ(ref.rows_pad, geo.rows_pad);
  ASSERT_EQ(ref.k_pad, geo.k_pad);
  ASSERT_EQ(std::int64_t(ref.meta.size()), geo.meta_words);
  std::int64_t bad = 0;
  for (std::int64_t wi = 0; wi < geo.meta_words; ++wi)
    bad += detail::meta_word_from_hw24(h.idx.data(), geo, wi) != ref.meta[std::size_t(wi)];
  EXPECT_EQ(bad, 0) << "metadata words differ from pack24";
  ASSERT_EQ(std::int64_t(ref.values.size()), geo.rows_pad * geo.pack_cols);
  bad = 0;
  for (std::int64_t r = 0; r < geo.rows_pad; ++r)
    for (std::int64_t c = 0; c < geo.pack_cols; ++c)
      bad += detail::packed_value_from_hw24(h.values.data(), geo, r, c) != ref.values[std::size_t(r * geo.pack_cols + c)];
  EXPECT_EQ(bad, 0) << "packed values differ from pack24";
  // direct mode: the hw24 values ARE the first rows of the packed values
  if (geo.direct()) {
    for (std::int64_t i = 0; i < rows * geo.hw_cols; ++i) ASSERT_EQ(h.values[std::size_t(i)], ref.values[std::size_t(i)]);
  }
}

TEST(FstLayout, RepackEqualsPack24) {
  check_repack(128, 64, 1);     // one block each, direct
  check_repack(256, 1280, 2);   // direct, several blocks
  check_repack(5, 6, 3);        // tails in both (k = 6: partial group, odd group count)
  check_repack(130, 70, 4);     // 2 row tiles, k past one block
  check_repack(64, 61, 5);      // rounds to 64: direct with a tail group
  check_repack(200, 130, 6);    // not direct
  check_repack(1, 4, 7);
  check_repack(129, 257, 8);
}

}  // namespace
}  // namespace sparsenm::train
