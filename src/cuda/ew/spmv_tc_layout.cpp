// sparsenm — EW-N:M tensor-core SpMV layout: the plan-time repack (see spmv_tc_layout.hpp).
#include "cuda/ew/spmv_tc_layout.hpp"

#include <algorithm>
#include <cstring>

#include "sparsenm/error.hpp"

namespace sparsenm::cuda::ew {

std::string SpmvTcLayout::why_not(const FormatLayout& f, DType dtype) {
  const auto kind = f.pattern.kind;
  if (kind != Granularity::element && kind != Granularity::hw24)
    return "ew_spmv_tc needs an element or hw24 pattern (got " + f.pattern.str() + ")";
  if (dtype != DType::f16 && dtype != DType::bf16) return "ew_spmv_tc serves f16 and bf16 weights only (tensor-core mma)";
  const int n = f.pattern.n, m = f.pattern.m;
  if (!(m == 4 || m == 8 || m == 16) || n >= m || 16 % n != 0)
    return "ew_spmv_tc serves N:M with M in {4, 8, 16} and N dividing 16 (got " + f.pattern.str() +
           "); ew_spmv serves it";
  return {};
}

SpmvTcLayout SpmvTcLayout::of(const FormatLayout& f, DType dtype) {
  if (auto why = why_not(f, dtype); !why.empty()) throw InvalidArgument("weight", why);
  SpmvTcLayout l;
  l.rows = f.rows;
  l.cols = f.cols;
  l.n = f.pattern.n;
  l.m = f.pattern.m;
  l.bits = f.index_bits;
  l.slots = f.value_cols;
  l.windows = f.windows;
  l.tiles = (l.slots + kTcRowSlots - 1) / kTcRowSlots;
  l.row_blocks = (l.rows + kTcRowBlock - 1) / kTcRowBlock;
  l.chunks = 16 / l.n;
  l.tile_cols = 64 * l.m / l.n;
  l.idx_vec = l.bits % 4 == 0 ? 4 : l.bits % 2 == 0 ? 2 : 1;
  l.idx_loads = l.bits / l.idx_vec;
  return l;
}

int SpmvTcLayout::lane_of(std::int64_t r, std::int64_t s) const noexcept {
  const int g = int(r % kTcRowBlock) % 8;
  const std::int64_t wt = (s / n) % (4 * chunks);  // window inside the tile
  return 4 * g + int(wt % 4);
}

int SpmvTcLayout::lane_slot_of(std::int64_t r, std::int64_t s) const noexcept {
  const int h = int(r % kTcRowBlock) / 8;
  const std::int64_t wt = (s / n) % (4 * chunks);
  const int c = int(wt / 4), i = int(s % n);
  return c * 2 * n + h * n + i;
}

std::size_t SpmvTcLayout::value_offset(std::int64_t r, std::int64_t s) const noexcept {
  const std::int64_t rb = r / kTcRowBlock, t = tile_of(s);
  const int lane = lane_of(r, s), j = lane_slot_of(r, s);
  return std::size_t((((rb * tiles + t) * 4 + j / 8) * 32 + lane) * 8 + j % 8);
}

std::size_t SpmvTcLayout::index_word_offset(std::int64_t rb, std::int64_t t, int lane, int w) const noexcept {
  const int load = w / idx_vec, e = w % idx_vec;
  return std::size_t((((rb * tiles + t) * idx_loads + load) * 32 + lane) * idx_vec + e);
}

std::string SpmvTcLayout::str() const {
  return std::to_string(n) + ":" + std::to_string(m) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
         ": " + std::to_string(row_blocks) + " row blocks of 16 x " + std::to_string(tiles) + " tiles of " +
         std::to_string(tile_cols) + " columns (" + std::to_string(chunks) + " chunks), 4 value vectors + " +
         std::to_string(idx_loads) + " index loads of " + std::to_string(idx_vec * 4) + " B per lane per tile";
}

SpmvTcPacked pack_spmv_tc(const CondensedMatrix& w) {
  SpmvTcPacked p;
  p.layout = SpmvTcLayout::of(w.layout, w.dtype);
  const SpmvTcLayout& l = p.layout;
  p.values.assign(l.value_bytes(), std::byte{0});
  p.indices.assign(l.index_words(), 0u);
  const std::int64_t row_bytes = w.layout.index_row_bytes;
  // Rows write disjoint value bytes; an index word holds one lane's bits, and a lane's bits come
  // from two rows (g, g + 8) of one block: parallel over row blocks.
#pragma omp parallel for schedule(static) if (l.rows * l.slots > (1 << 16))
  for (std::int64_t rb = 0; rb < l.row_blocks; ++rb) {
    for (std::int64_t r = rb * kTcRowBlock; r < std::min<std::int64_t>(l.rows, (rb + 1) * kTcRowBlock); ++r) {
      const std::byte* src = w.values.data() + std::size_t(r * l.slots) * 2;
      const std::uint8_t* irow = w.indices.data() + r * row_bytes;
      for (std::int64_t s = 0; s < l.slots; ++s) {
        std::memcpy(p.values.data() + l.value_offset(r, s) * 2, src + std::size_t(s) * 2, 2);
        const std::uint64_t idx = get_packed(irow, s, l.bits);
        const int j = l.lane_slot_of(r, s), bit = j * l.bits, word = bit >> 5, shift = bit & 31;
        const std::uint64_t v = idx << shift;
        const int lane = l.lane_of(r, s);
        p.indices[l.index_word_offset(rb, l.tile_of(s), lane, word)] |= std::uint32_t(v);
        if (shift + l.bits > 32) p.indices[l.index_word_offset(rb, l.tile_of(s), lane, word + 1)] |= std::uint32_t(v >> 32);
      }
    }
  }
  return p;
}

unsigned unpack_spmv_tc_index(const SpmvTcPacked& p, std::int64_t r, std::int64_t s) {
  const SpmvTcLayout& l = p.layout;
  const int j = l.lane_slot_of(r, s), bit = j * l.bits, word = bit >> 5, shift = bit & 31;
  const std::int64_t rb = r / kTcRowBlock, t = l.tile_of(s);
  const int lane = l.lane_of(r, s);
  std::uint64_t v = p.indices[l.index_word_offset(rb, t, lane, word)];
  if (shift + l.bits > 32) v |= std::uint64_t(p.indices[l.index_word_offset(rb, t, lane, word + 1)]) << 32;
  return unsigned((v >> shift) & ((1u << l.bits) - 1u));
}

}  // namespace sparsenm::cuda::ew
