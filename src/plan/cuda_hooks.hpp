// sparsenm — internal: the CUDA-side helpers the plan layer calls. Declared here, defined in
// src/cuda/plan_timing.cu and src/cuda/plan_device.cpp, which compile only in CUDA builds;
// src/plan/ itself never includes a CUDA header.
#pragma once
#include <functional>

#include "plan/registry.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/plan.hpp"

namespace sparsenm::detail {

#if defined(SPARSENM_WITH_CUDA)
/// Number of usable CUDA devices; 0 when the runtime reports none or fails (never throws).
int cuda_device_count() noexcept;

/// Times KernelInstance::run for one problem: holds random x (fixed seed) and y on the current
/// device. Each call of the returned function runs the instance twice untimed, then `reps` times
/// between CUDA events on a private stream, flushing L2 before each timed run (cold weights, as
/// in a model that cycles through its layers), and returns the median in milliseconds.
using KernelTimer = std::function<double(const KernelInstance&)>;
KernelTimer make_cuda_timer(const CondensedMatrix& w, const MatmulDesc& desc, int reps = 15);

/// Waits for all work queued on the current device (cudaDeviceSynchronize; throws CudaError).
/// Plan::create calls it after building a CUDA kernel instance: instances zero workspaces with
/// cudaMemset and upload weights with cudaMemcpy on the legacy default stream, which a run on a
/// non-blocking stream (the plan's timer, or the caller's) would not wait for.
void cuda_device_synchronize();

/// matmul() on the CUDA backend: uploads x, plans, runs, downloads into y, waits.
void cuda_matmul(const MatrixView& x, const CondensedMatrix& w, const MutableMatrixView& y);
#endif

}  // namespace sparsenm::detail
