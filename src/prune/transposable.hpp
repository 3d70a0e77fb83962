// sparsenm prune — transposable 2:4 masks, exposed for tests.
//
// The 90 patterns: every 4x4 0/1 matrix with exactly two ones in each row and in each column,
// as 16-bit masks with bit 4*i + j = (row i, column j), listed in ascending numeric order
// ("pattern order"). For each aligned 4x4 block all 90 patterns are scored (none skipped) and
// the best is chosen. Magnitudes a = |w| in fp32 (|NaN| = +inf); P_i = a_ia + a_ib, the kept pair
// of row i; bottom B = P0 + P1, top T = P2 + P3, score V = T + B, every sum rounded in fp32
// (the grouping the GPU search uses, src/cuda/train/pattern24.cuh). Choice: the largest V; on a
// tie in V, the smallest top half (mask bits 8..15); within that top, the largest B, then the
// smallest bottom half. fp32 sums of f16 magnitudes are exact when a block's exponents span at
// most ~10 binades; otherwise the choice is optimal up to the rounding of V (relative 2^-23).
// Blocks past the edge are padded with zeros (the mask covers only real positions).
#pragma once
#include <array>
#include <cstdint>

namespace sparsenm::prune_detail {

/// The 90 patterns in pattern order (computed once).
const std::array<std::uint16_t, 90>& transposable_patterns() noexcept;

/// Index (0..89) of the best pattern for a 4x4 block of magnitudes mag[i][j] (>= 0, inf ok).
int best_transposable_pattern(const float mag[4][4]) noexcept;

}  // namespace sparsenm::prune_detail
