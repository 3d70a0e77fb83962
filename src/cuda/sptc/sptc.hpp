// sparsenm — internal interface of the sparse tensor-core kernels (hardware 2:4 and V:2:M).
// Host-callable launchers; the kernels live in sptc24_wgmma.cu (sm_90a) and sptc24_mma.cu
// (sm_80+). Operands come from layout.hpp's Packed24 uploaded to the device.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "sparsenm/dtype.hpp"

namespace sparsenm::cuda::sptc {

/// Packed sparse operand on the device (see layout.hpp for the layouts).
struct DeviceA {
  const void* values = nullptr;          ///< [rows_pad][k_pad/2] f16 or bf16
  const std::uint32_t* meta = nullptr;   ///< [k_pad/64][rows_pad/64][128]
  std::int64_t rows = 0, rows_pad = 0;   ///< n (output features)
  std::int64_t k_pad = 0;                ///< sparse-k padded to 64
};

/// The problem of one run: y[m][n] = x[m][k] * W^T. x rows hold `ldx` elements (ldx >= k,
/// ldx % 8 == 0, x 16-byte aligned; columns k..ldx-1 are never read as data: the kernels zero
/// them through the tensor map bounds when ldx == k, else the caller zeroed them).
/// Options honoured by run_sptc24_wgmma only (run_sptc24_mma rejects them; the persistent and
/// venom launchers do not look at them: leave them false there):
///   x_trans: x is given transposed, as x^T [k][ldx] (ldx >= m, ldx % 8 == 0, m contiguous; rows
///            k..k_pad-1 read as zero through the tensor map bounds).
///   y_trans: y is written transposed, as y^T [n][m] (row pitch m elements).
struct Problem {
  DType in = DType::f16, out = DType::f16;
  const void* x = nullptr;
  void* y = nullptr;
  std::int64_t m = 0, n = 0, k = 0, ldx = 0;
  bool x_trans = false, y_trans = false;
};

/// Tile configurations of the wgmma kernel: BM x BN (BM = 64 per consumer warpgroup).
enum class WgTile : int { m128n256, m128n128, m64n256, m64n128 };
const char* to_string(WgTile t) noexcept;
/// Rows of W per CTA tile (the row padding the packed operand must have).
int wg_tile_rows(WgTile t) noexcept;

/// Encodes the TMA tensor map of the packed values (done once per plan).
CUtensorMap make_values_map(const DeviceA& a, DType in, WgTile tile);

/// sm_90a: hardware 2:4 SpMM with wgmma.mma_async.sp, TMA loads, mbarrier pipeline, a producer
/// warpgroup and 1-2 consumer warpgroups. Throws CudaError on a launch failure.
/// meta_global (experiment, 128x256 tile, no x_trans / y_trans): every consumer thread loads its
/// metadata word from global memory into a register one stage ahead instead of reading the
/// bulk-copied shared-memory slot (no generic read of bulk-copy-written memory: the racecheck
/// control, docs/PERF-sptc.md "Session 4d").
void run_sptc24_wgmma(const DeviceA& a, const CUtensorMap& values_map, WgTile tile, const Problem& p,
                      cudaStream_t stream, bool meta_global = false);

/// 2-D tensor map over 16-bit elements [outer][inner] with rows of row_bytes (TMA).
CUtensorMap encode_tensor_2d(const void* base, std::uint64_t inner, std::uint64_t outer, std::uint64_t row_bytes,
                             std::uint32_t box_inner, std::uint32_t box_outer, CUtensorMapSwizzle swizzle, const char* what);
/// Tensor map of the packed values for a CTA row tile of `bm` rows (64, 128 or 192).
CUtensorMap make_values_map_rows(const DeviceA& a, int bm);

/// Tiles of the persistent kernels (wgmma_persistent.cu): r = the two consumer warpgroups split
/// 128 W rows (64 each) and share the BN Y rows; c = they share 64 W rows and split the BN Y rows;
/// r128n256x2 = r128n256 in 2x1 clusters with the X tile multicast (experiment, hardware 2:4 only).
enum class PTile : int { r128n256, r128n128, c64n256, c64n128, r128n256x2 };
const char* to_string(PTile t) noexcept;
int ptile_rows(PTile t) noexcept;  ///< W rows per CTA tile (= the venom gather group rows)

/// Tile order and gather options of the persistent kernels.
struct PSched {
  /// > 0: groups of `raster` row tiles sweep all column (m) tiles (the W slice of a group stays in
  /// L2); < 0: groups of -raster column tiles sweep all row tiles (the X / Xt slice of a group
  /// stays in L2). 0 is invalid.
  int raster = 8;
  /// V:2:M gather: load the next stage's gather indices before waiting for the ring slot (off: the
  /// index load sits on the producer's critical path, the behaviour before 2026-11-21 s2).
  bool prefetch = true;
  /// V:2:M gather modes 6 / 9 / 10 / 11: the gather indices through an index ring in shared memory
  /// (one 256-byte bulk copy per stage, a few stages ahead) instead of a per-warp __ldg per stage.
  bool smem_index = false;
};

/// sm_90a, persistent grid: hardware 2:4 with X by TMA (values_map from make_values_map_rows).
void run_sptc24_wgmma_persistent(const DeviceA& a, const CUtensorMap& values_map, PTile tile, const Problem& p,
                                 cudaStream_t stream, PSched sched = {});

/// sm_90a, persistent grid: V:2:M after the gather. p.x = Xt [k][p.ldx] (transpose_x), p.ldx =
/// m rounded up to 8; gather [rows_pad / ptile_rows(tile)][k_pad] from pack.hpp's PackedVnm
/// packed with group_rows = ptile_rows(tile); rows_per_tile = PackedVnm::rows_per_group (weight
/// rows per tile: the tile's rows, or 32 for V = 32 spread over 64-row tiles). gather_mode: 0/1
/// = cp.async gather (the session-1 producer), 6 = streamlined cp.async producer, 9 = 6 with each
/// ring stage released as soon as its wgmma retired, 10 = 9 with a 5-stage ring on the p128x256
/// tile (32-row epilogue staging; other tiles as 9), 7 / 8 = experiments (all dtypes), 2 / 3 / 11
/// (= 6 with the 5-stage p128x256 ring) = experiments (f16 only), 4 / 5 = DIAGNOSTICS with wrong
/// products by design (f16, p128x256 only); see wgmma_persistent.cu.
void run_vnm_wgmma(const DeviceA& a, const CUtensorMap& values_map, const std::int32_t* gather, int rows_per_tile,
                   PTile tile, const Problem& p, cudaStream_t stream, int gather_mode = 0, PSched sched = {});

/// xt [k][ldt] = x^T for 16-bit x [m][k], zero in columns m..ldt-1 (ldt >= m, ldt % 8 == 0).
/// variant 0: 64 x 64 tiles through shared memory; 1: 8 x 8 blocks transposed in registers by a
/// persistent grid (needs k % 8 == 0 and an aligned x, else variant 0 runs).
void transpose_x(const void* x, std::int64_t m, std::int64_t k, void* xt, std::int64_t ldt, cudaStream_t stream,
                 int variant = 0);

/// sm_90a: hardware 2:4 on 192 x 256 tiles: three warpgroups, each both consumer (64 W rows x 256
/// Y rows, wgmma m64n256k32) and, thread 0, the TMA producer of the ring (sptc24_wgmma3.cu). One
/// X stage in shared memory feeds 3 warpgroups instead of 2 (fewer shared-memory bytes per MMA,
/// docs/PERF-sptc.md). a.rows_pad % 192 == 0; values_map = make_values_map_rows(a, 192).
/// Options: stream_k = persistent grid of #SMs CTAs, the last wave split into k-block iterations
/// evenly over all CTAs (tiles split between CTAs are reduced in fp32 through `workspace`: at least
/// sptc24_wgmma3_workspace_bytes(), 256-byte aligned, zeroed once before the first launch; the
/// kernel leaves it reusable; one launch at a time per workspace).
struct W3Opts {
  bool stream_k = false;
  /// experiment (one-tile grid only, not with stream_k): each consumer thread loads its metadata
  /// word from global memory into a register one stage ahead instead of from the bulk-copied
  /// shared-memory slot (the racecheck control, docs/PERF-sptc.md "Session 4d").
  bool meta_global = false;
};
std::size_t sptc24_wgmma3_workspace_bytes();
void run_sptc24_wgmma3(const DeviceA& a, const CUtensorMap& values_map, const Problem& p, cudaStream_t stream,
                       W3Opts opts = {}, void* workspace = nullptr);

/// Register-A operand (wgmma_ra.cuh): the values as per-thread A fragments (layout.hpp:
/// pack_ra_frags, [k_pad/64][rows_pad/64][2][128][4] uint32, 16-byte aligned) + the metadata
/// words in the Packed24 layout.
struct DeviceRa {
  const void* frags = nullptr;
  const std::uint32_t* meta = nullptr;
  std::int64_t rows = 0, rows_pad = 0, k_pad = 0;
};
/// Tiles of the register-A kernel (W rows x Y rows): 128 x 256 (2 consumer warpgroups),
/// 192 x 192 (3), 256 x 128 (4).
enum class RaTile : int { r128n256, r192n192, r256n128 };
const char* to_string(RaTile t) noexcept;
int ra_tile_rows(RaTile t) noexcept;  ///< W rows per CTA tile (a.rows_pad must be a multiple)

/// Options of the register-A kernel. batched = false: one wgmma.fence per k-block (measured at
/// fa61bfc: every fence waits for all loads in flight, so each k-block waits one global-load
/// latency); true: one fence per batch of ra_fence_batch(tile) k-blocks, the loads of the next
/// batch in flight while the current batch's wgmmas execute (built and SASS-checked, not yet
/// measured). See wgmma_ra.cuh.
struct RaOpts {
  bool batched = false;
};
/// k-blocks per wgmma.fence in the batched form: 3 at 128 x 256 (2 x 3 buffers of 9 registers
/// beside 128 accumulators: 220 registers), 2 at 192 x 192 (160 of 168) and 256 x 128 (126 of 128).
constexpr int ra_fence_batch(RaTile t) noexcept { return t == RaTile::r128n256 ? 3 : 2; }
/// The k-block multiple a.k_pad / 64 must have for (tile, opts): pack_ra's kblock_multiple.
int ra_kblock_multiple(RaTile t, RaOpts o) noexcept;
/// sm_90a: hardware 2:4 with A (values + metadata) loaded from global memory straight into
/// registers (wgmma.mma_async.sp, A from registers), X by TMA through a shared-memory ring;
/// one tile per CTA. Throws InvalidArgument on bad operands, CudaError on a launch failure.
void run_sptc24_wgmma_ra(const DeviceRa& a, RaTile tile, const Problem& p, cudaStream_t stream, RaOpts opts = {});

/// sm_80+: hardware 2:4 SpMM with mma.sp::ordered_metadata m16n8k32 and a cp.async pipeline.
void run_sptc24_mma(const DeviceA& a, const Problem& p, cudaStream_t stream);

/// Copies x [m][k] into xp [m][ldx] (ldx = k rounded up to 8) with zero columns k..ldx-1.
void pad_x(DType in, const void* x, std::int64_t m, std::int64_t k, void* xp, std::int64_t ldx,
           cudaStream_t stream);

/// Compute capability major*10+minor of the current device (cached per device).
int device_cc();

}  // namespace sparsenm::cuda::sptc
