// sparsenm — cuSPARSELt as a plan backend (issue 4: "where cuSPARSELt is faster for some shape, the
// plan may use it as a backend — and must say so"). Candidate "cuda:cusparselt_24": hardware 2:4
// weights, and element N:M weights whose aligned groups of 4 hold <= 2 nonzeros (the same set the
// sparse tensor-core kernels take, sptc::hw24_unsupported), f16 or bf16 in = out, fp32 compute.
// When the plan race picks it, Plan's reason names it ("fastest of N candidates: cuda:cusparselt_24
// ...") like any other kernel.
//
// Optional at build time: CMake defines SPARSENM_WITH_CUSPARSELT only when it finds cusparseLt.h
// (SPARSENM_CUSPARSELT_ROOT, or the nvidia-cusparselt wheel of the build's Python); without it
// this file registers nothing. The library itself is loaded with dlopen at first use by
// lt_gemm.cpp (the GEMM wrapper this file shares with the FST layer), so libsparsenm has no link
// dependency on it and a machine without it reports the candidate unsupported with the reason.
//
// Plan time (constructor): expand the weight to dense S(W) [n][k], upload, init the matmul plan,
// check the 2:4 pattern with cusparseLtSpMMAPruneCheck, compress, run cusparseLtMatmulSearch on
// scratch X / Y, allocate the (post-search) workspace; the dense copy and the scratch buffers are
// freed. run() is one cusparseLtMatmul: nothing allocated, nothing searched.
//
// Layout (all column-major, as the sptc bench peer that ran on the H200 with 0.8.x): y [m][n]
// row-major = D (n x m, ld n); W [n][k] row-major = A stored k x n (ld k), op(A) = T; x [m][k]
// row-major = B (k x m, ld k), op(B) = N. API used: only functions present in 0.8 and 0.10.
#include "plan/registry.hpp"

#if defined(SPARSENM_WITH_CUSPARSELT)
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "cuda/common.cuh"
#include "cuda/cusparselt/lt_gemm.hpp"
#include "cuda/sptc/pack.hpp"
#include "sparsenm/format.hpp"
#endif

namespace sparsenm::detail {

#if !defined(SPARSENM_WITH_CUSPARSELT)

void register_cusparselt_kernels(KernelRegistry& r) { (void)r; }  // built without cuSPARSELt

#else

namespace {

std::string lt_unsupported(const CondensedMatrix& w, const MatmulDesc& d) {
  if (d.x_dtype != w.dtype) return "x dtype must equal the weight dtype";
  if (w.dtype != DType::f16 && w.dtype != DType::bf16) return "f16 or bf16 weights only";
  if (d.y_dtype != d.x_dtype) return "y dtype must equal the x dtype (cuSPARSELt C/D type = A/B type here)";
  if (d.accumulate != Accumulate::f32) return "accumulates in f32 only";
  if (d.m < 1) return "m must be >= 1";
  // cuSPARSELt's dimension rules for 16-bit operands: rows, columns and leading dimensions multiples
  // of 8 (structured: of 16 along k); kept conservative here so that no run pads
  if (d.m % 8 != 0 || w.layout.rows % 16 != 0 || w.layout.cols % 16 != 0)
    return "needs m % 8 == 0 and weight rows, cols multiples of 16 (cuSPARSELt alignment rules; no padding here)";
  if (w.layout.rows >= (std::int64_t(1) << 31) || w.layout.cols >= (std::int64_t(1) << 31) || d.m >= (std::int64_t(1) << 31))
    return "dimensions must be < 2^31";
  if (!every_group_stores_two(w))
    if (std::string why = needs_finite_x(d, "zero-fills groups of 4 holding fewer than 2 stored slots"); !why.empty())
      return why;
  if (std::string why = sptc::hw24_unsupported(w); !why.empty()) return why;
  return cuda::lt::unavailable_reason();  // no device, sm < 80, library not loadable: the reason
}

/// y [m][n] row-major = D (n x m col-major, ld n) = op(A) . B with A = W [n][k] row-major stored k x n
/// col-major (ld k), op(A) = T, and B = x [m][k] row-major stored k x m col-major (ld k).
cuda::lt::GemmShape plan_shape(const CondensedMatrix& w, const MatmulDesc& d) {
  cuda::lt::GemmShape s;
  s.dtype = d.x_dtype;
  s.order = cuda::lt::Order::col;
  s.trans_a = true;
  s.trans_b = false;
  s.sparse_a = true;
  s.m = w.layout.rows;
  s.n = d.m;
  s.k = w.layout.cols;
  s.lda = w.layout.cols;
  s.ldb = w.layout.cols;
  s.ldc = w.layout.rows;
  return s;
}

class LtInstance : public KernelInstance {
 public:
  LtInstance(const CondensedMatrix& w, const MatmulDesc& d) : gemm_(plan_shape(w, d)) {
    const DenseMatrix dense = expand(w);  // S(W) [n][k]: EW patterns with <= 2 per group of 4 are 2:4
    cuda::DeviceBuffer dw(dense.size_bytes());
    dw.upload(dense.data(), dense.size_bytes());
    cudaStream_t s = nullptr;
    {
      // The pattern itself was already checked exactly on the host (hw24_unsupported) before this
      // candidate was built; this asks cuSPARSELt whether it reads the layout the same way.
      cuda::DeviceBuffer flag(sizeof(int));
      if (!gemm_.prune_check(dw.get(), flag.as<int>(), s))
        throw Unsupported("cuSPARSELt: the weight is not 2:4 in the layout cuSPARSELt checks (SpMMAPruneCheck)");
    }
    gemm_.compress(dw.get(), s);
    SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
    {
      // MatmulSearch times the configurations on scratch operands (plan time only)
      const std::size_t es = dtype_size(d.x_dtype);
      cuda::DeviceBuffer x(std::size_t(d.m * w.layout.cols) * es), y(std::size_t(d.m * w.layout.rows) * es);
      SPARSENM_CUDA_CHECK(cudaMemset(x.get(), 0, x.size()));
      gemm_.search(x.get(), y.get(), s);
    }
  }

  void run(const void* x, void* y, void* stream) const override {
    if (reinterpret_cast<std::uintptr_t>(x) % 16 != 0 || reinterpret_cast<std::uintptr_t>(y) % 16 != 0)
      throw InvalidArgument("x / y", "cuda:cusparselt_24 needs 16-byte aligned x and y");
    gemm_.run(x, y, static_cast<cudaStream_t>(stream));
  }
  std::size_t workspace_bytes() const override { return gemm_.workspace_bytes(); }

 private:
  cuda::lt::SparseGemm gemm_;
};

}  // namespace

void register_cusparselt_kernels(KernelRegistry& r) {
  r.add({"cuda:cusparselt_24", Backend::cuda, lt_unsupported,
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
           return std::make_unique<LtInstance>(w, d);
         }});
}

#endif  // SPARSENM_WITH_CUSPARSELT

}  // namespace sparsenm::detail
