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
};

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
