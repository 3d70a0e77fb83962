// sparsenm prune — transposable 2:4 mask (seed 003 §5.1, Algorithm 1: score all 90 patterns
// of every 4x4 block, take the argmax); definitions in transposable.hpp.
#include "prune/transposable.hpp"

#include <vector>

#include "prune/common.hpp"
#include "sparsenm/prune.hpp"

namespace sparsenm {

namespace prune_detail {

namespace {

// Pairs of a row in a fixed order; a pattern is one pair per row.
constexpr int kPairs[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

struct Table {
  std::array<std::uint16_t, 90> mask{};
  std::array<std::array<std::uint8_t, 4>, 90> pair{};  // pair index (kPairs) of each row
};

const Table& table() noexcept {
  static const Table t = [] {
    Table tb;
    int k = 0;
    for (std::uint32_t m = 0; m < 65536; ++m) {
      bool ok = true;
      for (int i = 0; i < 4 && ok; ++i) ok = __builtin_popcount((m >> (4 * i)) & 0xfu) == 2;
      for (int j = 0; j < 4 && ok; ++j) ok = __builtin_popcount(m & (0x1111u << j)) == 2;
      if (!ok) continue;
      tb.mask[std::size_t(k)] = std::uint16_t(m);
      for (int i = 0; i < 4; ++i) {
        const unsigned row = (m >> (4 * i)) & 0xfu;
        for (int q = 0; q < 6; ++q)
          if (row == ((1u << kPairs[q][0]) | (1u << kPairs[q][1]))) tb.pair[std::size_t(k)][std::size_t(i)] = std::uint8_t(q);
      }
      ++k;
    }
    return tb;
  }();
  return t;
}

}  // namespace

const std::array<std::uint16_t, 90>& transposable_patterns() noexcept { return table().mask; }

int best_transposable_pattern(const float mag[4][4]) noexcept {
  const Table& t = table();
  float pair_sum[4][6];
  for (int i = 0; i < 4; ++i)
    for (int q = 0; q < 6; ++q) pair_sum[i][q] = mag[i][kPairs[q][0]] + mag[i][kPairs[q][1]];
  int best = 0;
  float best_score = -1.0f, best_bottom = -1.0f;
  unsigned best_top = ~0u;
  for (int k = 0; k < 90; ++k) {  // ascending mask: top half (rows 2, 3) major
    const auto& p = t.pair[std::size_t(k)];
    const float bottom = pair_sum[0][p[0]] + pair_sum[1][p[1]];
    const float top = pair_sum[2][p[2]] + pair_sum[3][p[3]];
    const float s = top + bottom;
    const unsigned top_bits = unsigned(t.mask[std::size_t(k)]) >> 8;
    if (s > best_score || (s == best_score && top_bits == best_top && bottom > best_bottom)) {
      best_score = s;
      best_bottom = bottom;
      best_top = top_bits;
      best = k;
    }
  }
  return best;
}

}  // namespace prune_detail

std::vector<std::uint8_t> transposable_24_mask(const MatrixView& w) {
  prune_detail::check_input(w, "w");
  const std::int64_t rows = w.rows, cols = w.cols;
  const std::int64_t brows = prune_detail::ceil_div(rows, 4), bcols = prune_detail::ceil_div(cols, 4);
  std::vector<std::uint8_t> mask(std::size_t(rows) * std::size_t(cols), 0);
  const auto& patterns = prune_detail::transposable_patterns();
#pragma omp parallel for schedule(static) if (rows * cols >= prune_detail::kParallelMinElements)
  for (std::int64_t bi = 0; bi < brows; ++bi) {
    for (std::int64_t bj = 0; bj < bcols; ++bj) {
      float mag[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const std::int64_t r = bi * 4 + i, c = bj * 4 + j;
          mag[i][j] = r < rows && c < cols ? prune_detail::rank_magnitude_f32(w.at(r, c)) : 0.0f;
        }
      const std::uint16_t m = patterns[std::size_t(prune_detail::best_transposable_pattern(mag))];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const std::int64_t r = bi * 4 + i, c = bj * 4 + j;
          if (r < rows && c < cols) mask[std::size_t(r * cols + c)] = std::uint8_t((m >> (4 * i + j)) & 1u);
        }
    }
  }
  return mask;
}

}  // namespace sparsenm
