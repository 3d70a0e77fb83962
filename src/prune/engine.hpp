// sparsenm prune — the per-granularity pruning engines behind prune() and prune_dense().
//
// Each engine walks the row groups of W (OpenMP over groups), chooses the kept positions of
// every window and writes them to one of two outputs:
//   dense      a rows x cols matrix of W's dtype, zero-filled beforehand: kept bits are copied
//   condensed  a CondensedMatrix allocated for (pattern, rows, cols): values, indices (and the
//              venom column sets) are written as format.hpp specifies, with no dense temporary
// Selections never differ between the two outputs, so condense(prune_dense(w)) == prune(w).
//
// Tail windows (cols not a multiple of the window) are padded logically with zero columns: a
// column past the end is chosen only when the window has fewer real columns (blocks) than slots;
// such padding slots take the lowest positions past the end and store the value 0.
#pragma once
#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/pattern.hpp"

namespace sparsenm::prune_detail {

struct Output {
  void* dense = nullptr;                  ///< rows x cols (ld = cols), zero-filled; or null
  CondensedMatrix* condensed = nullptr;   ///< allocated for (pattern, rows, cols); or null
};

void prune_element(const MatrixView& w, int n, int m, const Output& out);
void prune_vector(const MatrixView& w, int n, int m, int v, const Output& out);
void prune_block(const MatrixView& w, int n, int m, int bn, int bk, const Output& out);
void prune_venom(const MatrixView& w, int v, int m, const Output& out);

}  // namespace sparsenm::prune_detail
