// sparsenm — EW-N:M tensor-core SpMV (cuda:ew_spmv_tc): host-side configuration and dispatch.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/ew/spmv_tc_layout.hpp"
#include "cuda/ew/spmv_tc_traits.cuh"

namespace sparsenm::cuda::ew {

struct SpmvTcConfig {
  int smem_bytes = 0;  ///< dynamic shared memory per CTA
};

using SpmvTcLaunchFn = void (*)(const SpmvTcArgs&, const SpmvTcConfig&, cudaStream_t);
using SpmvTcOccupancyFn = int (*)(int smem_bytes);

/// The compiled instance for (dtype, N, M), or null when (N, M) is not compiled (then ew_spmv
/// serves the pattern). Compiled: 2:4, 4:8, 2:8, 1:8, 2:16, 1:16 for f16 and bf16.
SpmvTcLaunchFn find_spmv_tc(DType dtype, int pn, int pm);
SpmvTcOccupancyFn find_spmv_tc_occupancy(DType dtype, int pn, int pm);

/// Why ew_spmv_tc cannot serve (weight layout, dtype, m) ("" if it can).
std::string spmv_tc_unsupported(const FormatLayout& f, DType dtype, long long m);

/// Plan-time launch configuration: the largest split-k (<= max_split, <= 8) whose grid fits one
/// wave of resident CTAs; X phases sized to `smem_budget` (0 = 96 KiB). Fills `a` except the
/// pointers, y_dtype and x_vec.
SpmvTcConfig plan_spmv_tc(const SpmvTcLayout& l, DType dtype, int m, int sms, SpmvTcArgs& a, int smem_budget = 0,
                          int max_split = 0);

/// 1 when X rows can be staged with 16-byte loads: k % 8 == 0 and x 16-byte aligned.
inline int spmv_tc_x_vec(const void* x, long long k) {
  return (k % 8 == 0 && (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0) ? 1 : 0;
}

}  // namespace sparsenm::cuda::ew
