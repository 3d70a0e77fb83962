#include "sparsenm/matrix.hpp"

#include <string>

#include "sparsenm/error.hpp"

namespace sparsenm {

DenseMatrix::DenseMatrix(DType t, std::int64_t rows, std::int64_t cols) : dtype_(t), rows_(rows), cols_(cols) {
  if (rows < 0 || cols < 0)
    throw InvalidArgument("rows/cols", "must be >= 0 (got " + std::to_string(rows) + "x" + std::to_string(cols) + ")");
  bytes_.assign(std::size_t(rows) * std::size_t(cols) * dtype_size(t), std::byte{0});
}

namespace {
// SplitMix64: tiny, deterministic everywhere.
inline std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

DenseMatrix random_matrix(DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  if (!is_weight_dtype(t) && t != DType::f64)
    throw InvalidArgument("dtype", "random_matrix needs f32, f16, bf16 or f64 (got " + std::string(to_string(t)) + ")");
  DenseMatrix out(t, rows, cols);
  const std::uint64_t base = splitmix64(seed);
  const std::size_t count = std::size_t(rows) * std::size_t(cols);
#pragma omp parallel for schedule(static) if (count > (1u << 16))
  for (std::int64_t i = 0; i < std::int64_t(count); ++i) {
    std::uint64_t r = splitmix64(base ^ std::uint64_t(i) * 0xd6e8feb86659fd93ull);
    float u = float(r >> 40) * (1.0f / 16777216.0f);  // [0, 1) with 24 bits
    store_from_float(t, out.data(), std::size_t(i), 2.0f * u - 1.0f);
  }
  return out;
}

void check_view(const MatrixView& v, const char* argument) {
  std::string a(argument);
  if (v.rows < 0 || v.cols < 0)
    throw InvalidArgument(a, "rows and cols must be >= 0 (got " + std::to_string(v.rows) + "x" + std::to_string(v.cols) + ")");
  if (v.ld < v.cols)
    throw InvalidArgument(a, "leading dimension must be >= cols (got ld " + std::to_string(v.ld) + " < cols " + std::to_string(v.cols) + ")");
  if (!is_weight_dtype(v.dtype))
    throw InvalidArgument(a, "dtype must be f32, f16 or bf16 (got " + std::string(to_string(v.dtype)) + ")");
  if (v.rows > 0 && v.cols > 0 && v.data == nullptr) throw InvalidArgument(a, "data must not be null");
}

}  // namespace sparsenm
