// sparsenm — plan-time packing of 2:4-structured weights for the sparse tensor cores.
// Plain C++ (no CUDA): the CPU tests include it directly.
//
// Both sparse tensor-core paths (sm_90a `wgmma.mma_async.sp` m64nNk32 and sm_80
// `mma.sp::ordered_metadata` m16n8k32) consume the weight as A = W [rows][K] (K-major), where K
// is the "sparse k" axis cut into groups of 4: for hardware 2:4 it is the weight's own k; for
// V:2:M (venom) it is the gathered axis of 4 selected columns per window (K = windows * 4).
// Each row keeps exactly 2 slots per group: two values and two ascending positions 0..3.
//
// Packed operand (rows padded to a multiple of 64, K to a multiple of kBlockK = 64):
//   values [rows_pad][K_pad / 2]   the 2 kept values of each group, in group order (this is the
//                                  compressed A matrix; TMA loads it as a dense K-major tile)
//   meta   [K_pad / 64][rows_pad / 64][128] uint32: one word per thread of a 128-thread
//          warpgroup per (64-row block, 64-k block), so a warpgroup loads its metadata with one
//          coalesced 512-byte read.
//
// Metadata word of thread i = 32*w + 4*g + 2*kk + t (warp w, group g = lane/4, quad lane 2kk+t):
// it serves the k32 step kk (0 or 1) of the 64-k block through sparsity selector kk (selector 0
// reads quad lanes 0,1; selector 1 reads quad lanes 2,3). Its bit field [16h + 4q + 2s, +2)
// holds slot s (0,1) of group (8kk + 4t + q) of row (16w + g + 8h) of the 64-row block. This is
// the PTX per-warp layout of the m16n8k32 f16/bf16 sparse metadata (rows g / g+8 in the low /
// high half-word; quad lane 0 of a pair covers k 0..15, lane 1 k 16..31), which wgmma's m64nNk32
// repeats per warp for rows 16w..16w+15. Padding groups hold positions (0, 1) and zero values,
// so every nibble is a valid ordered code (0b0100 .. 0b1110).
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace sparsenm::sptc {

inline constexpr int kBlockK = 64;    ///< sparse-k per pipeline stage / metadata block
inline constexpr int kRowBlock = 64;  ///< rows per warpgroup (wgmma M)
inline constexpr std::uint32_t kPadWord = 0x44444444u;  ///< every group: positions (0, 1)

inline std::int64_t round_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b * b; }

/// Where slot s of group gi of row r lives in the packed metadata: word index and bit offset.
struct MetaPlace {
  std::int64_t word = 0;
  int bit = 0;
};
inline MetaPlace meta_place(std::int64_t r, std::int64_t gi, int s, std::int64_t rows_pad) {
  const std::int64_t kb = gi / 16, nb = r / kRowBlock;
  const int gl = int(gi % 16), kk = gl / 8, t = (gl % 8) / 4, q = gl % 4;
  const int rl = int(r % kRowBlock), w = rl / 16, h = (rl % 16) / 8, g = rl % 8;
  const int thread = 32 * w + 4 * g + 2 * kk + t;
  return {(kb * (rows_pad / kRowBlock) + nb) * 128 + thread, 16 * h + 4 * q + 2 * s};
}

/// The inverse, written from the hardware's side: which (row, group, slot) does bit `bit` of the
/// word that thread `thread` supplies for (row block nb, k block kb) describe?
struct MetaSource {
  std::int64_t row = 0, group = 0;
  int slot = 0;
};
inline MetaSource meta_source(std::int64_t nb, std::int64_t kb, int thread, int bit) {
  const int w = thread / 32, lane = thread % 32, g = lane / 4, quad = lane % 4;
  const int kk = quad / 2, t = quad % 2;  // selector kk reads quad lanes 2kk, 2kk+1
  const int h = bit / 16, q = (bit % 16) / 4, s = (bit % 4) / 2;
  return {nb * kRowBlock + 16 * w + g + 8 * h, kb * 16 + 8 * kk + 4 * t + q, s};
}

/// A 2:4 operand packed for the sparse tensor cores (values as raw 16-bit patterns).
struct Packed24 {
  std::int64_t rows = 0, k = 0;          ///< logical rows and sparse-k (multiple of 4)
  std::int64_t rows_pad = 0, k_pad = 0;  ///< rows_pad % row_align == 0, k_pad % 64 == 0
  std::vector<std::uint16_t> values;     ///< [rows_pad][k_pad / 2]
  std::vector<std::uint32_t> meta;       ///< [k_pad / 64][rows_pad / 64][128]

  std::int64_t value_cols() const noexcept { return k_pad / 2; }
  std::uint16_t value(std::int64_t r, std::int64_t c) const { return values[std::size_t(r * value_cols() + c)]; }
  /// Position (0..3) of slot s of group gi of row r, read back from the packed metadata.
  int position(std::int64_t r, std::int64_t gi, int s) const {
    MetaPlace p = meta_place(r, gi, s, rows_pad);
    return int((meta[std::size_t(p.word)] >> p.bit) & 3u);
  }
};

/// Register-A fragments (the `cuda:sptc_24_wgmma_ra` kernel, wgmma.mma_async.sp with A in
/// registers): the compressed values re-ordered so that each thread of a warpgroup loads, per
/// (64-k block kb, 64-row block rb, k32 step kk), the four 32-bit registers of its A fragment
/// with one coalesced 16-byte load (a warp reads 512 contiguous bytes).
///   frags [k_pad/64][rows_pad/64][2 (kk)][128 (thread)][4 (register)] uint32
/// Register j of thread i = 32*w + 4*g + t (warp w, group g = lane/4, t = lane%4) holds the two
/// compressed values (low half first) of row 16w + g + 8*(j%2) of the row block at compressed
/// columns kb*32 + 16kk + 8*(j/2) + 2t, +1: the 2 kept values of group (8kk + 4*(j/2) + t) of that
/// row, i.e. of logical columns 4t..4t+3 (j < 2) or 16+4t..16+4t+3 (j >= 2) of the k32 step. This
/// is the PTX fragment layout of sparse m16n8k32 f16/bf16 A (a0,a1: row g; a2,a3: row g+8; a4..a7:
/// the same rows 16 columns further), which sparse wgmma m64nNk32 repeats per warp for rows
/// 16w..16w+15. The metadata words are unchanged (meta_place; selector kk reads quad lanes 2kk,
/// 2kk+1, so a thread's A registers and its metadata word describe different groups).
struct RaSource {
  std::int64_t row = 0, col = 0;  ///< row and compressed column of the register's low half
};
inline RaSource ra_frag_source(std::int64_t rb, std::int64_t kb, int kk, int thread, int reg) {
  const int w = thread / 32, lane = thread % 32, g = lane / 4, t = lane % 4;
  return {rb * kRowBlock + 16 * w + g + 8 * (reg % 2), kb * 32 + 16 * kk + 8 * (reg / 2) + 2 * t};
}

/// One kept slot: its group along sparse-k, its position in the group (0..3), its value bits.
/// `row_slots(r, slots)` must fill the 2*groups slots of row r in order (group-major, positions
/// strictly ascending inside a group).
struct Slot {
  std::int64_t group;
  int pos;
  std::uint16_t bits;
};

/// Packs rows x (groups*4) with exactly 2 slots per group per row. row_align: a multiple of 64
/// (the CTA's row tile). Throws std::invalid_argument on a bad slot (the caller converts).
inline Packed24 pack24(std::int64_t rows, std::int64_t groups, int row_align,
                       const std::function<void(std::int64_t, std::vector<Slot>&)>& row_slots) {
  if (rows < 1 || groups < 1) throw std::invalid_argument("pack24: rows and groups must be >= 1");
  if (row_align < kRowBlock || row_align % kRowBlock)
    throw std::invalid_argument("pack24: row_align must be a positive multiple of 64");
  Packed24 p;
  p.rows = rows;
  p.k = groups * 4;
  p.rows_pad = round_up(rows, row_align);
  p.k_pad = round_up(p.k, kBlockK);
  p.values.assign(std::size_t(p.rows_pad * p.value_cols()), 0);
  p.meta.assign(std::size_t(p.k_pad / kBlockK * (p.rows_pad / kRowBlock) * 128), kPadWord);
  std::vector<Slot> slots;
  for (std::int64_t r = 0; r < rows; ++r) {
    slots.assign(std::size_t(2 * groups), Slot{-1, 0, 0});
    row_slots(r, slots);
    if (slots.size() != std::size_t(2 * groups)) throw std::invalid_argument("pack24: row_slots changed the slot count");
    for (std::int64_t gi = 0; gi < groups; ++gi) {
      Slot s0 = slots[std::size_t(2 * gi)], s1 = slots[std::size_t(2 * gi + 1)];
      if (s0.group != gi || s1.group != gi || s0.pos < 0 || s1.pos > 3 || s0.pos >= s1.pos)
        throw std::invalid_argument("pack24: row " + std::to_string(r) + " group " + std::to_string(gi) +
                                    ": slots must be 2 ascending positions in 0..3 of that group");
      const Slot sl[2] = {s0, s1};
      for (int s = 0; s < 2; ++s) {
        p.values[std::size_t(r * p.value_cols() + 2 * gi + s)] = sl[s].bits;
        MetaPlace mp = meta_place(r, gi, s, p.rows_pad);
        std::uint32_t& word = p.meta[std::size_t(mp.word)];
        word = (word & ~(3u << mp.bit)) | (std::uint32_t(sl[s].pos) << mp.bit);
      }
    }
  }
  return p;
}

/// Per-row column lists (ascending, at most 2 per aligned group of 4) -> the 2-slot-per-group
/// form pack24 wants: nonzero positions first, then the lowest free positions, ascending.
/// Returns false (and leaves `slots` partial) when some group holds more than 2 columns.
/// cols: the matrix width; groups = ceil(cols / 4). Entries (col, bits) with col >= cols are
/// ignored (format padding slots, which hold zero).
inline bool columns_to_slots(const std::vector<std::pair<std::int64_t, std::uint16_t>>& row_entries,
                             std::int64_t cols, std::vector<Slot>& slots) {
  const std::int64_t groups = (cols + 3) / 4;
  slots.assign(std::size_t(2 * groups), Slot{0, 0, 0});
  std::vector<int> count(std::size_t(groups), 0);
  std::vector<std::uint8_t> used(std::size_t(groups) * 4, 0);
  std::vector<std::uint16_t> bits(std::size_t(groups) * 4, 0);
  for (auto [c, b] : row_entries) {
    if (c < 0 || c >= cols) continue;
    std::int64_t gi = c / 4;
    int pos = int(c % 4);
    if (used[std::size_t(gi * 4 + pos)]) return false;
    if (++count[std::size_t(gi)] > 2) return false;
    used[std::size_t(gi * 4 + pos)] = 1;
    bits[std::size_t(gi * 4 + pos)] = b;
  }
  for (std::int64_t gi = 0; gi < groups; ++gi) {
    for (int pos = 0; pos < 4 && count[std::size_t(gi)] < 2; ++pos) {
      if (!used[std::size_t(gi * 4 + pos)]) {
        used[std::size_t(gi * 4 + pos)] = 1;
        ++count[std::size_t(gi)];
      }
    }
    int s = 0;
    for (int pos = 0; pos < 4; ++pos)
      if (used[std::size_t(gi * 4 + pos)]) slots[std::size_t(2 * gi + s++)] = Slot{gi, pos, bits[std::size_t(gi * 4 + pos)]};
  }
  return true;
}

/// The register-A fragment array of a packed operand (see ra_frag_source), [k_pad/64][rows_pad/64][2][128][4].
inline std::vector<std::uint32_t> pack_ra_frags(const Packed24& p) {
  const std::int64_t kblocks = p.k_pad / kBlockK, rblocks = p.rows_pad / kRowBlock;
  std::vector<std::uint32_t> f(std::size_t(kblocks * rblocks * 2 * 128 * 4));
  std::size_t i = 0;
  for (std::int64_t kb = 0; kb < kblocks; ++kb)
    for (std::int64_t rb = 0; rb < rblocks; ++rb)
      for (int kk = 0; kk < 2; ++kk)
        for (int th = 0; th < 128; ++th)
          for (int reg = 0; reg < 4; ++reg) {
            const RaSource s = ra_frag_source(rb, kb, kk, th, reg);
            f[i++] = std::uint32_t(p.value(s.row, s.col)) | (std::uint32_t(p.value(s.row, s.col + 1)) << 16);
          }
  return f;
}

/// The register-A operand: fragments + metadata with the k-blocks padded to a multiple of
/// `kblock_multiple` (padding: zero values, positions (0, 1)), so a k-loop unrolled by that many
/// k-blocks needs no per-k-block guard. k_pad = the padded sparse-k.
struct PackedRa {
  std::int64_t k_pad = 0;
  std::vector<std::uint32_t> frags;  ///< [k_pad/64][rows_pad/64][2][128][4]
  std::vector<std::uint32_t> meta;   ///< [k_pad/64][rows_pad/64][128]
};
inline PackedRa pack_ra(const Packed24& p, int kblock_multiple = 4) {
  if (kblock_multiple < 1) throw std::invalid_argument("pack_ra: kblock_multiple must be >= 1");
  PackedRa r;
  r.k_pad = round_up(p.k_pad, std::int64_t(kBlockK) * kblock_multiple);
  const std::int64_t rblocks = p.rows_pad / kRowBlock;
  r.frags = pack_ra_frags(p);
  r.frags.resize(std::size_t(r.k_pad / kBlockK * rblocks * 1024), 0u);
  r.meta = p.meta;
  r.meta.resize(std::size_t(r.k_pad / kBlockK * rblocks * 128), kPadWord);
  return r;
}

/// V:2:M gather table: for each slab of V rows and each gathered sparse-k index (window*4 + i),
/// the weight column to read from X, or -1 for a padding column (read as zero). [slabs][k_pad].
struct GatherTable {
  int v = 0;
  std::int64_t slabs = 0, k_pad = 0;
  std::vector<std::int32_t> cols;
};

}  // namespace sparsenm::sptc
