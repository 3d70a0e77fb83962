// sparsenm — internal: the kernels a plan can choose from.
//
// Every backend (CPU reference, each CUDA kernel family, dense cuBLAS fallback, cuSPARSELt)
// registers candidates. Plan::create asks each candidate whether it supports the problem,
// then picks: a forced `desc.kernel` by name; else, on the CUDA backend, the fastest supported
// candidate by timing each once on the real packed weight at plan time (never in run()); on the
// CPU backend, the reference kernel. The dense-cuBLAS candidate is always in the CUDA race, so
// automatic choice is never slower than running the dense expansion (within timing noise).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sparsenm/format.hpp"
#include "sparsenm/plan.hpp"

namespace sparsenm::detail {

/// A packed weight plus everything a kernel needs; created once per plan.
class KernelInstance {
 public:
  virtual ~KernelInstance() = default;
  /// y = x * W^T for desc.m rows. Stream-ordered; no allocation, no sync, no search.
  virtual void run(const void* x, void* y, void* stream) const = 0;
  /// Device (or host) bytes held besides the packed weight.
  virtual std::size_t workspace_bytes() const { return 0; }
  /// What this instance runs inside its candidate (e.g. a kernel variant and its launch shape);
  /// the plan's reason names it next to the candidate. Empty when there is nothing to add.
  virtual std::string describe() const { return {}; }
};

/// FORMAT.md section 8 for kernels that multiply explicit zeros at pruned positions (a dense
/// expansion, or the zero fill of a 2:4 repack): they match the condensed product only when X is
/// finite. Returns "" when the problem allows them, else the reason (for unsupported()).
inline std::string needs_finite_x(const MatmulDesc& d, const char* what) {
  if (d.x_finite) return {};
  return std::string("desc.x_finite is false and this kernel ") + what +
         " (0 * Inf = NaN at pruned positions; FORMAT.md section 8)";
}

/// True when every aligned group of 4 columns stores exactly 2 slots (hw 2:4, element 2:4), so a
/// 2:4 sparse-tensor-core kernel multiplies no zero fill and honours section 8 for any X.
inline bool every_group_stores_two(const CondensedMatrix& w) {
  const Pattern& p = w.layout.pattern;
  return p.kind == Granularity::hw24 || (p.kind == Granularity::element && p.n == 2 && p.m == 4);
}

struct KernelCandidate {
  std::string name;   ///< e.g. "cpu:reference", "cuda:ew_spmv", "cuda:cublas_dense"
  Backend backend = Backend::cpu;
  /// Empty string when the candidate supports (weight, desc); else the reason it does not.
  std::function<std::string(const CondensedMatrix&, const MatmulDesc&)> unsupported;
  std::function<std::unique_ptr<KernelInstance>(const CondensedMatrix&, const MatmulDesc&)> create;
};

class KernelRegistry {
 public:
  void add(KernelCandidate c) { candidates_.push_back(std::move(c)); }
  const std::vector<KernelCandidate>& candidates() const noexcept { return candidates_; }

 private:
  std::vector<KernelCandidate> candidates_;
};

/// The process-wide registry, filled on first use by register_cpu_kernels and (with CUDA)
/// register_cuda_kernels.
const KernelRegistry& kernel_registry();
void register_cpu_kernels(KernelRegistry& r);
#if defined(SPARSENM_WITH_CUDA)
/// Defined in src/cuda/register.cpp: calls each family's register function.
void register_cuda_kernels(KernelRegistry& r);
#endif

}  // namespace sparsenm::detail
