// sparsenm — internal interface of the sparse tensor-core kernels (hardware 2:4 and V:2:M).
// Host-callable launchers; the kernels live in sptc24_wgmma.cu (sm_90a) and sptc24_mma.cu
// (sm_80+). Operands come from layout.hpp's Packed24 uploaded to the device.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

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
struct Problem {
  DType in = DType::f16, out = DType::f16;
  const void* x = nullptr;
  void* y = nullptr;
  std::int64_t m = 0, n = 0, k = 0, ldx = 0;
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
void run_sptc24_wgmma(const DeviceA& a, const CUtensorMap& values_map, WgTile tile, const Problem& p,
                      cudaStream_t stream);

/// sm_80+: hardware 2:4 SpMM with mma.sp::ordered_metadata m16n8k32 and a cp.async pipeline.
void run_sptc24_mma(const DeviceA& a, const Problem& p, cudaStream_t stream);

/// Copies x [m][k] into xp [m][ldx] (ldx = k rounded up to 8) with zero columns k..ldx-1.
void pad_x(DType in, const void* x, std::int64_t m, std::int64_t k, void* xp, std::int64_t ldx,
           cudaStream_t stream);

/// Compute capability major*10+minor of the current device (cached per device).
int device_cc();

}  // namespace sparsenm::cuda::sptc
