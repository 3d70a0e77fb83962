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
/// CTAs of (smem_bytes, threads) that can be resident on the device at once when launched in
/// clusters of `ksplit` (1: no cluster) on `sms` SMs.
using SpmvTcOccupancyFn = int (*)(int smem_bytes, int threads, int ksplit, int sms);

/// The kernel variants (plan candidates), all the same kernel template:
///   shift    "cuda:ew_spmv_tc":      shift decode (kDecShift), 8 warps per CTA, the largest split
///                                    that fits one wave (session 3, 31ab62d);
///   balanced "cuda:ew_spmv_tc_bal":  shift decode, warps per CTA (4..8) and split chosen to
///                                    minimise the warp-tiles of the busiest SM, counted as if it
///                                    had at least 12 warps (clusters counted by
///                                    cudaOccupancyMaxActiveClusters);
///   prmt     "cuda:ew_spmv_tc_prmt": PRMT-table decode (kDecPrmt; N in {1, 2}, M in {8, 16}),
///                                    two accumulator chains, the pipeline across X phases;
///                                    the shift grid rule (8 warps, largest one-wave split) with
///                                    clusters counted by the occupancy API.
///   ring     "cuda:ew_spmv_tc_ring": PRMT-table decode with a register ring of kTcRing tiles per
///                                    warp (kTcRing - 1 tiles in flight during each decode,
///                                    <= 128 registers), the balanced grid rule (session 4).
/// All four race in the automatic choice (measured on the H200 at 08296c0 and d55cf64).
enum class SpmvTcVariant : int { shift = 0, balanced = 1, prmt = 2, ring = 3 };
constexpr int kTcRing = 4;  ///< tiles per warp in the ring variant
const char* spmv_tc_variant_name(SpmvTcVariant v);  ///< "ew_spmv_tc", "ew_spmv_tc_bal", "ew_spmv_tc_prmt", "ew_spmv_tc_ring"

/// The compiled instance for (dtype, N, M, variant), or null when not compiled (then ew_spmv
/// serves the pattern). Compiled: 2:4, 4:8, 2:8, 1:8, 2:16, 1:16 for f16 and bf16 (shift and
/// balanced); 2:8, 1:8, 2:16, 1:16 (prmt, ring).
SpmvTcLaunchFn find_spmv_tc(DType dtype, int pn, int pm, SpmvTcVariant v = SpmvTcVariant::shift);
SpmvTcOccupancyFn find_spmv_tc_occupancy(DType dtype, int pn, int pm, SpmvTcVariant v = SpmvTcVariant::shift);

/// Why the variant cannot serve (weight layout, dtype, m) ("" if it can).
std::string spmv_tc_unsupported(const FormatLayout& f, DType dtype, long long m,
                                SpmvTcVariant v = SpmvTcVariant::shift);

/// Plan-time launch configuration (see SpmvTcVariant); X phases sized to `smem_budget` (0: 96 KiB
/// for shift / balanced; for prmt and ring 3 CTAs' worth of shared memory per SM less the selector
/// table; ring: a multiple of kTcRing tiles per phase unless one phase covers the split).
/// Fills `a` except the pointers, y_dtype and x_vec.
SpmvTcConfig plan_spmv_tc(const SpmvTcLayout& l, DType dtype, int m, int sms, SpmvTcArgs& a, int smem_budget = 0,
                          int max_split = 0, SpmvTcVariant v = SpmvTcVariant::shift);

/// 1 when X rows can be staged with 16-byte loads: k % 8 == 0 and x 16-byte aligned.
inline int spmv_tc_x_vec(const void* x, long long k) {
  return (k % 8 == 0 && (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0) ? 1 : 0;
}

}  // namespace sparsenm::cuda::ew
