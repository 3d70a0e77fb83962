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
/// element/hw24: slot j lies in window j / n at the column its index field names. venom
/// (format.hpp): slot j lies in window j / 2; its 2-bit index field picks one of the window's 4
/// selected columns, which the column-loc row of the row's V-slab lists.
void row_entries(const CondensedMatrix& w, std::int64_t r, std::vector<std::pair<std::int64_t, std::uint16_t>>& out) {
  const FormatLayout& L = w.layout;
  const Pattern& p = L.pattern;
  const bool venom = p.kind == Granularity::venom;
  const int per_window = venom ? 2 : p.n;
  const std::uint8_t* idx = w.indices.data() + std::size_t(r * L.index_row_bytes);
  const std::uint8_t* crow = venom ? w.columns.data() + std::size_t((r / p.v) * L.colloc_row_bytes) : nullptr;
  const auto* vals = reinterpret_cast<const std::uint16_t*>(w.values.data()) + std::size_t(r * L.value_cols);
  out.clear();
  for (std::int64_t j = 0; j < L.value_cols; ++j) {
    const std::int64_t win = j / per_window;
    const unsigned field = get_packed(idx, j, L.index_bits);
    const std::int64_t col = win * p.m + (venom ? get_packed(crow, win * 4 + field, L.colloc_bits) : field);
    if (col >= L.cols || is_zero_bits(vals[j])) continue;
    out.emplace_back(col, vals[j]);
  }
}

std::string shape_problem(const CondensedMatrix& w) {
  if (w.dtype != DType::f16 && w.dtype != DType::bf16) return "weight dtype must be f16 or bf16 (sparse tensor cores)";
  const auto kind = w.layout.pattern.kind;
  if (kind != Granularity::hw24 && kind != Granularity::element && kind != Granularity::venom)
    return "pattern must be hw24, element N:M or venom V:2:M";
  const FormatLayout& L = w.layout;
  if (L.rows < 1 || L.cols < 1) return "weight must have rows, cols >= 1";
  if (w.values.size() < std::size_t(L.rows * L.value_cols) * 2 || w.indices.size() < std::size_t(L.index_rows * L.index_row_bytes) ||
      w.columns.size() < std::size_t(L.colloc_rows * L.colloc_row_bytes))
    return "weight storage is smaller than its layout";
  if (L.index_rows != L.rows) return "element/hw24/venom weights need one index row per weight row";
  if (kind == Granularity::venom && (L.pattern.v < 1 || L.colloc_rows != (L.rows + L.pattern.v - 1) / L.pattern.v))
    return "venom weight needs one column-loc row per slab of V rows";
  return {};
}

}  // namespace

std::string hw24_unsupported(const CondensedMatrix& w) {
  if (std::string why = shape_problem(w); !why.empty()) return why;
  const auto& p = w.layout.pattern;
  // Every aligned group of 4 holds <= 2 nonzeros when windows are unions of aligned groups of 4
  // (m % 4 == 0) and each window stores <= 2 values (element n <= 2; venom: always 2).
  if (p.kind == Granularity::hw24 || (p.m % 4 == 0 && (p.kind == Granularity::venom || p.n <= 2))) return {};
  std::vector<std::pair<std::int64_t, std::uint16_t>> e;
  std::vector<Slot> slots;
  for (std::int64_t r = 0; r < w.layout.rows; ++r) {
    row_entries(w, r, e);
    if (!columns_to_slots(e, w.layout.cols, slots))
      return "row " + std::to_string(r) + " has more than 2 nonzeros in an aligned group of 4 columns, so this " + p.str() +
             " weight is not a hardware 2:4 matrix";
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

std::string venom_unsupported(const CondensedMatrix& w) {
  if (w.dtype != DType::f16 && w.dtype != DType::bf16) return "weight dtype must be f16 or bf16 (sparse tensor cores)";
  const FormatLayout& L = w.layout;
  if (L.pattern.kind != Granularity::venom) return "pattern must be venom V:2:M";
  if (L.rows < 1 || L.cols < 1) return "weight must have rows, cols >= 1";
  if (L.pattern.v < 32 || L.pattern.v % 32 != 0 || L.pattern.m < 4) return "venom needs V a multiple of 32 and M >= 4";
  if (w.values.size() < std::size_t(L.rows * L.value_cols) * 2 || w.indices.size() < std::size_t(L.index_rows * L.index_row_bytes) ||
      w.columns.size() < std::size_t(L.colloc_rows * L.colloc_row_bytes))
    return "weight storage is smaller than its layout";
  return {};
}

PackedVnm pack_venom(const CondensedMatrix& w, int group_rows, int row_align) {
  if (std::string why = venom_unsupported(w); !why.empty()) throw InvalidArgument("weight", why);
  if (group_rows != 64 && group_rows != 128) throw InvalidArgument("group_rows", "must be 64 or 128");
  if (row_align < group_rows || row_align % group_rows != 0)
    throw InvalidArgument("row_align", "must be a positive multiple of group_rows");
  const FormatLayout& L = w.layout;
  const int v = L.pattern.v, mw = L.pattern.m;
  const bool spread = v < group_rows;
  if (spread && !(v == 32 && group_rows == 64))
    throw InvalidArgument("group_rows", "must be <= V, except V = 32 with 64-row groups");
  if (!spread && v % group_rows != 0) throw InvalidArgument("group_rows", "must divide V");
  PackedVnm out;
  out.group_rows = group_rows;
  out.rows_per_group = spread ? 32 : group_rows;
  const std::int64_t packed_rows = spread ? ((L.rows + 31) / 32) * 64 : L.rows;
  const auto* vals = reinterpret_cast<const std::uint16_t*>(w.values.data());
  out.a = pack24(packed_rows, L.windows, row_align, [&](std::int64_t pr, std::vector<Slot>& slots) {
    const std::int64_t r = out.weight_row(pr, L.rows);
    for (std::int64_t win = 0; win < L.windows; ++win) {
      Slot* sl = &slots[std::size_t(2 * win)];
      if (r < 0) {
        sl[0] = Slot{win, 0, 0};
        sl[1] = Slot{win, 1, 0};
        continue;
      }
      const std::uint8_t* idx = w.indices.data() + std::size_t(r * L.index_row_bytes);
      for (int j = 0; j < 2; ++j)
        sl[j] = Slot{win, int(get_packed(idx, win * 2 + j, L.index_bits)), vals[std::size_t(r * L.value_cols + win * 2 + j)]};
    }
  });
  out.groups = out.a.rows_pad / group_rows;
  out.gather.assign(std::size_t(out.groups * out.a.k_pad), -1);
  for (std::int64_t g = 0; g < out.groups; ++g) {
    const std::int64_t slab = g * out.rows_per_group / v;
    if (slab >= L.colloc_rows) continue;
    const std::uint8_t* crow = w.columns.data() + std::size_t(slab * L.colloc_row_bytes);
    for (std::int64_t win = 0; win < L.windows; ++win)
      for (int i = 0; i < 4; ++i) {
        const std::int64_t col = win * mw + get_packed(crow, win * 4 + i, L.colloc_bits);
        if (col < L.cols) out.gather[std::size_t(g * out.a.k_pad + win * 4 + i)] = std::int32_t(col);
      }
  }
  return out;
}

}  // namespace sparsenm::sptc
