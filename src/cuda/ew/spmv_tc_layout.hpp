// sparsenm — EW-N:M tensor-core SpMV layout (host side, CPU-testable): how the canonical condensed
// format (include/sparsenm/format.hpp) is repacked once, at plan time, for ew_spmv_tc_kernel.
//
// A warp owns a block of 16 rows (the M dimension of mma.m16n8k16). Lane = 4g + t holds, in the
// mma A fragment, rows g and g+8 of the block. Along k the row is cut into chunks of 4 windows;
// lane t decodes window t of every chunk, for both of its rows (so the four lanes of a quad cover
// one chunk, and a lane's window is whole: its N values and N indices are all it needs). A lane's
// tile is 32 slots = 16 / N chunks x 2 rows x N slots, in the order
//   slot j = chunk c * 2N + h * N + i     (h = 0: row g, h = 1: row g + 8; i = slot in the window)
// so one tile spans 64 canonical slots of each row of the block, i.e. 64 M / N columns.
//   values : [row block][tile][16-byte vector q = 0..3][lane][8 x 16-bit]
//   indices: the lane's 32 b-bit fields as one little-endian bitstream of b 32-bit words (the
//            canonical packing, unchanged), stored [row block][tile][load][lane][idx_vec words]
// so every load instruction of a warp reads 512 contiguous bytes (values) or 128/256/512 bytes
// (indices). Rows past n and windows past the row's last window are zero (value 0, index 0):
// their columns are >= k, where the kernel's staged X is zero. Footprint over the canonical one:
// only these tails (< 16 rows, < 64 slots per row).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sparsenm/format.hpp"

namespace sparsenm::cuda::ew {

constexpr int kTcSlots = 32;      ///< slots per lane per tile
constexpr int kTcRowBlock = 16;   ///< rows per warp (mma M)
constexpr int kTcRowSlots = 64;   ///< canonical slots of one row per tile (4 lanes x 16)

struct SpmvTcLayout {
  std::int64_t rows = 0, cols = 0;
  int n = 0, m = 0, bits = 0;     ///< pattern N, M and index bits b
  std::int64_t slots = 0;         ///< canonical slots per row (value_cols)
  std::int64_t windows = 0;       ///< canonical windows per row
  std::int64_t tiles = 0;         ///< ceil(slots / 64)
  std::int64_t row_blocks = 0;    ///< ceil(rows / 16)
  int chunks = 0;                 ///< chunks per tile (16 / N)
  int tile_cols = 0;              ///< columns one tile spans (64 M / N)
  int idx_vec = 1;                ///< 32-bit words per index load (4, 2 or 1: divides b)
  int idx_loads = 0;              ///< index loads per lane per tile (b / idx_vec)

  /// Throws InvalidArgument unless the pattern is element / hw24 with N dividing 16 and M in
  /// {4, 8, 16} (M > N), and the dtype is f16 or bf16.
  static SpmvTcLayout of(const FormatLayout& f, DType dtype);
  /// "" when (pattern, dtype) fits this layout, else the reason (for unsupported()).
  static std::string why_not(const FormatLayout& f, DType dtype);

  std::size_t value_bytes() const noexcept { return std::size_t(row_blocks * tiles) * 4 * 32 * 16; }
  std::size_t index_words() const noexcept { return std::size_t(row_blocks * tiles) * bits * 32; }
  /// Lane (0..31) and lane slot (0..31) of canonical (row r, slot s); tile via tile_of.
  int lane_of(std::int64_t r, std::int64_t s) const noexcept;
  int lane_slot_of(std::int64_t r, std::int64_t s) const noexcept;
  std::int64_t tile_of(std::int64_t s) const noexcept { return s / kTcRowSlots; }
  /// Element offset (16-bit units) of (row r, slot s) in the packed values.
  std::size_t value_offset(std::int64_t r, std::int64_t s) const noexcept;
  /// Word offset of word w (0..b-1) of the bitstream of (row block rb, tile t, lane).
  std::size_t index_word_offset(std::int64_t rb, std::int64_t t, int lane, int w) const noexcept;
  std::string str() const;
};

struct SpmvTcPacked {
  SpmvTcLayout layout;
  std::vector<std::byte> values;
  std::vector<std::uint32_t> indices;
};

/// Repacks an element/hw24 condensed weight (f16 / bf16). Throws InvalidArgument otherwise.
SpmvTcPacked pack_spmv_tc(const CondensedMatrix& w);

/// Reads back the in-window index of (row, slot) from a packed weight (tests of the layout).
unsigned unpack_spmv_tc_index(const SpmvTcPacked& p, std::int64_t r, std::int64_t s);

}  // namespace sparsenm::cuda::ew
