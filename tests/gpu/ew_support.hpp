// sparsenm GPU tests — shared helpers for the EW kernels: random condensed weights of any
// element N:M built straight from the format spec (independent of the library's condense), an
// fp64 oracle that follows the spec's product semantics, device checks and poisoning.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/plan.hpp"

namespace ewtest {

using namespace sparsenm;

inline bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define EW_REQUIRE_DEVICE()                                                    \
  do {                                                                         \
    if (!::ewtest::have_device()) GTEST_SKIP() << "no CUDA device: GPU test skipped"; \
  } while (0)

#define EW_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

inline int bits_for(int m) {
  int b = 1;
  while ((1 << b) < m) ++b;
  return b;
}

/// Layout computed from the spec in format.hpp (element / hw24 only).
inline FormatLayout ew_layout(const Pattern& p, std::int64_t rows, std::int64_t cols) {
  FormatLayout l;
  l.pattern = p;
  l.rows = rows;
  l.cols = cols;
  l.windows = (cols + p.m - 1) / p.m;
  l.value_cols = l.windows * p.n;
  l.index_bits = bits_for(p.m);
  l.index_rows = rows;
  l.index_fields = l.windows * p.n;
  l.index_row_bytes = (l.index_fields * l.index_bits + 7) / 8;
  return l;
}

/// Random valid weight: per window N strictly ascending positions (random among the window's
/// columns inside the matrix, then the lowest free padding positions), random nonzero values;
/// slots past cols hold 0. `zero_frac`: fraction of stored in-matrix slots set to explicit 0.
inline CondensedMatrix random_ew(const Pattern& p, std::int64_t rows, std::int64_t cols, DType t,
                                 std::uint64_t seed, double zero_frac = 0.0) {
  CondensedMatrix c;
  c.layout = ew_layout(p, rows, cols);
  c.dtype = t;
  const auto& l = c.layout;
  c.values.assign(std::size_t(rows * l.value_cols) * dtype_size(t), std::byte{0});
  c.indices.assign(std::size_t(rows * l.index_row_bytes), 0);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::vector<int> pos(p.m);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t w = 0; w < l.windows; ++w) {
      const int valid = int(std::min<std::int64_t>(p.m, cols - w * p.m));
      for (int i = 0; i < p.m; ++i) pos[i] = i;
      std::shuffle(pos.begin(), pos.begin() + valid, rng);
      std::vector<int> chosen(pos.begin(), pos.begin() + std::min(valid, p.n));
      for (int i = valid; int(chosen.size()) < p.n; ++i) chosen.push_back(i);  // padding slots
      std::sort(chosen.begin(), chosen.end());
      for (int j = 0; j < p.n; ++j) {
        const std::int64_t slot = w * p.n + j;
        set_packed(c.indices.data() + r * l.index_row_bytes, slot, l.index_bits, unsigned(chosen[j]));
        float v = 0.0f;
        if (chosen[j] < valid) {
          v = val(rng);
          if (v == 0.0f || u01(rng) < zero_frac) v = (zero_frac > 0 ? 0.0f : 0.5f);
        }
        store_from_float(t, c.values.data(), std::size_t(r * l.value_cols + slot), v);
      }
    }
  }
  return c;
}

/// fp64 product per the spec: sum over stored slots with column < cols of value * x.
inline std::vector<double> oracle(const DenseMatrix& x, const CondensedMatrix& w) {
  const auto& l = w.layout;
  std::vector<double> y(std::size_t(x.rows() * l.rows), 0.0);
  for (std::int64_t r = 0; r < l.rows; ++r)
    for (std::int64_t s = 0; s < l.value_cols; ++s) {
      const std::int64_t col = (s / l.pattern.n) * l.pattern.m +
                               get_packed(w.indices.data() + r * l.index_row_bytes, s, l.index_bits);
      if (col >= l.cols) continue;
      const double v = load_as_float(w.dtype, w.values.data(), std::size_t(r * l.value_cols + s));
      for (std::int64_t i = 0; i < x.rows(); ++i) y[std::size_t(i * l.rows + r)] += v * double(x.at(i, col));
    }
  return y;
}

/// fp64 product of the dense expansion (what tensor cores on decoded fragments compute): 0 * Inf = NaN at pruned
/// positions too.
inline std::vector<double> dense_oracle(const DenseMatrix& x, const CondensedMatrix& w) {
  const DenseMatrix d = expand(w);
  std::vector<double> y(std::size_t(x.rows() * w.rows()), 0.0);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    for (std::int64_t r = 0; r < w.rows(); ++r) {
      double s = 0.0;
      for (std::int64_t c = 0; c < w.cols(); ++c) s += double(d.at(r, c)) * double(x.at(i, c));
      y[std::size_t(i * w.rows() + r)] = s;
    }
  return y;
}

struct Compare {
  double rel_err = 0;
  std::int64_t unwritten = 0;   ///< NaN where the oracle is finite (poison left)
  std::int64_t class_mismatch = 0;  ///< oracle non-finite, got a different class
};

/// got: host copy of y (dtype yt, rows x cols). Relative Frobenius error over finite entries.
inline Compare compare(const std::vector<std::byte>& got, DType yt, const std::vector<double>& ref) {
  Compare c;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = load_as_float(yt, got.data(), i), e = ref[i];
    if (!std::isfinite(e)) {
      const bool same = (std::isnan(e) && std::isnan(g)) || (std::isinf(e) && g == e);
      if (!same) ++c.class_mismatch;
      continue;
    }
    if (std::isnan(g)) {
      ++c.unwritten;
      continue;
    }
    num += (g - e) * (g - e);
    den += e * e;
  }
  c.rel_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return c;
}

inline double tolerance(DType yt) { return yt == DType::f32 ? 2e-5 : yt == DType::f16 ? 2e-3 : 8e-3; }

/// The three checks of a full comparison with the oracle: NaN / Inf exactly where the oracle has them, every
/// element written, the relative error within the dtype's tolerance (the caller's SCOPED_TRACE names the case).
inline void expect_close(const Compare& cmp, DType yt) {
  EXPECT_EQ(cmp.class_mismatch, 0);
  EXPECT_EQ(cmp.unwritten, 0);
  EXPECT_LT(cmp.rel_err, tolerance(yt));
}

/// Device memory for a test; a failed cudaMalloc throws (with the CUDA error) instead of leaving p null.
struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(std::size_t bytes) {
    if (const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1); e != cudaSuccess)
      throw std::runtime_error(std::string("cudaMalloc(") + std::to_string(bytes) + ") failed: " + cudaGetErrorString(e));
  }
  ~DeviceMem() { cudaFree(p); }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
};

/// Copies ybytes of Y plus `extra` guard bytes back from dy into y (the first ybytes); the guard
/// bytes, poisoned 0xFF before the launch, must be untouched (a kernel writing past row m - 1 fails).
inline void read_back_guarded(const void* dy, std::size_t ybytes, std::size_t extra, std::vector<std::byte>& y) {
  std::vector<std::byte> all(ybytes + extra);
  EW_CUDA(cudaMemcpy(all.data(), dy, all.size(), cudaMemcpyDeviceToHost));
  for (std::size_t i = ybytes; i < all.size(); ++i) ASSERT_EQ(all[i], std::byte{0xFF}) << "wrote past row m-1";
  y.assign(all.begin(), all.begin() + std::ptrdiff_t(ybytes));
}

/// Multiprocessors of the current device (0 when the query fails).
/// A plan descriptor for m rows of f16 X and f16 y (the rest default).
inline MatmulDesc f16_desc(std::int64_t m) {
  MatmulDesc d;
  d.m = m;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f16;
  return d;
}

inline int sms() {
  int dev = 0, s = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&s, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
  return s;
}

}  // namespace ewtest
