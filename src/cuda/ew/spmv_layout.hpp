// sparsenm — EW-N:M SpMV kernel layout (host side, CPU-testable): how the canonical condensed
// format (include/sparsenm/format.hpp) is repacked once, at plan time, for ew_spmv_kernel.
//
// Rows are cut into groups of 32 (one warp; lane = row % 32) and each row's slots (stored values,
// canonical order) into tiles of kSlots = 32 slots. For row group g and tile t a warp reads
//   values : kVecs 16-byte vectors per lane, stored [g][t][vec][lane][16 bytes]
//   indices: the lane's 32 b-bit fields as a little-endian bitstream of b 32-bit words (the
//            canonical packing, unchanged: no widening), stored [g][t][load][lane][kIdxVec words]
// so every load instruction of a warp touches one contiguous 512-byte (values) or
// 128/256/512-byte (indices) span. Rows past n and slots past value_cols are zero (value 0,
// index 0): they multiply zeros kept in shared memory past k, so X is never read past k.
// Footprint over the canonical one: only these tails (< 32 rows, < 32 slots per row).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sparsenm/format.hpp"

namespace sparsenm::cuda::ew {

constexpr int kSpmvSlots = 32;     ///< slots per lane per tile
constexpr int kSpmvRowGroup = 32;  ///< rows per warp

struct SpmvLayout {
  std::int64_t rows = 0, cols = 0;
  int n = 0, m = 0, bits = 0;       ///< pattern N, M and index bits b
  int elem_bytes = 2;               ///< value dtype size
  std::int64_t slots = 0;           ///< canonical slots per row (value_cols)
  std::int64_t windows = 0;         ///< canonical windows per row
  std::int64_t tiles = 0;           ///< ceil(slots / 32)
  std::int64_t row_groups = 0;      ///< ceil(rows / 32)
  int vecs = 0;                     ///< 16-byte value vectors per lane per tile (32 * elem_bytes / 16)
  int idx_vec = 1;                  ///< 32-bit words per index load (4, 2 or 1: divides b)
  int idx_loads = 0;                ///< index loads per lane per tile (b / idx_vec)

  static SpmvLayout of(const FormatLayout& f, DType dtype);
  std::size_t value_bytes() const noexcept { return std::size_t(row_groups * tiles) * vecs * 32 * 16; }
  std::size_t index_words() const noexcept { return std::size_t(row_groups * tiles) * bits * 32; }
  /// Element offset (in values of elem_bytes) of (row r, slot s) in the packed values.
  std::size_t value_offset(std::int64_t r, std::int64_t s) const noexcept;
  /// Word offset of word w (0..b-1) of the lane's bitstream for (row r, tile t).
  std::size_t index_word_offset(std::int64_t r, std::int64_t t, int w) const noexcept;
  std::string str() const;
};

struct SpmvPacked {
  SpmvLayout layout;
  std::vector<std::byte> values;
  std::vector<std::uint32_t> indices;
};

/// Repacks an element/hw24 condensed weight. Throws InvalidArgument for other patterns.
SpmvPacked pack_spmv(const CondensedMatrix& w);

/// Reads back (row, slot) from a packed weight: value bytes copied to `value` (elem_bytes) and
/// the in-window index returned. For tests of the layout.
unsigned unpack_spmv_index(const SpmvPacked& p, std::int64_t r, std::int64_t s);

}  // namespace sparsenm::cuda::ew
