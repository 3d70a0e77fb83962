// sparsenm — EW-N:M SpMV: host-side configuration and dispatch (no kernel code here).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/ew/spmv_layout.hpp"
#include "cuda/ew/spmv_traits.cuh"

namespace sparsenm::cuda::ew {

/// Launch shape chosen at plan time.
struct SpmvConfig {
  int mr = 1;          ///< X rows per pass: 1, 4 or 8
  int smem_bytes = 0;  ///< dynamic shared memory per CTA
  bool specialised = false;  ///< N and M folded in at compile time
};

using SpmvLaunchFn = void (*)(const SpmvArgs&, const SpmvConfig&, cudaStream_t);
/// Resident CTAs per SM of an instance at `smem_bytes` of dynamic shared memory.
using SpmvOccupancyFn = int (*)(int smem_bytes);

/// The instance for (dtype, mr, bits, N, M): a specialised one when compiled, else the generic
/// one for `bits`. Never null for valid inputs (mr in {1, 4, 8}, bits 1..8).
SpmvLaunchFn find_spmv(DType dtype, int mr, int bits, int pn, int pm, bool* specialised = nullptr);
/// The occupancy query of the same instance.
SpmvOccupancyFn find_spmv_occupancy(DType dtype, int mr, int bits, int pn, int pm);

/// Why (layout, dtype, m) cannot run on ew_spmv ("" if it can): m must be 1..8 and one tile's
/// X span must fit the shared-memory budget.
std::string spmv_unsupported(const SpmvLayout& l, DType dtype, long long m);

/// Bytes of staged X per column for `mr` rows (fp32; 48 B for mr = 8).
constexpr int spmv_x_bytes(int mr) { return mr == 8 ? 48 : 4 * mr; }

/// Plan-time choice of mr, split-k, phases and shared memory for `sms` multiprocessors: the
/// largest split (<= 8, the portable cluster size) whose grid still fits one wave of resident
/// CTAs, so no CTA waits for a second wave.
/// Fills the launch fields of `a` (everything but pointers and y_dtype). smem_budget: bytes of
/// shared memory per CTA for staged X (0 = the default 96 KiB; tests lower it to force phases).
/// max_split: cap on the split-k cluster size (0 = 8).
SpmvConfig plan_spmv(const SpmvLayout& l, DType dtype, int m, int sms, SpmvArgs& a, int smem_budget = 0,
                     int max_split = 0);

// ---- SpMM (any m; spmm_kernel.cuh) ----

constexpr int kSpmmRows = 16;  ///< X rows per CTA
/// Pitch (floats) of a staged X row: compile-time so every shared load takes an immediate offset
/// (r * pitch) instead of an address add. Holds one tile's span up to 1:32 (33 windows of 32).
constexpr int kSpmmLd = 1088;

/// SpMM kernel variants (each a plan candidate, raced by the plan):
///  base    "cuda:ew_spmm": 8 warps, one X buffer of kSpmmLd columns, staged through registers
///          (any dtype; converted to fp32 once at staging).
///  async   "cuda:ew_spmm_async": fp32 only, 8 warps, two X buffers of kSpmmAsyncLd columns filled
///          by cp.async one phase ahead (the staging latency hides behind the previous phase).
///  async16 "cuda:ew_spmm_async16": fp32 only, 16 warps (512 rows of W per CTA: half the staged X
///          per FMA), two X buffers of kSpmmLd columns filled by cp.async one phase ahead.
///  async_x4 "cuda:ew_spmm_async_x4": as async, X transposed into planes of 4 rows so a slot reads
///          one LDS.128 per plane (4 instead of 16 LDS); 2:4, 4:8, 2:8, 1:8 only (N | 32, M <= 8).
enum class SpmmVariant { base, async, async16, async_x4 };
constexpr int kSpmmAsyncLd = 544;  ///< pitch of the async variant's buffers (two fit twice per SM)
/// The plan candidate name of a variant ("cuda:ew_spmm", ...).
const char* spmm_variant_name(SpmmVariant v);

/// The SpMM instance for (dtype, bits, N, M, variant): specialised when compiled, else generic by
/// bits; null when the variant has no instance for the dtype (async: f32 only).
SpmvLaunchFn find_spmm(DType dtype, int bits, int pn, int pm, bool* specialised = nullptr,
                       SpmmVariant v = SpmmVariant::base);
/// Why the variant cannot serve (layout, dtype, m) ("" if it can).
std::string spmm_unsupported(const SpmvLayout& l, DType dtype, long long m, SpmmVariant v = SpmmVariant::base);
/// Plan-time launch configuration of a SpMM variant (fills `a` but pointers and y_dtype).
/// smem_budget: bytes of one X buffer (0 = the variant's full pitch; tests lower it to force phases).
SpmvConfig plan_spmm(const SpmvLayout& l, DType dtype, int m, SpmvArgs& a, int smem_budget = 0,
                     SpmmVariant v = SpmmVariant::base);

}  // namespace sparsenm::cuda::ew
