// sparsenm — canonical condensed formats (byte-exact spec: docs/FORMAT.md).
//
// A W of rows x cols is cut along k into `windows = ceil(cols / window_cols)` windows; the last
// one is padded logically with zero columns. Every row stores exactly values_per_window values
// per window (a window with fewer nonzeros stores explicit zeros), so:
//
//   values   [rows][value_cols]           dtype of the weight, value_cols = windows * values_per_window
//                                         ordered by window, then ascending position in the window
//   indices  [index_rows][index_row_bytes] uint8, packed little-endian bitstream per row: field j
//                                         occupies bits [j*b, j*b + b) (b = index_bits), LSB first
//     element/hw24: one row per weight row, windows*n fields, b = ceil(log2 m): column in window
//     vector:       one row per group of v weight rows, windows*n fields, b = ceil(log2 m)
//     block:        one row per group of bn weight rows, windows*n fields, b = ceil(log2 m):
//                   block number in the window; each kept block stores bk consecutive values
//     venom:        one row per weight row, windows*2 fields, b = 2: position (0..3) among the
//                   window's 4 selected columns
//   columns  [colloc_rows][colloc_row_bytes] uint8, venom only: per slab of V rows, windows*4
//                                         fields of ceil(log2 m) bits, the 4 kept columns ascending
//
// Positions inside a window are strictly ascending. A stored slot whose column lies past `cols`
// (only possible in the last window) must hold the value 0; consumers skip such slots and never
// read X there. The result of a product is defined as the sum over stored slots with a column
// inside the matrix: pruned positions contribute nothing, even where X holds Inf or NaN.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sparsenm/dtype.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/pattern.hpp"

namespace sparsenm {

/// Every shape derived from (pattern, rows, cols). Plain values: print them, test them.
struct FormatLayout {
  Pattern pattern;
  std::int64_t rows = 0, cols = 0;
  std::int64_t windows = 0;          ///< ceil(cols / pattern.window_cols())
  std::int64_t value_cols = 0;       ///< values per row
  int index_bits = 0;                ///< bits per field of `indices`
  std::int64_t index_rows = 0;       ///< rows of `indices`
  std::int64_t index_fields = 0;     ///< fields per row of `indices`
  std::int64_t index_row_bytes = 0;  ///< ceil(index_fields * index_bits / 8)
  int colloc_bits = 0;               ///< venom: ceil(log2 m); else 0
  std::int64_t colloc_rows = 0;      ///< venom: ceil(rows / V); else 0
  std::int64_t colloc_fields = 0;    ///< venom: windows * 4; else 0
  std::int64_t colloc_row_bytes = 0;

  /// Validates pattern and dims (rows, cols >= 1); throws InvalidArgument.
  static FormatLayout of(const Pattern& p, std::int64_t rows, std::int64_t cols);

  std::size_t value_bytes(DType t) const noexcept { return std::size_t(rows * value_cols) * dtype_size(t); }
  std::size_t index_bytes() const noexcept { return std::size_t(index_rows * index_row_bytes); }
  std::size_t colloc_bytes() const noexcept { return std::size_t(colloc_rows * colloc_row_bytes); }
  std::string str() const;  ///< one line, e.g. "2:8 11008x4096: values 11008x1024, indices 11008x768 (3 bit)"

  friend bool operator==(const FormatLayout&, const FormatLayout&) = default;
};

/// Reads field j (bits [j*bits, j*bits+bits), LSB first) of a packed row. bits in 1..8.
inline unsigned get_packed(const std::uint8_t* row, std::int64_t j, int bits) noexcept {
  std::int64_t bit = j * bits;
  const std::uint8_t* p = row + (bit >> 3);
  unsigned word = p[0] | (((bit & 7) + bits > 8) ? unsigned(p[1]) << 8 : 0u);
  return (word >> (bit & 7)) & ((1u << bits) - 1u);
}
/// Writes field j of a packed row (the field's bits must be zero beforehand).
inline void set_packed(std::uint8_t* row, std::int64_t j, int bits, unsigned value) noexcept {
  std::int64_t bit = j * bits;
  std::uint8_t* p = row + (bit >> 3);
  unsigned word = (value & ((1u << bits) - 1u)) << (bit & 7);
  p[0] = std::uint8_t(p[0] | (word & 0xffu));
  if ((bit & 7) + bits > 8) p[1] = std::uint8_t(p[1] | (word >> 8));
}

/// A weight in its canonical condensed format. Owns host memory.
struct CondensedMatrix {
  FormatLayout layout;
  DType dtype = DType::f16;
  std::vector<std::byte> values;      ///< [rows][value_cols] of dtype
  std::vector<std::uint8_t> indices;  ///< [index_rows][index_row_bytes]
  std::vector<std::uint8_t> columns;  ///< venom: [colloc_rows][colloc_row_bytes]; else empty

  const Pattern& pattern() const noexcept { return layout.pattern; }
  std::int64_t rows() const noexcept { return layout.rows; }
  std::int64_t cols() const noexcept { return layout.cols; }

  /// Zero-filled storage of the right sizes.
  static CondensedMatrix allocate(const FormatLayout& layout, DType dtype);

  /// Throws FormatError if sizes disagree with the layout, an index is out of range, positions
  /// are not strictly ascending, or a slot past `cols` holds a nonzero value.
  void validate() const;

  /// Column (0..cols-1, or >= cols for a padding slot) of stored value `slot` of row r.
  std::int64_t column_of(std::int64_t r, std::int64_t slot) const noexcept;
  float value(std::int64_t r, std::int64_t slot) const noexcept {
    return load_as_float(dtype, values.data(), std::size_t(r * layout.value_cols + slot));
  }
};

/// Result of checking a dense matrix against a pattern.
struct PatternCheck {
  bool ok = true;
  std::int64_t violations = 0;  ///< windows (or V x M blocks) that break the pattern
  std::int64_t first_row = -1;  ///< first offending row (first row of its group)
  std::int64_t first_col = -1;  ///< first column of the offending window
  std::string message;          ///< empty when ok; else names the place and the rule
};

/// Does `dense` satisfy pattern `p` (at most the allowed nonzeros in every window / block)?
PatternCheck check_pattern(const MatrixView& dense, const Pattern& p);

/// Condenses a dense matrix that satisfies `p`; throws PatternViolation (naming the first
/// offending window) otherwise. Deterministic: nonzero positions first, then the lowest free
/// positions, stored ascending. Values keep the dense dtype.
CondensedMatrix condense(const MatrixView& dense, const Pattern& p);

/// The dense matrix (same dtype) a condensed weight stands for. condense(expand(c)) == c
/// for any c produced by condense.
DenseMatrix expand(const CondensedMatrix& c);

/// Storage report: bytes of values, of indices (and column-loc), and their ratio to dense.
struct Footprint {
  std::size_t value_bytes = 0, index_bytes = 0, colloc_bytes = 0;
  std::size_t dense_bytes = 0;
  std::size_t total() const noexcept { return value_bytes + index_bytes + colloc_bytes; }
  double ratio() const noexcept { return dense_bytes ? double(total()) / double(dense_bytes) : 0.0; }
  std::string str() const;
};
Footprint footprint(const FormatLayout& layout, DType dtype);

}  // namespace sparsenm
