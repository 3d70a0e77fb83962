// sparsenm — cuda:vnm_gemv traits (compile-time shape of one instantiation) and the kernel's
// runtime parameters. Layout and geometry: layout.hpp; the kernel: kernel.cuh.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/vnm_small/layout.hpp"

namespace sparsenm::cuda::vnm_small {

using sparsenm::vnm_small::kRecordU4;

/// T: __half or __nv_bfloat16. NTiles: n8 tiles of X rows (m <= 8 * NTiles).
template <class T_, int NTiles>
struct Traits {
  using T = T_;
  static constexpr int kNTiles = NTiles;
  static constexpr int kMaxThreads = 256;      ///< up to 8 warps per block
  static constexpr int kMaxTilesPerWarp = 2;   ///< V = 256: 16 row tiles over 8 warps
  static constexpr int kBatch = 4;             ///< records in flight per warp (4.6 KB)
  static constexpr int kBatch2 = NTiles == 4 ? 3 : 4;  ///< variants 1/2: records per batch (no spills at m > 24)
  static constexpr int kGatherUnits = NTiles >= 3 ? 4 : 8;  ///< variants 1/2: X words loaded per gather slice
  static constexpr int kMinBlocks = 2;         ///< variants 1/2: <= 128 registers, 2 blocks per SM
  static constexpr int kRingMinBlocks = 3;     ///< variant 8: <= 80 registers, 3 blocks of 8 warps per SM
};

enum class YType : int { f32 = 0, f16 = 1, bf16 = 2 };

struct Params {
  const uint4* w = nullptr;          ///< records [row_tiles][pairs][72 x uint4]
  const std::uint8_t* sel = nullptr; ///< venom: [groups][windows_pad][4]; hw24: nullptr
  const void* x = nullptr;           ///< [m][k], 16-bit
  void* y = nullptr;                 ///< [m][n], y_dtype
  float* ws = nullptr;               ///< [splits][m][n] when splits > 1
  int* counters = nullptr;           ///< variants 1/2/11, splits > 1: [groups] arrivals (self-resetting)
  uint4* xt = nullptr;               ///< variants 5/6: transposed X [k][n_tiles] 16-byte units (workspace)
  int m = 1, window = 4, y_dtype = 1;
  std::int64_t n = 0, k = 0, windows = 0, windows_pad = 0, pairs = 0, row_tiles = 0;
  int tiles_per_group = 1, tiles_per_warp = 1, chunk_pairs = 1, splits = 1, smem_words_per_row = 16;
  std::int64_t pairs_per_split = 1;
};

__device__ __forceinline__ void store_y(void* y, int y_dtype, std::size_t o, float v) {
  if (y_dtype == int(YType::f32))
    static_cast<float*>(y)[o] = v;
  else if (y_dtype == int(YType::f16))
    static_cast<__half*>(y)[o] = __float2half_rn(v);
  else
    static_cast<__nv_bfloat16*>(y)[o] = __float2bfloat16_rn(v);
}

}  // namespace sparsenm::cuda::vnm_small
