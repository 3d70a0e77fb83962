// sparsenm — cuda:vnm_gemv (small m, V:2:M and hardware 2:4): the plan-facing entry points.
// The candidate supports m = 1..32, f16/bf16 weights and X, y in f32/f16/bf16, fp32
// accumulation; larger m belongs to the tensor-core SpMM family (src/cuda/sptc).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "cuda/common.cuh"
#include "cuda/vnm_small/layout.hpp"
#include "plan/registry.hpp"

namespace sparsenm::cuda::vnm_small {

struct Params;

/// Launches one instantiation (inst_*.cu). T: __half or __nv_bfloat16; NT = ceil(m / 8).
template <class T, int NT>
void launch(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream);
/// Sets the kernel's dynamic shared memory limit (> 48 KB) and returns its resident blocks per SM.
template <class T, int NT>
int prepare(int variant, int threads, std::size_t smem_bytes);
/// Variant 7 with g.splits > 1: clusters of g.splits blocks the device holds at once.
template <class T, int NT>
int max_active_clusters(const sparsenm::vnm_small::Geometry& g);

/// Knobs for tests and the benchmark (0 = the plan's choice).
struct Options {
  int force_splits = 0;  ///< k splits (>= 1): exercise the partial-sum path or turn it off
  int variant = -1;      ///< 0..kVariants-1 (layout.hpp); -1: the plan's choice (default_variant)
};

/// The variant the plan ships for (pattern, m) (chosen from the H200 measurements, PERF-vnm-small.md).
int default_variant(const CondensedMatrix& w, std::int64_t m);

/// Empty when the kernel supports (weight, desc); else the reason.
std::string unsupported(const CondensedMatrix& w, const MatmulDesc& desc);

/// The packed weight on the device (records + selection), shareable by instances of any m and
/// variant (the benchmark packs once per matrix).
struct DeviceWeight {
  sparsenm::vnm_small::Layout layout;
  DType dtype = DType::f16;
  DeviceBuffer records, sel;
};

/// Packs and uploads w. Throws InvalidArgument on an unsupported pattern or dtype.
std::shared_ptr<const DeviceWeight> upload(const CondensedMatrix& w);

/// An instance on an uploaded weight (dw must come from upload(w) of this w). Throws
/// InvalidArgument when unsupported or when dw does not match w's shape, pattern and dtype.
std::unique_ptr<detail::KernelInstance> create(std::shared_ptr<const DeviceWeight> dw, const CondensedMatrix& w,
                                               const MatmulDesc& desc, const Options& options = {});

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
