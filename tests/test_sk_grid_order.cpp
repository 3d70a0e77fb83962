// sparsenm tests — the grid order of a stream-K weight (format/sk_grid_order.hpp): a bijection of
// the units, every warp's steps at q W + w (its long last step densely after the full steps), the
// kernels' unit split reproduced exactly (ragged ranges, more warps than units, one warp), and the
// tile reorder moving whole tiles to those slots.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <random>
#include <vector>

#include "format/sk_grid_order.hpp"
#include "sparsenm/error.hpp"

namespace {

using namespace sparsenm;
using namespace sparsenm::detail;

// The kernels' split, written out independently: warp w takes [w U / W, (w + 1) U / W).
void check_order(std::int64_t units, std::int64_t warps) {
  SCOPED_TRACE("units " + std::to_string(units) + " warps " + std::to_string(warps));
  std::vector<int> seen(std::size_t(units), 0);
  const std::int64_t lmin = units / warps;
  std::int64_t long_before = 0;
  for (std::int64_t w = 0; w < warps; ++w) {
    const std::int64_t u0 = w * units / warps, u1 = (w + 1) * units / warps, len = u1 - u0;
    ASSERT_TRUE(len == lmin || len == lmin + 1) << "w " << w;
    ASSERT_EQ(sk_range_begin(units, warps, w), u0);
    for (std::int64_t q = 0; q < len; ++q) {
      const std::int64_t u = u0 + q;
      ASSERT_EQ(sk_warp_of(units, warps, u), w) << "u " << u;
      const std::int64_t s = sk_grid_slot(units, warps, u);
      ASSERT_GE(s, 0);
      ASSERT_LT(s, units);
      ++seen[std::size_t(s)];
      // Full steps: warp w's step q beside warp w - 1's step q; the long warps' last step packed
      // densely in warp order after all full steps.
      if (q < lmin) ASSERT_EQ(s, q * warps + w);
      else ASSERT_EQ(s, lmin * warps + long_before);
    }
    if (len > lmin) ++long_before;
  }
  for (std::int64_t s = 0; s < units; ++s) ASSERT_EQ(seen[std::size_t(s)], 1) << "slot " << s;  // a bijection
  ASSERT_EQ(long_before, units - lmin * warps);
}

TEST(SkGridOrder, BijectionMatchesTheKernelSplit) {
  // Ragged and even splits, ranges of 0 .. 7 units per warp, more warps than units, one warp,
  // the whole-SM grids of the H200 (132 SMs x 8 warps x 1..4 CTAs, 32-warp CTAs).
  for (std::int64_t warps : {1, 2, 3, 7, 8, 24, 64, 257, 1056, 4224})
    for (std::int64_t units : {1, 2, 5, 8, 31, 100, 1000, 3001, 4224 * 3 + 17})
      check_order(units, warps);
  for (std::int64_t per = 0; per <= 7; ++per)
    for (std::int64_t extra : {0, 1, 5, 63})
      check_order(64 * per + extra == 0 ? 1 : 64 * per + extra, 64);
  std::mt19937_64 rng(4711);
  for (int i = 0; i < 40; ++i) {
    const std::int64_t warps = 1 + std::int64_t(rng() % 5000), units = 1 + std::int64_t(rng() % 40000);
    check_order(units, warps);
  }
  // A real bar shape: 12288 rows (384 groups) x 192 tiles on 132 x 4 x 8 warps.
  check_order(384 * 192, 4224);
}

TEST(SkGridOrder, ReorderMovesWholeTiles) {
  for (auto [units, warps, tile] : std::vector<std::array<std::int64_t, 3>>{{37, 8, 5}, {5, 9, 3}, {1000, 64, 1}, {640, 64, 7}}) {
    SCOPED_TRACE(std::to_string(units) + " " + std::to_string(warps));
    std::vector<std::uint32_t> d(std::size_t(units * tile));
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = std::uint32_t(i * 2654435761u);
    const auto orig = d;
    sk_grid_reorder(d, std::size_t(tile), units, warps);
    for (std::int64_t u = 0; u < units; ++u) {
      const std::int64_t s = sk_grid_slot(units, warps, u);
      for (std::int64_t e = 0; e < tile; ++e) ASSERT_EQ(d[std::size_t(s * tile + e)], orig[std::size_t(u * tile + e)]);
    }
    std::vector<std::byte> b(std::size_t(units * tile));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::byte(i * 7 + 3);
    const auto ob = b;
    sk_grid_reorder(b, std::size_t(tile), units, warps);
    for (std::int64_t u = 0; u < units; ++u)
      ASSERT_EQ(b[std::size_t(sk_grid_slot(units, warps, u) * tile)], ob[std::size_t(u * tile)]);
  }
  // One warp: the identity.
  std::vector<std::uint32_t> d = {1, 2, 3, 4, 5, 6};
  sk_grid_reorder(d, 2, 3, 1);
  EXPECT_EQ(d, (std::vector<std::uint32_t>{1, 2, 3, 4, 5, 6}));
}

TEST(SkGridOrder, BadArguments) {
  std::vector<std::uint32_t> d(10);
  EXPECT_THROW(sk_grid_reorder(d, 2, 5, 0), InvalidArgument);
  EXPECT_THROW(sk_grid_reorder(d, 2, 4, 3), InvalidArgument);
  EXPECT_THROW(sk_grid_reorder(d, 3, 5, 3), InvalidArgument);
  EXPECT_THROW(sk_grid_reorder(d, 2, -1, 3), InvalidArgument);
  try {
    sk_grid_reorder(d, 2, 4, 3);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("data"), std::string::npos) << e.what();
  }
}

}  // namespace
