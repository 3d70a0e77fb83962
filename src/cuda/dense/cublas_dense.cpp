// sparsenm — the dense fallback candidate "cuda:cublas_dense": W expanded to dense on the host
// at plan time, uploaded once, multiplied with cublasGemmEx. It is always in the CUDA race
// (registry.hpp), so automatic choice is never slower than plain dense cuBLAS.
//
// Row-major y[m][n] = x[m][k] * W[n][k]^T in cuBLAS's column-major terms: the row-major
// buffers are column-major Y^T (n x m, ld n), X^T (k x m, ld k) and W^T (k x n, ld k), so
//   Y^T = (W^T)^T * X^T  ->  gemm(op_A = T, op_B = N, M = n, N = m, K = k, A = W (lda k),
//                                B = x (ldb k), C = y (ldc n)).
// fp16/bf16: tensor cores with fp32 compute (CUBLAS_COMPUTE_32F); fp32: CUBLAS_COMPUTE_32F,
// which is true fp32 SGEMM (no TF32: that is only CUBLAS_COMPUTE_32F_FAST_TF32 or the TF32
// math mode, neither used).
#include <cublas_v2.h>

#include <climits>
#include <memory>
#include <string>

#include "cuda/common.cuh"
#include "plan/registry.hpp"

namespace sparsenm::detail {
namespace {

[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, int line) {
  throw CudaError(std::string(call) + " failed: " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) +
                  ") at " + __FILE__ + ":" + std::to_string(line));
}

#define SPARSENM_CUBLAS_CHECK(call)                                          \
  do {                                                                       \
    cublasStatus_t sparsenm_s_ = (call);                                     \
    if (sparsenm_s_ != CUBLAS_STATUS_SUCCESS) throw_cublas(sparsenm_s_, #call, __LINE__); \
  } while (0)

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    default: return CUDA_R_16BF;
  }
}

// What cublasGemmEx accepts with CUBLAS_COMPUTE_32F: A/B f32 -> C f32; A/B f16 -> C f16 or f32;
// A/B bf16 -> C bf16 or f32.
std::string unsupported(const CondensedMatrix& w, const MatmulDesc& d) {
  if (d.accumulate != Accumulate::f32) return "accumulates in f32 only";
  if (std::string why = needs_finite_x(d, "multiplies the dense expansion"); !why.empty()) return why;
  if (w.rows() > INT_MAX || w.cols() > INT_MAX || d.m > INT_MAX) return "dimensions must fit in int";
  if (d.y_dtype != d.x_dtype && d.y_dtype != DType::f32)
    return "cuBLAS has no " + std::string(to_string(d.x_dtype)) + " x " + std::string(to_string(d.x_dtype)) + " -> " +
           std::string(to_string(d.y_dtype)) + " GEMM";
  return {};
}

class CublasDense final : public KernelInstance {
 public:
  CublasDense(const CondensedMatrix& w, const MatmulDesc& d)
      : m_(int(d.m)), n_(int(w.rows())), k_(int(w.cols())), ab_(cuda_type(d.x_dtype)), c_(cuda_type(d.y_dtype)) {
    const DenseMatrix dense = expand(w);
    weight_ = cuda::DeviceBuffer(dense.size_bytes());
    weight_.upload(dense.data(), dense.size_bytes());
    // cuBLAS's own default workspace sizes: 32 MiB on Hopper and later, 4 MiB before.
    int device = 0, major = 0;
    SPARSENM_CUDA_CHECK(cudaGetDevice(&device));
    SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    workspace_ = cuda::DeviceBuffer(std::size_t(major >= 9 ? 32 : 4) << 20);
    SPARSENM_CUBLAS_CHECK(cublasCreate(&handle_));
    try {
      SPARSENM_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    } catch (...) {
      cublasDestroy(handle_);
      throw;
    }
  }
  CublasDense(const CublasDense&) = delete;
  CublasDense& operator=(const CublasDense&) = delete;
  ~CublasDense() override { cublasDestroy(handle_); }

  // The handle is bound to a stream per call, so concurrent runs must not share this plan:
  // workspace_bytes() != 0 says so (plan.hpp).
  void run(const void* x, void* y, void* stream) const override {
    // cublasSetStream resets the workspace to cuBLAS's pool; set ours again after it.
    SPARSENM_CUBLAS_CHECK(cublasSetStream(handle_, static_cast<cudaStream_t>(stream)));
    SPARSENM_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.get(), workspace_.size()));
    const float alpha = 1.0f, beta = 0.0f;
    SPARSENM_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, n_, m_, k_, &alpha, weight_.get(), ab_, k_, x,
                                       ab_, k_, &beta, y, c_, n_, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  std::size_t workspace_bytes() const override { return workspace_.size(); }

 private:
  int m_, n_, k_;
  cudaDataType_t ab_, c_;
  cuda::DeviceBuffer weight_, workspace_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

void register_dense_kernels(KernelRegistry& r) {
  r.add(KernelCandidate{
      .name = "cuda:cublas_dense",
      .backend = Backend::cuda,
      .unsupported = &unsupported,
      .create = [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
        return std::make_unique<CublasDense>(w, d);
      },
  });
}

}  // namespace sparsenm::detail
