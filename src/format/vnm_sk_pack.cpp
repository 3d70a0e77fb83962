// sparsenm — pack_vnm_sk (vnm_sk_pack.hpp).
#include "format/vnm_sk_pack.hpp"

#include <cstring>

#include "sparsenm/error.hpp"

namespace sparsenm::detail {

VnmSkLayout VnmSkLayout::of(const FormatLayout& f, DType dtype) {
  const Pattern& p = f.pattern;
  if (p.kind != Granularity::venom)
    throw InvalidArgument("w", "the V:2:M stream-K packing needs a venom V:2:M weight (got " + p.str() + ")");
  if (p.v % kVnmSkRowGroup != 0)
    throw InvalidArgument("w", "the V:2:M stream-K packing needs V % 32 == 0 (a warp's 32 rows in one slab; got V = " +
                                   std::to_string(p.v) + ")");
  if (p.m > kVnmSkMaxM)
    throw InvalidArgument("w", "the V:2:M stream-K packing needs M <= 16 (a column in a nibble; got M = " +
                                   std::to_string(p.m) + ")");
  if (dtype != DType::f16 && dtype != DType::bf16)
    throw InvalidArgument("w", "the V:2:M stream-K packing needs f16 or bf16 values (got " + std::string(to_string(dtype)) + ")");
  VnmSkLayout l;
  l.rows = f.rows;
  l.cols = f.cols;
  l.v = p.v;
  l.m = p.m;
  l.elem_bytes = int(dtype_size(dtype));
  l.windows = f.windows;
  l.slots = f.value_cols;
  l.tiles = (l.slots + kVnmSkSlots - 1) / kVnmSkSlots;
  l.row_groups = (l.rows + kVnmSkRowGroup - 1) / kVnmSkRowGroup;
  l.slabs = (l.rows + p.v - 1) / p.v;
  l.slab_groups = p.v / kVnmSkRowGroup;
  l.vecs = kVnmSkSlots * l.elem_bytes / 16;
  return l;
}

std::size_t VnmSkLayout::value_offset(std::int64_t r, std::int64_t s) const noexcept {
  const std::int64_t g = r / kVnmSkRowGroup, lane = r % kVnmSkRowGroup;
  const std::int64_t t = s / kVnmSkSlots, j = s % kVnmSkSlots;
  const std::int64_t per_vec = 16 / elem_bytes;
  return std::size_t((((g * tiles + t) * vecs + j / per_vec) * 32 + lane) * per_vec + j % per_vec);
}

std::size_t VnmSkLayout::index_word_offset(std::int64_t r, std::int64_t t, int w) const noexcept {
  const std::int64_t g = r / kVnmSkRowGroup, lane = r % kVnmSkRowGroup;
  return std::size_t(((g * tiles + t) * 32 + lane) * 2 + w);
}

std::string VnmSkLayout::str() const {
  return std::to_string(v) + ":2:" + std::to_string(m) + " " + std::to_string(rows) + "x" + std::to_string(cols) + ": " +
         std::to_string(row_groups) + " row groups x " + std::to_string(tiles) + " tiles, " + std::to_string(slabs) +
         " slab column tables, " + std::to_string(total_bytes()) + " B";
}

VnmSkPacked pack_vnm_sk(const CondensedMatrix& w) {
  VnmSkPacked p;
  p.layout = VnmSkLayout::of(w.layout, w.dtype);
  const VnmSkLayout& l = p.layout;
  const FormatLayout& f = w.layout;
  if (f.index_bits != 2 || f.colloc_bits > 4 || w.indices.size() != f.index_bytes() || w.columns.size() != f.colloc_bytes() ||
      w.values.size() != f.value_bytes(w.dtype))
    throw InvalidArgument("w", "venom weight storage does not match its layout " + f.str());
  p.values.assign(l.value_bytes(), std::byte{0});
  p.indices.assign(l.index_words(), 0u);
  p.table.assign(l.table_bytes(), 0u);
  const std::size_t eb = std::size_t(l.elem_bytes);
  // Rows write disjoint bytes / index words (a word holds one lane's fields only): parallel over rows.
#pragma omp parallel for schedule(static) if (l.rows * l.slots > (1 << 16))
  for (std::int64_t r = 0; r < l.rows; ++r) {
    const std::byte* src = w.values.data() + std::size_t(r * l.slots) * eb;
    const std::uint8_t* irow = w.indices.data() + r * f.index_row_bytes;
    for (std::int64_t s = 0; s < l.slots; ++s) {
      std::memcpy(p.values.data() + l.value_offset(r, s) * eb, src + std::size_t(s) * eb, eb);
      const int bit = int(s % kVnmSkSlots) * 2;
      p.indices[l.index_word_offset(r, s / kVnmSkSlots, bit >> 5)] |= std::uint32_t(get_packed(irow, s, 2)) << (bit & 31);
    }
  }
  for (std::int64_t sl = 0; sl < l.slabs; ++sl) {
    const std::uint8_t* crow = w.columns.data() + sl * f.colloc_row_bytes;
    for (std::int64_t t = 0; t < l.tiles; ++t)
      for (int lane = 0; lane < 32; ++lane) {
        const std::int64_t win = t * (kVnmSkSlots / 2) + lane / 2;
        if (win >= l.windows) continue;
        const int pos = 2 * (lane % 2);
        const unsigned lo = get_packed(crow, win * 4 + pos, f.colloc_bits);
        const unsigned hi = get_packed(crow, win * 4 + pos + 1, f.colloc_bits);
        p.table[l.table_offset(sl, t) + std::size_t(lane)] = std::uint8_t(lo | (hi << 4));
      }
  }
  return p;
}

std::int64_t unpack_vnm_sk_column(const VnmSkPacked& p, std::int64_t r, std::int64_t s) {
  const VnmSkLayout& l = p.layout;
  const std::int64_t t = s / kVnmSkSlots;
  const int j = int(s % kVnmSkSlots), bit = j * 2;
  const unsigned pos = (p.indices[l.index_word_offset(r, t, bit >> 5)] >> (bit & 31)) & 3u;
  // The kernel's gather: lane (j / 2) * 2 + pos / 2 of the slab's table holds positions pos & ~1, pos | 1.
  const std::uint8_t b = p.table[l.table_offset(r / l.v, t) + std::size_t((j / 2) * 2 + pos / 2)];
  const unsigned col = (pos & 1u) ? unsigned(b >> 4) : unsigned(b & 15u);
  return (t * (kVnmSkSlots / 2) + j / 2) * l.m + col;
}

}  // namespace sparsenm::detail
