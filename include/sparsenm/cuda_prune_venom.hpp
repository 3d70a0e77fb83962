// sparsenm — magnitude pruning on the GPU for the sparse-tensor-core patterns: V:2:M (VENOM)
// and hardware 2:4. Host in, host out (the canonical condensed format, docs/FORMAT.md).
//
// Same answers as the CPU prune() (include/sparsenm/prune.hpp), bit for bit, including ties:
//   hw24 ("2:4/hw"): per row and window of 4, the 2 largest |w| (|NaN| = +inf; ties: the
//     lower column); a tail window with < 2 real columns keeps positions 0, 1.
//   venom ("V:2:M"): per V x M block the 4 columns S maximising the sum over rows (in row
//     order, in double) of the row's two largest |w| among S; ties: the lexicographically
//     smallest ascending 4-tuple. Exhaustive over the C(count, 4) subsets for count <= 32 real
//     columns (the CPU is exhaustive up to 16 and runs a bounded branch and bound beyond, so for
//     17..32 both agree whenever the CPU search completes — it then proves the same optimum);
//     for count > 32: the CPU's L1-mass start + best-improvement swap search (ties: the
//     lexicographically smallest set), without the CPU's final budgeted branch and bound.
//     Then per row the 2 largest of the 4 (ties: lower position). A tail window with < 4 real
//     columns selects them all plus the lowest padding columns.
// Weights may be f32, f16 or bf16; kept values are bit copies.
#pragma once
#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/pattern.hpp"

namespace sparsenm {

/// p must be a venom pattern; throws InvalidArgument otherwise, CudaError on a CUDA failure.
CondensedMatrix prune_venom_cuda(const MatrixView& w, const Pattern& p);

/// Hardware 2:4 ("2:4/hw") magnitude pruning.
CondensedMatrix prune_hw24_cuda(const MatrixView& w);

}  // namespace sparsenm
