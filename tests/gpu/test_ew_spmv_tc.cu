// sparsenm GPU tests — EW-N:M tensor-core SpMV (cuda:ew_spmv_tc): every compiled pattern, f16 and
// bf16, m = 1..8, tails (n not a multiple of 16, k not a multiple of M or of the tile), both X
// staging paths (16-byte and element), split-k clusters, multi-phase staging, poisoned outputs,
// NaN / Inf in X (stored slots propagate; pruned positions follow the dense product, which is why
// the plan candidate requires desc.x_finite); the plan race; and the packed layout on the CPU.
// Every case runs every variant that serves its pattern (SpmvTcVariant: shift, balanced, prmt, ring).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cuda/ew/spmv_tc.hpp"
#include "cuda/ew/spmv_tc_kernel.cuh"
#include "ew_support.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"

namespace sew = ::sparsenm::cuda::ew;

namespace {

using namespace sparsenm;
using namespace ewtest;

struct TcCase {
  Pattern pattern;
  std::int64_t n, k;
  int m;
  DType t, yt;
  int smem_budget = 0, max_split = 0;
  bool misalign_x = false;  ///< x at a 2-byte offset: forces the element staging path
  sew::SpmvTcVariant variant = sew::SpmvTcVariant::shift;
  int cta_warps = 0;        ///< > 0: overrides the plan's warps per CTA
};

using V = sew::SpmvTcVariant;

/// The variants that serve pattern p (prmt, ring: N in {1, 2}, M in {8, 16}).
std::vector<V> variants_for(const Pattern& p) {
  std::vector<V> v = {V::shift, V::balanced};
  if ((p.n == 1 || p.n == 2) && (p.m == 8 || p.m == 16)) v.push_back(V::prmt), v.push_back(V::ring);
  return v;
}

std::string name(const TcCase& c) {
  return c.pattern.str() + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " m=" + std::to_string(c.m) +
         " " + std::string(to_string(c.t)) + "->" + std::string(to_string(c.yt)) + " split<=" +
         std::to_string(c.max_split) + " budget=" + std::to_string(c.smem_budget) + (c.misalign_x ? " misaligned x" : "") +
         " " + sew::spmv_tc_variant_name(c.variant) + (c.cta_warps ? " warps=" + std::to_string(c.cta_warps) : "");
}

/// Runs the kernel with y poisoned (0xFF bytes) plus one extra row past m that must stay
/// untouched; twice (a stale partial must not leak). Returns y (m rows) on the host.
void run_tc(const CondensedMatrix& w, const DenseMatrix& x, const TcCase& c, std::vector<std::byte>& y,
            int* ksplit_out = nullptr) {
  const auto packed = sew::pack_spmv_tc(w);
  sew::SpmvTcArgs a;
  const auto cfg = sew::plan_spmv_tc(packed.layout, c.t, c.m, sms(), a, c.smem_budget, c.max_split, c.variant);
  EXPECT_GE(a.cta_warps, 4);
  EXPECT_LE(a.cta_warps, 8);
  if (c.variant == V::shift || c.variant == V::prmt) EXPECT_EQ(a.cta_warps, 8);
  if (c.variant == V::ring && a.tiles_per_phase < a.tiles_per_split)  // every phase starts at ring slot 0
    EXPECT_EQ(a.tiles_per_phase % sew::kTcRing, 0) << a.tiles_per_phase << " of " << a.tiles_per_split;
  if (c.cta_warps > 0) a.cta_warps = c.cta_warps;
  if (ksplit_out) *ksplit_out = a.ksplit;
  const auto fn = sew::find_spmv_tc(c.t, c.pattern.n, c.pattern.m, c.variant);
  ASSERT_NE(fn, nullptr);
  DeviceMem dv(packed.values.size()), di(packed.indices.size() * 4), dx(x.size_bytes() + 16);
  const std::size_t ybytes = std::size_t(c.m * c.n) * dtype_size(c.yt), extra = std::size_t(c.n) * dtype_size(c.yt);
  DeviceMem dy(ybytes + extra);
  void* xp = static_cast<char*>(dx.p) + (c.misalign_x ? 2 : 0);
  EW_CUDA(cudaMemcpy(dv.p, packed.values.data(), packed.values.size(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(di.p, packed.indices.data(), packed.indices.size() * 4, cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(xp, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  for (int rep = 0; rep < 2; ++rep) {
    EW_CUDA(cudaMemset(dy.p, 0xFF, ybytes + extra));
    a.values = dv.p;
    a.indices = static_cast<const std::uint32_t*>(di.p);
    a.x = xp;
    a.y = dy.p;
    a.y_dtype = c.yt == DType::f32 ? 0 : c.yt == DType::f16 ? 1 : 2;
    a.x_vec = sew::spmv_tc_x_vec(xp, c.k);
    if (c.misalign_x) EXPECT_EQ(a.x_vec, 0);
    fn(a, cfg, nullptr);
    EW_CUDA(cudaGetLastError());
    EW_CUDA(cudaDeviceSynchronize());
  }
  read_back_guarded(dy.p, ybytes, extra, y);
}

void check_one(const TcCase& c, std::uint64_t seed) {
  SCOPED_TRACE(name(c));
  const auto w = random_ew(c.pattern, c.n, c.k, c.t, seed);
  const auto x = random_matrix(c.t, c.m, c.k, seed + 1);
  ASSERT_EQ(sew::spmv_tc_unsupported(w.layout, c.t, c.m, c.variant), "");
  std::vector<std::byte> y;
  run_tc(w, x, c, y);
  if (::testing::Test::HasFatalFailure()) return;
  const auto cmp = compare(y, c.yt, oracle(x, w));
  expect_close(cmp, c.yt);
}

/// The case under every variant that serves its pattern (the same weight and X).
void check_case(const TcCase& c, std::uint64_t seed) {
  for (V v : variants_for(c.pattern)) {
    TcCase cv = c;
    cv.variant = v;
    check_one(cv, seed);
  }
}

const std::vector<Pattern>& compiled() {
  static const std::vector<Pattern> p = {Pattern::element(2, 4), Pattern::element(4, 8),  Pattern::element(2, 8),
                                         Pattern::element(1, 8), Pattern::element(2, 16), Pattern::element(1, 16)};
  return p;
}

TEST(EwSpmvTcLayout, PackRoundTripsEveryField) {
  for (const Pattern& p : compiled())
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(p.str());
      const auto w = random_ew(p, 45, 301, t, 7);
      const auto packed = sew::pack_spmv_tc(w);
      const auto& l = packed.layout;
      EXPECT_EQ(l.tiles, (w.layout.value_cols + 63) / 64);
      EXPECT_EQ(l.row_blocks, 3);
      EXPECT_EQ(l.tile_cols, 64 * p.m / p.n);
      // Every (row, slot) lands on a distinct packed position, and reads back.
      std::vector<char> seen(l.value_bytes() / 2, 0);
      for (std::int64_t r = 0; r < w.rows(); ++r)
        for (std::int64_t s = 0; s < w.layout.value_cols; ++s) {
          const std::size_t off = l.value_offset(r, s);
          ASSERT_LT(off, seen.size());
          ASSERT_EQ(seen[off], 0) << "r=" << r << " s=" << s;
          seen[off] = 1;
          ASSERT_EQ(sew::unpack_spmv_tc_index(packed, r, s),
                    get_packed(w.indices.data() + r * w.layout.index_row_bytes, s, w.layout.index_bits));
          ASSERT_EQ(std::memcmp(packed.values.data() + off * 2, w.values.data() + std::size_t(r * w.layout.value_cols + s) * 2, 2), 0);
        }
      // The lane owns window t of each 4-window chunk, rows g and g + 8.
      EXPECT_EQ(l.lane_of(9, 0), 4 * 1 + 0);
      EXPECT_EQ(l.lane_of(3, std::int64_t(p.n) * 2), 4 * 3 + 2);
      EXPECT_EQ(l.lane_slot_of(11, std::int64_t(p.n) * 4), 2 * p.n + p.n);  // chunk 1, row g + 8
      // Footprint: exactly the canonical bytes of the row / slot tails' padded shape ...
      EXPECT_EQ(packed.values.size(), std::size_t(l.row_blocks * 16 * l.tiles * 64 * 2));
      EXPECT_EQ(packed.indices.size() * 4, std::size_t(l.row_blocks * 16 * l.tiles * 64 * l.bits / 8));
      // ... so without tails (rows % 16 == 0, slots % 64 == 0) it equals the canonical footprint.
      const auto w2 = random_ew(p, 32, 2 * 64 * p.m / p.n, t, 8);
      const auto packed2 = sew::pack_spmv_tc(w2);
      EXPECT_EQ(packed2.values.size() + packed2.indices.size() * 4, w2.values.size() + w2.indices.size());
    }
}

/// The kDecPrmt primitives on the host: PRMT emulated from the PTX definition (bytes 4..7 of the
/// pair are the zero operand; bit 3 of a nibble replicates the byte's sign), IMAD.HI x 2^16 as a
/// shift, and the shared-memory table as a host array (addresses checked).
const std::vector<std::uint32_t>* g_table = nullptr;
struct HostDecodeOps {
  static std::uint32_t prmt(std::uint32_t w, std::uint32_t sel) {
    std::uint32_t d = 0;
    for (int i = 0; i < 4; ++i) {
      const std::uint32_t nib = (sel >> (4 * i)) & 0xf, k = nib & 7;
      std::uint32_t b = k < 4 ? (w >> (8 * k)) & 0xff : 0u;
      if (nib & 8) b = (b & 0x80) ? 0xff : 0x00;
      d |= b << (8 * i);
    }
    return d;
  }
  static std::uint32_t hi16(std::uint32_t sel) { return sel >> 16; }
  static uint4 lds128(std::uint32_t addr) {
    EXPECT_EQ(addr % 16, 0u);
    EXPECT_LT(std::size_t(addr / 4 + 3), g_table->size());
    if (addr % 16 != 0 || std::size_t(addr / 4 + 3) >= g_table->size()) return make_uint4(0xdead, 0xdead, 0xdead, 0xdead);
    const std::uint32_t* p = g_table->data() + addr / 4;
    return make_uint4(p[0], p[1], p[2], p[3]);
  }
  static uint2 lds64(std::uint32_t addr) {
    EXPECT_EQ(addr % 8, 0u);
    EXPECT_LT(std::size_t(addr / 4 + 1), g_table->size());
    if (addr % 8 != 0 || std::size_t(addr / 4 + 1) >= g_table->size()) return make_uint2(0xdead, 0xdead);
    const std::uint32_t* p = g_table->data() + addr / 4;
    return make_uint2(p[0], p[1]);
  }
};

/// The kernel's own decode (decode_prmt, field extraction, table_words) run on the CPU over a
/// packed weight with row and column tails: every A register of every lane, chunk, tile and row
/// block must equal the dense expansion's bits at its (row, column), zero where nothing is
/// stored and past the matrix. Lane copies: tab = kTabCopyBytes (lane & kTabCopyMask) as on the
/// device. RING > 2: the ring variant's decode (2:8: the 8-byte table entries).
template <int N, int M, int RING = 2>
void check_prmt_decode_on_host(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  using Tr = sew::SpmvTcTraits<__half, N, M, sew::kDecPrmt, RING>;
  SCOPED_TRACE(std::to_string(N) + ":" + std::to_string(M) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
               " ring " + std::to_string(RING));
  const auto w = random_ew(Pattern::element(N, M), rows, cols, DType::f16, seed);
  const auto packed = sew::pack_spmv_tc(w);
  const auto& l = packed.layout;
  std::vector<std::uint32_t> table(std::size_t(Tr::kTabBytes / 4));
  for (int e = 0; e < Tr::kTabBytes / 16; ++e) {
    std::uint32_t wv[4];
    sew::tc_detail::table_words<Tr>(e, wv);
    for (int q = 0; q < 4; ++q) table[std::size_t(4 * e + q)] = wv[q];
  }
  g_table = &table;
  const DenseMatrix dense = expand(w);
  const auto* bits = static_cast<const std::uint16_t*>(dense.data());
  std::int64_t checked = 0, nonzero = 0;
  for (std::int64_t rb = 0; rb < l.row_blocks; ++rb)
    for (std::int64_t t = 0; t < l.tiles; ++t)
      for (int lane = 0; lane < 32; ++lane) {
        sew::tc_detail::Tile<Tr> tile;
        for (int q = 0; q < 4; ++q)
          std::memcpy(&tile.v[4 * q], packed.values.data() + std::size_t((((rb * l.tiles + t) * 4 + q) * 32 + lane) * 16), 16);
        for (int wd = 0; wd < Tr::B; ++wd) tile.i[wd] = packed.indices[l.index_word_offset(rb, t, lane, wd)];
        for (int c = 0; c < Tr::kChunks; ++c) {
          std::uint32_t d[2][Tr::kRegs];
          sew::tc_detail::decode_prmt<Tr, HostDecodeOps>(
              tile, c, std::uint32_t(Tr::kTabCopyBytes) * std::uint32_t(lane & Tr::kTabCopyMask), d);
          const int g = lane >> 2, tq = lane & 3;
          const std::int64_t window = t * 4 * Tr::kChunks + c * 4 + tq;
          for (int h = 0; h < 2; ++h)
            for (int r = 0; r < Tr::kRegs; ++r)
              for (int e = 0; e < 2; ++e) {
                const std::int64_t row = rb * 16 + g + 8 * h, col = window * M + 2 * r + e;
                const std::uint32_t want = (row < rows && col < cols) ? bits[row * cols + col] : 0u;
                const std::uint32_t got = (d[h][r] >> (16 * e)) & 0xffffu;
                ASSERT_EQ(got, want) << "row " << row << " col " << col << " (block " << rb << " tile " << t
                                     << " lane " << lane << " chunk " << c << " reg " << r << ")";
                ++checked, nonzero += want != 0;
              }
        }
      }
  EXPECT_EQ(checked, l.row_blocks * 16 * l.tiles * 64 * M / N);
  EXPECT_GT(nonzero, 0);
  g_table = nullptr;
}

TEST(EwSpmvTcLayout, PrmtDecodeReproducesTheDenseWindowsOnHost) {
  check_prmt_decode_on_host<2, 8>(37, 64 * 8 / 2 + 3 * 8 + 5, 8101);  // rows % 16, a partial tile and window
  check_prmt_decode_on_host<1, 8>(37, 64 * 8 + 2 * 8 + 3, 8102);
  check_prmt_decode_on_host<2, 16>(21, 64 * 16 / 2 + 16 + 7, 8103);
  check_prmt_decode_on_host<1, 16>(21, 64 * 16 + 5 * 16 + 1, 8104);
  check_prmt_decode_on_host<2, 8>(16, 2 * 64 * 8 / 2, 8105);            // no tails
  // The ring variant: 2:8 reads 8-byte entries (16 copies); the others decode as prmt.
  static_assert(sew::SpmvTcTraits<__half, 2, 8, sew::kDecPrmt, sew::kTcRing>::kTab64);
  static_assert(!sew::SpmvTcTraits<__half, 2, 8, sew::kDecPrmt>::kTab64);
  check_prmt_decode_on_host<2, 8, sew::kTcRing>(37, 64 * 8 / 2 + 3 * 8 + 5, 8106);
  check_prmt_decode_on_host<2, 8, sew::kTcRing>(16, 2 * 64 * 8 / 2, 8107);
  check_prmt_decode_on_host<1, 8, sew::kTcRing>(37, 64 * 8 + 2 * 8 + 3, 8108);
  check_prmt_decode_on_host<2, 16, sew::kTcRing>(21, 64 * 16 / 2 + 16 + 7, 8109);
}

/// The ring's launch refuses a phase length that would start a phase in the middle of the ring
/// (its slots are compile-time), before touching the device.
TEST(EwSpmvTcLayout, RingRejectsMisalignedPhases) {
  const auto fn = sew::find_spmv_tc(DType::f16, 2, 8, V::ring);
  ASSERT_NE(fn, nullptr);
  sew::SpmvTcArgs a;
  a.tiles = 12, a.tiles_per_split = 12, a.tiles_per_phase = 6;
  EXPECT_THROW(fn(a, sew::SpmvTcConfig{}, nullptr), InvalidArgument);
  a.tiles_per_phase = 0;
  EXPECT_THROW(fn(a, sew::SpmvTcConfig{}, nullptr), InvalidArgument);
  EXPECT_EQ(sew::find_spmv_tc(DType::f16, 4, 8, V::ring), nullptr);
  EXPECT_EQ(std::string(sew::spmv_tc_variant_name(V::ring)), "ew_spmv_tc_ring");
}

TEST(EwSpmvTcLayout, RejectsWhatItDoesNotServe) {
  const auto l28 = ew_layout(Pattern::element(2, 8), 8, 64);
  EXPECT_THROW(sew::SpmvTcLayout::of(l28, DType::f32), InvalidArgument);
  EXPECT_NE(sew::spmv_tc_unsupported(l28, DType::f32, 1), "");
  EXPECT_NE(sew::spmv_tc_unsupported(l28, DType::f16, 9), "");
  EXPECT_NE(sew::spmv_tc_unsupported(l28, DType::f16, 0), "");
  EXPECT_EQ(sew::spmv_tc_unsupported(l28, DType::f16, 8), "");
  for (auto p : {Pattern::element(3, 32), Pattern::element(8, 32), Pattern::element(3, 8), Pattern::element(5, 7),
                 Pattern::element(1, 2)}) {
    SCOPED_TRACE(p.str());
    const auto l = ew_layout(p, 8, 64);
    EXPECT_THROW(sew::SpmvTcLayout::of(l, DType::f16), InvalidArgument);
    EXPECT_NE(sew::spmv_tc_unsupported(l, DType::f16, 4).find("ew_spmv serves it"), std::string::npos);
  }
  EXPECT_NE(sew::spmv_tc_unsupported(ew_layout(Pattern::element(4, 16), 8, 64), DType::f16, 4).find("not compiled"),
            std::string::npos);
  FormatLayout v = l28;
  v.pattern = Pattern::vector(2, 8, 4);
  EXPECT_THROW(sew::SpmvTcLayout::of(v, DType::f16), InvalidArgument);
}

TEST(EwSpmvTc, EveryPatternMAndDtype) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 1000;
  for (const Pattern& p : compiled())
    for (DType t : {DType::f16, DType::bf16})
      for (int m = 1; m <= 8; ++m) {
        check_case({p, 261, 517, m, t, t}, ++seed);   // element staging (k % 8 != 0), all tails
        check_case({p, 300, 1032, m, t, t}, ++seed);  // 16-byte staging, k not a tile multiple
      }
}

TEST(EwSpmvTc, Hw24AndOutputDtypes) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::hw24(), 77, 130, 3, DType::f16, DType::f16}, 2001);
  check_case({Pattern::element(2, 8), 100, 256, 2, DType::f16, DType::f32}, 2002);
  check_case({Pattern::element(1, 16), 100, 250, 8, DType::bf16, DType::f16}, 2003);
  check_case({Pattern::element(2, 16), 100, 1024, 5, DType::f16, DType::bf16}, 2004);
}

TEST(EwSpmvTc, TailsSplitKPhasesAndMisalignedX) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 3000;
  for (auto shape : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 9}, {15, 4099}, {17, 8192}, {129, 3001},
                                                                       {1000, 2056}})
    for (int split : {1, 3, 8})
      for (auto p : {Pattern::element(2, 8), Pattern::element(1, 16)})
        check_case({p, shape.first, shape.second, split == 3 ? 8 : (split == 8 ? 4 : 1), DType::f16, DType::f16, 0,
                    split},
                   ++seed);
  // Several X phases (small shared budget), with and without a split.
  for (int m : {1, 6, 8}) {
    check_case({Pattern::element(2, 16), 500, 5008, m, DType::f16, DType::f16, 9000, 2}, ++seed);
    check_case({Pattern::element(1, 8), 300, 6000, m, DType::bf16, DType::bf16, 4000, 1}, ++seed);
  }
  // The ring across phases of 8 tiles (two ring rounds per phase) and a short last phase: 2:8 k =
  // 5100 is 20 tiles (the last one partial), a budget of 8 tiles' X gives phases 8, 8, 4.
  for (int m : {3, 8}) {
    TcCase c{Pattern::element(2, 8), 100, 5100, m, DType::f16, DType::f16, 8 * (8 * 512 + 64) + 100, 1};
    c.variant = V::ring;
    sew::SpmvTcArgs a;
    sew::plan_spmv_tc(sew::SpmvTcLayout::of(ew_layout(c.pattern, c.n, c.k), c.t), c.t, m, sms(), a, c.smem_budget,
                      c.max_split, V::ring);
    EXPECT_EQ(a.tiles_per_split, 20);
    EXPECT_EQ(a.tiles_per_phase, 8);
    check_one(c, ++seed);
  }
  // x not 16-byte aligned: the element staging path even though k % 8 == 0.
  check_case({Pattern::element(2, 8), 200, 1024, 8, DType::f16, DType::f16, 0, 0, true}, ++seed);
  check_case({Pattern::element(4, 8), 33, 2048, 7, DType::bf16, DType::f32, 5000, 3, true}, ++seed);
}

TEST(EwSpmvTc, SplitIsUsedForFewRows) {
  EW_REQUIRE_DEVICE();
  const auto w = random_ew(Pattern::element(2, 8), 64, 8192, DType::f16, 4001);
  const auto x = random_matrix(DType::f16, 8, 8192, 4002);
  for (V v : variants_for(Pattern::element(2, 8))) {
    SCOPED_TRACE(sew::spmv_tc_variant_name(v));
    std::vector<std::byte> y;
    int ks = 0;
    TcCase c{Pattern::element(2, 8), 64, 8192, 8, DType::f16, DType::f16};
    c.variant = v;
    run_tc(w, x, c, y, &ks);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_GT(ks, 1);  // 1 CTA of rows: the plan splits k over a cluster
    const auto cmp = compare(y, DType::f16, oracle(x, w));
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_LT(cmp.rel_err, tolerance(DType::f16));
  }
}

/// Every CTA width the balanced plans may pick (4..8 warps), with and without a split (the
/// split-k reduction indexes partials by the CTA's row count), rows not a multiple of the CTA.
TEST(EwSpmvTc, EveryCtaWidth) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 4100;
  for (int warps = 4; warps <= 8; ++warps)
    for (int split : {1, 3})
      for (V v : {V::balanced, V::prmt, V::ring})
        for (auto p : {Pattern::element(2, 8), Pattern::element(2, 16)}) {
          TcCase c{p, 16 * 13 + 5, 3000, warps == 8 ? 8 : warps, DType::f16, DType::f16, 0, split};
          c.variant = v;
          c.cta_warps = warps;
          check_one(c, ++seed);
        }
}

/// The balanced plan on a bar shape: 28672 rows on 132 SMs (224 CTAs of 8 warps leave 92 SMs
/// with two and 40 with one): a grid whose busiest SM runs fewer warp-tiles, in one wave (on a
/// device with 132 SMs; elsewhere only "no more").
TEST(EwSpmvTcPlanShape, BalancedGridOnTheBarShape) {
  EW_REQUIRE_DEVICE();
  const auto l = sew::SpmvTcLayout::of(ew_layout(Pattern::element(2, 8), 28672, 8192), DType::f16);
  const int s = sms();
  auto most = [&](const sew::SpmvTcArgs& a) {
    const long long ctas = (a.row_blocks + a.cta_warps - 1) / a.cta_warps * a.ksplit;
    return (ctas + s - 1) / s * a.cta_warps * a.tiles_per_split;
  };
  sew::SpmvTcArgs a0, a1, a2, a3;
  sew::plan_spmv_tc(l, DType::f16, 8, s, a0, 0, 0, V::shift);
  const auto c1 = sew::plan_spmv_tc(l, DType::f16, 8, s, a1, 0, 0, V::balanced);
  const auto c2 = sew::plan_spmv_tc(l, DType::f16, 8, s, a2, 0, 0, V::prmt);
  const auto c3 = sew::plan_spmv_tc(l, DType::f16, 8, s, a3, 0, 0, V::ring);
  std::printf("  28672 x 8192 2:8 on %d SMs: shift %d warps x split %d (%lld warp-tiles on the busiest SM), balanced %d x "
              "%d (%lld, %d B smem), prmt %d x %d (%lld, %d B smem), ring %d x %d (%lld, %d B smem, %d tiles / phase)\n",
              s, a0.cta_warps, a0.ksplit, most(a0), a1.cta_warps, a1.ksplit, most(a1), c1.smem_bytes, a2.cta_warps,
              a2.ksplit, most(a2), c2.smem_bytes, a3.cta_warps, a3.ksplit, most(a3), c3.smem_bytes, a3.tiles_per_phase);
  EXPECT_LE(most(a3), most(a0));
  const auto occ3 = sew::find_spmv_tc_occupancy(DType::f16, 2, 8, V::ring);
  ASSERT_NE(occ3, nullptr);
  EXPECT_LE((a3.row_blocks + a3.cta_warps - 1) / a3.cta_warps * a3.ksplit,
            occ3(c3.smem_bytes, 32 * a3.cta_warps, a3.ksplit, s));  // one wave at <= 128 registers
  EXPECT_EQ(a3.tiles_per_phase % sew::kTcRing, 0);
  if (s == 132) EXPECT_LT(most(a1), most(a0));  // the balanced grid evens the SMs out here
  EXPECT_LE(most(a1), most(a0));
  EXPECT_EQ(a2.cta_warps, 8);          // prmt keeps the 8-warp grid (one change at a time)
  EXPECT_EQ(most(a2), most(a0));
  const auto occ = sew::find_spmv_tc_occupancy(DType::f16, 2, 8, V::prmt);
  ASSERT_NE(occ, nullptr);
  const long long ctas = (a2.row_blocks + a2.cta_warps - 1) / a2.cta_warps * a2.ksplit;
  EXPECT_LE(ctas, occ(c2.smem_bytes, 32 * a2.cta_warps, a2.ksplit, s));  // one wave
}

/// The PRMT selectors on the host: for every index field value of every prmt pattern, emulating
/// PRMT on the window word places each value at its position's half of its A register and zeros
/// everywhere else (the layout the shift decode produces).
TEST(EwSpmvTcLayout, PrmtSelectorsPlaceEveryPosition) {
  auto prmt = [](std::uint32_t w, std::uint32_t sel) {
    const unsigned long long src = w;  // bytes 4..7 are zero
    std::uint32_t d = 0;
    for (int i = 0; i < 4; ++i) d |= std::uint32_t((src >> (8 * ((sel >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return d;
  };
  const std::uint32_t v0 = 0xA1B2, v1 = 0xC3D4, word = v0 | (v1 << 16);
  for (int pm : {8, 16}) {
    for (int p0 = 0; p0 < pm; ++p0)
      for (int p1 = p0 + 1; p1 < pm; ++p1)
        for (int r = 0; r < pm / 2; ++r) {
          const std::uint32_t got = prmt(word, sew::tc_detail::prmt_selector(r, p0, p1));
          const std::uint32_t want = (2 * r == p0 ? v0 : 2 * r == p1 ? v1 : 0u) |
                                     ((2 * r + 1 == p0 ? v0 : 2 * r + 1 == p1 ? v1 : 0u) << 16);
          ASSERT_EQ(got, want) << "M=" << pm << " p0=" << p0 << " p1=" << p1 << " r=" << r;
        }
    for (int p = 0; p < pm; ++p)  // N = 1: row g in the low half, row g + 8 in the high half
      for (int r = 0; r < pm / 2; ++r) {
        EXPECT_EQ(prmt(word, sew::tc_detail::prmt_selector(r, p, -1)), (2 * r == p ? v0 : 0u) | ((2 * r + 1 == p ? v0 : 0u) << 16));
        EXPECT_EQ(prmt(word, sew::tc_detail::prmt_selector(r, -1, p)), (2 * r == p ? v1 : 0u) | ((2 * r + 1 == p ? v1 : 0u) << 16));
      }
  }
  EXPECT_EQ(sew::spmv_tc_table_bytes(sew::kDecPrmt, 2, 8), 64 * 128);
  EXPECT_EQ(sew::spmv_tc_table_bytes(sew::kDecPrmt, 1, 8), 64 * 128);
  EXPECT_EQ(sew::spmv_tc_table_bytes(sew::kDecPrmt, 1, 16), 2 * 2 * 16 * 128);
  EXPECT_EQ(sew::spmv_tc_table_bytes(sew::kDecPrmt, 2, 16), 256 * 128);
  EXPECT_EQ(sew::spmv_tc_table_bytes(sew::kDecShift, 2, 8), 0);
}

TEST(EwSpmvTc, LargeShape) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 4096, 4096, 8, DType::f16, DType::f16}, 5001);
  check_case({Pattern::element(1, 16), 2100, 11008, 4, DType::bf16, DType::bf16}, 5002);
}

TEST(EwSpmvTc, NanInfPropagateFromStoredSlots) {
  EW_REQUIRE_DEVICE();
  for (DType t : {DType::f16, DType::bf16})
  for (const Pattern p : {Pattern::element(2, 8), Pattern::element(1, 8), Pattern::element(2, 16)}) {
    SCOPED_TRACE(p.str());
    const std::int64_t n = 64, k = 203;
    const auto w = random_ew(p, n, k, t, 6001);
    auto x = random_matrix(t, 3, k, 6002);
    const auto& l = w.layout;
    const std::int64_t col_kept = get_packed(w.indices.data() + 5 * l.index_row_bytes, 0, l.index_bits);
    x.set(0, col_kept, INFINITY);  // row 5 stores this column
    x.set(1, k - 1, NAN);          // in the partial last window
    x.set(2, 100, -INFINITY);
    for (V v : variants_for(p)) {
    SCOPED_TRACE(sew::spmv_tc_variant_name(v));
    TcCase c{p, n, k, 3, t, t};
    c.variant = v;
    std::vector<std::byte> y;
    run_tc(w, x, c, y);
    if (::testing::Test::HasFatalFailure()) return;
    const auto ref = dense_oracle(x, w);
    const auto cmp = compare(y, t, ref);
    expect_close(cmp, t);
    EXPECT_FALSE(std::isfinite(load_as_float(t, y.data(), 5)));  // stored slot x Inf
    // Pruned positions: the dense product is NaN in rows that do not store the Inf column, the
    // condensed one is not (this is the x_finite contract); both agree wherever X is finite.
    const auto cond = oracle(x, w);
    std::int64_t cond_bad = 0, dense_bad = 0;
    for (std::size_t i = 0; i < cond.size(); ++i) cond_bad += !std::isfinite(cond[i]), dense_bad += !std::isfinite(ref[i]);
    EXPECT_GT(cond_bad, 0);
    EXPECT_GT(dense_bad, cond_bad);
    }
  }
}

/// The plan: ew_spmv_tc is in the race for its patterns (and picked only by measured time), is
/// left out with a reason for other patterns and for x_finite = false; forced, it is correct.
TEST(EwSpmvTcPlan, RaceReasonsAndForcedRun) {
  EW_REQUIRE_DEVICE();
  const std::int64_t n = 300, k = 1024;
  const auto w = random_ew(Pattern::element(2, 8), n, k, DType::f16, 7001);
  const MatmulDesc d = f16_desc(8);
  const Plan autoplan = Plan::create(w, d);
  EXPECT_NE(autoplan.reason().find("cuda:ew_spmv_tc "), std::string::npos) << autoplan.reason();
  // Every variant races (timed, listed with its time in the reason).
  for (const char* kname : {"cuda:ew_spmv_tc_bal", "cuda:ew_spmv_tc_prmt", "cuda:ew_spmv_tc_ring"}) {
    EXPECT_NE(autoplan.reason().find(std::string(kname) + " "), std::string::npos) << autoplan.reason();
    EXPECT_EQ(autoplan.reason().find(std::string(kname) + " (opt-in only"), std::string::npos) << autoplan.reason();
  }
  EXPECT_NE(autoplan.reason().find("cuda:ew_spmv "), std::string::npos) << autoplan.reason();
  std::printf("  2:8 m=8 automatic: %s -- %s\n", autoplan.kernel().c_str(), autoplan.reason().c_str());

  MatmulDesc nf = d;
  nf.x_finite = false;
  const Plan finite_off = Plan::create(w, nf);
  EXPECT_NE(finite_off.kernel(), "cuda:ew_spmv_tc");
  EXPECT_NE(finite_off.reason().find("cuda:ew_spmv_tc (desc.x_finite is false"), std::string::npos) << finite_off.reason();
  for (const char* kname : {"cuda:ew_spmv_tc", "cuda:ew_spmv_tc_bal", "cuda:ew_spmv_tc_prmt", "cuda:ew_spmv_tc_ring"}) {
    EXPECT_NE(finite_off.kernel(), kname);
    MatmulDesc forced_nf = nf;
    forced_nf.kernel = kname;
    EXPECT_THROW(Plan::create(w, forced_nf), Unsupported) << kname;
  }

  const auto w332 = random_ew(Pattern::element(3, 32), n, k, DType::f16, 7002);
  const Plan other = Plan::create(w332, d);
  EXPECT_NE(other.kernel(), "cuda:ew_spmv_tc");
  EXPECT_NE(other.reason().find("cuda:ew_spmv_tc (ew_spmv_tc serves N:M with M in"), std::string::npos) << other.reason();
  const auto w416 = random_ew(Pattern::element(4, 16), n, k, DType::f16, 7004);
  const Plan other2 = Plan::create(w416, d);
  EXPECT_NE(other2.kernel(), "cuda:ew_spmv_tc");
  EXPECT_NE(other2.reason().find("ew_spmv_tc: pattern 4:16 is not compiled"), std::string::npos) << other2.reason();
  const auto w48 = random_ew(Pattern::element(4, 8), n, k, DType::f16, 7005);
  const Plan other3 = Plan::create(w48, d);
  EXPECT_NE(other3.kernel(), "cuda:ew_spmv_tc_prmt");
  EXPECT_NE(other3.reason().find("ew_spmv_tc_prmt: pattern 4:8 is not compiled"), std::string::npos) << other3.reason();
  EXPECT_NE(other3.reason().find("ew_spmv_tc_ring: pattern 4:8 is not compiled"), std::string::npos) << other3.reason();

  const auto x = random_matrix(DType::f16, 8, k, 7003);
  for (const char* kname : {"cuda:ew_spmv_tc", "cuda:ew_spmv_tc_bal", "cuda:ew_spmv_tc_prmt", "cuda:ew_spmv_tc_ring"}) {
  SCOPED_TRACE(kname);
  MatmulDesc forced = d;
  forced.kernel = kname;
  const Plan plan = Plan::create(w, forced);
  EXPECT_EQ(plan.kernel(), kname);
  DeviceMem dx(x.size_bytes()), dy(std::size_t(8 * n) * 2);
  EW_CUDA(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemset(dy.p, 0xFF, std::size_t(8 * n) * 2));
  plan.run(dx.p, dy.p, nullptr);
  EW_CUDA(cudaGetLastError());
  EW_CUDA(cudaDeviceSynchronize());
  std::vector<std::byte> y(std::size_t(8 * n) * 2);
  EW_CUDA(cudaMemcpy(y.data(), dy.p, y.size(), cudaMemcpyDeviceToHost));
  const auto cmp = compare(y, DType::f16, oracle(x, w));
  EXPECT_EQ(cmp.unwritten, 0);
  EXPECT_LT(cmp.rel_err, tolerance(DType::f16));
  }
}

// Small cases for compute-sanitizer (memcheck / racecheck): split-k clusters, phases, tails,
// both staging paths.
TEST(EwSpmvTcSmoke, SanitizerSmoke) {
  EW_REQUIRE_DEVICE();
  check_case({Pattern::element(2, 8), 33, 4099, 3, DType::f16, DType::f16, 0, 8}, 9101);
  check_case({Pattern::element(1, 16), 70, 3008, 8, DType::bf16, DType::f32, 9000, 4}, 9102);
  check_case({Pattern::element(2, 4), 129, 515, 1, DType::f16, DType::f16, 0, 1}, 9103);
  check_case({Pattern::element(4, 8), 40, 1024, 8, DType::f16, DType::f16, 0, 2, true}, 9104);
  check_case({Pattern::element(1, 8), 50, 2000, 5, DType::bf16, DType::bf16, 6000, 3}, 9105);
  check_case({Pattern::element(2, 16), 40, 4100, 8, DType::f16, DType::f16, 0, 2}, 9106);
}

}  // namespace
