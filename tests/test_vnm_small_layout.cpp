// CPU tests of the cuda:vnm_gemv packing (src/cuda/vnm_small/layout.hpp): the packed records,
// read back through the PTX fragment rules of mma.sp.m16n8k32 (A registers per lane, metadata
// words per lane and selector), reproduce the canonical weight exactly, and a product emulated
// on them equals the fp64 product of the condensed weight.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstring>

#include "cuda/vnm_small/layout.hpp"
#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

namespace sv = vnm_small;

CondensedMatrix make_weight(const Pattern& p, DType t, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  DenseMatrix d = random_pattern_matrix(p, t, n, k, seed, 0.1);
  return condense(d.view(), p);
}

std::vector<double> fp64_product(const DenseMatrix& x, const CondensedMatrix& w) {
  std::vector<double> y(std::size_t(x.rows() * w.rows()), 0.0);
  for (std::int64_t i = 0; i < x.rows(); ++i)
    for (std::int64_t r = 0; r < w.rows(); ++r) {
      double s = 0;
      for (std::int64_t slot = 0; slot < w.layout.value_cols; ++slot) {
        const std::int64_t c = w.column_of(r, slot);
        if (c < w.cols()) s += double(w.value(r, slot)) * double(x.at(i, c));
      }
      y[std::size_t(i * w.rows() + r)] = s;
    }
  return y;
}

// What lane `lane` holds in A register `reg` of k-step h of record (rt, cp).
std::uint32_t a_reg(const sv::Packed& p, std::int64_t rt, std::int64_t cp, int h, int lane, int reg) {
  std::uint32_t v;
  std::memcpy(&v, p.records.data() + std::size_t(rt * p.layout.pairs + cp) * sv::kRecordBytes + (h * 32 + lane) * 16 + reg * 4, 4);
  return v;
}
std::uint32_t meta_word(const sv::Packed& p, std::int64_t rt, std::int64_t cp, int lane) {
  std::uint32_t v;
  std::memcpy(&v, p.records.data() + std::size_t(rt * p.layout.pairs + cp) * sv::kRecordBytes + 1024 + lane * 4, 4);
  return v;
}

// Emulates the kernel's math from the hardware side: for each mma (rt, cp, h), row rl of the
// 16-row tile and group gq (0..7) of the k32 step, A's two values come from lane 4*(rl%8) +
// gq%4, register (rl/8) + 2*(gq/4); the metadata from lane 4*(rl%8) + 2h + gq/4 (selector h),
// bits 16*(rl/8) + 4*(gq%4).
std::vector<double> emulate(const sv::Packed& p, const DenseMatrix& x, DType wt) {
  const sv::Layout& l = p.layout;
  std::vector<double> y(std::size_t(x.rows() * l.n), 0.0);
  auto half = [&](std::uint16_t b) { return wt == DType::f16 ? fp16_bits_to_float(b) : bf16_bits_to_float(b); };
  for (std::int64_t rt = 0; rt < l.row_tiles; ++rt)
    for (std::int64_t cp = 0; cp < l.pairs; ++cp)
      for (int h = 0; h < 2; ++h)
        for (int rl = 0; rl < 16; ++rl) {
          const std::int64_t r = rt * 16 + rl;
          for (int gq = 0; gq < 8; ++gq) {
            const std::int64_t w = cp * 16 + 8 * h + gq;
            const std::uint32_t a = a_reg(p, rt, cp, h, 4 * (rl % 8) + gq % 4, rl / 8 + 2 * (gq / 4));
            const std::uint32_t e = meta_word(p, rt, cp, 4 * (rl % 8) + 2 * h + gq / 4);
            const unsigned nib = (e >> (16 * (rl / 8) + 4 * (gq % 4))) & 0xfu;
            const int p0 = int(nib & 3u), p1 = int(nib >> 2);
            EXPECT_LT(p0, p1) << "ordered metadata needs ascending positions";
            if (r >= l.n) {
              EXPECT_EQ(a, 0u);
              continue;
            }
            const std::int64_t group = r / l.group_rows;
            const double v0 = half(std::uint16_t(a & 0xffffu)), v1 = half(std::uint16_t(a >> 16));
            const std::int64_t c0 = sv::gathered_column(p, group, w, p0), c1 = sv::gathered_column(p, group, w, p1);
            for (std::int64_t i = 0; i < x.rows(); ++i) {
              double s = 0;
              if (c0 >= 0) s += v0 * x.at(i, c0);
              if (c1 >= 0) s += v1 * x.at(i, c1);
              y[std::size_t(i * l.n + r)] += s;
            }
          }
        }
  return y;
}

struct Case {
  Pattern p;
  DType t;
  std::int64_t n, k, m;
};

TEST(VnmSmallLayout, EmulatedProductMatchesCondensedProduct) {
  std::vector<Case> cases;
  for (int v : {32, 64, 128, 256})
    for (int mm : {4, 5, 7, 8, 10, 16, 32, 100}) cases.push_back({Pattern::venom(v, mm), DType::f16, v + 21, mm * 19 + 3, 3});
  cases.push_back({Pattern::hw24(), DType::bf16, 150, 333, 5});
  cases.push_back({Pattern::hw24(), DType::f16, 16, 4, 1});
  cases.push_back({Pattern::venom(64, 100), DType::bf16, 70, 50, 2});  // k < M: one partial window
  std::uint64_t seed = 7;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.p.str() + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k));
    CondensedMatrix w = make_weight(c.p, c.t, c.n, c.k, ++seed);
    DenseMatrix x = random_matrix(c.t, c.m, c.k, ++seed);
    sv::Packed p = sv::pack(w);
    EXPECT_EQ(p.records.size(), std::size_t(p.layout.row_tiles * p.layout.pairs) * sv::kRecordBytes);
    const std::vector<double> want = fp64_product(x, w), got = emulate(p, x, c.t);
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-9 * (1 + std::fabs(want[i]))) << i;
  }
}

TEST(VnmSmallLayout, LayoutAndGeometryValues) {
  const FormatLayout f = FormatLayout::of(Pattern::venom(128, 10), 1000, 1234);
  const sv::Layout l = sv::Layout::of(f);
  EXPECT_TRUE(l.venom);
  EXPECT_EQ(l.windows, 124);
  EXPECT_EQ(l.pairs, 8);
  EXPECT_EQ(l.row_tiles, 63);
  EXPECT_EQ(l.groups, 8);
  EXPECT_EQ(l.sel_bytes(), std::size_t(8 * 128 * 4));
  for (int m : {1, 8, 9, 17, 32})
    for (int variant = 0; variant < sv::kVariants; ++variant) {
      if (!sv::variant_built(variant)) continue;  // 17 / 18: removed in session 9b
      const sv::Geometry g = sv::choose_geometry(l, m, 132, variant);
      const int want = sv::lean2_or_lean(l, variant);  // venom: variant 13 is 12
      EXPECT_EQ(g.variant, want);
      EXPECT_EQ(g.n_tiles, (m + 7) / 8);
      if (variant == sv::kStreamVariant)  // row-major X read by ldmatrix: pitch 16 mod 128 bytes
        EXPECT_EQ(g.smem_words_per_row % 32, 4) << "bank-conflict-free ldmatrix stride";
      else
        EXPECT_EQ(g.smem_words_per_row % 32, 16) << "bank-conflict-free stride";
      EXPECT_EQ(g.buffers, sv::two_buffer_variant(want) ? 2 : 1);
      EXPECT_LE((g.smem_bytes() - g.ring_bytes) / std::size_t(g.buffers), 48u * 1024u);
      EXPECT_EQ(g.ring_bytes, sv::ring_variant(want) ? std::size_t(g.warps) * sv::ring_stages(want) * sv::kRecordBytes : 0u);
      EXPECT_LE(g.smem_bytes(), 227u * 1024u / 2) << "two blocks per SM";
      EXPECT_GE(std::int64_t(g.splits) * g.pairs_per_split, l.pairs);
      EXPECT_LT(std::int64_t(g.splits - 1) * g.pairs_per_split, l.pairs);
    }
  const sv::Layout hw = sv::Layout::of(FormatLayout::of(Pattern::hw24(), 50, 9));
  EXPECT_FALSE(hw.venom);
  EXPECT_EQ(hw.group_rows, sv::kHwGroupRows);
  EXPECT_EQ(hw.sel_bytes(), 0u);
}

// The gather index math of variants 1/2 (UnitWalker, xs_slot, word_columns), replayed on the
// host for every thread of a block: every (row < m, word < words) unit of a chunk is owned by
// exactly one thread, every shared offset stays inside its buffer's rows 0..m-1 (run 1's
// rewrite 1fb8207 wrote rows up to 31 at m = 17..24: past the staged X), and the gathered
// columns equal gathered_column() of the canonical selection.
TEST(VnmSmallLayout, GatherUnitsCoverChunkOnceAndStayInBounds) {
  std::uint64_t seed = 40;
  for (Pattern pat : {Pattern::venom(32, 7), Pattern::venom(64, 8), Pattern::venom(128, 16), Pattern::venom(256, 100),
                      Pattern::hw24()}) {
    const std::int64_t n = pat.kind == Granularity::venom ? 2 * pat.v + 5 : 150;
    const std::int64_t k = pat.m * 70 + 3;
    CondensedMatrix w = make_weight(pat, DType::f16, n, k, ++seed);
    const sv::Packed pk = sv::pack(w);
    const sv::Layout& l = pk.layout;
    for (int m : {1, 3, 8, 9, 16, 17, 20, 24, 25, 32})
      for (int variant = 0; variant < sv::kVariants; ++variant) {
        if (!sv::variant_built(variant)) continue;  // 17 / 18: removed in session 9b
        if (variant == sv::kStreamVariant) continue;  // no word gather (StreamedStaging... below)
        SCOPED_TRACE(pat.str() + " m=" + std::to_string(m) + " variant=" + std::to_string(variant));
        const sv::Geometry g = sv::choose_geometry(l, m, 132, variant, 2);
        const int threads = 32 * g.warps, rows = 8 * g.n_tiles, S = g.smem_words_per_row;
        ASSERT_LE(m, rows);
        ASSERT_EQ(S % 32, 16);
        ASSERT_LE(g.smem_bytes(), 227u * 1024u);
        ASSERT_LE(g.smem_bytes(), sv::max_smem_bytes(g.n_tiles)) << "the launcher's per-function limit";
        if (!sv::large_smem_variant(variant)) ASSERT_LE(g.smem_bytes(), 48u * 1024u) << "these variants set no limit";
        ASSERT_EQ(g.smem_bytes(), std::size_t(g.buffers) * std::size_t(rows) * S * 4 + g.ring_bytes);
        if (variant == sv::kRingVariant)  // the rings start 16-byte aligned after the staged X
          ASSERT_EQ(std::size_t(rows) * S * 4 % 16, 0u);
        for (std::int64_t c0 = 0; c0 < l.pairs; c0 += g.chunk_pairs) {
          const int words = int(std::min<std::int64_t>(g.chunk_pairs, l.pairs - c0)) * 32;
          ASSERT_LE(sv::xs_slot(words - 1), S - 17);
          std::vector<int> owner(std::size_t(m) * std::size_t(words), 0);
          for (int tid = 0; tid < threads; ++tid) {
            sv::UnitWalker wk;
            wk.start(tid, threads, m, words);
            int expect = 0;
            for (int u = tid; u < m * words; u += threads) ++expect;
            ASSERT_EQ(wk.left, expect);
            for (int u = tid; wk.left > 0; u += threads) {
              ASSERT_EQ(wk.i, u / words);
              ASSERT_EQ(wk.j, u % words);
              ASSERT_LT(wk.i, m);
              const int off = wk.i * S + sv::xs_slot(wk.j);
              ASSERT_GE(off, 0);
              ASSERT_LT(off, m * S);
              ++owner[std::size_t(wk.i) * std::size_t(words) + std::size_t(wk.j)];
              wk.next(threads, words);
            }
          }
          for (int c : owner) ASSERT_EQ(c, 1);
          // Variant 4's row gather (gather_rows in kernel.cuh): thread tid takes words j = tid,
          // tid + threads, ...; rows in batches of 8 while i0 < min(kRows, m), stores for i < m.
          std::vector<int> owner4(std::size_t(m) * std::size_t(words), 0);
          for (int tid = 0; tid < threads; ++tid)
            for (int j = tid; j < words; j += threads)
              for (int i0 = 0; i0 < rows && i0 < m; i0 += 8)
                for (int ii = 0; ii < 8; ++ii) {
                  const int i = i0 + ii;
                  ASSERT_LT(i, rows) << "a row batch passed the staged rows";
                  if (i >= m) continue;
                  const int off = i * S + sv::xs_slot(j);
                  ASSERT_LT(off, m * S);
                  ++owner4[std::size_t(i) * std::size_t(words) + std::size_t(j)];
                }
          for (int c : owner4) ASSERT_EQ(c, 1);
        }
      }
    // word_columns == gathered_column for every group, window and word half
    for (std::int64_t grp = 0; grp < l.groups; ++grp)
      for (std::int64_t wi = 0; wi < l.windows_pad(); ++wi)
        for (int half = 0; half < 2; ++half) {
          unsigned s16 = sv::identity_sel16(half);
          if (l.venom && wi < l.windows) {
            const std::size_t o = std::size_t((grp * l.windows_pad() + wi) * 4 + 2 * half);
            s16 = unsigned(pk.sel[o]) | (unsigned(pk.sel[o + 1]) << 8);
          }
          std::int64_t lo = 0, hi = 0;
          sv::word_columns(wi, s16, l.window, l.windows, l.k, lo, hi);
          ASSERT_EQ(lo, sv::gathered_column(pk, grp, wi, 2 * half)) << grp << " " << wi;
          ASSERT_EQ(hi, sv::gathered_column(pk, grp, wi, 2 * half + 1)) << grp << " " << wi;
        }
  }
  // The 16 words of a k32 step land on 16 distinct slots of that step.
  std::vector<int> seen(16, 0);
  for (int j = 0; j < 16; ++j) ++seen[std::size_t(sv::xs_slot(j))];
  for (int c : seen) EXPECT_EQ(c, 1);
}

// Variants 5/6 (kernel3.cuh), replayed on the host for every thread of a block and every chunk:
// thread tid stages gathered columns kk = tid, tid + threads, ... < npairs * 64 of its chunk,
// each as n_tiles 16-byte units at xt_unit(kk, nt); every unit of the chunk is written exactly
// once and lies inside one staged buffer; the 32-bit column math of the kernel equals
// gathered_column(); the ldmatrix.x4.trans reads (lane l: row base + l, unit nt) hit exactly the
// units written for that (kk, nt), and each 8-lane phase covers 8 distinct 16-byte bank groups
// (no bank conflicts). Also the transpose's unit index c * n_tiles + nt stays inside the k *
// n_tiles units of the workspace.
TEST(VnmSmallLayout, TransposedGatherCoversChunkOnceConflictFree) {
  std::uint64_t seed = 90;
  for (Pattern pat : {Pattern::venom(32, 7), Pattern::venom(64, 8), Pattern::venom(128, 16), Pattern::venom(256, 100),
                      Pattern::hw24()}) {
    const std::int64_t n = pat.kind == Granularity::venom ? 2 * pat.v + 5 : 150;
    const std::int64_t k = pat.m * 70 + 3;
    CondensedMatrix w = make_weight(pat, DType::f16, n, k, ++seed);
    const sv::Packed pk = sv::pack(w);
    const sv::Layout& l = pk.layout;
    for (int m : {1, 8, 9, 16, 17, 24, 25, 32})
      for (int variant : {5, 6}) {
        SCOPED_TRACE(pat.str() + " m=" + std::to_string(m) + " variant=" + std::to_string(variant));
        ASSERT_TRUE(sv::transposed_variant(variant));
        ASSERT_TRUE(sv::run1_geometry(variant));
        const sv::Geometry g = sv::choose_geometry(l, m, 132, variant, 2);
        const int threads = 32 * g.warps, NT = g.n_tiles;
        ASSERT_EQ(g.buffers, 2);
        const std::size_t buf_units = g.buffer_words() * 4 / 16;  // the kernel's buffer stride
        ASSERT_GE(buf_units, std::size_t(g.chunk_pairs) * 64 * std::size_t(NT));
        ASSERT_LE(g.smem_bytes(), sv::max_smem_bytes(NT));
        for (std::int64_t grp = 0; grp < l.groups; ++grp)
          for (std::int64_t c0 = 0; c0 < l.pairs; c0 += g.chunk_pairs) {
            const int npairs = int(std::min<std::int64_t>(g.chunk_pairs, l.pairs - c0));
            const int nkk = npairs * 64;
            std::vector<int> unit_kk(buf_units, -1), unit_nt(buf_units, -1);
            for (int tid = 0; tid < threads; ++tid)
              for (int kk = tid; kk < nkk; kk += threads) {
                // the kernel's 32-bit column math
                const unsigned wq = unsigned(c0) * 16u + unsigned(kk >> 2), q = unsigned(kk & 3);
                unsigned c = ~0u;
                if (wq < unsigned(l.windows))
                  c = l.venom ? wq * unsigned(l.window) + unsigned(pk.sel[std::size_t(grp * l.windows_pad() * 4) + wq * 4u + q])
                              : wq * 4u + q;
                const bool ok = c < unsigned(l.k);
                ASSERT_EQ(ok ? std::int64_t(c) : -1, sv::gathered_column(pk, grp, std::int64_t(wq), int(q))) << kk;
                if (ok) ASSERT_LT(std::size_t(c) * NT + std::size_t(NT - 1), std::size_t(l.k) * std::size_t(NT));
                for (int nt = 0; nt < NT; ++nt) {
                  const int u = sv::xt_unit(kk, nt, NT);
                  ASSERT_GE(u, 0);
                  ASSERT_LT(std::size_t(u), buf_units);
                  ASSERT_EQ(unit_kk[std::size_t(u)], -1) << "unit written twice";
                  unit_kk[std::size_t(u)] = kk;
                  unit_nt[std::size_t(u)] = nt;
                }
              }
            for (int cp = 0; cp < npairs; ++cp)
              for (int h = 0; h < 2; ++h)
                for (int nt = 0; nt < NT; ++nt) {
                  const int base = cp * 64 + h * 32;
                  for (int phase = 0; phase < 4; ++phase) {
                    std::vector<int> banks(8, 0);
                    for (int r = 0; r < 8; ++r) {
                      const int lane = 8 * phase + r;
                      // the kernel's address: step base * NT units + lane constant xt_unit(lane, nt)
                      const int u = base * NT + sv::xt_unit(lane, nt, NT);
                      ASSERT_EQ(u, sv::xt_unit(base + lane, nt, NT));
                      ASSERT_EQ(unit_kk[std::size_t(u)], base + lane) << "ldmatrix reads a unit not staged for its row";
                      ASSERT_EQ(unit_nt[std::size_t(u)], nt);
                      ++banks[std::size_t(u % 8)];
                    }
                    for (int b : banks) ASSERT_EQ(b, 1) << "bank conflict, NT=" << NT;
                  }
                }
          }
      }
  }
}

// Variant 7 (kernel4.cuh), hw24 staging and reads replayed on the host for every geometry of a
// few shapes: the 16-byte units of a chunk (rows < m) are written once, inside the chunk's buffer,
// never over the zero rows m..8 NT-1 (which the prologue fills completely); every ldmatrix row a
// lane addresses lies in a staged (or zero) row and a staged column of the chunk; every 8-lane
// phase hits 8 distinct 16-byte bank groups; the cluster reduce's partial tile fits in the two
// buffers and its row slices cover the group's rows once; chunks hold whole register batches.
TEST(VnmSmallLayout, StreamedStagingCoversChunkOnceAndReadsConflictFree) {
  for (Pattern pat : {Pattern::hw24(), Pattern::venom(32, 8), Pattern::venom(64, 5), Pattern::venom(128, 16),
                      Pattern::venom(256, 32)})
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{150, 261}, {517, 3176}, {12288, 12288}, {28672, 8192}})
      for (int m : {1, 7, 8, 9, 16, 17, 24, 25, 32})
        for (int bps : {1, 2, 4}) {
          SCOPED_TRACE(pat.str() + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " m=" + std::to_string(m));
          const sv::Layout l = sv::Layout::of(FormatLayout::of(pat, n, k));
          const sv::Geometry g = sv::choose_geometry(l, m, 132, sv::kStreamVariant, bps);
          const int rows = 8 * g.n_tiles, S = g.smem_words_per_row, threads = 32 * g.warps;
          const int pitch = S * 4, buf = rows * pitch;
          ASSERT_EQ(g.chunk_pairs % 2, 0);
          ASSERT_EQ(pitch % 128, 16) << "ldmatrix rows 16 mod 128 bytes apart";
          ASSERT_GE(2 * g.warps, g.tiles_per_group);
          ASSERT_LE(g.splits, sv::kStreamMaxSplits);
          ASSERT_EQ(g.splits & (g.splits - 1), 0) << "cluster sizes are powers of two (run dd6d33a: 3 and 5 ran slow)";
          ASSERT_LE(g.smem_bytes(), sv::max_smem_bytes(g.n_tiles));
          ASSERT_EQ(g.smem_bytes(), std::size_t(2) * std::size_t(buf));
          const int grows = g.tiles_per_group * sv::kTileRows;
          ASSERT_LE(std::size_t(rows) * std::size_t(grows + 4) * 4, g.smem_bytes()) << "partial tile fits";
          ASSERT_EQ(g.groups, (l.row_tiles + g.tiles_per_group - 1) / g.tiles_per_group);
          ASSERT_GE(std::int64_t(g.splits) * g.pairs_per_split, l.pairs);
          ASSERT_LT(std::int64_t(g.splits - 1) * g.pairs_per_split, l.pairs);
          std::vector<int> rowcover(std::size_t(grows), 0);
          for (int z = 0; z < g.splits; ++z) {
            const int slice = (grows + g.splits - 1) / g.splits, rb = z * slice, re = std::min(grows, rb + slice);
            for (int r = rb; r < re; ++r) ++rowcover[std::size_t(r)];
          }
          for (int c : rowcover) ASSERT_EQ(c, 1);
          if (l.venom) continue;  // venom stages the transposed X (xt_unit, tested above)
          // one chunk per split start (the widest chunk of the split)
          for (std::int64_t c0 = 0; c0 < l.pairs; c0 += g.pairs_per_split) {
            const int npairs = int(std::min<std::int64_t>({std::int64_t(g.chunk_pairs), l.pairs - c0, g.pairs_per_split}));
            const int upr = npairs * 8;
            std::vector<int> written(std::size_t(buf / 16), 0);
            for (int tid = 0; tid < threads; ++tid)
              for (int u = tid; u < m * upr; u += threads) {
                const int i = u / upr, cu = u - i * upr;
                ASSERT_LT(i, m);
                const int dst = i * pitch + cu * 16;
                ASSERT_LT(dst + 16, buf + 1);
                ++written[std::size_t(dst / 16)];
              }
            const int per = (rows - m) * (pitch / 16);  // prologue zero fill of rows m..rows-1
            for (int idx = 0; idx < per; ++idx) ++written[std::size_t((m * pitch) / 16 + idx)];
            for (int i = 0; i < rows; ++i)
              for (int cu = 0; cu < upr; ++cu) ASSERT_EQ(written[std::size_t((i * pitch + cu * 16) / 16)], 1) << i << " " << cu;
            for (int lp = 0; lp < npairs; ++lp)
              for (int h = 0; h < 2; ++h)
                for (int nt = 0; nt < g.n_tiles; ++nt)
                  for (int q = 0; q < 4; ++q) {  // ldmatrix phase q: lanes 8q..8q+7
                    std::vector<int> groups16;
                    for (int r = 0; r < 8; ++r) {
                      const int lane = 8 * q + r;
                      const int off = (8 * nt + (lane & 7)) * pitch + (lane >> 3) * 16 + lp * 128 + h * 64;
                      const int row = off / pitch, colb = off % pitch;
                      ASSERT_LT(row, rows);
                      ASSERT_LT(colb + 16, upr * 16 + 1) << "reads a staged column of the chunk";
                      groups16.push_back((off / 16) % 8);
                    }
                    std::sort(groups16.begin(), groups16.end());
                    ASSERT_TRUE(std::adjacent_find(groups16.begin(), groups16.end()) == groups16.end()) << "bank conflict";
                  }
          }
        }
}

TEST(VnmSmallLayout, EveryGeometryFitsTheLaunchersSharedMemoryLimit) {
  // The launcher sets one dynamic shared-memory limit per kernel function (max_smem_bytes); the
  // geometry of any shape, m, variant, SM count and occupancy must fit it (run of ca6f7f6: a
  // limit taken from one geometry failed a later launch).
  for (Pattern pat : {Pattern::venom(32, 8), Pattern::venom(64, 5), Pattern::venom(128, 16), Pattern::venom(256, 32),
                      Pattern::hw24()})
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{40, 100}, {4096, 4096}, {28672, 8192}, {300, 20000}})
      for (int m = 1; m <= 32; ++m)
        for (int variant = 0; variant < sv::kVariants; ++variant) {
          if (!sv::variant_built(variant)) continue;  // reserved by another branch
          for (int sms : {1, 16, 132})
            if (sv::variant_built(variant))
            for (int bps : {1, 2, 3, 8}) {
              const sv::Layout l = sv::Layout::of(FormatLayout::of(pat, n, k));
              const sv::Geometry g = sv::choose_geometry(l, m, sms, variant, bps);
              ASSERT_LE(g.smem_bytes(), sv::max_smem_bytes(g.n_tiles)) << pat.str() << " m=" << m << " v" << variant;
              ASSERT_GE(g.chunk_pairs, 1);
              ASSERT_GE(g.splits, 1);
              ASSERT_GE(std::int64_t(g.splits) * g.pairs_per_split, l.pairs);
              ASSERT_LT(std::int64_t(g.splits - 1) * g.pairs_per_split, l.pairs);
            }
        }
}

TEST(VnmSmallLayout, AsyncDirectStagingFeedsLdmatrixTheBFragmentsConflictFree) {
  // Variant 9, hw24 direct path (kernel6.cuh): the chunk's X rows copied in 16-byte units to
  // direct_unit(i, u, U); the kernel's ldmatrix.x4 addresses ((cp * 128 + lane_off) ^ 64 h),
  // lane_off = 16 direct_unit(8 nt + l % 8, l / 8, U). Replayed: register j of lane (g, t) =
  // (row g, elements 2t, 2t+1) of the unit lane 8 j + g addresses, which must be X row 8 nt + g,
  // chunk columns 64 cp + 32 h + 8 j + 2t, +1 (mma.m16n8k32's B fragment); every 8-lane phase hits
  // 8 distinct 16-byte bank groups; the copies cover every (row < m, unit) once.
  for (int nt_count = 1; nt_count <= 4; ++nt_count)
    for (int chunk : {16 / nt_count, 1, 3}) {
      const int U = chunk * 8, rows = 8 * nt_count;
      const int units = rows * U;
      // staged[unit] = (row, chunk unit) it holds; -1: never written
      std::vector<std::pair<int, int>> staged(std::size_t(units), {-1, -1});
      for (int i = 0; i < rows; ++i)
        for (int u = 0; u < U; ++u) {
          const int d = sv::direct_unit(i, u, U);
          ASSERT_GE(d, 0);
          ASSERT_LT(d, units);
          ASSERT_EQ(staged[std::size_t(d)].first, -1) << "unit written twice";
          staged[std::size_t(d)] = {i, u};
        }
      for (int cp = 0; cp < chunk; ++cp)
        for (int h = 0; h < 2; ++h)
          for (int nt = 0; nt < nt_count; ++nt) {
            std::uint32_t addr[32];
            for (int l = 0; l < 32; ++l) {
              const std::uint32_t lane_off = std::uint32_t(sv::direct_unit(nt * 8 + (l & 7), l >> 3, U)) * 16u;
              addr[l] = (std::uint32_t(cp * 128) + lane_off) ^ std::uint32_t(h * 64);
              ASSERT_EQ(addr[l] % 16, 0u);
            }
            for (int j = 0; j < 4; ++j) {
              std::vector<int> groups;
              for (int r = 0; r < 8; ++r) groups.push_back(int((addr[8 * j + r] / 16) % 8));
              std::sort(groups.begin(), groups.end());
              ASSERT_TRUE(std::adjacent_find(groups.begin(), groups.end()) == groups.end()) << "bank conflict";
            }
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane / 4, t = lane % 4;
              for (int j = 0; j < 4; ++j) {
                const auto [row, u] = staged[std::size_t(addr[8 * j + g] / 16)];
                ASSERT_EQ(row, 8 * nt + g);
                // element 2t of the unit = chunk column 8 u + 2t; the fragment wants k = 8 j + 2t of step (cp, h)
                ASSERT_EQ(8 * u + 2 * t, 64 * cp + 32 * h + 8 * j + 2 * t) << "nt=" << nt << " lane=" << lane << " j=" << j;
              }
            }
          }
    }
  // the transposed path's rounds cover a full chunk of 16 / nt pairs with 256 threads
  for (int nt = 1; nt <= 4; ++nt) EXPECT_GE(sv::async_gather_per(nt) * 256, (16 / nt) * 64);
}

TEST(VnmSmallLayout, AsyncGeometryStagesBothLayoutsAndFitsThreeBlocksPerSm) {
  // Variant 9: two X buffers of either staging layout (direct rows: 8 nt rows x chunk * 8 units;
  // transposed: chunk * 64 columns x nt units) + the rings; <= 75 KB so that 3 blocks of 8 warps
  // fit an H200 SM (228 KB, 1 KB reserved per block).
  for (Pattern pat : {Pattern::venom(64, 8), Pattern::venom(128, 16), Pattern::venom(256, 8), Pattern::hw24()})
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{28672, 8192}, {12288, 12288}, {300, 2000}})
      for (int m = 1; m <= 32; ++m) {
        const sv::Layout l = sv::Layout::of(FormatLayout::of(pat, n, k));
        const sv::Geometry g = sv::choose_geometry(l, m, 132, sv::kAsyncVariant, 3);
        SCOPED_TRACE(pat.str() + " m=" + std::to_string(m));
        ASSERT_EQ(g.buffers, 2);
        ASSERT_TRUE(sv::run1_geometry(sv::kAsyncVariant));
        ASSERT_EQ(g.ring_bytes, std::size_t(g.warps) * sv::kRingStages * sv::kRecordBytes);
        const std::size_t buf = g.buffer_words() * 4;
        ASSERT_EQ(buf % 16, 0u) << "the rings start 16-byte aligned";
        ASSERT_LE(std::size_t(8 * g.n_tiles) * std::size_t(g.chunk_pairs * 8) * 16, buf) << "direct rows";
        ASSERT_LE(std::size_t(g.chunk_pairs) * 64 * std::size_t(g.n_tiles) * 16, buf) << "transposed columns";
        ASSERT_LE(g.smem_bytes(), sv::max_smem_bytes(g.n_tiles));
        if (g.warps == 8) ASSERT_LE(3 * (g.smem_bytes() + 1024), 228u * 1024u) << "3 blocks per SM";
        // Variant 11 is variant 9's kernel with the split reduction fused: the same geometry
        const sv::Geometry f = sv::choose_geometry(l, m, 132, sv::kFusedVariant, 3);
        ASSERT_TRUE(sv::async_variant(sv::kFusedVariant) && sv::run1_geometry(sv::kFusedVariant));
        ASSERT_EQ(f.splits, g.splits);
        ASSERT_EQ(f.pairs_per_split, g.pairs_per_split);
        ASSERT_EQ(f.chunk_pairs, g.chunk_pairs);
        ASSERT_EQ(f.smem_bytes(), g.smem_bytes());
        ASSERT_EQ(f.warps, g.warps);
      }
}

TEST(VnmSmallLayout, AsyncGroupAccountingWaitsForWhatIsConsumed) {
  // Variant 9's per-thread cp.async commit order replayed: D - 1 ring groups (prologue), the first
  // chunk's gather group, then per chunk: wait(gather_wait_newer) + barrier, the next chunk's
  // gather group, and per consumed record q: wait(ring_wait_newer(q, qg)), one ring group. A wait
  // of N completes every group but the newest N: the group being relied on (record q's, or the
  // chunk's gather group) must be among those. Also checks that the waits are not stricter than
  // needed in the steady state (record q never waits for a gather group committed after it).
  constexpr int D = sv::kRingStages;
  for (int chunks = 1; chunks <= 5; ++chunks)
    for (int chunk_pairs = 1; chunk_pairs <= 6; ++chunk_pairs)
      for (int last = 1; last <= chunk_pairs; ++last)
        for (int ntile = 0; ntile <= 2; ++ntile) {
          std::vector<int> kind;  // per committed group: -1 gather, else ring record index (>= total: empty)
          int ni = 0, qg = 0, q = 0;
          auto ring = [&] { kind.push_back(ni++); };
          std::vector<bool> done;  // per group: complete (some wait covered it)
          auto newest_ok = [&](std::size_t idx, int newer) {  // group idx complete after wait(newer)?
            return kind.size() - idx > std::size_t(newer);
          };
          auto wait = [&](int newer) {  // returns the groups this wait newly forces complete
            std::vector<std::size_t> forced;
            done.resize(kind.size(), false);
            for (std::size_t i = 0; i + std::size_t(newer) < kind.size(); ++i)
              if (!done[i]) done[i] = true, forced.push_back(i);
            return forced;
          };
          for (int s = 0; s < D - 1; ++s) ring();
          kind.push_back(-1);
          std::size_t g_idx = kind.size() - 1;
          qg = ni;
          for (int c = 0; c < chunks; ++c) {
            const int npairs = c == chunks - 1 ? last : chunk_pairs;
            ASSERT_TRUE(newest_ok(g_idx, sv::gather_wait_newer(ni, qg))) << "chunk " << c;
            wait(sv::gather_wait_newer(ni, qg));
            if (c + 1 < chunks) {
              kind.push_back(-1);
              g_idx = kind.size() - 1;
              qg = ni;
            }
            for (int tp = 0; tp < ntile; ++tp)
              for (int cp = 0; cp < npairs; ++cp, ++q) {
                const int w = sv::ring_wait_newer(q, qg);
                std::size_t rec = 0;
                while (kind[rec] != q) ++rec;  // ring group of record q
                ASSERT_TRUE(newest_ok(rec, w)) << "record " << q;
                // not stricter than needed once a chunk holds >= D - 1 records per warp (smaller
                // chunks may leave two gather groups after a record: waiting longer is still
                // correct): the wait forces no group committed after record q
                const std::vector<std::size_t> forced = wait(w);
                if (ntile * chunk_pairs >= D - 1)
                  for (std::size_t i : forced) ASSERT_LE(i, rec) << "record " << q << " waits for a younger group";
                ring();
              }
          }
        }
}

TEST(VnmSmallLayout, PairGroupAccountingWaitsForWhatIsConsumed) {
  // Variant 10's per-thread cp.async commit order replayed: D - 2 ring groups (prologue), the
  // first chunk's gather group, then per chunk: wait(pair_gather_wait_newer) + barrier, the next
  // chunk's gather group, and per pair step (records q, q + 1): wait(pair_ring_wait_newer(q + 1,
  // qg)), two ring groups. Chunks hold >= kPairMinChunk pairs except the last (choose_geometry).
  // Each wait must complete the groups relied on; in the steady state a step never waits for a
  // gather group committed after its records.
  constexpr int D = sv::kPairRingStages;
  for (int chunks = 1; chunks <= 5; ++chunks)
    for (int chunk_pairs = sv::kPairMinChunk; chunk_pairs <= 7; ++chunk_pairs)
      for (int last = 1; last <= chunk_pairs; ++last) {
        std::vector<int> kind;  // per committed group: -1 gather, else ring record index
        int ni = 0, qg = 0, q = 0;
        auto ring = [&] { kind.push_back(ni++); };
        std::vector<bool> done;
        auto newest_ok = [&](std::size_t idx, int newer) { return kind.size() - idx > std::size_t(newer); };
        auto wait = [&](int newer) {
          std::vector<std::size_t> forced;
          done.resize(kind.size(), false);
          for (std::size_t i = 0; i + std::size_t(newer) < kind.size(); ++i)
            if (!done[i]) done[i] = true, forced.push_back(i);
          return forced;
        };
        for (int s = 0; s < D - 2; ++s) ring();
        kind.push_back(-1);
        std::size_t g_idx = kind.size() - 1;
        qg = ni;
        for (int c = 0; c < chunks; ++c) {
          const int npairs = c == chunks - 1 ? last : chunk_pairs;
          const int gw = sv::pair_gather_wait_newer(ni, qg);
          ASSERT_GE(gw, 0);
          ASSERT_LE(gw, D - 2);  // the kernel's wait covers 0 .. D - 2
          ASSERT_TRUE(newest_ok(g_idx, gw)) << "chunk " << c;
          wait(gw);
          if (c + 1 < chunks) {
            kind.push_back(-1);
            g_idx = kind.size() - 1;
            qg = ni;
          }
          for (int cp = 0; cp < npairs; ++cp, q += 2) {
            const int w = sv::pair_ring_wait_newer(q + 1, qg);
            ASSERT_TRUE(w == D - 4 || w == D - 3);  // the two counts the kernel issues
            std::size_t rec0 = 0, rec1 = 0;
            while (kind[rec0] != q) ++rec0;
            while (kind[rec1] != q + 1) ++rec1;
            ASSERT_TRUE(newest_ok(rec0, w)) << "record " << q;
            ASSERT_TRUE(newest_ok(rec1, w)) << "record " << q + 1;
            const std::vector<std::size_t> forced = wait(w);
            for (std::size_t i : forced) ASSERT_LE(i, rec1) << "record " << q + 1 << " waits for a younger group";
            ring();
            ring();
          }
        }
      }
}

TEST(VnmSmallLayout, PairVariantGeometry) {
  // Variant 10: two row tiles per warp (V / 32 warps; hw24 4), chunks >= kPairMinChunk pairs,
  // shared memory within the launcher's bound, the ring of kPairRingStages slots per warp.
  for (auto pat : {Pattern::venom(32, 8), Pattern::venom(64, 16), Pattern::venom(128, 8), Pattern::venom(256, 16),
                   Pattern::hw24()})
    for (int m : {1, 8, 9, 17, 24, 32}) {
      const sv::Layout l = sv::Layout::of(FormatLayout::of(pat, 1000, 3000));
      const sv::Geometry g = sv::choose_geometry(l, m, 132, sv::kPairVariant, 3);
      const int tiles = l.group_rows / sv::kTileRows;
      EXPECT_EQ(g.warps, std::max(1, tiles / 2));
      EXPECT_EQ(g.tiles_per_warp, 2);
      EXPECT_GE(g.chunk_pairs, sv::kPairMinChunk);
      EXPECT_EQ(g.buffers, 2);
      EXPECT_EQ(g.ring_bytes, std::size_t(g.warps) * sv::kPairRingStages * sv::kRecordBytes);
      EXPECT_LE(g.smem_bytes(), sv::max_smem_bytes(g.n_tiles));
    }
}

TEST(VnmSmallLayout, SplitsFillWholeWaves) {
  // 28672 x 8192 at 128:2:8: 224 groups, 64 pairs; 2 blocks on each of 132 SMs.
  const sv::Layout l = sv::Layout::of(FormatLayout::of(Pattern::venom(128, 8), 28672, 8192));
  for (int m : {1, 8, 32}) {
    const sv::Geometry g = sv::choose_geometry(l, m, 132, 2, 2);
    EXPECT_GE(g.splits, 1);
    EXPECT_LE(g.splits, 16);
    EXPECT_GE(std::int64_t(g.splits) * g.pairs_per_split, l.pairs);
    EXPECT_LT(std::int64_t(g.splits - 1) * g.pairs_per_split, l.pairs);
    EXPECT_EQ(g.buffers, 2);
  }
  EXPECT_EQ(sv::choose_geometry(l, 1, 132, 1, 2).buffers, 1);
}

TEST(VnmSmallLayout, RejectsOtherPatternsAndDtypes) {
  EXPECT_THROW(sv::Layout::of(FormatLayout::of(Pattern::element(2, 8), 16, 16)), std::invalid_argument);
  CondensedMatrix w32 = make_weight(Pattern::hw24(), DType::f32, 16, 16, 1);
  EXPECT_THROW(sv::pack(w32), std::invalid_argument);
}

TEST(VnmSmallLayout, BalancedSplitsAtFourN8Tiles) {
  // Session 7d: variants 9 / 11 at m > 24 take the k splits that balance the SMs' blocks x pairs
  // (layout.hpp balanced_splits). The measured cases (H200, 132 SMs): 2:4 28672 x 8192 3 -> 4,
  // 2:4 12288^2 6 -> 4, 128:2:8 12288^2 6 -> 4; 128:2:8 28672 x 8192 stays at 3 (4 splits would
  // leave 16 pairs per block). Below m = 25 and for the other variants: the run-1 rule unchanged.
  struct Case {
    Pattern p;
    std::int64_t n, k;
    int run1, balanced;
  };
  for (const Case& c : {Case{Pattern::hw24(), 28672, 8192, 3, 4}, Case{Pattern::hw24(), 12288, 12288, 6, 4},
                        Case{Pattern::venom(128, 8), 12288, 12288, 6, 4}, Case{Pattern::venom(128, 8), 28672, 8192, 3, 3}}) {
    SCOPED_TRACE(c.p.str() + " " + std::to_string(c.n) + "x" + std::to_string(c.k));
    const sv::Layout l = sv::Layout::of(FormatLayout::of(c.p, c.n, c.k));
    for (int v : {sv::kAsyncVariant, sv::kFusedVariant}) {
      EXPECT_EQ(sv::choose_geometry(l, 32, 132, v, 3).splits, c.balanced);
      EXPECT_EQ(sv::choose_geometry(l, 25, 132, v, 3).splits, c.balanced);
      EXPECT_EQ(sv::choose_geometry(l, 24, 132, v, 3).splits, c.run1) << "n_tiles 3: run-1 rule";
      EXPECT_EQ(sv::choose_geometry(l, 8, 132, v, 3).splits, c.run1);
    }
    EXPECT_EQ(sv::choose_geometry(l, 32, 132, 6, 2).splits, c.run1) << "variant 6 keeps the run-1 rule";
  }
  // Every shape: the rule never leaves the caps (>= 2 pairs per split, <= 16, partials cap) and
  // every split stays non-empty; a tiny grid (fewer than 2 blocks per SM at any split) keeps run-1.
  for (Pattern pat : {Pattern::venom(64, 8), Pattern::venom(128, 4), Pattern::hw24()})
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{300, 2000}, {4096, 4096}, {28672, 8192}, {8192, 28672}})
      for (int sms : {1, 16, 132}) {
        const sv::Layout l = sv::Layout::of(FormatLayout::of(pat, n, k));
        const sv::Geometry g = sv::choose_geometry(l, 32, sms, sv::kAsyncVariant, 3);
        ASSERT_GE(g.splits, 1);
        ASSERT_LE(g.splits, 16);
        ASSERT_LE(std::int64_t(g.splits - 1) * g.pairs_per_split, l.pairs - 1) << "a split with no pairs";
        ASSERT_GE(std::int64_t(g.splits) * g.pairs_per_split, l.pairs);
        if (g.splits > 1) ASSERT_GE(g.pairs_per_split, 2);
      }
  const sv::Layout tiny = sv::Layout::of(FormatLayout::of(Pattern::hw24(), 300, 2000));
  EXPECT_EQ(sv::choose_geometry(tiny, 32, 132, sv::kAsyncVariant, 3).splits, sv::choose_geometry(tiny, 32, 132, sv::kRingVariant, 3).splits);
}

TEST(VnmSmallLayout, LeanVariantChunkFitsItsKernel) {
  // Variant 12 (kernel8.cuh): the kernel's compile-time chunk C = lean_chunk_pairs(NT) must be a
  // multiple of the ring depth (constant wait counts and slots over a chunk), 8 C must divide the
  // 256 threads (a fixed unit per thread in the gather), and its buffers (2 x 8 NT rows x 8 C
  // units of 16 B) plus the 8 warps' rings must fit the geometry's shared memory; the launcher
  // takes the lean kernel only when the geometry's chunk equals C with 8 warps of one tile each.
  // Splits (hw24, k % 8 == 0): at most one wave of resident blocks (session 8: the fastest forced
  // split on both measured shapes at m = 1 / 8 / 16 / 32: 1 at 28672 x 8192, 4 at 12288^2).
  for (int nt = 1; nt <= 4; ++nt) {
    const int c = sv::lean_chunk_pairs(nt);
    EXPECT_EQ(c % sv::kRingStages, 0);
    EXPECT_EQ(256 % (8 * c), 0);
    EXPECT_LE(c, 16 / nt) << "within variant 9's buffers";
  }
  for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{296, 64 * 37}, {130, 600}, {28672, 8192}, {12288, 12288}})
    for (int m = 1; m <= 32; ++m) {
      const sv::Layout l = sv::Layout::of(FormatLayout::of(Pattern::hw24(), n, k));
      const sv::Geometry g = sv::choose_geometry(l, m, 132, sv::kLeanVariant, 3);
      const sv::Geometry g9 = sv::choose_geometry(l, m, 132, sv::kAsyncVariant, 3);
      const int c = sv::lean_chunk_pairs(g.n_tiles);
      EXPECT_EQ(g.chunk_pairs, c);
      EXPECT_EQ(g.warps, 8);
      EXPECT_EQ(g.tiles_per_warp, 1);
      EXPECT_EQ(g.tiles_per_group, 8);
      EXPECT_TRUE(g.splits == 1 || g.groups * g.splits <= 132 * 3) << "one wave of 3 blocks per SM";
      EXPECT_GE(std::int64_t(g.splits) * g.pairs_per_split, l.pairs);
      EXPECT_LT(std::int64_t(g.splits - 1) * g.pairs_per_split, l.pairs) << "every split non-empty";
      if (n == 28672) EXPECT_EQ(g.splits, 1);
      if (n == 12288) EXPECT_EQ(g.splits, 4);
      if (n == 12288) EXPECT_EQ(g9.splits, m > 24 ? 4 : 6) << "variant 9 keeps its rules";
      const std::size_t need = 2u * std::size_t(8 * g.n_tiles) * std::size_t(8 * c) * 16u + 8u * sv::kRingStages * sv::kRecordBytes;
      EXPECT_GE(g.smem_bytes(), need);
      EXPECT_LE(g.smem_bytes(), sv::max_smem_bytes(g.n_tiles));
    }
  // k % 8 != 0 (no direct staging) and venom: variant 12 is variant 9, geometry included
  const sv::Layout odd = sv::Layout::of(FormatLayout::of(Pattern::hw24(), 28672, 8188));
  for (int m : {1, 8, 17, 32}) {
    const sv::Geometry a = sv::choose_geometry(odd, m, 132, sv::kLeanVariant, 3), b = sv::choose_geometry(odd, m, 132, sv::kAsyncVariant, 3);
    EXPECT_EQ(a.chunk_pairs, b.chunk_pairs);
    EXPECT_EQ(a.splits, b.splits);
  }
  const sv::Layout v = sv::Layout::of(FormatLayout::of(Pattern::venom(128, 8), 12288, 12288));
  for (int m : {1, 8, 17, 32})
    EXPECT_EQ(sv::choose_geometry(v, m, 132, sv::kLeanVariant, 3).chunk_pairs, sv::choose_geometry(v, m, 132, sv::kAsyncVariant, 3).chunk_pairs);
}

TEST(VnmSmallLayout, LeanPairedVariantGeometry) {
  // Variant 13 (kernel9.cuh): variant 12's chunk, splits and shared memory with 4 warps of two
  // row tiles each; the kernel's 128 threads gather rows of 8 C units (128 % (8 C) == 0), its ring
  // is 4 warps x kRingStages slots of two records (ring_stages counts records). Elsewhere
  // (k % 8 != 0, venom) it is variant 12, geometry included.
  for (int nt = 1; nt <= 4; ++nt) EXPECT_EQ(128 % (8 * sv::lean_chunk_pairs(nt)), 0);
  for (int nt = 1; nt <= 4; ++nt) EXPECT_EQ(128 % (8 * sv::lean_long_chunk_pairs(nt)), 0);  // variant 16
  for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{296, 64 * 37}, {130, 600}, {28672, 8192}, {12288, 12288}})
    for (int m = 1; m <= 32; ++m) {
      const sv::Layout l = sv::Layout::of(FormatLayout::of(Pattern::hw24(), n, k));
      const sv::Geometry g = sv::choose_geometry(l, m, 132, sv::kLean2Variant, 3);
      const sv::Geometry g12 = sv::choose_geometry(l, m, 132, sv::kLeanVariant, 3);
      EXPECT_EQ(g.variant, sv::kLean2Variant);
      EXPECT_EQ(g.warps, 4);
      EXPECT_EQ(g.tiles_per_warp, 2);
      EXPECT_EQ(g.tiles_per_group, 8);
      EXPECT_EQ(g.chunk_pairs, sv::lean_chunk_pairs(g.n_tiles));
      EXPECT_EQ(g.splits, g12.splits);
      EXPECT_EQ(g.pairs_per_split, g12.pairs_per_split);
      EXPECT_EQ(g.ring_bytes, 4u * sv::kRingStages * 2u * sv::kRecordBytes);
      EXPECT_EQ(g.smem_bytes(), g12.smem_bytes()) << "the same shared memory as variant 12";
      EXPECT_LE(g.smem_bytes(), sv::max_smem_bytes(g.n_tiles));
      // variant 14: variant 13 with at most 8 splits (one portable cluster), every split non-empty
      const sv::Geometry c = sv::choose_geometry(l, m, 132, sv::kLean2ClusterVariant, 3);
      EXPECT_EQ(c.variant, sv::kLean2ClusterVariant);
      EXPECT_EQ(c.warps, 4);
      EXPECT_EQ(c.chunk_pairs, g.chunk_pairs);
      EXPECT_EQ(c.splits, std::min(g.splits, sv::kStreamMaxSplits));
      EXPECT_LT(std::int64_t(c.splits - 1) * c.pairs_per_split, l.pairs);
      EXPECT_EQ(c.smem_bytes(), g.smem_bytes());
      const sv::Geometry c1 = sv::choose_geometry(l, m, 1320, sv::kLean2ClusterVariant, 3);  // many SMs: capped
      EXPECT_LE(c1.splits, sv::kStreamMaxSplits);
      // variant 15: 256-row groups of 8 warps (two layout groups per block), the one-wave rule over
      // its own groups at 2 blocks per SM, <= 8 splits, shared memory for 2 blocks per SM and for the
      // cluster reduce's [8 n_tiles][256 + 4] fp32 partial sums
      const sv::Geometry w = sv::choose_geometry(l, m, 132, sv::kLean2WideVariant, 2);
      EXPECT_EQ(w.variant, sv::kLean2WideVariant);
      EXPECT_EQ(w.warps, 8);
      EXPECT_EQ(w.tiles_per_warp, 2);
      EXPECT_EQ(w.tiles_per_group, sv::kLean2WideTiles);
      EXPECT_EQ(w.groups, (l.row_tiles + 15) / 16);
      EXPECT_EQ(w.chunk_pairs, sv::lean_chunk_pairs(w.n_tiles));
      EXPECT_EQ(w.ring_bytes, 8u * sv::kRingStages * 2u * sv::kRecordBytes);
      EXPECT_LE(w.smem_bytes(), sv::max_smem_bytes(w.n_tiles));
      EXPECT_LE(2 * (w.smem_bytes() + 1024), 228u * 1024u) << "2 blocks per SM";
      EXPECT_LE(std::size_t(8 * w.n_tiles * (256 + 4) * 4), w.smem_bytes()) << "cluster partials fit";
      EXPECT_LE(w.splits, sv::kStreamMaxSplits);
      EXPECT_LE(w.groups * w.splits, std::max<std::int64_t>(w.groups, 264));
      EXPECT_LT(std::int64_t(w.splits - 1) * w.pairs_per_split, l.pairs);
      if (n == 12288) EXPECT_EQ(w.splits, 5) << "48 groups, 264 slots (geometry_for may cut it to fit the clusters)";
      if (n == 28672) EXPECT_EQ(w.splits, 2) << "112 groups, 264 slots";
      // variant 16: variant 14 with the long chunk (16 / 16 / 8 / 8 pairs), 2 blocks per SM at m > 8
      // (the doubled X buffers), the one-wave rule over those slots, <= 8 splits
      const int b16 = m > 8 ? 2 : 3;
      const sv::Geometry L = sv::choose_geometry(l, m, 132, sv::kLean2LongVariant, b16);
      EXPECT_EQ(L.variant, sv::kLean2LongVariant);
      EXPECT_EQ(L.warps, 4);
      EXPECT_EQ(L.tiles_per_warp, 2);
      EXPECT_EQ(L.tiles_per_group, 8);
      EXPECT_EQ(L.chunk_pairs, sv::lean_long_chunk_pairs(L.n_tiles));
      EXPECT_EQ(L.chunk_pairs, L.n_tiles <= 2 ? 16 : 8);
      EXPECT_EQ(L.chunk_pairs % sv::kRingStages, 0);
      EXPECT_EQ(L.ring_bytes, c.ring_bytes);
      EXPECT_LE(L.smem_bytes(), sv::max_smem_bytes(L.n_tiles));
      EXPECT_LE(b16 * (L.smem_bytes() + 1024), 228u * 1024u) << b16 << " blocks per SM";
      if (m > 8) EXPECT_GT(3 * (L.smem_bytes() + 1024), 228u * 1024u) << "m > 8: 2 blocks per SM, not 3";
      EXPECT_LE(L.splits, sv::kStreamMaxSplits);
      EXPECT_LE(L.groups * L.splits, std::max<std::int64_t>(L.groups, 132 * b16));
      EXPECT_LT(std::int64_t(L.splits - 1) * L.pairs_per_split, l.pairs);
      if (n == 12288) EXPECT_EQ(L.splits, m > 8 ? 2 : 4) << "96 groups, 264 / 396 slots";
      if (n == 28672) EXPECT_EQ(L.splits, 1) << "224 groups";
      // variant 19 (producer warp, block ring of kWsStages stages of 8 records): variant 14's shape
      // (4 consumer warps of two tiles, chunk), its ring 8 x 9216 B after the X buffers, 2 blocks per SM
      // (with the 1 KB per block the SM reserves), the one-wave split rule over 264 slots, <= 8 splits
      {
        const int wv = sv::kLean2WsVariant;
        EXPECT_TRUE(sv::lean2_variant(wv) && sv::lean2_cluster_variant(wv));
        EXPECT_FALSE(sv::variant_built(17) || sv::variant_built(18)) << "removed in session 9b";
        EXPECT_TRUE(sv::variant_built(wv));
        const sv::Geometry W = sv::choose_geometry(l, m, 132, wv, 2);
        EXPECT_EQ(W.variant, wv);
        EXPECT_EQ(W.warps, 4);
        EXPECT_EQ(W.tiles_per_warp, 2);
        EXPECT_EQ(W.tiles_per_group, 8);
        EXPECT_EQ(W.chunk_pairs, c.chunk_pairs);
        EXPECT_EQ(W.chunk_pairs, sv::lean_chunk_pairs(W.n_tiles));
        EXPECT_EQ(W.ring_bytes, std::size_t(sv::kWsStages) * 8u * sv::kRecordBytes);
        EXPECT_EQ(W.smem_bytes(), c.smem_bytes() - c.ring_bytes + W.ring_bytes);
        EXPECT_EQ(W.smem_bytes() % 16, 0u);
        EXPECT_EQ(std::size_t(2) * W.buffer_words() * 4 % 16, 0u) << "the ring starts 16-byte aligned";
        EXPECT_LE(W.smem_bytes(), sv::max_smem_bytes(W.n_tiles));
        EXPECT_LE(2 * (W.smem_bytes() + 1024 + 128), 228u * 1024u) << "2 blocks per SM (+ 128 B of static mbarriers)";
        EXPECT_GE(2 * W.ring_bytes, 130u * 1024u) << ">= 130 KB of weights in flight per SM";
        EXPECT_LE(std::size_t(8 * W.n_tiles * (128 + 4) * 4), W.smem_bytes()) << "cluster partials fit";
        EXPECT_LE(W.splits, sv::kStreamMaxSplits);
        EXPECT_LE(W.groups * W.splits, std::max<std::int64_t>(W.groups, 264));
        EXPECT_LT(std::int64_t(W.splits - 1) * W.pairs_per_split, l.pairs);
        if (n == 12288) EXPECT_EQ(W.splits, 2) << "96 groups, 264 slots";
        if (n == 28672) EXPECT_EQ(W.splits, 1) << "224 groups";
      }
    }
  const sv::Layout odd = sv::Layout::of(FormatLayout::of(Pattern::hw24(), 28672, 8188));
  const sv::Layout v = sv::Layout::of(FormatLayout::of(Pattern::venom(128, 8), 12288, 12288));
  for (int m : {1, 8, 17, 32})
    for (const sv::Layout* l : {&odd, &v}) {
      EXPECT_EQ(sv::lean2_or_lean(*l, sv::kLean2Variant), sv::kLeanVariant);
      EXPECT_EQ(sv::lean2_or_lean(*l, sv::kLean2ClusterVariant), sv::kLeanVariant);
      EXPECT_EQ(sv::lean2_or_lean(*l, sv::kLean2WideVariant), sv::kLeanVariant);
      EXPECT_EQ(sv::lean2_or_lean(*l, sv::kLean2LongVariant), sv::kLeanVariant);
      EXPECT_EQ(sv::lean2_or_lean(*l, sv::kLean2WsVariant), sv::kLeanVariant);
      EXPECT_EQ(sv::choose_geometry(*l, m, 132, sv::kLean2WideVariant, 2).tiles_per_group, sv::choose_geometry(*l, m, 132, sv::kLeanVariant, 2).tiles_per_group);
      const sv::Geometry a = sv::choose_geometry(*l, m, 132, sv::kLean2Variant, 3), b = sv::choose_geometry(*l, m, 132, sv::kLeanVariant, 3);
      EXPECT_EQ(a.variant, sv::kLeanVariant);
      EXPECT_EQ(a.warps, b.warps);
      EXPECT_EQ(a.chunk_pairs, b.chunk_pairs);
      EXPECT_EQ(a.splits, b.splits);
    }
}

TEST(VnmSmallLayout, VnmLeanPairedGeometry) {
  // Variants 20 / 21 (kernel10.cuh): venom V = 128 only — one slab per block, 4 warps of two row tiles,
  // the compile-time chunk lean_chunk_pairs (the kernel's X buffers, 64 C columns x NT 16-byte units,
  // fit the geometry's buffers), rings of 4 two-record slots per warp, 3 blocks per SM, the one-wave
  // split rule over the slabs (variant 20: <= 8, one cluster); V != 128 and hw24: variant 9.
  for (int M : {8, 16, 10})
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{28672, 8192}, {12288, 12288}, {300, 1234}})
      for (int m : {1, 8, 9, 16, 17, 24, 25, 32})
        for (int v : {sv::kVnmLeanVariant, sv::kVnmLeanReduceVariant, sv::kVnmDirectVariant}) {
          SCOPED_TRACE("M=" + std::to_string(M) + " n=" + std::to_string(n) + " m=" + std::to_string(m) + " v" + std::to_string(v));
          const sv::Layout l = sv::Layout::of(FormatLayout::of(Pattern::venom(128, M), n, k));
          const sv::Geometry g = sv::choose_geometry(l, m, 132, v, 3);
          const int nt = (m + 7) / 8, C = sv::lean_chunk_pairs(nt);
          EXPECT_EQ(g.variant, v);
          EXPECT_EQ(g.warps, 4);
          EXPECT_EQ(g.tiles_per_warp, 2);
          EXPECT_EQ(g.tiles_per_group, 8);
          EXPECT_EQ(g.groups, l.groups);
          EXPECT_EQ(g.chunk_pairs, C);
          EXPECT_EQ(g.buffers, 2);
          EXPECT_GE(g.buffer_words() * 4, std::size_t(64 * C * nt * 16)) << "the kernel's X buffer (kBuf)";
          EXPECT_EQ(g.ring_bytes, std::size_t(4 * 2 * sv::kRingStages * sv::kRecordBytes));
          EXPECT_LE(3 * (g.smem_bytes() + 1024), 228u * 1024u) << "3 blocks per SM";
          EXPECT_LE(g.smem_bytes(), sv::max_smem_bytes(nt));
          EXPECT_LT(std::int64_t(g.splits - 1) * g.pairs_per_split, l.pairs);
          if (v != sv::kVnmLeanReduceVariant) EXPECT_LE(g.splits, sv::kStreamMaxSplits) << "one cluster";
          if (n == 28672) EXPECT_EQ(g.splits, 1) << "224 slabs fill 396 slots";
          if (n == 12288 && M == 8) EXPECT_EQ(g.splits, 4) << "96 slabs, 396 slots";
        }
  for (const Pattern& pat : {Pattern::venom(64, 8), Pattern::venom(256, 8), Pattern::venom(32, 16), Pattern::hw24()}) {
    const sv::Layout l = sv::Layout::of(FormatLayout::of(pat, 1000, 4096));
    for (int v : {sv::kVnmLeanVariant, sv::kVnmLeanReduceVariant, sv::kVnmDirectVariant}) {
      EXPECT_EQ(sv::lean2_or_lean(l, v), sv::kAsyncVariant) << pat.str();
      EXPECT_EQ(sv::choose_geometry(l, 17, 132, v, 3).variant, sv::kAsyncVariant) << pat.str();
    }
  }
  EXPECT_TRUE(sv::variant_built(sv::kVnmLeanVariant));
  EXPECT_TRUE(sv::variant_built(sv::kVnmLeanReduceVariant));
  // Variant 23 (session 10, s10vnm): variant 20's geometry and cluster split rule, gathering from the X rows.
  EXPECT_TRUE(sv::variant_built(sv::kVnmDirectVariant));
  EXPECT_TRUE(sv::vlean_variant(sv::kVnmDirectVariant) && sv::lean2_cluster_variant(sv::kVnmDirectVariant));
  EXPECT_FALSE(sv::variant_built(22)) << "22: s10vnmk's number, not built on this branch";
  for (int M : {8, 16})
    for (int m : {1, 8, 16, 32}) {
      const sv::Layout l = sv::Layout::of(FormatLayout::of(Pattern::venom(128, M), 12288, 12288));
      const sv::Geometry a = sv::choose_geometry(l, m, 132, sv::kVnmLeanVariant, 3);
      const sv::Geometry b = sv::choose_geometry(l, m, 132, sv::kVnmDirectVariant, 3);
      EXPECT_EQ(b.variant, sv::kVnmDirectVariant);
      EXPECT_EQ(a.splits, b.splits);
      EXPECT_EQ(a.smem_bytes(), b.smem_bytes());
      EXPECT_EQ(a.chunk_pairs, b.chunk_pairs);
    }
}

TEST(VnmSmallLayout, VnmLeanSpreadPadsToTwoBlocksPerSmWhereTheGridFits) {
  // Session 9c (s9vnm2), vlean_spread: variants 20 / 21 with groups x splits <= 2 sms get rings of
  // kVleanSpreadRingBytes (<= max_smem_bytes, 2 blocks per SM fit, 3 do not); larger grids, other
  // variants and V != 128 (variant 9) are left as they are.
  for (int M : {8, 16, 10})
    for (int m : {1, 8, 9, 16, 17, 24, 25, 32})
      for (int v : {sv::kVnmLeanVariant, sv::kVnmLeanReduceVariant, sv::kVnmDirectVariant}) {
        SCOPED_TRACE("M=" + std::to_string(M) + " m=" + std::to_string(m) + " v" + std::to_string(v));
        const int nt = (m + 7) / 8;
        const sv::Layout wide = sv::Layout::of(FormatLayout::of(Pattern::venom(128, M), 28672, 8192));
        sv::Geometry g = sv::choose_geometry(wide, m, 132, v, 3);
        const std::size_t ring = g.ring_bytes;
        ASSERT_EQ(g.splits, 1);
        EXPECT_TRUE(sv::vlean_spread(g, 132)) << "224 blocks <= 264";
        EXPECT_GT(g.ring_bytes, ring);
        EXPECT_EQ(g.ring_bytes, sv::kVleanSpreadRingBytes);
        EXPECT_LE(g.smem_bytes(), sv::max_smem_bytes(nt));
        EXPECT_LE(2 * (g.smem_bytes() + 1024), 228u * 1024u) << "2 blocks per SM fit";
        EXPECT_GT(3 * (g.smem_bytes() + 1024), 228u * 1024u) << "3 do not";
        sv::Geometry again = g;
        EXPECT_TRUE(sv::vlean_spread(again, 132));
        EXPECT_EQ(again.ring_bytes, g.ring_bytes) << "idempotent";
        sv::Geometry few = sv::choose_geometry(wide, m, 100, v, 3);  // 224 > 200: unchanged
        const std::size_t few_ring = few.ring_bytes;
        EXPECT_FALSE(sv::vlean_spread(few, 100));
        EXPECT_EQ(few.ring_bytes, few_ring);
        const sv::Layout sq = sv::Layout::of(FormatLayout::of(Pattern::venom(128, M), 12288, 12288));
        sv::Geometry gs = sv::choose_geometry(sq, m, 132, v, 3);  // 96 slabs x 4 splits (M = 8) > 264
        if (gs.groups * gs.splits > 264) {
          const std::size_t r = gs.ring_bytes;
          EXPECT_FALSE(sv::vlean_spread(gs, 132));
          EXPECT_EQ(gs.ring_bytes, r);
        }
        if (M == 8) EXPECT_EQ(gs.splits, 4);
      }
  for (int v : {sv::kAsyncVariant, sv::kLean2ClusterVariant, 4}) {
    const sv::Layout l = sv::Layout::of(FormatLayout::of(Pattern::venom(128, 8), 1000, 4096));
    sv::Geometry g = sv::choose_geometry(l, 8, 132, v, 3);
    const std::size_t r = g.ring_bytes;
    EXPECT_FALSE(sv::vlean_spread(g, 132)) << v;
    EXPECT_EQ(g.ring_bytes, r);
  }
  const sv::Layout v64 = sv::Layout::of(FormatLayout::of(Pattern::venom(64, 8), 1000, 4096));
  sv::Geometry g9 = sv::choose_geometry(v64, 8, 132, sv::kVnmLeanVariant, 3);
  EXPECT_EQ(g9.variant, sv::kAsyncVariant);
  EXPECT_FALSE(sv::vlean_spread(g9, 132));
  EXPECT_FALSE(sv::variant_built(sv::kVariants));
  EXPECT_FALSE(sv::variant_built(-1));
}

}  // namespace
}  // namespace sparsenm
