// sparsenm prune — V:2:M column-set search (VENOM's magnitude method), exposed for tests.
//
// Problem. One V x M block (rows x `count` real columns, magnitudes |w| with NaN as +inf): pick
// 4 columns S maximising score(S) = sum over rows of (t1 + t2), t1 >= t2 the two largest
// magnitudes of the row among S (each row then keeps those two: 2:4 inside the 4 columns).
//
// Canonical arithmetic. score(S) is evaluated in double exactly as written: per row the double
// sum t1 + t2, accumulated over rows in row order. Every routine below computes it in that
// order, so scores of the same S agree bit for bit and ties are decided exactly. Ties between
// subsets: the lexicographically smaller ascending 4-tuple wins (= first in enumeration order).
//
// Routines.
//   venom_enumerate     plain enumeration of all C(count, 4) subsets in lexicographic order,
//                       for each (a, b, c) the per-row top-2 of {a, b, c} is formed once and all
//                       d > c are scored together. Exact; the reference the others are tested on.
//   venom_l1_start      the 4 columns with the largest column L1 mass (sum of magnitudes; ties:
//                       lower column), scored.
//   venom_local_search  best-improvement swaps from a start: every (column in S, column out of
//                       S) exchange is scored; the best strictly improving one is taken (ties:
//                       the lexicographically smallest resulting set); stop when none improves.
//                       Never returns a set scoring below its start.
//   venom_branch_bound  depth-first search over ascending 4-tuples in lexicographic order with
//                       the bound  score(any S extending prefix P) <= sum over rows of the top-2
//                       of (P u all columns after P's last)  (each row may complete P on its
//                       own; valid also for the rounded sums since rounding is monotone). A
//                       subtree is cut when its bound is below the incumbent, or equal to it
//                       while all its sets come lexicographically after the incumbent. With
//                       budget < 0 it is exhaustive and returns exactly venom_enumerate's
//                       answer; with a budget (row passes: one pass = one bound or one leaf
//                       score = O(rows) work) it may stop early: `proven` says whether the
//                       search completed, i.e. whether the result is proven optimal.
//   venom_select        what prune() uses:
//                         count <= 16: exact (local search for a strong incumbent, then the
//                                      unlimited branch and bound = exhaustive, same answer as
//                                      venom_enumerate, usually far fewer row passes);
//                         count  > 16: L1 start -> local search -> branch and bound with a
//                                      budget of kVenomBudget row passes, seeded with the
//                                      local-search set. The result is never worse than the
//                                      local search (hence never worse than the L1 start), and
//                                      is optimal whenever `proven`.
#pragma once
#include <array>
#include <cstdint>

namespace sparsenm::prune_detail {

struct VenomBlock {
  const double* mag = nullptr;  ///< mag[r * ld + c], r < rows, c < count; values >= 0 (+inf ok)
  int rows = 0;
  int ld = 0;
  int count = 0;  ///< real columns of the window, 4..256
};

struct VenomChoice {
  std::array<int, 4> col{};  ///< ascending
  double score = 0.0;
  bool proven = false;       ///< optimal by exhaustion or by the bound
  std::int64_t passes = 0;   ///< row passes spent (cost measure)
};

/// Row passes allowed to the branch and bound for count > 16 (about the cost of an exhaustive
/// search of a 16-column window, C(16,4) = 1820 subsets, times four).
inline constexpr std::int64_t kVenomBudget = 4 * 1820;

double venom_score(const VenomBlock& b, const std::array<int, 4>& col);
VenomChoice venom_enumerate(const VenomBlock& b);
VenomChoice venom_l1_start(const VenomBlock& b);
VenomChoice venom_local_search(const VenomBlock& b, const VenomChoice& start);
VenomChoice venom_branch_bound(const VenomBlock& b, const VenomChoice& incumbent, std::int64_t budget);
VenomChoice venom_select(const VenomBlock& b);

}  // namespace sparsenm::prune_detail
