// sparsenm — dense matrices on the host: an owning DenseMatrix and non-owning views.
// Row-major; ld is the distance between rows in elements (>= cols).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sparsenm/dtype.hpp"

namespace sparsenm {

struct MatrixView {
  DType dtype = DType::f32;
  const void* data = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0;

  float at(std::int64_t r, std::int64_t c) const noexcept {
    return load_as_float(dtype, data, std::size_t(r * ld + c));
  }
};

struct MutableMatrixView {
  DType dtype = DType::f32;
  void* data = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0;

  operator MatrixView() const noexcept { return {dtype, data, rows, cols, ld}; }
  float at(std::int64_t r, std::int64_t c) const noexcept {
    return load_as_float(dtype, data, std::size_t(r * ld + c));
  }
  void set(std::int64_t r, std::int64_t c, float v) const noexcept {
    store_from_float(dtype, data, std::size_t(r * ld + c), v);
  }
};

class DenseMatrix {
 public:
  DenseMatrix() = default;
  /// Zero-filled rows x cols matrix of dtype t (rows, cols >= 0).
  DenseMatrix(DType t, std::int64_t rows, std::int64_t cols);

  DType dtype() const noexcept { return dtype_; }
  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t cols() const noexcept { return cols_; }
  void* data() noexcept { return bytes_.data(); }
  const void* data() const noexcept { return bytes_.data(); }
  std::size_t size_bytes() const noexcept { return bytes_.size(); }
  std::vector<std::byte>& bytes() noexcept { return bytes_; }
  const std::vector<std::byte>& bytes() const noexcept { return bytes_; }

  MatrixView view() const noexcept { return {dtype_, bytes_.data(), rows_, cols_, cols_}; }
  MutableMatrixView mutable_view() noexcept { return {dtype_, bytes_.data(), rows_, cols_, cols_}; }
  float at(std::int64_t r, std::int64_t c) const noexcept { return view().at(r, c); }
  void set(std::int64_t r, std::int64_t c, float v) noexcept { mutable_view().set(r, c, v); }

 private:
  DType dtype_ = DType::f32;
  std::int64_t rows_ = 0, cols_ = 0;
  std::vector<std::byte> bytes_;
};

/// Uniform random values in [-1, 1) from a fixed seed (deterministic across platforms).
DenseMatrix random_matrix(DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed);

/// Throws InvalidArgument naming `argument` unless v.data is non-null (when non-empty),
/// rows, cols >= 0, ld >= cols and v.dtype is a weight dtype.
void check_view(const MatrixView& v, const char* argument);

}  // namespace sparsenm
