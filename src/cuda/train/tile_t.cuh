// sparsenm — a 64-row x 32-window tile of hw24 output staged in shared memory, written out
// row by row. Used where the kernel's natural thread mapping walks the OTHER dimension of the
// output (S(W)^T in the mask kernels, MVUE(dZ^T) from token-major dZ): threads drop (value pair,
// nibble) per (row, window) into shared memory, then the CTA writes each output row's 64 values
// (128 B in fp16) with 16-byte stores and its 16 index bytes with 4-byte stores.
// Bank conflicts: the row pitch is an odd number of 32-bit words (33 / 65), so the column-wise
// deposits of a warp spread over banks (at most 2-way); the write-out reads 4-byte words.
#pragma once
#include <cstdint>

#include "cuda/train/train_common.cuh"

namespace sparsenm::train::detail {

template <class Raw>
struct TileT {
  static constexpr int kRows = 64, kWindows = 32, kValues = 64;
  static constexpr int kPitch = sizeof(Raw) == 2 ? 33 : 65;  ///< 32-bit words per row
  std::uint32_t vals[kRows * kPitch];
  std::uint8_t nib[kRows][kWindows];

  __device__ __forceinline__ void put(int row, int win, Raw lo, Raw hi, unsigned nibble) {
    if constexpr (sizeof(Raw) == 2) {
      vals[row * kPitch + win] = std::uint32_t(lo) | (std::uint32_t(hi) << 16);
    } else {
      vals[row * kPitch + 2 * win] = lo;
      vals[row * kPitch + 2 * win + 1] = hi;
    }
    nib[row][win] = std::uint8_t(nibble);
  }
  /// 16-bit types: the value pair already packed as lo | hi << 16.
  __device__ __forceinline__ void put_word(int row, int win, std::uint32_t pair, unsigned nibble) {
    static_assert(sizeof(Raw) == 2);
    vals[row * kPitch + win] = pair;
    nib[row][win] = std::uint8_t(nibble);
  }
  __device__ __forceinline__ Raw value(int row, int v) const {
    if constexpr (sizeof(Raw) == 2) return Raw(vals[row * kPitch + v / 2] >> ((v & 1) * 16));
    else return vals[row * kPitch + v];
  }

  /// Writes the tile to output rows [row0, row0+64) x windows [win0, win0+32) of a hw24 matrix
  /// with out_rows rows and `windows` windows. `fast`: the tile is interior and rows are
  /// 16-byte (values) / 4-byte (indices) aligned. Must be called by all 256 threads after a
  /// __syncthreads().
  __device__ __forceinline__ void write(Raw* __restrict__ values, std::uint8_t* __restrict__ indices,
                                        std::int64_t row0, std::int64_t win0, std::int64_t out_rows,
                                        std::int64_t windows, bool fast) const {
    const int tid = threadIdx.x;
    const std::int64_t vcols = 2 * windows, irb = (windows + 1) / 2;
    if (fast) {
      if (values) {
        constexpr int kWordsPerChunk = 4, kChunks = kValues * int(sizeof(Raw)) / 16;
        for (int i = tid; i < kRows * kChunks; i += 256) {
          const int row = i / kChunks, ch = i % kChunks;
          const std::uint32_t* w = vals + row * kPitch + ch * kWordsPerChunk;
          __stcs(reinterpret_cast<uint4*>(values + (row0 + row) * vcols + 2 * win0) + ch,
                 make_uint4(w[0], w[1], w[2], w[3]));
        }
      }
      if (indices) {
        const int row = tid / 4, q = tid % 4;
        std::uint32_t word = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k)
          word |= std::uint32_t(nib[row][8 * q + 2 * k] | (nib[row][8 * q + 2 * k + 1] << 4)) << (8 * k);
        __stcs(reinterpret_cast<std::uint32_t*>(indices + (row0 + row) * irb + win0 / 2) + q, word);
      }
      return;
    }
    if (values) {
      for (int i = tid; i < kRows * kValues; i += 256) {
        const int row = i / kValues, v = i % kValues;
        if (row0 + row < out_rows && 2 * win0 + v < vcols) values[(row0 + row) * vcols + 2 * win0 + v] = value(row, v);
      }
    }
    if (indices) {
      for (int i = tid; i < kRows * kWindows / 2; i += 256) {
        const int row = i / (kWindows / 2), b = i % (kWindows / 2);
        const std::int64_t gb = win0 / 2 + b, w0 = win0 + 2 * b;
        if (row0 + row < out_rows && gb < irb) {
          unsigned byte = w0 < windows ? nib[row][2 * b] : 0u;
          if (w0 + 1 < windows) byte |= unsigned(nib[row][2 * b + 1]) << 4;
          indices[(row0 + row) * irb + gb] = std::uint8_t(byte);
        }
      }
    }
  }
};

}  // namespace sparsenm::train::detail
