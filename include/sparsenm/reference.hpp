// sparsenm — CPU reference kernels: Y = X * W^T straight from the condensed format (never by
// expanding W). The oracle of every GPU test and the CPU backend of the plan API.
#pragma once
#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"

namespace sparsenm {

enum class Accumulate : std::uint8_t { f32, f64 };

/// y[m][n] = x[m][k] * w^T. x: weight dtype, cols == w.cols(); y: weight dtype, rows == x.rows,
/// cols == w.rows(). Accumulation in f32 (ordered by window) or f64. OpenMP-parallel over rows.
/// Throws InvalidArgument on a shape or dtype mismatch, FormatError if w fails validate().
void reference_matmul(const MatrixView& x, const CondensedMatrix& w, const MutableMatrixView& y,
                      Accumulate acc = Accumulate::f64);

/// Same product in f64, returned as a row-major m x n array: the oracle for tests.
std::vector<double> reference_matmul_f64(const MatrixView& x, const CondensedMatrix& w);

/// Naive dense product in f64 (x[m][k] * w[n][k]^T): checks the checker.
std::vector<double> dense_matmul_f64(const MatrixView& x, const MatrixView& w);

/// ||got - ref||_F / ||ref||_F (NaN if got holds NaN where ref does not; 0/0 -> 0).
/// NaN in both at one place, or the same infinity in both, agree; an infinity on one side
/// only (or a different one) gives +inf.
double relative_error(const MatrixView& got, const std::vector<double>& ref);

}  // namespace sparsenm
