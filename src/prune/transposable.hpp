// sparsenm prune — transposable 2:4 masks, exposed for tests.
//
// The 90 patterns: every 4x4 0/1 matrix with exactly two ones in each row and in each column,
// as 16-bit masks with bit 4*i + j = (row i, column j), listed in ascending numeric order
// ("pattern order"). For each aligned 4x4 block the pattern maximising the kept magnitude is
// chosen (exact: all 90 are scored). Score = ((P0 + P1) + P2) + P3 in double, P_i = |w_ia| +
// |w_ib| the kept pair of row i (a < b), |NaN| = +inf. Ties: the first pattern in pattern order.
// Blocks past the edge are padded with zeros (the mask covers only real positions).
#pragma once
#include <array>
#include <cstdint>

namespace sparsenm::prune_detail {

/// The 90 patterns in pattern order (computed once).
const std::array<std::uint16_t, 90>& transposable_patterns() noexcept;

/// Index (0..89) of the best pattern for a 4x4 block of magnitudes mag[i][j] (>= 0, inf ok).
int best_transposable_pattern(const double mag[4][4]) noexcept;

}  // namespace sparsenm::prune_detail
