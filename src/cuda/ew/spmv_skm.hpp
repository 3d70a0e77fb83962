// sparsenm — EW-N:M SpMV m = 2..8, stream-K form on CUDA cores (cuda:ew_spmv_sk_mb,
// spmv_skm_kernel.cuh): host-side configuration and dispatch. Same packed weight as ew_spmv.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/ew/spmv_layout.hpp"

namespace sparsenm::cuda::ew {

struct SkmArgs;  // spmv_skm_kernel.cuh

struct SkmConfig {
  int grid = 0;        ///< CTAs (16 warps each) = chunks x ctas_per_chunk
  int smem_bytes = 0;  ///< dynamic shared memory (one chunk of X as [column][mb], weight dtype)
  int mb = 0;          ///< activation rows of the instance (4 or 8)
};

constexpr int kSkmXAlign = 512;  ///< alignment slack of the staged X (SkmTraits::kXAlign)

using SkmLaunchFn = void (*)(const SkmArgs&, const SkmConfig&, cudaStream_t);
using SkmOccupancyFn = int (*)(int smem_bytes);

/// Plan candidates:
///   "cuda:ew_spmv_sk_mb"  chunks = the fewest whose X fits the shared-memory budget (1 at k <= 14k)
///   "cuda:ew_spmv_sk_mb2" at least 2 chunks (half the X staged per CTA, every group split);
///                         opt-in: within -1.2 / +0.5 us of _mb at m = 8 on the H200 (b6c5e5f),
///                         the race with it not measured (docs/PERF.md, session 6)
/// The compiled instance for (dtype, N, M, mb in {4, 8}), or null.
SkmLaunchFn find_spmv_skm(DType dtype, int pn, int pm, int mb);
SkmOccupancyFn find_spmv_skm_occupancy(DType dtype, int pn, int pm, int mb);

/// Activation rows of the instance that serves m (4 for m <= 4, else 8).
constexpr int spmv_skm_mb(long long m) { return m <= 4 ? 4 : 8; }

/// Why (layout, dtype, m) cannot run on ew_spmv_sk_mb ("" if it can).
std::string spmv_skm_unsupported(const SpmvLayout& l, DType dtype, long long m);

/// Fills every field of `a` but the pointers (values, indices, x, y, ws, cnt), x_pairs and y_dtype.
/// min_chunks >= 1; ctas_per_chunk_override > 0 forces the CTAs per chunk (tests);
/// smem_budget_override > 0 replaces the device's opt-in shared-memory limit (tests: forces chunks).
SkmConfig plan_spmv_skm(const SpmvLayout& l, DType dtype, int m, int sms, int min_chunks, SkmArgs& a,
                        int ctas_per_chunk_override = 0, int smem_budget_override = 0);

/// Bytes of the fp32 workspace ([mb][row_groups x 32]) and of the counters a plan must allocate
/// (zeroed once; every launch leaves them zero).
std::size_t spmv_skm_ws_bytes(const SpmvLayout& l, int mb);
std::size_t spmv_skm_cnt_bytes(const SpmvLayout& l);

}  // namespace sparsenm::cuda::ew
