// Helpers shared by the training-kernel GPU tests: device check, host data in raw dtype words,
// device buffers poisoned with 0xFF bytes before every run.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/common.cuh"
#include "sparsenm/dtype.hpp"

namespace sparsenm::test {

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define SPARSENM_REQUIRE_GPU() \
  if (!::sparsenm::test::have_gpu()) GTEST_SKIP() << "no CUDA device: GPU test skipped"

/// Host matrix stored as raw dtype words (2 or 4 bytes per element).
struct HostMat {
  DType dtype = DType::f16;
  std::int64_t rows = 0, cols = 0;
  std::vector<std::byte> bytes;
  HostMat() = default;
  HostMat(DType t, std::int64_t r, std::int64_t c) : dtype(t), rows(r), cols(c), bytes(std::size_t(r * c) * dtype_size(t)) {}
  std::size_t esz() const { return dtype_size(dtype); }
  float at(std::int64_t r, std::int64_t c) const { return load_as_float(dtype, bytes.data(), std::size_t(r * cols + c)); }
  void set(std::int64_t r, std::int64_t c, float v) { store_from_float(dtype, bytes.data(), std::size_t(r * cols + c), v); }
  std::uint32_t raw(std::int64_t r, std::int64_t c) const {
    std::uint32_t v = 0;
    std::memcpy(&v, bytes.data() + std::size_t(r * cols + c) * esz(), esz());
    return v;
  }
};

inline HostMat random_mat(DType t, std::int64_t r, std::int64_t c, std::uint64_t seed, float lo = -1.f, float hi = 1.f) {
  HostMat m(t, r, c);
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) m.set(i, j, d(g));
  return m;
}

/// Device buffer filled with 0xFF bytes (NaN in every float type) — the poison.
inline cuda::DeviceBuffer poisoned(std::size_t bytes) {
  cuda::DeviceBuffer b(bytes ? bytes : 1);
  SPARSENM_CUDA_CHECK(cudaMemset(b.get(), 0xFF, b.size()));
  return b;
}
inline cuda::DeviceBuffer upload(const void* host, std::size_t bytes) {
  cuda::DeviceBuffer b(bytes ? bytes : 1);
  b.upload(host, bytes);
  return b;
}
template <class T>
std::vector<T> download(const cuda::DeviceBuffer& b, std::size_t count) {
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> v(count);
  b.download(v.data(), count * sizeof(T));
  return v;
}

/// Raw storage word of float v in dtype t (host rounding = round to nearest even). Converts
/// through the bit functions (storing a float through a pointer to a uint32_t would break
/// strict aliasing: g++ -O3 then returns the untouched 0).
inline std::uint32_t raw_of(DType t, float v) {
  if (t == DType::f16) return float_to_fp16_bits(v);
  if (t == DType::bf16) return float_to_bf16_bits(v);
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

/// Reference hw24 matrix (raw words + index bytes) built on the host.
struct Hw24 {
  std::int64_t rows = 0, windows = 0;
  std::vector<std::uint32_t> values;  ///< [rows][2*windows] raw words
  std::vector<std::uint8_t> indices;  ///< [rows][(windows+1)/2]
  Hw24(std::int64_t r, std::int64_t cols) : rows(r), windows((cols + 3) / 4), values(std::size_t(r * 2 * windows)),
                                            indices(std::size_t(r * ((windows + 1) / 2)), 0) {}
  std::int64_t irb() const { return (windows + 1) / 2; }
  void put(std::int64_t r, std::int64_t w, int lo, int hi, std::uint32_t vlo, std::uint32_t vhi) {
    values[std::size_t(r * 2 * windows + 2 * w)] = vlo;
    values[std::size_t(r * 2 * windows + 2 * w + 1)] = vhi;
    indices[std::size_t(r * irb() + w / 2)] |= std::uint8_t((lo | (hi << 2)) << (4 * (w & 1)));
  }
};

/// Compares a downloaded value buffer (raw words of esz bytes) and index bytes with a reference.
inline void expect_hw24_equal(const Hw24& ref, const std::vector<std::byte>& values, const std::vector<std::uint8_t>& idx,
                              std::size_t esz, const char* what) {
  std::int64_t bad_v = 0, bad_i = 0, first = -1;
  for (std::size_t i = 0; i < ref.values.size(); ++i) {
    std::uint32_t v = 0;
    std::memcpy(&v, values.data() + i * esz, esz);
    if (v != ref.values[i]) {
      if (first < 0) first = std::int64_t(i);
      if (bad_v < 4)
        std::printf("%s: value word %lld: got 0x%08x, want 0x%08x\n", what, (long long)i, v, ref.values[i]);
      ++bad_v;
    }
  }
  for (std::size_t i = 0; i < ref.indices.size(); ++i) bad_i += idx[i] != ref.indices[i];
  EXPECT_EQ(bad_v, 0) << what << ": value words differ (first at " << first << ")";
  EXPECT_EQ(bad_i, 0) << what << ": index bytes differ";
}

}  // namespace sparsenm::test
