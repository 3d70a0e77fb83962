// sparsenm — cuda:vnm_gemv (small m, V:2:M and hardware 2:4): the plan-facing entry points.
// The candidate supports m = 1..32, f16/bf16 weights and X, y in f32/f16/bf16, fp32
// accumulation; larger m belongs to the tensor-core SpMM family (src/cuda/sptc).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "cuda/vnm_small/layout.hpp"
#include "plan/registry.hpp"

namespace sparsenm::cuda::vnm_small {

struct Params;

/// Launches one instantiation (inst_*.cu). T: __half or __nv_bfloat16; NT = ceil(m / 8).
template <class T, int NT>
void launch(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream);

/// Knobs for tests and the benchmark (0 = the plan's choice).
struct Options {
  int force_splits = 0;  ///< k splits (>= 1): exercise the partial-sum path or turn it off
};

/// Empty when the kernel supports (weight, desc); else the reason.
std::string unsupported(const CondensedMatrix& w, const MatmulDesc& desc);

/// Packs the weight to the device and fixes the launch geometry. Throws InvalidArgument when
/// unsupported. The instance's run() launches 1 or 2 kernels on the given stream.
std::unique_ptr<detail::KernelInstance> create(const CondensedMatrix& w, const MatmulDesc& desc,
                                               const Options& options = {});

/// The geometry create() would choose (for reports).
sparsenm::vnm_small::Geometry geometry_for(const CondensedMatrix& w, const MatmulDesc& desc,
                                           const Options& options = {});

}  // namespace sparsenm::cuda::vnm_small

namespace sparsenm::detail {
void register_vnm_small_kernels(KernelRegistry& r);
}
