// sparsenm GPU tests — shared helpers of the sparse tensor-core tests (test_sptc.cu,
// test_sptc_ra.cu): fp64 reference check on random 2:4-structured data with poisoned outputs,
// and running one plan candidate by name.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/common.cuh"
#include "plan/registry.hpp"
#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm::detail {
void register_sptc_kernels(KernelRegistry& r);
}

namespace sparsenm::sptc_test {

inline bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define REQUIRE_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device: sparse tensor-core tests skipped"

struct Case {
  std::int64_t m, n, k;
};

struct Result {
  double rel_fro = 0, max_rel = 0;
};

/// Runs `run(x_dev, y_dev)` on random data and compares with the fp64 product.
template <class Run>
inline Result check(const Pattern& pat, DType in, DType out, const Case& c, std::uint64_t seed, Run&& run_fn) {
  DenseMatrix wd = random_pattern_matrix(pat, in, c.n, c.k, seed, 0.1);
  const CondensedMatrix w = condense(wd.view(), pat);
  DenseMatrix x = random_matrix(in, c.m, c.k, seed + 1);
  std::vector<double> ref(std::size_t(c.m * c.n), 0.0);
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (std::int64_t q = 0; q < c.k; ++q) s += double(x.at(i, q)) * double(wd.at(j, q));
      ref[std::size_t(i * c.n + j)] = s;
    }
  cuda::DeviceBuffer xd(x.size_bytes()), yd(std::size_t(c.m * c.n) * dtype_size(out));
  xd.upload(x.data(), x.size_bytes());
  SPARSENM_CUDA_CHECK(cudaMemset(yd.get(), 0xFF, yd.size()));  // poison (NaN in every dtype)
  run_fn(w, xd.get(), yd.get());
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  DenseMatrix y(out, c.m, c.n);
  yd.download(y.data(), y.size_bytes());
  double num = 0, den = 0, maxerr = 0, maxref = 0;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      const double g = y.at(i, j), r = ref[std::size_t(i * c.n + j)];
      if (!std::isfinite(g)) return {INFINITY, INFINITY};
      num += (g - r) * (g - r);
      den += r * r;
      maxerr = std::max(maxerr, std::abs(g - r));
      maxref = std::max(maxref, std::abs(r));
    }
  return {std::sqrt(num / std::max(den, 1e-300)), maxerr / std::max(maxref, 1e-300)};
}

inline double tolerance(DType out) { return out == DType::f32 ? 1e-5 : out == DType::f16 ? 2e-3 : 1e-2; }

inline void run_candidate(const std::string& name, const Pattern& pat, DType in, DType out, const Case& c, std::uint64_t seed) {
  detail::KernelRegistry reg;
  detail::register_sptc_kernels(reg);
  const detail::KernelCandidate* cand = nullptr;
  for (const auto& k : reg.candidates())
    if (k.name == name) cand = &k;
  ASSERT_NE(cand, nullptr);
  MatmulDesc d;
  d.m = c.m;
  d.x_dtype = in;
  d.y_dtype = out;
  bool skipped = false;
  Result r = check(pat, in, out, c, seed, [&](const CondensedMatrix& w, void* x, void* y) {
    const std::string why = cand->unsupported(w, d);
    if (!why.empty()) {
      skipped = true;
      return;
    }
    auto inst = cand->create(w, d);
    inst->run(x, y, nullptr);
  });
  if (skipped) GTEST_SKIP() << name << " unsupported here";
  EXPECT_LT(r.rel_fro, tolerance(out)) << name << " m=" << c.m << " n=" << c.n << " k=" << c.k;
  EXPECT_LT(r.max_rel, 10 * tolerance(out)) << name << " m=" << c.m << " n=" << c.n << " k=" << c.k;
}

}  // namespace sparsenm::sptc_test
