// sparsenm — internal: a venom V:2:M weight packed for the native V:2:M stream-K SpMV
// ("cuda:vnm_spmv_sk" / "cuda:vnm_spmv_skr", src/cuda/ew/spmv_sk_kernel.cuh with SkTraits::VM = M).
// Host code, CPU-testable (tests/test_vnm_sk_pack.cpp).
//
// The EW stream layout (src/cuda/ew/spmv_layout.hpp) of element 2:4 over "gathered" columns:
//   * rows in groups of 32 (one warp, lane = row % 32), each row's slots (2 per M-window, canonical
//     order) in tiles of 32 slots = 16 windows;
//   * values:  [group][tile][vec 0..vecs-1][lane][16 bytes]           (exactly as ew_spmv packs them)
//   * indices: [group][tile][lane][2 words]: the lane's 32 2-bit fields (position 0..3 among the
//              window's 4 selected columns, the canonical venom index unchanged) as a 64-bit
//              little-endian bitstream, slot j at bits [2j, 2j + 2)      (exactly the 2:4 packing)
//   * table:   [slab][tile][32 bytes]: byte L (lane L of every warp of the slab) holds the in-window
//              columns of selected positions 2 (L % 2) (low nibble) and 2 (L % 2) + 1 (high nibble)
//              of window 16 tile + L / 2: the slab's column table, once per slab (V rows), not per
//              row group; windows past the last one hold 0.
// Bytes per (32 rows, tile): 2048 (values, 2-byte dtype) + 256 (indices) + 32 / (V / 32) (table);
// the canonical V:2:M bytes are 2048 + 256 + 16 ceil(log2 M) 4 / 8 / (V / 32): at V = 128 the packed
// weight is 0.1 % (M = 8) / 0 % (M = 16) larger than the format, the element 2:M form 5.3 % / 10.7 %.
// Rows past n and slots past the last window are zero (value 0, index 0): they multiply X columns
// that the kernel keeps as zeros in shared memory past k.
// Limits (InvalidArgument naming "w"): venom pattern, V % 32 == 0 (a warp's rows lie in one slab),
// M <= 16 (a column in a nibble), f16 / bf16 values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sparsenm/format.hpp"

namespace sparsenm::detail {

constexpr int kVnmSkSlots = 32;     ///< slots per lane per tile (16 windows)
constexpr int kVnmSkRowGroup = 32;  ///< rows per warp
constexpr int kVnmSkTabBytes = 32;  ///< column-table bytes per (slab, tile)
constexpr int kVnmSkMaxM = 16;      ///< a column in a nibble

struct VnmSkLayout {
  std::int64_t rows = 0, cols = 0;
  int v = 0, m = 0;             ///< pattern V and M (N = 2)
  int elem_bytes = 2;           ///< value dtype size
  std::int64_t windows = 0;     ///< canonical windows per row
  std::int64_t slots = 0;       ///< canonical slots per row (2 windows)
  std::int64_t tiles = 0;       ///< ceil(slots / 32)
  std::int64_t row_groups = 0;  ///< ceil(rows / 32)
  std::int64_t slabs = 0;       ///< ceil(rows / V)
  int slab_groups = 0;          ///< V / 32: row groups per slab
  int vecs = 0;                 ///< 16-byte value vectors per lane per tile

  /// Throws InvalidArgument("w", ...) when the pattern / dtype cannot be packed (see the limits above).
  static VnmSkLayout of(const FormatLayout& f, DType dtype);
  std::size_t value_bytes() const noexcept { return std::size_t(row_groups * tiles) * vecs * 32 * 16; }
  std::size_t index_words() const noexcept { return std::size_t(row_groups * tiles) * 2 * 32; }
  std::size_t table_bytes() const noexcept { return std::size_t(slabs * tiles) * kVnmSkTabBytes; }
  std::size_t total_bytes() const noexcept { return value_bytes() + index_words() * 4 + table_bytes(); }
  /// Element offset of (row r, slot s) in the packed values.
  std::size_t value_offset(std::int64_t r, std::int64_t s) const noexcept;
  /// Word offset of word w (0, 1) of the lane's index bitstream for (row r, tile t).
  std::size_t index_word_offset(std::int64_t r, std::int64_t t, int w) const noexcept;
  /// Byte offset of the column table of (slab, tile t).
  std::size_t table_offset(std::int64_t slab, std::int64_t t) const noexcept {
    return std::size_t(slab * tiles + t) * kVnmSkTabBytes;
  }
  std::string str() const;
};

struct VnmSkPacked {
  VnmSkLayout layout;
  std::vector<std::byte> values;
  std::vector<std::uint32_t> indices;
  std::vector<std::uint8_t> table;
};

/// Packs a venom V:2:M weight; throws InvalidArgument (naming `w`) outside the limits above.
VnmSkPacked pack_vnm_sk(const CondensedMatrix& w);

/// Reads back the column (0 .. windows * M - 1; past cols only for padding) the kernel multiplies
/// for (row r, slot s < slots) of a packed weight: the 2-bit position from the index words, the
/// column from the slab's table. For tests of the layout.
std::int64_t unpack_vnm_sk_column(const VnmSkPacked& p, std::int64_t r, std::int64_t s);

}  // namespace sparsenm::detail
