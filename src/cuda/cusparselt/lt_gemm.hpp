// sparsenm — one cuSPARSELt 2:4 GEMM with a structured operand, shared by the plan backend
// (lt_backend.cpp, "cuda:cusparselt_24") and the FST layer's optional cuSPARSELt GEMMs
// (src/cuda/train/fst_linear.cu). No cuSPARSELt types here: the library is dlopen'ed by
// lt_gemm.cpp (the path CMake found, then the soname), so nothing links against it and a build or
// machine without it reports why through unavailable_reason() / Unsupported.
//
// Shape, in cuSPARSELt's terms: C [m][n] = op(A) [m][k] . op(B) [k][n], fp32 accumulation, one
// 16-bit dtype for A, B, C; `order` is the storage order of all three (ld = the leading
// dimension of the STORED matrix: A is m x k when !trans_a, else k x m; B is k x n when
// !trans_b, else n x k). Exactly one of A, B is structured (2:4 along k of op(.)); its values
// live in an owned compressed buffer that compress() refills from a dense, already 2:4-pruned
// matrix (the layout the descriptor describes). run() is one cusparseLtMatmul: nothing allocated.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sparsenm/dtype.hpp"

namespace sparsenm::cuda::lt {

/// Empty when cuSPARSELt can be used in this process (built with it, library loadable, symbols
/// found, current device sm_80+); otherwise why not.
std::string unavailable_reason();

enum class Order { row, col };

struct GemmShape {
  DType dtype = DType::f16;  ///< f16 or bf16 (A, B, C, D)
  Order order = Order::col;
  bool trans_a = false, trans_b = false;
  bool sparse_a = true;  ///< the structured operand: A (true) or B (false)
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
};

class SparseGemm {
 public:
  /// Descriptors, plan, compressed buffer, compress scratch and workspace. Throws Unsupported when
  /// cuSPARSELt is unavailable, CudaError naming the call when cuSPARSELt rejects the shape.
  explicit SparseGemm(const GemmShape& shape);
  ~SparseGemm();
  SparseGemm(const SparseGemm&) = delete;
  SparseGemm& operator=(const SparseGemm&) = delete;

  const GemmShape& shape() const noexcept;
  /// cusparseLtSpMMAPruneCheck on the dense structured operand: true when cuSPARSELt accepts it as
  /// 2:4 (synchronises `stream`; `flag` a device int the call may overwrite).
  bool prune_check(const void* dense, int* flag, cudaStream_t stream) const;
  /// cusparseLtSpMMACompress of the dense structured operand into the owned compressed buffer.
  void compress(const void* dense, cudaStream_t stream);
  /// cusparseLtMatmulSearch (alpha 1, beta 0) with `other` = the dense operand and `c` the output;
  /// synchronises, then re-sizes the workspace for the configuration found. Plan time only.
  void search(const void* other, void* c, cudaStream_t stream);
  /// C = op(A) . op(B) with the compressed structured operand and `other` the dense one.
  void run(const void* other, void* c, cudaStream_t stream) const;

  std::size_t compressed_bytes() const noexcept;  ///< incl. a zeroed over-read slack (lt_gemm.cpp)
  std::size_t workspace_bytes() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsenm::cuda::lt
