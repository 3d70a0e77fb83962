// sparsenm — EW-N:M SpMV traits (FlashAttention-style): tile sizes and derived constants of one
// kernel instance. The kernel (spmv_kernel.cuh) reads only these; the launch (spmv_launch.cuh)
// turns a problem into grid / cluster / shared memory from them.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace sparsenm::cuda::ew {

/// Index bits of a window of m columns: ceil(log2 m), at least 1.
constexpr int spmv_bits(int m) {
  int b = 1;
  while ((1 << b) < m) ++b;
  return b;
}

/// Arguments of one SpMV launch (all sizes in elements; pointers on the device).
struct SpmvArgs {
  const void* values = nullptr;            ///< packed values (spmv_layout.hpp)
  const std::uint32_t* indices = nullptr;  ///< packed index words
  const void* x = nullptr;                 ///< [m][k], weight dtype
  void* y = nullptr;                       ///< [m][n], y_dtype
  int n = 0, k = 0, m = 0;                 ///< problem
  int pn = 0, pm = 0;                      ///< pattern N, M
  int tiles = 0;                           ///< tiles per row
  int row_groups = 0;                      ///< ceil(n / 32)
  int ksplit = 1;                          ///< CTAs per cluster along k (grid.y)
  int tiles_per_split = 0;                 ///< tiles each split CTA owns
  int tiles_per_phase = 0;                 ///< tiles whose X span fits the shared buffer
  int y_dtype = 0;                         ///< 0 f32, 1 f16, 2 bf16
  int x_ld = 0;                            ///< SpMM: pitch (elements) of a staged X row in smem
};

/// T: value / X dtype (float, __half, __nv_bfloat16). MR: X rows held per pass (1, 4 or 8; the
/// rows past m are zeros in shared memory). B: index bits. NN, MM: the pattern's N and M when
/// known at compile time (0 = read from SpmvArgs; then the window of a slot is tracked by a
/// counter instead of being folded into constants).
template <class T, int MR_, int B_, int NN_ = 0, int MM_ = 0>
struct SpmvTraits {
  using Elem = T;
  static constexpr int MR = MR_, B = B_, NN = NN_, MM = MM_;
  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRowsPerCta = kWarps * 32;
  static constexpr int kSlots = 32;                              // slots per lane per tile
  static constexpr int kElemsPerVec = 16 / int(sizeof(T));
  static constexpr int kVecs = kSlots / kElemsPerVec;            // 16-byte value loads per tile
  static constexpr int kIdxWords = kSlots * B / 32;              // = B
  static constexpr int kIdxVec = B % 4 == 0 ? 4 : (B % 2 == 0 ? 2 : 1);
  static constexpr int kIdxLoads = kIdxWords / kIdxVec;
  // X is staged in shared memory as fp32, [column][kXStride]: MR values per column, padded to 12
  // floats (48 B) for MR = 8 so the two 16-byte reads of 8 lanes land in 8 distinct bank groups.
  static constexpr int kXStride = MR == 8 ? 12 : MR;
  static constexpr int kXBytes = kXStride * 4;                   // bytes of X per column in smem
  static constexpr int kRedBytes = MR * kRowsPerCta * 4;         // split-k partials (fp32)
  static_assert(kSlots % (NN > 0 ? NN : 1) == 0, "compile-time N must divide the tile");
  static_assert(B >= 1 && B <= 8, "index bits 1..8");
};

}  // namespace sparsenm::cuda::ew
