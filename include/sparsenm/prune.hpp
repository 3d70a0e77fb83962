// sparsenm — pruning on the CPU (reference quality; GPU versions live with the kernels).
// Ties are broken deterministically: at equal magnitude the lower column (row, subset) wins.
// |NaN| counts as +inf (NaNs are kept first, never silently dropped). Tail windows are padded
// logically with zeros; a column past the end is chosen only when a window has fewer real
// columns than slots. Errors: InvalidArgument for a non-weight dtype, an empty matrix or an
// invalid pattern. Details and the V:2:M search for M > 16: docs/PRUNE.md.
#pragma once
#include <cstdint>
#include <vector>

#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/pattern.hpp"

namespace sparsenm {

struct PruneReport {
  double sparsity = 0.0;            ///< fraction of zeros in the pruned matrix
  double retained_l1 = 0.0;         ///< sum |w| kept / sum |w| before (1 when all zero)
  double retained_l2 = 0.0;         ///< sum w^2 kept / sum w^2 before
  std::int64_t nonzeros_kept = 0;
};

/// Magnitude pruning to `p` (element: top-n |w| per window; vector/block: by L2 norm of the
/// vector/block; venom: VENOM's method — per V x M block the 4-column subset keeping the most
/// magnitude (exhaustive for m <= 16, documented search beyond), then top-2 of 4 per row;
/// hw24: element 2:4). Returns the pruned dense matrix (same dtype).
DenseMatrix prune_dense(const MatrixView& w, const Pattern& p, PruneReport* report = nullptr);

/// prune_dense + condense in one pass (no dense temporary).
CondensedMatrix prune(const MatrixView& w, const Pattern& p, PruneReport* report = nullptr);

/// Transposable 2:4 mask: every aligned 4x4 block keeps exactly 2 per row and 2 per column,
/// choosing the best of the 90 such patterns by kept |w| (optimal). Blocks past the edge are
/// padded with zeros. Returns rows*cols bytes, 1 = kept.
std::vector<std::uint8_t> transposable_24_mask(const MatrixView& w);

/// MVUE 2:4 along rows (each aligned group of 4 consecutive columns): unbiased
/// (E[out] = in) with the minimum variance of 2-sparse estimators (seed 003 eq. 6). Counter-based
/// RNG: the result depends only on (seed, element position). Returns a matrix of w's dtype
/// (f32 math); groups past the edge are padded with zeros.
DenseMatrix mvue24(const MatrixView& g, std::uint64_t seed);

}  // namespace sparsenm
