// sparsenm — canonical condensed weights -> sparse tensor-core 2:4 operand (see cuda/sptc/pack.hpp).
// Lives in src/plan/ so that the CPU build (and its tests) compile it without CUDA.
#include "cuda/sptc/pack.hpp"

#include <utility>
#include <vector>

#include "sparsenm/error.hpp"

namespace sparsenm::sptc {
namespace {

bool is_zero_bits(std::uint16_t b) { return (b & 0x7fffu) == 0; }

/// Stored (column, value bits) of row r, columns ascending, zeros and padding slots dropped.
void row_entries(const CondensedMatrix& w, std::int64_t r, std::vector<std::pair<std::int64_t, std::uint16_t>>& out) {
  const FormatLayout& L = w.layout;
  const int per_window = L.pattern.n;
  const std::uint8_t* idx = w.indices.data() + std::size_t(r * L.index_row_bytes);
  const auto* vals = reinterpret_cast<const std::uint16_t*>(w.values.data()) + std::size_t(r * L.value_cols);
  out.clear();
  for (std::int64_t j = 0; j < L.value_cols; ++j) {
    const std::int64_t col = (j / per_window) * L.pattern.m + get_packed(idx, j, L.index_bits);
    if (col >= L.cols || is_zero_bits(vals[j])) continue;
    out.emplace_back(col, vals[j]);
  }
}

std::string shape_problem(const CondensedMatrix& w) {
  if (w.dtype != DType::f16 && w.dtype != DType::bf16) return "weight dtype must be f16 or bf16 (sparse tensor cores)";
  const auto kind = w.layout.pattern.kind;
  if (kind != Granularity::hw24 && kind != Granularity::element) return "pattern must be hw24 or element N:M";
  const FormatLayout& L = w.layout;
  if (L.rows < 1 || L.cols < 1) return "weight must have rows, cols >= 1";
  if (w.values.size() < std::size_t(L.rows * L.value_cols) * 2 || w.indices.size() < std::size_t(L.index_rows * L.index_row_bytes))
    return "weight storage is smaller than its layout";
  if (L.index_rows != L.rows) return "element/hw24 weights need one index row per weight row";
  return {};
}

}  // namespace

std::string hw24_unsupported(const CondensedMatrix& w) {
  if (std::string why = shape_problem(w); !why.empty()) return why;
  const auto& p = w.layout.pattern;
  if (p.kind == Granularity::hw24 || (p.m % 4 == 0 && p.n <= 2)) return {};  // every aligned group of 4: <= 2
  std::vector<std::pair<std::int64_t, std::uint16_t>> e;
  std::vector<Slot> slots;
  for (std::int64_t r = 0; r < w.layout.rows; ++r) {
    row_entries(w, r, e);
    if (!columns_to_slots(e, w.layout.cols, slots))
      return "row " + std::to_string(r) + " has more than 2 nonzeros in an aligned group of 4 columns";
  }
  return {};
}

Packed24 pack_hw24(const CondensedMatrix& w, int row_align) {
  if (std::string why = shape_problem(w); !why.empty()) throw InvalidArgument("weight", why);
  const std::int64_t rows = w.layout.rows, cols = w.layout.cols, groups = (cols + 3) / 4;
  std::vector<std::pair<std::int64_t, std::uint16_t>> e;
  return pack24(rows, groups, row_align, [&](std::int64_t r, std::vector<Slot>& slots) {
    row_entries(w, r, e);
    if (!columns_to_slots(e, cols, slots))
      throw InvalidArgument("weight", "row " + std::to_string(r) +
                                          " has more than 2 nonzeros in an aligned group of 4 columns (not 2:4-packable)");
  });
}

}  // namespace sparsenm::sptc
