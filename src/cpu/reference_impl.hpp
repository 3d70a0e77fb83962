// sparsenm — internal entry of the CPU reference kernel for callers that validated the weight
// already (the CPU plan validates once in Plan::create, not on every run).
#pragma once
#include "sparsenm/reference.hpp"

namespace sparsenm::detail {

/// The O(1) operand checks of reference_matmul (InvalidArgument): w's dtype, layout and buffer
/// sizes; x and y views, dtypes and shapes (x: m x w.cols, weight dtype; y: m x w.rows).
void check_matmul_operands(const MatrixView& x, const CondensedMatrix& w, const MatrixView& y);

/// reference_matmul without CondensedMatrix::validate(): only the O(1) checks of dtypes,
/// shapes and buffer sizes (enough for memory safety; a corrupt index can give a wrong sum).
void reference_matmul_trusted(const MatrixView& x, const CondensedMatrix& w, const MutableMatrixView& y,
                              Accumulate acc);

}  // namespace sparsenm::detail
