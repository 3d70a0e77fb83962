// sparsenm — plan-time layout of the small-m V:2:M / hardware-2:4 kernel (cuda:vnm_gemv).
// Plain C++ (no CUDA): the CPU tests include it and emulate the kernel on it.
//
// Both patterns are "2 of 4 per row per group of 4 gathered columns": for venom V:2:M the group
// is the 4 selected columns of a window (shared by the V rows of a slab), for hw24 the group is
// the window itself (4 consecutive columns, "selection" = identity, slab = kHwGroupRows rows).
// The canonical 2-bit index nibble of (row, window) — positions p0 | p1 << 2 — is bit for bit
// the ordered metadata nibble of mma.sp, so packing only moves bytes around.
//
// Packed weight (the only array the kernel streams; byte count = canonical values + indices,
// plus padding of rows to 16 and windows to 16):
//   records [row_tiles][pairs] of kRecordBytes = 1152 bytes. Row tile = 16 rows, pair = 16
//   windows = two k32 steps of mma.sp.m16n8k32 (8 windows each). A record is
//     vals[h][lane] : uint4 (16 B), h = k-step 0/1, lane 0..31 — exactly the A fragment of
//                     lane l = 4g + t: { row g win t, row g+8 win t, row g win t+4, row g+8
//                     win t+4 }, each a 32-bit pair of the two stored values (slot 0 low).
//     meta[lane]    : uint32 — the metadata word lane 4g + 2h + T supplies to k-step h through
//                     sparsity selector h: bits [16*hh + 4*q, +4) = nibble of row g + 8*hh,
//                     window 8h + 4T + q (PTX m16n8k32 f16/bf16 layout: rows g / g+8 in the
//                     low / high half-word, quad lanes 2h / 2h+1 cover k 0..15 / 16..31).
//   One warp reads a record with two fully coalesced 512-byte LDG.128 waves and one 128-byte
//   LDG.32 wave. Padding rows / windows: zero values, nibble 0b0100 (positions 0, 1).
//   sel [groups][windows_pad][4] uint8 (venom only): the 4 selected columns of every window of
//   every slab, relative to the window start (= `columns` unpacked; 4 bytes per slab-window).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "sparsenm/format.hpp"

#if defined(__CUDACC__)
#define SPARSENM_VS_HD __host__ __device__
#else
#define SPARSENM_VS_HD
#endif

namespace sparsenm::vnm_small {

inline constexpr int kTileRows = 16;        ///< rows per mma tile (m16)
inline constexpr int kPairWindows = 16;     ///< windows per record (two k32 steps)
inline constexpr int kRecordBytes = 1152;   ///< 2 * 512 B values + 128 B metadata
inline constexpr int kRecordU4 = kRecordBytes / 16;
inline constexpr int kHwGroupRows = 128;    ///< hw24: rows sharing one staged X tile
inline constexpr std::uint32_t kPadNibble = 0x4u;  ///< positions (0, 1): a valid ordered code
inline constexpr int kMaxM = 32;            ///< rows of X this kernel family serves

/// Every size of the packed layout, derived from (pattern, n, k). Plain values.
struct Layout {
  bool venom = false;            ///< false: hw24
  int window = 4;                ///< M (columns per window)
  int group_rows = kHwGroupRows; ///< V (venom) or kHwGroupRows (hw24): rows sharing a staged X
  std::int64_t n = 0, k = 0;
  std::int64_t windows = 0;      ///< ceil(k / M)
  std::int64_t pairs = 0;        ///< ceil(windows / 16)
  std::int64_t row_tiles = 0;    ///< ceil(n / 16)
  std::int64_t groups = 0;       ///< ceil(n / group_rows)

  static Layout of(const FormatLayout& f) {
    const Pattern& p = f.pattern;
    if (p.kind != Granularity::venom && p.kind != Granularity::hw24)
      throw std::invalid_argument("vnm_small: pattern must be venom (V:2:M) or hw24 (2:4/hw)");
    Layout l;
    l.venom = p.kind == Granularity::venom;
    l.window = p.m;
    l.group_rows = l.venom ? p.v : kHwGroupRows;
    l.n = f.rows;
    l.k = f.cols;
    l.windows = f.windows;
    l.pairs = (l.windows + kPairWindows - 1) / kPairWindows;
    l.row_tiles = (l.n + kTileRows - 1) / kTileRows;
    l.groups = (l.n + l.group_rows - 1) / l.group_rows;
    return l;
  }
  std::int64_t windows_pad() const noexcept { return pairs * kPairWindows; }
  std::size_t record_bytes() const noexcept { return std::size_t(row_tiles * pairs) * kRecordBytes; }
  std::size_t sel_bytes() const noexcept { return venom ? std::size_t(groups * windows_pad() * 4) : 0; }
};

/// Host copy of the packed weight.
struct Packed {
  Layout layout;
  std::vector<std::uint8_t> records;  ///< [row_tiles][pairs][1152]
  std::vector<std::uint8_t> sel;      ///< venom: [groups][windows_pad][4]
};

/// Nibble (p0 | p1 << 2) of (row r, window w) from the canonical indices (2-bit fields).
inline std::uint32_t canonical_nibble(const CondensedMatrix& c, std::int64_t r, std::int64_t w) {
  const std::uint8_t* row = c.indices.data() + r * c.layout.index_row_bytes;
  return (row[w / 2] >> (4 * (w % 2))) & 0xfu;
}

/// Packs a canonical venom / hw24 weight of 16-bit dtype. Throws std::invalid_argument on an
/// unsupported pattern or dtype (the caller turns it into InvalidArgument).
inline Packed pack(const CondensedMatrix& c) {
  if (c.dtype != DType::f16 && c.dtype != DType::bf16)
    throw std::invalid_argument("vnm_small: weight dtype must be f16 or bf16");
  Packed out;
  out.layout = Layout::of(c.layout);
  const Layout& l = out.layout;
  out.records.assign(l.record_bytes(), 0);
  const auto* vals = reinterpret_cast<const std::uint16_t*>(c.values.data());
  const std::int64_t vc = c.layout.value_cols;
  auto value_pair = [&](std::int64_t r, std::int64_t w) -> std::uint32_t {
    if (r >= l.n || w >= l.windows) return 0u;
    return std::uint32_t(vals[r * vc + 2 * w]) | (std::uint32_t(vals[r * vc + 2 * w + 1]) << 16);
  };
  auto nibble = [&](std::int64_t r, std::int64_t w) -> std::uint32_t {
    if (r >= l.n || w >= l.windows) return kPadNibble;
    return canonical_nibble(c, r, w);
  };
  for (std::int64_t rt = 0; rt < l.row_tiles; ++rt)
    for (std::int64_t cp = 0; cp < l.pairs; ++cp) {
      std::uint8_t* rec = out.records.data() + std::size_t(rt * l.pairs + cp) * kRecordBytes;
      const std::int64_t r0 = rt * kTileRows, w0 = cp * kPairWindows;
      for (int h = 0; h < 2; ++h)
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4;
          const std::int64_t wb = w0 + 8 * h;
          const std::uint32_t regs[4] = {value_pair(r0 + g, wb + t), value_pair(r0 + g + 8, wb + t),
                                         value_pair(r0 + g, wb + t + 4), value_pair(r0 + g + 8, wb + t + 4)};
          std::memcpy(rec + (h * 32 + lane) * 16, regs, 16);
        }
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, h = (lane % 4) / 2, T = lane % 2;
        std::uint32_t word = 0;
        for (int hh = 0; hh < 2; ++hh)
          for (int q = 0; q < 4; ++q)
            word |= nibble(r0 + g + 8 * hh, w0 + 8 * h + 4 * T + q) << (16 * hh + 4 * q);
        std::memcpy(rec + 1024 + lane * 4, &word, 4);
      }
    }
  if (l.venom) {
    out.sel.assign(l.sel_bytes(), 0);
    const std::int64_t wp = l.windows_pad();
    for (std::int64_t g = 0; g < l.groups; ++g) {
      const std::uint8_t* crow = c.columns.data() + g * c.layout.colloc_row_bytes;
      for (std::int64_t w = 0; w < l.windows; ++w)
        for (int q = 0; q < 4; ++q)
          out.sel[std::size_t((g * wp + w) * 4 + q)] =
              std::uint8_t(get_packed(crow, w * 4 + q, c.layout.colloc_bits));
    }
  }
  return out;
}

/// Launch geometry chosen at plan time (plain values; printed by tests and the bench).
/// Kernel variants (all registered behind one candidate; the plan picks one per (pattern, m)):
///   0 staged    - the kernel measured in run 1 (a1f5d82): X gathered word by word, reduce kernel
///   1 batched   - X gathered in slices of kGatherUnits independent loads, split-k reduced by the
///                 last block of each group (no second kernel)
///   2 pipelined - as 1, X double-buffered: the gather of chunk c+1 runs in slices between the
///                 record batches of chunk c (one __syncthreads per chunk)
///   3 pipelined, short blocks - the kernel of 2 with the whole-wave split rule (more, shorter
///                 blocks; measures the tail-vs-prologue trade-off)
///   4 row gather - variant 0 (same geometry, reduce kernel) with a gather that decodes a word's
///                 columns once and loads all m rows (~10 instead of ~96 instructions per row
///                 and word); zero rows written once. Measured in the integrated run at
///                 534fe5f: the fastest of 0-4 everywhere.
///   5 transposed X - X transposed once per call into the workspace Xt[k][8 * n_tiles] (a tiny
///                 pre-kernel); a gathered column of all rows is then 16 * n_tiles contiguous
///                 bytes, staged with n_tiles 16-byte cp.async (zero-filled past k) into
///                 [kk][n] rows (xt_unit: swizzled 16-byte units), B fragments by
///                 ldmatrix.x4.trans; two staged buffers, the next chunk's copies issued
///                 after the first record batch of the current one. Run-1 geometry, reduce kernel.
///   6 transposed X + PDL - variant 5 with the main kernel launched as a programmatic dependent
///                 of the transpose (its blocks start and prefetch their first records to L2
///                 while the transpose runs; griddepcontrol.wait before the first gather).
///   7 streamed (sm_90; kernel4.cuh) - two row tiles per warp share each B fragment; weight
///                 records double buffered in registers (the next batch always in flight); hw24
///                 stages X rows as they are (16-byte cp.async, ldmatrix), venom stages from the
///                 transposed X of 5/6; k splits (<= 8) reduced through distributed shared memory
///                 inside a cluster (no workspace, no second kernel). hw24 groups of 256 rows.
///   8 ring (kernel5.cuh; session 7) - variant 4 (geometry, gather, reduce kernel) with each
///                 warp's weight records streamed by cp.async through a ring of kRingStages
///                 1152-byte slots in shared memory after the staged X: kRingStages - 1 records
///                 in flight while the warp computes and while the block gathers X. Measured
///                 (46b70eb): not faster than 4 (the m slope is the gather, kept from 4); opt-in.
///   9 async gather + ring (kernel6.cuh; session 7b) - every staged X element copied global ->
///                 shared by cp.async (hw24 with k % 8 == 0 and aligned X: X rows as they are,
///                 direct_unit layout, ldmatrix; otherwise the transposed X of 5/6 with PDL), all
///                 of a chunk's copies one group, the next chunk's issued before the current one is
///                 consumed (two buffers, one wait + __syncthreads per chunk); weight through
///                 variant 8's ring. Chunks of 16 / n_tiles pairs: 3 blocks of 8 warps per SM.
///                 Measured (dfdb555): default for V:2:M with M <= 8 at m > 24 (1.04-1.08x of
///                 4), slower than 4 at m <= 8. 7258e61 (session 7d): with balanced_splits at
///                 n_tiles = 4 also the 2:4 default at m > 24 (1.06x / 1.24x of variant 6).
///  10 paired tiles (kernel7.cuh; session 7c) - variant 9 (async gather, ring) with every warp
///                 owning two row tiles of the block's slab and consuming their records of one
///                 pair together: each B fragment loaded once from shared memory per k32 step and
///                 used by both tiles' mma.sp (half variant 9's B traffic per weight byte). Half
///                 the warps per block (V / 32), a ring of kPairRingStages slots per warp.
///                 Measured (9a76b61): 0.81-1.00x of 9 everywhere; opt-in.
///  11 async, fused reduce (kernel6.cuh; session 7d) - variant 9 (same kernel, geometry and
///                 splits) with the k splits summed by the last block of each group to finish
///                 (arrival counter per group, reset by that block; partials summed in split
///                 order, as the reduce kernel does: bit-identical y) instead of the separate
///                 reduce kernel: no second launch, and the partials are read while other
///                 blocks still stream. Measured (7258e61): slower than 9 everywhere (2:4 28672 x
///                 8192: 91.8 / 120.9 against 74.9 / 101.3 us at m = 8 / 32); opt-in.
/// Variants 1/2 split k into at most one wave of resident blocks (floor(slots / groups)) and
/// size chunks so a block has ~3 of them.
///  12 lean (kernel8.cuh; session 8) - variant 9 for hw24 with direct X staging, rewritten for a
///                 short per-record instruction stream: compile-time chunk (lean_chunk_pairs), the
///                 record loop unrolled over a chunk, constant cp.async wait counts, one record
///                 pointer per warp, a division-free gather; hw24 with k % 8 == 0: chunk
///                 lean_chunk_pairs and the one-wave split rule (lean_direct), elsewhere variant
///                 9's geometry; venom / misaligned X / k % 8 != 0 run variant 9's kernel.
///                 Measured (04e6c4d, session 8): the 2:4 default at every m when k % 8 == 0
///                 (1.05-1.08x cuSPARSELt at 28672 x 8192 m <= 16; 0.87-1.005x at 12288^2).
///  13 lean paired (kernel9.cuh; session 8b) - variant 12 with two row tiles per warp (4 warps per
///                 128-row group; each X fragment loaded from shared memory feeds two mma.sp), a
///                 ring of kRingStages two-record slots per warp; hw24 with k % 8 == 0 only (other
///                 shapes run variant 12), misaligned X at run time: variant 9's transposed kernel
///                 with two tiles per warp in this geometry. Chunk and split rule of variant 12.
///  14 lean paired, cluster reduce (kernel9.cuh; session 8b) - variant 13 with the k splits of a
///                 group as one thread-block cluster (1, splits, 1) summed through distributed
///                 shared memory (no fp32 partials, no reduce launch); splits <= 8 (portable
///                 cluster), fewer when the clusters do not all fit at once (geometry_for).
///                 Measured (aa971bd, session 8b): 13 = 1.06x of 12 at 2:4 28672 x 8192 m = 32
///                 (1.018x cuSPARSELt), within 1 % at m <= 16; 14 at 12288^2 1.03-1.08x of 12 at
///                 every m (3 splits: 1.003-1.06x cuSPARSELt at m <= 16, 0.91x at m = 32). The
///                 2:4 default for k % 8 == 0 is 14, or 12 where 14 would run one split at m <= 16.
///  15 lean paired wide, cluster reduce (kernel9.cuh, kWarps = 8; session 8c) - variant 14 with
///                 256-row groups (8 warps of two row tiles, 16 tiles per block: the staged X of a
///                 chunk, copied from L2 once per block, feeds twice the rows, i.e. half the X
///                 bytes per weight byte); 2 blocks per SM (the rings of 8 warps); splits by the
///                 one-wave rule over the 256-row groups, <= 8 (one cluster), fewer when the clusters
///                 do not all fit at once (geometry_for). hw24 with k % 8 == 0 only (else variant 12).
///                 Measured (9edc68e, session 8c): slower than 14 at every m on both 2:4 shapes
///                 (12288^2 m = 32 51.65-52.93 vs 51.36-51.58 us; ncu: MIO and barrier stalls up,
///                 DRAM 70 % as before); opt-in.
///  16 lean paired, long chunks, cluster reduce (kernel9.cuh, kLong; session 8d) - variant 14 with
///                 the compile-time chunk lean_long_chunk_pairs (16 / 16 / 8 / 8 pairs at 1..4 n8
///                 tiles, against 16 / 8 / 4 / 4): at m > 8 half (m > 16: 8 -> 4 per 32 pairs) the
///                 block barriers and gather rounds per weight byte, and the next chunk's X copies
///                 issued twice as many pairs ahead; 2 x 32 KB of staged X at m > 8 -> 2 blocks of
///                 4 warps per SM (3 for 14), splits by the one-wave rule over those slots, <= 8,
///                 fewer when the clusters do not all fit (geometry_for). hw24 with k % 8 == 0 only.
///                 Measured (80b4392, session 8d): barrier stalls halved, time within 0.6 % of 14
///                 (12288^2 m = 32 51.39 vs 51.68 us, 2 splits); the plan's choice at m > 24 where
///                 14 would run splits until session 9b (19 there since); opt-in.
///  17 / 18 (removed in session 9b; PERF-vnm-small.md "Session 9" / "Session 9b"): 14 with each warp's
///                 ring filled by cp.async.bulk (one mbarrier per two-record slot, lane 0 issuing); 18 with
///                 L2 hints. Not faster than the default anywhere (12288^2 m = 32 51.20 / 51.14 us against
///                 16's 50.82 at 848b735, 17 51.62 against 51.33 at d1ddc26; 0.5-2.2 % slower elsewhere).
///                 Requesting them is an InvalidArgument like any unknown variant (variant_built).
///  19 lean paired, warp-specialized bulk ring, cluster reduce (kernel11.cuh; session 9b) - variant 14's
///                 geometry (4 consumer warps of two row tiles, chunk, X gather, cluster split reduce)
///                 plus one producer warp that fills a CTA-wide ring of kWsStages stages (one pair of
///                 all 8 tiles = 8 records, 9216 B each) by cp.async.bulk (full mbarriers, expect_tx);
///                 the consumers release a stage (empty mbarriers, 128 arrivals) right after their
///                 ld.shared of it, before the mma, so the bytes in flight do not wait on the mma.
///                 8 stages: 73.7 KB of ring, 2 blocks per SM (147 KB of weights in flight per SM).
///                 Measured (d1ddc26, session 9b): time flat in m (12288^2 ncu 48.4 / 48.2 us at m = 1 / 32)
///                 but a lower stream rate (74-79 % of DRAM); 12288^2 m = 32 49.95 us against 16's 51.33
///                 (0.973x cuSPARSELt), 5-8 % slower than 14 / 12 at m <= 16, 2 % at 28672 x 8192 m = 32.
///                 The plan's choice at m > 24 where 14 would run splits (geometry_for).
///  20 V:2:M lean paired, cluster reduce (kernel10.cuh; session 9, s9vnm) - variant 14's structure for
///                 venom V = 128: one 128-row slab per block, 4 warps of two row tiles (the slab's 8
///                 tiles), compile-time chunk lean_chunk_pairs, constant cp.async wait counts, one
///                 record pointer per tile; the slab's selected X columns gathered from the
///                 transposed X (variant 9's Xt, PDL) by a division-free gather with the selection
///                 bytes loaded one chunk ahead; every B fragment (ldmatrix.x4.trans) feeds the two
///                 tiles' mma.sp; k splits of a slab as one cluster, reduced through distributed
///                 shared memory. Other V and hw24: variant 9 (lean2_or_lean). Measured (f3a9476, session
///                 9): 1.009-1.27x of variants 4 / 9 on 128:2:8 / 128:2:16 at m = 8 / 16 / 32 (both
///                 shapes); the default for V = 128, M <= 16 at m >= 8 (vnm_small.cu default_variant).
///                 Session 9c (s9vnm2): shared memory padded to <= 2 blocks per SM where the grid fits
///                 so (vlean_spread: even placement under PDL; 1.01-1.20x at 28672 x 8192).
///  21 as 20 with the k splits summed by the reduce kernel (fp32 partials; no clusters). Measured: ties 20
///                 at one split, 1.5-3 us slower at 12288^2; opt-in.
///  22 / 23 (session 9d, s9vnm3; removed after its run ad6289b, PERF-vnm-small.md "Session 9d"): 20's slab body as
///                 stream-K over the flat (slab, pair) work (2 blocks per SM, last-arrival partial sums; 23 with
///                 the long chunk). Correct, but 1.35-2.6x slower than 20 everywhere (the serial partial sum at
///                 the end of every block's run). Requesting them is an InvalidArgument like any unknown variant.
///  (22 again in session 10, s10vnmk: 9d's stream-K with a cheap fix-up — arrivals deferred to the block's end,
///                 one acq_rel atomic per partial slab, the sum's float4 loads issued before any add, no division.
///                 Measured at 89ed8bb: the sum no longer grows with m, but the balanced grid is still 1.10-1.23x
///                 slower than 20 in all 12 cases (the segment restarts cost more than the balance gains); removed,
///                 the code is in commit 89ed8bb; PERF-vnm-small.md "Session 10 (s10vnmk)".)
///  (25 in session 10c, s10vnmc: 22 with the weight ring, selection loads and X gather running through the
///                 segment boundaries without draining (kernel25.cuh). Measured at 40c24ee: correct, but as slow as
///                 22 (0.82-0.92 of 20's speed in all 12 cases): the restarts were not what 22 lost; removed, the
///                 code is in commit 40c24ee; PERF-vnm-small.md "Session 10c (s10vnmc)". Requesting it is an
///                 InvalidArgument like any unknown variant.)
///  (23 again in session 9f, s9v24d: 19 with per-warp stage slices; measured at 94e17f6, slower than the default
///                 everywhere (12288^2 m = 32 56.54 against 19's 49.89 us) and removed; PERF-vnm-small.md "Session 9f".)
///  (23 / 24 on branch s10v24, session 10, before 23 went to the direct gather below: 23 = 19 with per-warp stage slices and a producer that never blocks
///                 on one warp (mbarrier.test_wait over the four slice streams), 24 = 19 with a polling producer;
///                 measured at 3d88be0: faster than 19 at 12288^2 m <= 16, slower at m = 32 (53.98 / 50.43 against
///                 49.82 us) and never faster than the default; removed; PERF-vnm-small.md "Session 10 (s10v24)".)
///  (26 in session 10d, s10vnm2: variant 20's body with X transposed by its own grid (each block its share, then a
///                 grid barrier; one cooperative launch, 23's launch with splits). Measured by the lead at fc7f9f7:
///                 0.97-1.01x of 20 and 0.91-0.95x of 23 at 28672 x 8192 (the only shape where it differs from 23);
///                 removed, the code is in commit b0cb22e; PERF-vnm-small.md "Session 10d (s10vnm2)".)
///  (24 in session 10g, s10vnm3: variant 20 with the ring copies of a chunk whose slots are all valid issued without
///                 predicates at compile-time offsets, pointers advanced once per chunk. Measured by the lead at feb9464:
///                 5.41 -> 4.62 M instructions at m = 32 (28672 x 8192 128:2:8) but 0.99-1.02x of 20's time everywhere;
///                 removed, the code is in commit 147d96b; PERF-vnm-small.md "Session 10g".)
///  23 V:2:M lean paired, direct gather (kernel10.cuh kDirect; session 10, s10vnm) - variant 20 (geometry,
///                 ring, wait counts, cluster split reduce, the <= 2 blocks per SM padding) with the slab's
///                 selected columns read from the X rows by 2-byte loads (no transpose kernel, no Xt workspace,
///                 a plain launch: no PDL placement beside another grid). PERF-vnm-small.md "Session 10 (s10vnm)".
///                 Measured (da846df): 1.05-1.13x of 20 at m = 1 / 8 (128:2:8 / 128:2:16, both shapes), 1.01-1.04x
///                 at m = 16 / 32 on 12288^2, 0.92-0.99x there on 28672 x 8192 (padded, 2 blocks per SM). The
///                 default for V = 128, M <= 16 at m <= 8 and at m > 8 where 20's grid is unpadded (vnm_small.cu).
inline constexpr int kVariants = 24;
/// Variant numbers with a kernel (17 / 18: removed in session 9b; 22: removed in sessions 9d and 10; see above).
constexpr bool variant_built(int v) { return v >= 0 && v < kVariants && v != 17 && v != 18 && v != 22; }
inline constexpr int kVnmLeanVariant = 20;        ///< V:2:M (V = 128) lean paired, cluster split reduce (kernel10.cuh)
inline constexpr int kVnmLeanReduceVariant = 21;  ///< variant 20 with the reduce kernel for its splits
inline constexpr int kVnmDirectVariant = 23;      ///< variant 20 gathering from the X rows (no transpose)
/// Variants 20 / 21 / 23: the V:2:M lean paired kernel (kernel10.cuh).
constexpr bool vlean_variant(int v) { return v == kVnmLeanVariant || v == kVnmLeanReduceVariant || v == kVnmDirectVariant; }
inline constexpr int kStreamVariant = 7;
inline constexpr int kRingVariant = 8;
inline constexpr int kAsyncVariant = 9;
inline constexpr int kFusedVariant = 11;  ///< variant 9 + last-block split reduction
inline constexpr int kLeanVariant = 12;   ///< variant 9, lean hw24 direct kernel (kernel8.cuh)
inline constexpr int kLean2Variant = 13;  ///< variant 12 with two row tiles per warp (kernel9.cuh)
inline constexpr int kLean2ClusterVariant = 14;  ///< variant 13, splits reduced in a cluster (kernel9.cuh)
inline constexpr int kLean2WideVariant = 15;     ///< variant 14 with 256-row groups, 8 warps (kernel9.cuh)
inline constexpr int kLean2WideTiles = 16;       ///< variant 15: row tiles per block
inline constexpr int kLean2LongVariant = 16;     ///< variant 14 with lean_long_chunk_pairs (kernel9.cuh)
inline constexpr int kLean2WsVariant = 19;       ///< variant 14 with a producer warp and a CTA-wide bulk ring (kernel11.cuh)
inline constexpr int kWsStages = 8;              ///< variant 19: ring stages (one pair of the group's 8 tiles each)
/// Variants 13 .. 16, 19: the lean kernel with two row tiles per warp.
constexpr bool lean2_variant(int v) { return v == 13 || v == 14 || v == 15 || v == 16 || v == kLean2WsVariant; }
/// Variants 14 / 15 / 16 / 19 / 20: the k splits of a group are one cluster, reduced through distributed shared memory.
constexpr bool lean2_cluster_variant(int v) {
  return v == 14 || v == 15 || v == 16 || v == kLean2WsVariant || v == kVnmLeanVariant || v == kVnmDirectVariant;
}
inline constexpr int kRingStages = 4;          ///< variant 8: record slots per warp (3 in flight)
inline constexpr int kPairVariant = 10;
inline constexpr int kPairRingStages = 8;      ///< variant 10: record slots per warp (6 in flight: 3 pairs)
inline constexpr int kPairMinChunk = 3;        ///< variant 10: pairs per chunk (pair_ring_wait_newer)
inline constexpr int kStreamMaxSplits = 8;     ///< portable cluster size
inline constexpr int kStreamHwTiles = 16;      ///< hw24 row tiles per block (256 rows, 8 warps)
/// Variants that run the async-gather kernel (kernel6.cuh): 9, and 11 with the fused reduction.
constexpr bool async_variant(int v) { return v == kAsyncVariant || v == kFusedVariant || v == kLeanVariant || lean2_variant(v) || vlean_variant(v); }
/// Variant 12 (kernel8.cuh): pairs per staged chunk, a compile-time constant of the kernel
/// (a multiple of kRingStages, 8 x it divides 256; <= 16 / n_tiles so it fits variant 9's buffers).
SPARSENM_VS_HD constexpr int lean_chunk_pairs(int n_tiles) { return n_tiles == 1 ? 16 : n_tiles == 2 ? 8 : 4; }
/// Variant 16 (kernel9.cuh with kLong): the longer compile-time chunk (a multiple of kRingStages,
/// 8 x it divides 128 = the block's threads): 2 x 8 n_tiles x 8 x it x 16 bytes of staged X.
SPARSENM_VS_HD constexpr int lean_long_chunk_pairs(int n_tiles) { return n_tiles <= 2 ? 16 : 8; }
/// The compile-time chunk of the lean kernels (12 / 13 / 14 / 15: lean_chunk_pairs, 16: the long one).
SPARSENM_VS_HD constexpr int lean_variant_chunk_pairs(int variant, int n_tiles) {
  return variant == 16 ? lean_long_chunk_pairs(n_tiles) : lean_chunk_pairs(n_tiles);
}
/// Variant 12 takes its own kernel (and geometry) where X can be staged directly: hw24 with
/// k % 8 == 0 (X alignment is checked at launch; misaligned X runs variant 9 in this geometry).
inline bool lean_direct(const Layout& l, int variant) {
  return (variant == kLeanVariant || lean2_variant(variant)) && !l.venom && l.k % 8 == 0;
}
/// Variants 20 / 21 take their own kernel (kernel10.cuh) and geometry for venom with V = 128 (one slab =
/// 8 row tiles = 4 warps of two); elsewhere variant 9 (lean2_or_lean).
inline bool vlean(const Layout& l, int variant) {
  return vlean_variant(variant) && l.venom && l.group_rows == kHwGroupRows;
}
/// Variants 13 / 14 run only where their kernel applies (hw24, k % 8 == 0); elsewhere variant 12.
inline int lean2_or_lean(const Layout& l, int variant) {
  if (vlean_variant(variant) && !vlean(l, variant)) return kAsyncVariant;  // 20 / 21: venom V = 128 only
  return lean2_variant(variant) && (l.venom || l.k % 8 != 0) ? kLeanVariant : variant;
}
/// Variants with two staged-X buffers and the gather interleaved with the record batches.
constexpr bool pipelined_variant(int v) { return v == 2 || v == 3; }
/// Variants that stage X from the transposed workspace (xt_unit layout, cp.async, ldmatrix).
constexpr bool transposed_variant(int v) { return v == 5 || v == 6; }
/// Variants with two staged-X buffers (> 48 KB: the launcher lifts the shared-memory limit).
constexpr bool two_buffer_variant(int v) {
  return pipelined_variant(v) || transposed_variant(v) || v == kStreamVariant || async_variant(v) || v == kPairVariant;
}
/// Variants launched with run 1's geometry rules and the separate reduce kernel.
constexpr bool run1_geometry(int v) { return v == 0 || v == 4 || transposed_variant(v) || v == kRingVariant || async_variant(v) || v == kPairVariant; }
/// Variants with the per-warp record rings after the staged X.
constexpr bool ring_variant(int v) { return v == kRingVariant || async_variant(v) || v == kPairVariant; }
/// Ring slots per warp of a ring variant.
/// (Variant 13: kRingStages slots of two records each, counted here in records.)
/// (Variant 19: kWsStages stages of 8 records for 4 warps = 2 kWsStages records per warp.)
constexpr int ring_stages(int v) {
  return v == kPairVariant       ? kPairRingStages
         : v == kLean2WsVariant  ? 2 * kWsStages
         : lean2_variant(v) || vlean_variant(v) ? 2 * kRingStages
                                 : kRingStages;
}
/// Variants whose shared memory may pass 48 KB (the launcher lifts the limit to max_smem_bytes).
constexpr bool large_smem_variant(int v) { return two_buffer_variant(v) || ring_variant(v); }

struct Geometry {
  int variant = 2;          ///< see kVariants
  int n_tiles = 1;          ///< ceil(m / 8): mma n8 tiles
  int warps = 4;            ///< warps per block
  int tiles_per_warp = 1;   ///< row tiles a warp owns (1 or 2)
  int chunk_pairs = 32;     ///< pairs of windows staged in shared memory at once
  int splits = 1;           ///< k splits (grid.y); > 1 needs the fp32 workspace + reduce kernel
  std::int64_t pairs_per_split = 0;
  int smem_words_per_row = 0;  ///< S: 32-bit words per staged X row (== 16 mod 32: no conflicts)
  int buffers = 1;             ///< staged X buffers (2: pipelined)
  int tiles_per_group = 1;     ///< row tiles per block (grid.x covers groups of them)
  std::int64_t groups = 0;     ///< grid.x
  std::size_t ring_bytes = 0;  ///< variant 8: the warps' record rings after the staged X
  std::size_t buffer_words() const noexcept { return std::size_t(n_tiles) * 8 * std::size_t(smem_words_per_row); }
  std::size_t smem_bytes() const noexcept { return std::size_t(buffers) * buffer_words() * 4 + ring_bytes; }
};

/// Upper bound of Geometry::smem_bytes() for n_tiles (any variant, any shape): chunks are at most
/// 32 / n_tiles pairs, 2 buffers. The launcher sets each kernel's dynamic shared-memory limit to
/// this bound once (cudaFuncSetAttribute is per function, shared by every instance).
constexpr std::size_t max_smem_bytes(int n_tiles) {
  const std::size_t buffer = std::size_t(8 * n_tiles) * std::size_t((32 / n_tiles) * 32 + 16) * 4;
  const std::size_t ring = std::size_t(8) * kRingStages * kRecordBytes;  // variants 8/9: <= 8 warps
  const std::size_t half = std::size_t(8 * n_tiles) * std::size_t((16 / n_tiles) * 32 + 16) * 4;  // variant 9
  const std::size_t ring10 = std::size_t(8) * kPairRingStages * kRecordBytes;  // variant 10: <= 8 warps (V = 256)
  const std::size_t lng = std::size_t(8 * n_tiles) * std::size_t(lean_long_chunk_pairs(n_tiles) * 32 + 16) * 4;  // variant 16
  const std::size_t ring19 = std::size_t(4) * 2 * kWsStages * kRecordBytes;  // variant 19: 4 consumer warps
  return std::max({2 * buffer, buffer + ring, 2 * half + ring, 2 * half + ring10, 2 * lng + ring, 2 * half + ring19});
}

/// m in 1..32; sms: multiprocessors of the device; blocks_per_sm: resident blocks of the chosen
/// kernel (occupancy; the split heuristic of variants 1/2 fills whole waves of sms * blocks_per_sm).
/// Variant 7: the largest power of two <= want such that every split of ceil(pairs / s) pairs is
/// non-empty (so grid.y = cluster size = splits exactly), into g.splits / g.pairs_per_split.
inline void set_stream_splits(Geometry& g, std::int64_t pairs, std::int64_t want) {
  std::int64_t s = 1;
  while (s * 2 <= want) s *= 2;
  for (;; s /= 2) {
    const std::int64_t per = (pairs + s - 1) / s;
    if (s == 1 || (pairs + per - 1) / per == s) {
      g.pairs_per_split = per;
      g.splits = int(s);
      return;
    }
  }
}

/// Variants 9 / 11 at n_tiles = 4 (m > 24): the k splits that balance the SMs' work.
/// Session 7d (H200, 7258e61): at m = 32 the kernel is bound by each SM's instruction stream, not
/// by DRAM (ncu: DRAM 50-60 % of peak, no long-scoreboard stalls, the same main-kernel time with
/// 1 split as with 3), so the time follows the most loaded SM: cost(s) = ceil(groups * s / sms)
/// blocks x ceil(pairs / s) pairs each. Candidates keep >= 2 blocks per SM and >= 24 pairs per
/// block (16 pairs per block measured no faster: per-block fixed costs, more partials); the
/// cheapest (fewest splits on ties) replaces `current` only when its cost is < 0.95x of
/// current's. Measured: 2:4 28672 x 8192 3 -> 4 splits 1.09x, 12288^2 6 -> 4 1.15x, 128:2:8
/// 12288^2 6 -> 4 1.10x; 128:2:8 28672 x 8192 (4 splits: 16 pairs per block) stays at 3.
inline std::int64_t balanced_splits(const Layout& l, int sms, std::int64_t cap, std::int64_t current) {
  const std::int64_t S = std::max(1, sms);
  auto cost = [&](std::int64_t s) {
    const std::int64_t per = (l.pairs + s - 1) / s;
    const std::int64_t blocks = l.groups * ((l.pairs + per - 1) / per);
    return ((blocks + S - 1) / S) * per;
  };
  std::int64_t best = 0, best_cost = 0;
  for (std::int64_t s = 1; s <= cap; ++s) {
    if (l.groups * s < 2 * S || (l.pairs + s - 1) / s < 24) continue;
    const std::int64_t c = cost(s);
    if (best == 0 || c < best_cost) best = s, best_cost = c;
  }
  if (best == 0 || double(best_cost) >= 0.95 * double(cost(current))) return current;
  return best;
}

inline Geometry choose_geometry(const Layout& l, int m, int sms, int variant = 2, int blocks_per_sm = 2) {
  variant = lean2_or_lean(l, variant);
  Geometry g;
  g.variant = variant;
  g.n_tiles = (m + 7) / 8;
  if (variant == kStreamVariant) {
    // hw24: 256-row groups (16 tiles, 8 warps); venom: one slab per block, 2 tiles per warp.
    g.tiles_per_group = l.venom ? l.group_rows / kTileRows : kStreamHwTiles;
    g.groups = (l.row_tiles + g.tiles_per_group - 1) / g.tiles_per_group;
    g.warps = (g.tiles_per_group + 1) / 2;
    g.tiles_per_warp = 2;
    g.buffers = 2;
    // splits: fill one wave of resident blocks (all start together; the cluster reduce has no
    // global traffic, so no cap from partials), <= 8 (cluster), >= 2 pairs per split, and a power
    // of two. Run dd6d33a: clusters of 5 (12288², 48 groups) fit only 47 at a time on the H200
    // (a GPC of 16 or 18 SMs x 2 blocks holds 6 or 7 of them), so the 48th ran as a second wave
    // and took 1.45x the time of 4 splits; clusters of 3 lost 1.2x against 2. Powers of two <= 4
    // tile a GPC's 32 or 36 block slots exactly. (geometry_for also checks the device's maximum
    // of active clusters.)
    const std::int64_t slots = std::int64_t(std::max(1, sms)) * std::max(1, blocks_per_sm);
    std::int64_t fill = std::max<std::int64_t>(1, slots / g.groups);
    fill = std::min<std::int64_t>({fill, kStreamMaxSplits, std::max<std::int64_t>(1, l.pairs / 2)});
    std::int64_t splits = 1;
    while (splits * 2 <= fill) splits *= 2;
    set_stream_splits(g, l.pairs, splits);
    // Row pitch S = 16 mod 128 bytes (ldmatrix conflict free), at least half the fp32 partial
    // tile [8 n_tiles][rows + 4] of the cluster reduce (it reuses the two buffers).
    const int grows = g.tiles_per_group * kTileRows;
    const int s_min = ((grows + 4 + 1) / 2 + 31) / 32 * 32;
    auto words = [&](int c) { return std::max(c * 32, s_min) + 4; };
    // Chunks: <= ~33 KB of staged X per buffer (32 / n_tiles pairs), an even number of pairs,
    // and small enough that ceil(16 / warps) blocks (>= 16 warps) fit in ~220 KB of an SM.
    const int want_blocks = (16 + g.warps - 1) / g.warps;
    const std::size_t budget = std::size_t(220 * 1024) / std::size_t(want_blocks);
    int c = std::max(2, (32 / g.n_tiles) & ~1);
    while (c > 2 && std::size_t(2) * std::size_t(8 * g.n_tiles) * std::size_t(words(c)) * 4 > budget) c -= 2;
    g.chunk_pairs = int(std::min<std::int64_t>(c, (g.pairs_per_split + 1) & ~std::int64_t(1)));
    g.smem_words_per_row = words(g.chunk_pairs);
    return g;
  }
  int tiles_per_group = l.group_rows / kTileRows;  // 2, 4, 8 or 16
  if (variant == kLean2WideVariant) tiles_per_group = kLean2WideTiles;  // hw24 only: two layout groups per block
  g.tiles_per_group = tiles_per_group;
  g.groups = variant == kLean2WideVariant ? (l.row_tiles + tiles_per_group - 1) / tiles_per_group : l.groups;
  g.warps = std::min(8, tiles_per_group);
  if (variant == kPairVariant || lean2_variant(variant) || vlean_variant(variant)) g.warps = std::max(1, tiles_per_group / 2);  // two row tiles per warp
  g.tiles_per_warp = (tiles_per_group + g.warps - 1) / g.warps;
  g.chunk_pairs = 32 / g.n_tiles;  // ~33 KB of staged X per buffer for every m
  if (async_variant(variant) || variant == kPairVariant) g.chunk_pairs = 16 / g.n_tiles;  // 2 x ~17 KB + rings
  if (lean_direct(l, variant) || vlean(l, variant)) g.chunk_pairs = lean_variant_chunk_pairs(variant, g.n_tiles);  // the kernel's constant
  if (g.warps <= 2) g.chunk_pairs = std::max(1, g.chunk_pairs / 2);
  if (variant == kPairVariant) g.chunk_pairs = std::max(kPairMinChunk, g.chunk_pairs);  // pair_ring_wait_newer
  g.buffers = two_buffer_variant(variant) ? 2 : 1;
  // Caps: the fp32 partials of a split (m * 8 bytes per row, written and read back through L2)
  // stay below a quarter of the row's weight bytes (4.5 per window), every split keeps >= 2
  // pairs, at most 16 splits.
  std::int64_t cap = std::max<std::int64_t>(1, l.pairs / 2);
  cap = std::min<std::int64_t>(cap, std::max<std::int64_t>(1, std::int64_t(0.25 * 4.5 * double(l.windows) / (8.0 * m))));
  cap = std::min<std::int64_t>(cap, 16);
  std::int64_t splits = 1;
  if (lean_direct(l, variant) || vlean(l, variant)) {  // 20 / 21: the same one-wave rule over the slabs
    // Variant 12, direct staging: at most one wave of resident blocks, the most splits with
    // groups * splits <= slots (1 when the groups alone fill a wave). Session 8 (H200, 04e6c4d,
    // forced splits 1 / 2 / 3 / 4 / 6 at m = 1 / 8 / 16 / 32): the fastest split count on both 2:4
    // shapes at every m is this one — 28672 x 8192 (224 groups, 396 slots) 1 split: 65.3 / 66.2 /
    // 67.4 / 73.8 us against 70.6 / 72.8 / 77.3 / 89.0 with the run-1 / balanced rules; 12288^2
    // (96 groups) 4 splits: 47.8 / 48.8 / 50.9 / 55.5 (2 splits, a partial second wave: up to 1.3x).
    const std::int64_t slots = std::int64_t(std::max(1, sms)) * std::max(1, blocks_per_sm);
    // Variant 15 (256-row groups): the same rule over its own groups and slots (2 blocks per SM).
    splits = std::min(cap, std::max<std::int64_t>(1, slots / g.groups));
    if (lean2_cluster_variant(variant)) splits = std::min<std::int64_t>(splits, kStreamMaxSplits);  // one cluster
  } else if (run1_geometry(variant)) {
    // Run-1 rule: enough warps for ~4 blocks of 8 warps per SM.
    // Variant 10 counts row tiles (two per warp) as variant 9's warps: the same splits, so its fp32
    // partials (m x 4 bytes per row and split) do not double with its halved warps.
    const std::int64_t warps_total = l.groups * (variant == kPairVariant ? std::int64_t(std::min(8, tiles_per_group)) : std::int64_t(g.warps));
    const std::int64_t target = std::int64_t(std::max(1, sms)) * 32;
    splits = std::min(cap, std::max<std::int64_t>(1, (target + warps_total - 1) / warps_total));
    if (async_variant(variant) && g.n_tiles == 4) splits = balanced_splits(l, sms, cap, splits);
  } else if (variant != 3) {
    // At most one wave, all blocks resident from the start: the most splits with
    // groups * splits <= slots (1 when the groups alone exceed a wave). Memory-bound blocks that
    // start together share the bandwidth and end together; no partial last wave.
    const std::int64_t slots = std::int64_t(std::max(1, sms)) * std::max(1, blocks_per_sm);
    splits = std::min(cap, std::max<std::int64_t>(1, slots / l.groups));
  } else {
    // Whole waves: cost(s) = waves(s) * (pairs per block + 1), the +1 standing for a block's
    // fixed cost (first gather, epilogue); the smallest s of least cost.
    const std::int64_t slots = std::int64_t(std::max(1, sms)) * std::max(1, blocks_per_sm);
    double best = 0;
    for (std::int64_t s = 1; s <= cap; ++s) {
      const std::int64_t per = (l.pairs + s - 1) / s;
      const std::int64_t blocks = l.groups * ((l.pairs + per - 1) / per);
      const double cost = double((blocks + slots - 1) / slots) * double(per + 1);
      if (s == 1 || cost < best * 0.999) best = cost, splits = s;
    }
  }
  g.pairs_per_split = (l.pairs + splits - 1) / splits;
  g.splits = int((l.pairs + g.pairs_per_split - 1) / g.pairs_per_split);
  if (!run1_geometry(variant)) {
    // ~3 chunks per block (the pipelined gather needs a next chunk), >= 4 pairs per chunk.
    const std::int64_t want = std::max<std::int64_t>(4, (g.pairs_per_split + 2) / 3);
    g.chunk_pairs = int(std::min<std::int64_t>(g.chunk_pairs, want));
  }
  g.smem_words_per_row = g.chunk_pairs * 32 + 16;
  if (ring_variant(variant)) g.ring_bytes = std::size_t(g.warps) * ring_stages(variant) * kRecordBytes;
  return g;
}

/// Variants 20 / 21: the rings' bytes when padded so that at most 2 blocks fit on an SM (4 warps x 8
/// two-record slots; the kernel uses the first 4 of each warp): smem 101-111 KB (<= max_smem_bytes).
inline constexpr std::size_t kVleanSpreadRingBytes = std::size_t(4) * 4 * kRingStages * kRecordBytes;
/// Variants 20 / 21 (session 9c, s9vnm2; PERF-vnm-small.md): where the grid fits 2 blocks per SM
/// (groups x splits <= 2 sms), pad the shared memory so that no SM can take a third block. The kernel is
/// a programmatic dependent of the X transpose, whose blocks are still resident when its blocks are
/// placed; with room for 3 per SM the placement came out uneven (H200, 5585405, 128:2:8 28672 x 8192
/// m = 32: 67.5 us; padded 56.1, without PDL 57.4; 128:2:16 40.8 -> 34.2). Returns whether it padded.
inline bool vlean_spread(Geometry& g, int sms) {
  if (!vlean_variant(g.variant) || g.warps != 4) return false;
  if (g.groups * std::int64_t(g.splits) > 2 * std::int64_t(std::max(1, sms))) return false;
  g.ring_bytes = std::max(g.ring_bytes, kVleanSpreadRingBytes);
  return true;
}

// ---- index math shared by the kernels (device) and the CPU tests (host) ----

/// Staged-X word slot of gathered word j (two gathered columns 2j, 2j+1) within a row: the 16
/// words of each k32 step permuted so that lane t's four B registers are one 16-byte load.
SPARSENM_VS_HD constexpr int xs_slot(int j) { return (j >> 4) * 16 + 4 * (j & 3) + ((j & 15) >> 2); }

/// The two X columns of a gathered word of window w (selected positions q = 2 (j % 2) and +1 for
/// word j): sel16 = the two selection bytes (lo | hi << 8; hw24: identity_sel16). -1 = reads as
/// zero (window past the end or column >= k).
SPARSENM_VS_HD constexpr void word_columns(std::int64_t w, unsigned sel16, int window, std::int64_t windows,
                                           std::int64_t k, std::int64_t& c_lo, std::int64_t& c_hi) {
  if (w >= windows) {
    c_lo = c_hi = -1;
    return;
  }
  const std::int64_t base = w * window;
  c_lo = base + std::int64_t(sel16 & 0xffu);
  c_hi = base + std::int64_t(sel16 >> 8);
  if (c_lo >= k) c_lo = -1;
  if (c_hi >= k) c_hi = -1;
}

/// Variants 5/6: the staged transposed X of a chunk is [kk][8 * nt_count] 16-bit values, i.e.
/// nt_count 16-byte units per gathered column kk (unit nt = X rows 8 nt .. 8 nt + 7). Unit (kk, nt)
/// lives at 16-byte index kk * nt_count + (nt ^ xt_swizzle(kk)): the 8 rows kk0..kk0+7 (kk0 % 8
/// == 0) an ldmatrix phase reads for one nt fall in 8 distinct 16-byte bank groups for every
/// nt_count (1: stride 1; 2: stride 2, xor (kk >> 2) & 1; 3: stride 3, odd; 4: stride 4, xor
/// (kk >> 1) & 3). Depends only on kk % 8, so it is a per-lane constant of the ldmatrix address.
SPARSENM_VS_HD constexpr int xt_swizzle(int kk, int nt_count) {
  return nt_count == 2 ? (kk >> 2) & 1 : nt_count == 4 ? (kk >> 1) & 3 : 0;
}
SPARSENM_VS_HD constexpr int xt_unit(int kk, int nt, int nt_count) { return kk * nt_count + (nt ^ xt_swizzle(kk, nt_count)); }

/// Variant 9, hw24 direct staging: X row i of a chunk is U = chunk_pairs * 8 16-byte units (8
/// columns each, unit u = columns 8 u .. 8 u + 7 of the chunk), unit u stored at u ^ (i % 8) of
/// its row (U is a multiple of 8: the xor stays inside the pair's 8 units). An ldmatrix phase
/// reads rows 8 nt .. 8 nt + 7 at one unit: 8 distinct 16-byte bank groups (pitch 16 U bytes, a
/// multiple of 128).
SPARSENM_VS_HD constexpr int direct_unit(int i, int u, int U) { return i * U + (u ^ (i & 7)); }

/// Variant 9, transposed path: gathered columns a thread stages per round (all their selection
/// loads issued before the copies); a chunk of 16 / nt pairs has 1024 / nt columns, 256 threads.
SPARSENM_VS_HD constexpr int async_gather_per(int nt) { return nt == 1 ? 4 : nt == 4 ? 1 : 2; }

/// Variant 9's cp.async group accounting (one commit order per thread: ring groups 0, 1, 2, ...
/// — record q is ring group q — with the gather groups interleaved). Consuming record q (after
/// kRingStages - 1 + q ring commits): the groups newer than record q are the kRingStages - 2
/// ring groups after it, plus the latest gather group when it was committed after record q
/// (qg = ring groups committed before that gather group, so "after record q" is q < qg).
/// cp.async.wait_group of this count guarantees record q landed.
SPARSENM_VS_HD constexpr int ring_wait_newer(int q, int qg) { return kRingStages - 2 + (q < qg ? 1 : 0); }
/// At a chunk top, waiting for the latest gather group: the groups newer than it are the ring
/// groups committed since (ni - qg); counts past kRingStages - 1 are clamped (waiting for more
/// groups than needed is still correct).
SPARSENM_VS_HD constexpr int gather_wait_newer(int ni, int qg) {
  return ni - qg < 0 ? 0 : ni - qg > kRingStages - 1 ? kRingStages - 1 : ni - qg;
}

/// Variant 10's accounting. A warp's records come in steps of two (pair cp of tile 0, then of tile
/// 1; an empty group stands for tile 1 when the warp has one tile): record r is ring group r. The
/// prologue commits kPairRingStages - 2 records; step s waits for records 2s and 2s + 1 (after
/// kPairRingStages - 2 + 2s ring commits), then refills the two slots step s - 1 consumed. The
/// groups newer than record 2s + 1 are kPairRingStages - 4 ring groups, plus the latest gather
/// group when it was committed after record 2s + 1 (r1 < qg). The gather group before it was
/// committed at the top of the previous chunk, kPairRingStages - 2 = 6 records past that chunk's
/// first record, so it is older than every record of the current chunk when the previous chunk had
/// >= 3 pairs (kPairMinChunk; only a split's last chunk is shorter, and no gather follows it).
/// Replayed on the CPU (test_vnm_small_layout.cpp).
SPARSENM_VS_HD constexpr int pair_ring_wait_newer(int r1, int qg) { return kPairRingStages - 4 + (r1 < qg ? 1 : 0); }
/// At a chunk top (variant 10): ring groups committed since the latest gather group, clamped to the
/// records in flight (kPairRingStages - 2; waiting for more is still correct).
SPARSENM_VS_HD constexpr int pair_gather_wait_newer(int ni, int qg) {
  return ni - qg < 0 ? 0 : ni - qg > kPairRingStages - 2 ? kPairRingStages - 2 : ni - qg;
}

/// Identity selection bytes (hw24) of word j: positions 2 (j % 2) and 2 (j % 2) + 1.
SPARSENM_VS_HD constexpr unsigned identity_sel16(int j) { return (j & 1) ? 0x0302u : 0x0100u; }

/// Gather units: a thread of `threads` owns units u = tid + s * threads (s = 0, 1, ...) of the
/// m * words units of a chunk (unit u = X row u / words, word u % words). The walker advances
/// (i, j) without a division per unit.
struct UnitWalker {
  int i = 0, j = 0, left = 0;  ///< current unit's row and word, units left for this thread
  SPARSENM_VS_HD constexpr void start(int tid, int threads, int m, int words) {
    const int total = m * words;
    left = tid < total ? (total - tid + threads - 1) / threads : 0;
    i = words > 0 ? tid / words : 0;
    j = words > 0 ? tid - i * words : 0;
  }
  SPARSENM_VS_HD constexpr void next(int threads, int words) {
    j += threads;
    while (j >= words) j -= words, ++i;
    --left;
  }
};

/// The gathered X column (or -1: reads as zero) of gathered index kk = 4 * w + q.
inline std::int64_t gathered_column(const Packed& p, std::int64_t group, std::int64_t w, int q) {
  const Layout& l = p.layout;
  if (w >= l.windows) return -1;
  const std::int64_t s = l.venom ? p.sel[std::size_t((group * l.windows_pad() + w) * 4 + q)] : q;
  const std::int64_t col = w * l.window + s;
  return col < l.k ? col : -1;
}

}  // namespace sparsenm::vnm_small
