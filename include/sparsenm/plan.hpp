// sparsenm — describe -> plan -> run (cuSPARSELt-like, but short).
//
//   sparsenm::MatmulDesc desc{.m = 16, .x_dtype = DType::f16, .y_dtype = DType::f16};
//   auto plan = sparsenm::Plan::create(weight, desc);     // packs the weight, picks the kernel
//   plan.run(x, y, stream);                               // no allocation, no sync, no search
//
// A plan owns the weight in the chosen kernel's layout (on the device for the CUDA backend) and
// any workspace. run() is stream-ordered and may be called concurrently on different streams
// only if the plan reports workspace_bytes() == 0.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "sparsenm/format.hpp"
#include "sparsenm/reference.hpp"

namespace sparsenm {

enum class Backend : std::uint8_t { automatic, cpu, cuda };
std::string_view to_string(Backend b) noexcept;

struct MatmulDesc {
  std::int64_t m = 1;               ///< rows of X and Y (tokens); run() takes exactly m rows
  DType x_dtype = DType::f16;       ///< must equal the weight's dtype
  DType y_dtype = DType::f16;       ///< f32, f16 or bf16
  Accumulate accumulate = Accumulate::f32;
  Backend backend = Backend::automatic;  ///< automatic: CUDA when a device exists, else CPU
  std::string kernel;               ///< force a kernel by name ("" = choose); InvalidArgument if unknown
  /// true: the caller promises X holds no Inf/NaN, so the plan may also race kernels that multiply
  /// explicit zeros at pruned positions (cuBLAS on the dense expansion; 2:4 sparse tensor cores on
  /// weights whose groups of 4 hold fewer than 2 stored slots, zero-filled; cuSPARSELt). For
  /// finite X they give the same product. false: only kernels that honour FORMAT.md section 8 for
  /// any X (pruned positions contribute nothing even where X is Inf/NaN) are candidates.
  bool x_finite = true;
};

class Plan {
 public:
  /// Validates (InvalidArgument naming the field and rule), packs, chooses. May allocate.
  static Plan create(const CondensedMatrix& weight, const MatmulDesc& desc);

  /// y[m][n] = x[m][k] * W^T, row-major, leading dimensions k and n. Pointers are host memory
  /// for the CPU backend and device memory for the CUDA backend. stream: a cudaStream_t (or
  /// nullptr for the default stream); ignored by the CPU backend.
  void run(const void* x, void* y, void* stream = nullptr) const;

  Backend backend() const noexcept;
  const std::string& kernel() const noexcept;    ///< name of the chosen kernel
  const std::string& reason() const noexcept;    ///< why it was chosen (one line)
  const MatmulDesc& desc() const noexcept;
  const FormatLayout& layout() const noexcept;
  std::size_t workspace_bytes() const noexcept;  ///< device memory the plan holds besides W

  struct Impl;
  explicit Plan(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};

/// True when a CUDA device is usable from this build.
bool cuda_available() noexcept;

/// One call for scripts: host x and y, plans on the best backend, copies as needed, waits.
void matmul(const MatrixView& x, const CondensedMatrix& w, const MutableMatrixView& y,
            Backend backend = Backend::automatic);

}  // namespace sparsenm
