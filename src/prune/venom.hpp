// sparsenm prune — V:2:M column-set search (VENOM's magnitude method), exposed for tests.
//
// Problem. One V x M block (rows x `count` real columns, magnitudes |w| with NaN as +inf): pick
// 4 columns S maximising score(S) = sum over rows of (t1 + t2), t1 >= t2 the two largest
// magnitudes of the row among S (each row then keeps those two: 2:4 inside the 4 columns).
//
// Storage. Column-major: mag[c * ld + r]. Rows are processed in 8 lanes, so the block is read
// up to rows8 = rows rounded up to a multiple of 8; entries rows..rows8-1 must be 0 (a zero row
// adds +0 to a lane: no effect), and ld >= rows8.
//
// Canonical arithmetic. score(S) is evaluated in double as: lane l (0..7) accumulates, from
// 0.0 and in row order, the per-row sums (t1 + t2) of rows r = l (mod 8); then
// score = ((((((lane0 + lane1) + lane2) + lane3) + lane4) + lane5) + lane6) + lane7.
// Every routine below computes exactly this (the lanes vectorise), so the score of a set is
// the same bits everywhere and ties are decided exactly. Ties between sets: the
// lexicographically smaller ascending 4-tuple wins (= first in enumeration order).
//
// Routines.
//   venom_enumerate     all C(count, 4) sets in lexicographic order; for each (a, b, c) the
//                       per-row top-2 of {a, b, c} is formed once and every d > c costs one
//                       max and two adds per row. Exact. What prune() uses for M <= 16.
//   venom_l1_start      the 4 columns of largest column L1 mass (sum of magnitudes in row
//                       order; ties: lower column), scored.
//   venom_local_search  best-improvement swaps from a start: every (column in S, column out of
//                       S) exchange is scored; the best strictly improving one is taken (ties:
//                       the lexicographically smallest resulting set); stop when none improves.
//                       Never returns a set scoring below its start.
//   venom_branch_bound  depth-first over ascending 4-tuples in lexicographic order with the
//                       bound  score(any S extending prefix P) <= sum over rows of the top-2
//                       of (P u every column after P's last)  (each row may complete P its own
//                       way; it bounds the rounded sums too, as rounding is monotone and the
//                       lanes are summed in the same order). A subtree is cut when its bound is
//                       below the incumbent, or equal to it while all its sets come after the
//                       incumbent lexicographically. budget < 0: runs to the end and returns
//                       venom_enumerate's answer; else it stops after `budget` row passes (one
//                       pass = one bound or one set score), and `proven` says whether it ended.
//   venom_select        what prune() uses:
//                         count <= 16: venom_enumerate (exhaustive, exact);
//                         count  > 16: L1 start -> local search -> if the local-search score
//                                      equals the root bound (sum over rows of each row's
//                                      top-2 over all columns) it is optimal (proven);
//                                      otherwise branch and bound seeded with it, budget
//                                      kVenomBudget row passes. The result is never worse than
//                                      the local search (so never worse than the L1 start)
//                                      and optimal whenever `proven`.
#pragma once
#include <array>
#include <cstdint>

namespace sparsenm::prune_detail {

inline constexpr int kVenomLanes = 8;

struct VenomBlock {
  const double* mag = nullptr;  ///< mag[c * ld + r]; values >= 0 (+inf allowed); see above
  int rows = 0;                 ///< 1..256
  int ld = 0;                   ///< >= rows rounded up to a multiple of 8
  int count = 0;                ///< real columns of the window, 4..256
};

struct VenomChoice {
  std::array<int, 4> col{};  ///< ascending
  double score = 0.0;
  bool proven = false;       ///< optimal by exhaustion or by the bound
  std::int64_t passes = 0;   ///< row passes spent (cost measure)
};

/// Row passes allowed to the branch and bound for count > 16 (twice the passes of an
/// exhaustive 16-column search, C(16,4) + C(16,3) = 2380).
inline constexpr std::int64_t kVenomBudget = 2 * 2380;

double venom_score(const VenomBlock& b, const std::array<int, 4>& col);
VenomChoice venom_enumerate(const VenomBlock& b);
VenomChoice venom_l1_start(const VenomBlock& b);
VenomChoice venom_local_search(const VenomBlock& b, const VenomChoice& start);
VenomChoice venom_branch_bound(const VenomBlock& b, const VenomChoice& incumbent, std::int64_t budget);
VenomChoice venom_select(const VenomBlock& b);

}  // namespace sparsenm::prune_detail
