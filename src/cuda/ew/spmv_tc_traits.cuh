// sparsenm — EW-N:M tensor-core SpMV traits: compile-time shape of one kernel instance. The
// kernel (spmv_tc_kernel.cuh) reads only these; the launch (spmv_tc_launch.cuh) turns a problem
// into grid / cluster / shared memory.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ew/spmv_traits.cuh"

namespace sparsenm::cuda::ew {

/// Arguments of one tensor-core SpMV launch (sizes in elements; pointers on the device).
struct SpmvTcArgs {
  const void* values = nullptr;            ///< packed values (spmv_tc_layout.hpp)
  const std::uint32_t* indices = nullptr;  ///< packed index words
  const void* x = nullptr;                 ///< [m][k], weight dtype
  void* y = nullptr;                       ///< [m][n], y_dtype
  int n = 0, k = 0, m = 0;                 ///< problem (m <= 8)
  int tiles = 0;                           ///< tiles per row block
  int row_blocks = 0;                      ///< ceil(n / 16)
  int ksplit = 1;                          ///< CTAs per cluster along k (grid.y)
  int tiles_per_split = 0;                 ///< tiles each split CTA owns
  int tiles_per_phase = 0;                 ///< tiles whose X span fits the shared buffer
  int y_dtype = 0;                         ///< 0 f32, 1 f16, 2 bf16
  int x_vec = 0;                           ///< 1: k % 8 == 0 and x 16-byte aligned (set per run)
};

/// T: __half or __nv_bfloat16. NN, MM: the pattern (NN divides 16, MM in {4, 8, 16}).
template <class T, int NN_, int MM_>
struct SpmvTcTraits {
  using Elem = T;
  static constexpr int NN = NN_, MM = MM_;
  static constexpr int B = spmv_bits(MM);               // index bits
  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRowsPerCta = kWarps * 16;
  static constexpr int kSlots = 32;                      // slots per lane per tile
  static constexpr int kChunks = 16 / NN;                // chunks per tile
  static constexpr int kChunkCols = 4 * MM;              // one window per lane of a quad
  static constexpr int kTileCols = kChunks * kChunkCols; // = 64 M / N
  static constexpr int kSteps = MM / 4;                  // mma k16 steps per chunk
  static constexpr int kRegs = MM / 2;                   // half2 registers of one decoded window
  static constexpr int kIdxVec = B % 4 == 0 ? 4 : (B % 2 == 0 ? 2 : 1);
  static constexpr int kIdxLoads = B / kIdxVec;
  // Staged X row pitch in bytes is padded to kPitchMod modulo 128 so a warp's X reads (lane
  // (g, t): row g, window t) are conflict-free: M = 8: one LDS.128 per lane, quarter-warp
  // g in {0,1} x t in 0..3 -> 16-byte groups {0..3} and {4..7}; M = 16: two LDS.128 at 32-byte
  // steps -> groups {0,2,4,6} and {1,3,5,7}; M = 4: one LDS.64, half-warp g in 0..3 -> banks
  // {0..7} + 8g.
  static constexpr int kPitchMod = MM == 4 ? 32 : MM == 8 ? 64 : 16;
  static constexpr int kRedBytes = 8 * kRowsPerCta * 4;  // split-k partials (fp32)
  static_assert(16 % NN == 0 && NN < MM, "N must divide 16 and be < M");
  static_assert(MM == 4 || MM == 8 || MM == 16, "M in {4, 8, 16}");
};

/// Bytes of one staged X row for `cols` columns (16-bit values), padded as above.
#if defined(__CUDACC__)
__host__ __device__
#endif
constexpr int spmv_tc_pitch(int cols, int pm) {
  const int mod = pm == 4 ? 32 : pm == 8 ? 64 : 16;
  return (cols * 2 + 127) / 128 * 128 + mod;
}

}  // namespace sparsenm::cuda::ew
