// sparsenm — EW-N:M SpMV m = 1, stream-K form (cuda:ew_spmv_sk, spmv_sk_kernel.cuh): host-side
// configuration and dispatch. Same packed weight as ew_spmv (spmv_layout.hpp).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/ew/spmv_layout.hpp"

namespace sparsenm::cuda::ew {

struct SkArgs;  // spmv_sk_kernel.cuh

struct SkConfig {
  int grid = 0;        ///< CTAs (8 warps each; 32 for "cuda:ew_spmv_skw")
  int smem_bytes = 0;  ///< dynamic shared memory (X as the weight dtype; + the tile rings if ring > 0)
};

using SkLaunchFn = void (*)(const SkArgs&, const SkConfig&, cudaStream_t);
using SkOccupancyFn = int (*)(int smem_bytes);

/// Plan candidates: the grid is `waves` x (resident CTAs per SM x SMs), each warp a contiguous,
/// equal share of the flattened (row group, tile) sequence.
///   "cuda:ew_spmv_sk"  waves = 1 (every SM the same number of CTAs, one wave)
///   "cuda:ew_spmv_sk4" waves = 4 (the hardware block scheduler balances the end); opt-in only:
///                      measured slower than waves = 1 (docs/PERF.md, ew_spmv session 5)
///   "cuda:ew_spmv_skr" waves = 1, ring = 3: the weight tiles through a per-warp shared-memory ring
///                      of 3 stages filled by cp.async; raced beside "cuda:ew_spmv_sk" (faster in
///                      3 of the 6 bar cases, slower in 3: docs/PERF.md, session 6)
///   "cuda:ew_spmv_skv" waves = 1, ring = 3, vals_only: stages of value vectors only, the index
///                      words through registers (3 CTAs / SM at k = 12288 where skr fits 2);
///                      opt-in only: the fastest form in none of the bar cases (docs/PERF.md, session 7)
///   "cuda:ew_spmv_skw" the same value ring on ONE CTA of 32 warps per SM (X once per SM: 64 tiles in
///                      flight per SM instead of 48; session 7); raced where X + 192 KiB fit (the
///                      fastest form at 12288^2 1:8 / 2:16)
///   "cuda:ew_spmv_skg" / "_skrg" / "_skwg": sk / skr / skw on a weight stored in the grid order
///                      (tile of step q of warp w at slot q W + w; session 7b): skrg / skwg raced
///                      (0.2-0.8 us faster than skr / skw at 2:8 in the H200 probe), skg opt-in
///                      (0.1-1.2 us slower than sk in all six bar cases)
/// `ring`: 0 = the two-tile register ring; 3 / 4 = shared-memory ring stages per warp.
/// `vals_only` (ring 3 only): the stages hold the value vectors, the index words go to registers.
/// `warps`: warps per CTA, 8, or 32 with `vals_only` (compiled: (0|3|4, false, 8), (3, true, 8 | 32)).
constexpr int kSkMaxXBytes = 96 * 1024;  ///< X (k columns in the weight dtype) must fit this

/// The compiled instance for (dtype, N, M), or null (f16 / bf16 and the patterns of
/// spmv_sk_instances.def only: those of spmv_instances.def and 3:32).
/// `grid`: the grid-ordered instance (SkTraits::GRID; compiled for (0, false, 8), (3, false, 8),
/// (3, true, 32): "cuda:ew_spmv_skg" / "_skrg" / "_skwg"); its weight must be reordered by
/// spmv_sk_grid_order for the planned grid.
SkLaunchFn find_spmv_sk(DType dtype, int pn, int pm, int ring = 0, bool vals_only = false, int warps = 8,
                        bool grid = false);
SkOccupancyFn find_spmv_sk_occupancy(DType dtype, int pn, int pm, int ring = 0, bool vals_only = false,
                                     int warps = 8, bool grid = false);

/// Reorders the packed tiles (values and index words) into the grid order of the planned grid
/// `a` (a.units, a.warps_total: format/sk_grid_order.hpp) and sets a.grid_lmin. Plan time, once.
void spmv_sk_grid_order(SpmvPacked& p, SkArgs& a);

/// Dynamic shared memory of one CTA: X (rounded to 16 B) for ring = 0; X rounded to 128 B
/// (= SkArgs::ring_off) + warps x ring stages x one tile (values + index words; values only
/// when `vals_only`) otherwise.
int spmv_sk_smem_bytes(const SpmvLayout& l, int ring, bool vals_only = false, int warps = 8);

/// Why (layout, dtype, m) cannot run on ew_spmv_sk ("" if it can).
std::string spmv_sk_unsupported(const SpmvLayout& l, DType dtype, long long m);

/// Fills every field of `a` but the pointers (values, indices, x, y, ws, cnt) and y_dtype.
/// grid_override > 0 forces the number of CTAs (tests, probe).
SkConfig plan_spmv_sk(const SpmvLayout& l, DType dtype, int sms, int waves, SkArgs& a, int grid_override = 0,
                      int ring = 0, bool vals_only = false, int warps = 8);

/// Bytes of the fp32 workspace and of the counters a plan must allocate (zeroed once).
std::size_t spmv_sk_ws_bytes(const SpmvLayout& l);
std::size_t spmv_sk_cnt_bytes(const SpmvLayout& l);

}  // namespace sparsenm::cuda::ew
