// sparsenm — EW-N:M SpMV layout: the plan-time repack (see spmv_layout.hpp).
#include "cuda/ew/spmv_layout.hpp"

#include <cstring>

#include "sparsenm/error.hpp"

namespace sparsenm::cuda::ew {

SpmvLayout SpmvLayout::of(const FormatLayout& f, DType dtype) {
  const auto kind = f.pattern.kind;
  if (kind != Granularity::element && kind != Granularity::hw24)
    throw InvalidArgument("weight", "ew_spmv needs an element or hw24 pattern (got " + f.pattern.str() + ")");
  if (!is_weight_dtype(dtype)) throw InvalidArgument("weight", "ew_spmv needs f32, f16 or bf16 values");
  SpmvLayout l;
  l.rows = f.rows;
  l.cols = f.cols;
  l.n = f.pattern.n;
  l.m = f.pattern.m;
  l.bits = f.index_bits;
  l.elem_bytes = int(dtype_size(dtype));
  l.slots = f.value_cols;
  l.windows = f.windows;
  l.tiles = (l.slots + kSpmvSlots - 1) / kSpmvSlots;
  l.row_groups = (l.rows + kSpmvRowGroup - 1) / kSpmvRowGroup;
  l.vecs = kSpmvSlots * l.elem_bytes / 16;
  l.idx_vec = l.bits % 4 == 0 ? 4 : l.bits % 2 == 0 ? 2 : 1;
  l.idx_loads = l.bits / l.idx_vec;
  return l;
}

std::size_t SpmvLayout::value_offset(std::int64_t r, std::int64_t s) const noexcept {
  const std::int64_t g = r / kSpmvRowGroup, lane = r % kSpmvRowGroup;
  const std::int64_t t = s / kSpmvSlots, j = s % kSpmvSlots;
  const std::int64_t per_vec = 16 / elem_bytes;
  const std::int64_t vec = j / per_vec, e = j % per_vec;
  return std::size_t((((g * tiles + t) * vecs + vec) * 32 + lane) * per_vec + e);
}

std::size_t SpmvLayout::index_word_offset(std::int64_t r, std::int64_t t, int w) const noexcept {
  const std::int64_t g = r / kSpmvRowGroup, lane = r % kSpmvRowGroup;
  const std::int64_t load = w / idx_vec, e = w % idx_vec;
  return std::size_t((((g * tiles + t) * idx_loads + load) * 32 + lane) * idx_vec + e);
}

std::string SpmvLayout::str() const {
  return std::to_string(n) + ":" + std::to_string(m) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
         ": " + std::to_string(row_groups) + " row groups x " + std::to_string(tiles) + " tiles, " +
         std::to_string(vecs) + " value vectors + " + std::to_string(idx_loads) + " index loads of " +
         std::to_string(idx_vec * 4) + " B per lane per tile";
}

SpmvPacked pack_spmv(const CondensedMatrix& w) {
  SpmvPacked p;
  p.layout = SpmvLayout::of(w.layout, w.dtype);
  const SpmvLayout& l = p.layout;
  p.values.assign(l.value_bytes(), std::byte{0});
  p.indices.assign(l.index_words(), 0u);
  const std::size_t eb = std::size_t(l.elem_bytes);
  const std::int64_t row_bytes = w.layout.index_row_bytes;
  // Rows write disjoint bytes / index words (a word holds one lane's bits only): parallel over rows.
#pragma omp parallel for schedule(static) if (l.rows * l.slots > (1 << 16))
  for (std::int64_t r = 0; r < l.rows; ++r) {
    const std::byte* src = w.values.data() + std::size_t(r * l.slots) * eb;
    const std::uint8_t* irow = w.indices.data() + r * row_bytes;
    for (std::int64_t s = 0; s < l.slots; ++s) {
      std::memcpy(p.values.data() + l.value_offset(r, s) * eb, src + std::size_t(s) * eb, eb);
      const std::uint64_t idx = get_packed(irow, s, l.bits);
      const std::int64_t t = s / kSpmvSlots;
      const int bit = int(s % kSpmvSlots) * l.bits;
      const int word = bit >> 5, shift = bit & 31;
      const std::uint64_t v = idx << shift;
      p.indices[l.index_word_offset(r, t, word)] |= std::uint32_t(v);
      if (shift + l.bits > 32) p.indices[l.index_word_offset(r, t, word + 1)] |= std::uint32_t(v >> 32);
    }
  }
  return p;
}

unsigned unpack_spmv_index(const SpmvPacked& p, std::int64_t r, std::int64_t s) {
  const SpmvLayout& l = p.layout;
  const std::int64_t t = s / kSpmvSlots;
  const int bit = int(s % kSpmvSlots) * l.bits;
  const int word = bit >> 5, shift = bit & 31;
  std::uint64_t v = p.indices[l.index_word_offset(r, t, word)];
  if (shift + l.bits > 32) v |= std::uint64_t(p.indices[l.index_word_offset(r, t, word + 1)]) << 32;
  return unsigned((v >> shift) & ((1u << l.bits) - 1u));
}

}  // namespace sparsenm::cuda::ew
