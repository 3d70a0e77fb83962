// sparsenm — canonical hw24 (train.hpp / format.hpp) -> the sparse tensor-core operand layout of
// src/cuda/sptc/layout.hpp, as index arithmetic shared by the device repack kernels
// (fst_kernels.cu) and the CPU tests (tests/test_fst_layout.cpp checks it against
// sptc::pack24). Host + device, no CUDA headers needed.
//
// hw24 indices of a [rows][k] matrix: row pitch irb = ceil(ceil(k/4) / 2) bytes; group gi is the
// nibble (gi & 1) of byte gi / 2 and reads pos0 | pos1 << 2 — exactly the nibble that
// layout.hpp's metadata wants at bits [16h + 4q, +4) (slot s at +2s). So one metadata word
// (k block kb, row block nb, thread i = 32w + 4g + 2kk + t) is the two 16-bit index slices of
// groups G0..G0+3 (G0 = 16kb + 8kk + 4t, a multiple of 4: they start at byte G0 / 2) of rows
// 64nb + 16w + g (low half) and + 8 (high half). Rows >= rows and groups >= ceil(k/4) get the
// padding nibble 0x4 (positions 0, 1), as pack24 writes them.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define SPARSENM_HD __host__ __device__ __forceinline__
#else
#define SPARSENM_HD inline
#endif

namespace sparsenm::train::detail {

SPARSENM_HD std::int64_t fst_round_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b * b; }

/// Geometry of one packed operand: `rows` x `k` (k = the sparse axis), rows padded to 128 (every
/// tile of the wgmma / mma kernels divides it), k to 64.
struct PackGeom {
  std::int64_t rows = 0, k = 0, rows_pad = 0, k_pad = 0;
  std::int64_t groups = 0;     ///< ceil(k / 4)
  std::int64_t irb = 0;        ///< hw24 index bytes per row
  std::int64_t hw_cols = 0;    ///< hw24 values per row: 2 * groups
  std::int64_t pack_cols = 0;  ///< packed values per row: k_pad / 2
  std::int64_t meta_words = 0; ///< (k_pad / 64) * (rows_pad / 64) * 128
  /// hw24 values can be written straight into the packed values buffer (same row pitch).
  SPARSENM_HD bool direct() const { return hw_cols == pack_cols; }
};

SPARSENM_HD PackGeom pack_geom(std::int64_t rows, std::int64_t k) {
  PackGeom g;
  g.rows = rows;
  g.k = k;
  g.rows_pad = fst_round_up(rows, 128);
  g.k_pad = fst_round_up(k, 64);
  g.groups = (k + 3) / 4;
  g.irb = (g.groups + 1) / 2;
  g.hw_cols = 2 * g.groups;
  g.pack_cols = g.k_pad / 2;
  g.meta_words = (g.k_pad / 64) * (g.rows_pad / 64) * 128;
  return g;
}

/// Metadata word `word` (index into [k_pad/64][rows_pad/64][128]) from hw24 index bytes.
SPARSENM_HD std::uint32_t meta_word_from_hw24(const std::uint8_t* idx, const PackGeom& g, std::int64_t word) {
  const int thread = int(word % 128);
  const std::int64_t rest = word / 128, nblocks = g.rows_pad / 64;
  const std::int64_t nb = rest % nblocks, kb = rest / nblocks;
  const int w = thread / 32, lane = thread % 32, gr = lane / 4, kk = (lane % 4) / 2, t = lane % 2;
  const std::int64_t g0 = 16 * kb + 8 * kk + 4 * t;
  std::uint32_t out = 0;
  for (int h = 0; h < 2; ++h) {
    const std::int64_t r = 64 * nb + 16 * w + gr + 8 * h;
    for (int q = 0; q < 4; ++q) {
      const std::int64_t gi = g0 + q;
      std::uint32_t nib = 0x4u;
      if (r < g.rows && gi < g.groups) nib = (std::uint32_t(idx[r * g.irb + gi / 2]) >> (4 * (gi & 1))) & 0xFu;
      out |= nib << (16 * h + 4 * q);
    }
  }
  return out;
}

/// Packed value (r, c) of [rows_pad][pack_cols] from hw24 values [rows][hw_cols] (raw 16-bit).
SPARSENM_HD std::uint16_t packed_value_from_hw24(const std::uint16_t* hw, const PackGeom& g, std::int64_t r, std::int64_t c) {
  return (r < g.rows && c < g.hw_cols) ? hw[r * g.hw_cols + c] : std::uint16_t(0);
}

}  // namespace sparsenm::train::detail
