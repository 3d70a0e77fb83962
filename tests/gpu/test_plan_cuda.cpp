// GPU tests of the plan API on the CUDA backend: the dense cuBLAS fallback forced by name
// (true fp32: no TF32), automatic choice (the timing race), the one-call matmul with strided
// host views, and a plan run on a caller's stream. Each compares to the f64 CPU reference.
// Skips visibly without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/common.cuh"
#include "plan/registry.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

#define REQUIRE_DEVICE() \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: CUDA plan tests skipped"

double tolerance(DType y) { return y == DType::f32 ? 2e-6 : y == DType::f16 ? 2e-3 : 1.5e-2; }

CondensedMatrix weight(const char* text, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const Pattern p = Pattern::parse(text);
  return condense(random_pattern_matrix(p, t, rows, cols, seed, 0.1).view(), p);
}

// Runs `plan` on device copies of x (stream may be null) and returns y on the host.
DenseMatrix run_on_device(const Plan& plan, const DenseMatrix& x, DType y_dtype, std::int64_t n,
                          cudaStream_t stream = nullptr) {
  cuda::DeviceBuffer xd(x.size_bytes()), yd(std::size_t(x.rows() * n) * dtype_size(y_dtype));
  xd.upload(x.data(), x.size_bytes());
  // Poison (NaN in every dtype) on the stream the plan runs on: a cudaMemset on the legacy stream
  // is not ordered before work on a non-blocking stream and could land after the kernel's stores.
  SPARSENM_CUDA_CHECK(cudaMemsetAsync(yd.get(), 0xff, yd.size(), stream));
  plan.run(xd.get(), yd.get(), stream);
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  DenseMatrix y(y_dtype, x.rows(), n);
  yd.download(y.data(), y.size_bytes());
  return y;
}

TEST(PlanCuda, CublasDenseForcedMatchesReference) {
  REQUIRE_DEVICE();
  struct Case {
    const char* pattern;
    DType x, y;
    std::int64_t rows, cols;
  };
  const Case cases[] = {{"2:8", DType::f16, DType::f16, 96, 200},  {"2:4", DType::bf16, DType::f32, 61, 130},
                        {"1:4", DType::f32, DType::f32, 50, 333},  {"32:2:8", DType::f16, DType::f32, 70, 96},
                        {"2:8/bw4x2", DType::bf16, DType::bf16, 40, 77}};
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    const CondensedMatrix w = weight(c.pattern, c.x, c.rows, c.cols, seed++);
    for (std::int64_t m : {1, 16, 37}) {
      SCOPED_TRACE(std::string(c.pattern) + " " + std::string(to_string(c.x)) + " m=" + std::to_string(m));
      MatmulDesc d;
      d.m = m;
      d.x_dtype = c.x;
      d.y_dtype = c.y;
      d.kernel = "cuda:cublas_dense";
      const Plan plan = Plan::create(w, d);
      EXPECT_EQ(plan.backend(), Backend::cuda);
      EXPECT_EQ(plan.kernel(), "cuda:cublas_dense");
      EXPECT_GT(plan.workspace_bytes(), 0u);
      const DenseMatrix x = random_matrix(c.x, m, c.cols, seed++);
      const DenseMatrix y = run_on_device(plan, x, c.y, c.rows);
      // f32 in and out at 2e-6: TF32 (10-bit mantissa) would miss this by orders of magnitude.
      EXPECT_LE(relative_error(y.view(), reference_matmul_f64(x.view(), w)), tolerance(c.y));
    }
  }
}

TEST(PlanCuda, CublasDenseRejectsWhatItCannotDo) {
  REQUIRE_DEVICE();
  const CondensedMatrix w = weight("2:8", DType::f16, 16, 64, 3);
  MatmulDesc d;
  d.m = 2;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::bf16;  // no f16 x f16 -> bf16 GEMM in cuBLAS
  d.kernel = "cuda:cublas_dense";
  EXPECT_THROW(Plan::create(w, d), Unsupported);
  d.y_dtype = DType::f16;
  d.accumulate = Accumulate::f64;
  EXPECT_THROW(Plan::create(w, d), Unsupported);
}

TEST(PlanCuda, AutomaticChoiceIsCorrectAndExplained) {
  REQUIRE_DEVICE();
  for (std::int64_t m : {1, 8, 64}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    const CondensedMatrix w = weight("2:8", DType::f16, 256, 512, 10 + std::uint64_t(m));
    MatmulDesc d;
    d.m = m;
    d.x_dtype = DType::f16;
    d.y_dtype = DType::f16;
    const Plan plan = Plan::create(w, d);
    EXPECT_EQ(plan.backend(), Backend::cuda);
    EXPECT_EQ(plan.kernel().rfind("cuda:", 0), 0u) << plan.kernel();
    const std::string& why = plan.reason();
    EXPECT_TRUE(why.rfind("fastest of ", 0) == 0 || why.rfind("only supported candidate", 0) == 0) << why;
    if (why.rfind("fastest of ", 0) == 0) {
      EXPECT_NE(why.find("cuda:cublas_dense"), std::string::npos) << why;  // always in the race
      EXPECT_NE(why.find(" ms"), std::string::npos) << why;
    }
    std::printf("  m=%lld: %s -- %s\n", (long long)m, plan.kernel().c_str(), why.c_str());
    const DenseMatrix x = random_matrix(DType::f16, m, 512, 20);
    const DenseMatrix y = run_on_device(plan, x, DType::f16, 256);
    EXPECT_LE(relative_error(y.view(), reference_matmul_f64(x.view(), w)), 2e-3);
  }
}

// A 2:4 decode plan races cuda:vnm_gemv (small m) against cuBLAS and the others; its reason names
// the variant and launch shape the vnm_gemv instance runs (KernelInstance::describe), and the
// result is right whichever candidate wins.
TEST(PlanCuda, Hw24DecodeReasonNamesTheVnmGemvVariant) {
  REQUIRE_DEVICE();
  for (std::int64_t m : {1, 16, 32}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    const CondensedMatrix w = weight("2:4/hw", DType::f16, 1040, 2048, 90 + std::uint64_t(m));
    MatmulDesc d;
    d.m = m;
    d.x_dtype = DType::f16;
    d.y_dtype = DType::f16;
    const Plan plan = Plan::create(w, d);
    const std::string& why = plan.reason();
    EXPECT_NE(why.find("cuda:vnm_gemv [variant "), std::string::npos) << why;
    EXPECT_NE(why.find("cuda:cublas_dense"), std::string::npos) << why;
    std::printf("  m=%lld: %s -- %s\n", (long long)m, plan.kernel().c_str(), why.c_str());
    const DenseMatrix x = random_matrix(DType::f16, m, 2048, 21);
    const DenseMatrix y = run_on_device(plan, x, DType::f16, 1040);
    EXPECT_LE(relative_error(y.view(), reference_matmul_f64(x.view(), w)), 2e-3);
  }
}

// desc.x_finite = false: only kernels that honour FORMAT.md section 8 for any X may be chosen
// (cuBLAS on the dense expansion and the zero-filled 2:4 repack of a 2:8 weight may not), and the
// product has NaN exactly where a stored slot meets the NaN column of X, nowhere else.
TEST(PlanCuda, NonFiniteXKeepsTheCondensedSemantics) {
  REQUIRE_DEVICE();
  const std::int64_t n = 256, k = 512, nan_col = 37;
  for (std::int64_t m : {1, 8, 64}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    const CondensedMatrix w = weight("2:8", DType::f16, n, k, 60 + std::uint64_t(m));
    MatmulDesc d;
    d.m = m;
    d.x_dtype = DType::f16;
    d.y_dtype = DType::f32;
    d.x_finite = false;
    const Plan plan = Plan::create(w, d);
    const std::string& why = plan.reason();
    EXPECT_EQ(plan.kernel().find("cublas"), std::string::npos) << why;
    EXPECT_EQ(plan.kernel().find("sptc_24"), std::string::npos) << why;
    EXPECT_EQ(plan.kernel().find("cusparselt"), std::string::npos) << why;
    EXPECT_NE(why.find("cuda:cublas_dense (desc.x_finite is false"), std::string::npos) << why;
    std::printf("  m=%lld: %s -- %s\n", (long long)m, plan.kernel().c_str(), why.c_str());

    DenseMatrix x = random_matrix(DType::f16, m, k, 70);
    auto* xb = static_cast<std::uint16_t*>(x.data());
    for (std::int64_t i = 0; i < m; ++i) xb[i * k + nan_col] = 0x7E00u;  // f16 quiet NaN
    const DenseMatrix y = run_on_device(plan, x, DType::f32, n);
    const std::vector<double> ref = reference_matmul_f64(x.view(), w);  // section 8: stored slots only
    std::int64_t nan_rows = 0, bad = 0;
    double num = 0.0, den = 0.0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t r = 0; r < n; ++r) {
        const double want = ref[std::size_t(i * n + r)];
        const double got = y.at(i, r);
        if (std::isnan(want)) {
          nan_rows += i == 0;
          bad += !std::isnan(got);
        } else if (!std::isfinite(got)) {
          ++bad;
        } else {
          num += (got - want) * (got - want);
          den += want * want;
        }
      }
    EXPECT_EQ(bad, 0) << "NaN where no stored slot meets the NaN column, or a stored slot lost it";
    EXPECT_GT(nan_rows, 0) << "the test needs rows that store column " << nan_col;
    EXPECT_LT(nan_rows, n) << "the test needs rows that prune column " << nan_col;
    EXPECT_LE(std::sqrt(num / den), 2e-3);
  }
}

// The automatic choice and then every CUDA candidate that supports the problem, each forced, run on
// a caller's non-blocking stream: a kernel (or a split-k reduce / transpose launch) that strayed onto
// the legacy stream would race the poisoned output.
TEST(PlanCuda, RunsOnACallerStream) {
  REQUIRE_DEVICE();
  const CondensedMatrix w = weight("2:4", DType::bf16, 64, 96, 30);
  MatmulDesc d;
  d.m = 5;
  d.x_dtype = DType::bf16;
  d.y_dtype = DType::f32;
  std::vector<std::string> kernels = {""};
  for (const auto& c : detail::kernel_registry().candidates())
    if (c.backend == Backend::cuda && c.unsupported(w, d).empty()) kernels.push_back(c.name);
  EXPECT_GE(kernels.size(), 3u);  // the automatic choice, cuBLAS and at least one sparse kernel
  cudaStream_t stream = nullptr;
  SPARSENM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const DenseMatrix x = random_matrix(DType::bf16, 5, 96, 31);
  const std::vector<double> ref = reference_matmul_f64(x.view(), w);
  try {
    for (const std::string& k : kernels) {
      d.kernel = k;
      const Plan plan = Plan::create(w, d);
      SCOPED_TRACE(plan.kernel() + (k.empty() ? " (automatic: " + plan.reason() + ")" : ""));
      const DenseMatrix y = run_on_device(plan, x, DType::f32, 64, stream);
      EXPECT_LE(relative_error(y.view(), ref), 1e-5);  // any kernel's f32 order
    }
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  SPARSENM_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(PlanCuda, OneCallMatmulWithStridedViews) {
  REQUIRE_DEVICE();
  const CondensedMatrix w = weight("2:8/vw4", DType::f16, 30, 70, 40);
  const DenseMatrix xs = random_matrix(DType::f16, 6, 75, 41);
  const MatrixView x{DType::f16, xs.data(), 6, 70, 75};
  DenseMatrix ys(DType::f32, 6, 33);
  for (std::int64_t i = 0; i < 6; ++i)
    for (std::int64_t j = 0; j < 33; ++j) ys.set(i, j, 42.0f);
  matmul(x, w, MutableMatrixView{DType::f32, ys.data(), 6, 30, 33}, Backend::cuda);
  const std::vector<double> want = reference_matmul_f64(x, w);
  const MatrixView y{DType::f32, ys.data(), 6, 30, 33};
  EXPECT_LE(relative_error(y, want), 2e-6);
  for (std::int64_t i = 0; i < 6; ++i)
    for (std::int64_t j = 30; j < 33; ++j) EXPECT_EQ(ys.at(i, j), 42.0f) << "padding of y written";
}

}  // namespace
}  // namespace sparsenm
