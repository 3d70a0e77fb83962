// sparsenm — "lean" 16-bit transposable 2:4 mask search: Mask24Args::variant = 8 (every output
// staged in shared memory and written as whole sectors, Mask24LeanStage: measured 0.69-0.71 of
// copy, 1.13-1.16x over variant 4: the default for batched 16-bit searches that fit, docs/PERF-
// train.md "Session 5b") and 9 (variant 8 over 128-column strips of 8 warps, kCW = 4: fuller
// S(W) rows per store, measured 1.02-1.03x over 8, 0.70-0.71 of copy: the default where cols %
// 128 == 0, "Session 5c"). The first form, session 4c's variant 7, stored straight from
// registers (0.33 of copy: store-request bound, "Session 5"), and session 8's variant 10 wrote
// S(W)^T values as whole 128-byte lines per pass pair (0.88-0.90x of 9): both were dropped in
// session 9. The design notes of the search ("Session 4c") follow; the stores are described at
// Mask24LeanStage. Included by mask24.cuh after QuadTable / prmt / Mask24Geom (it uses them).
//
// Why (session 4, measured): the batched 16-bit search is instruction-issue bound: ~40 SASS
// instructions per element at 74-76 % issue with 24-32 warps per SM reaches 0.60-0.61 of the
// copy. The session-3 kernel (variant 2: 8 x 8 per thread, table compression) needs ~26 per
// element but 123-128 registers (16 warps per SM: 0.87x measured at 16 warps). The bar needs
// both: <= ~28 instructions per element and >= 24 resident warps. This kernel keeps the
// session-3 ideas that made the per-element count low and drops what cost the registers:
//
// - Region: 4 rows x 8 columns per thread (two 4 x 4 blocks side by side; 16 words of W), so
//   the exact fp32 search (pattern24.cuh, unchanged: best of all 90 patterns, the CPU
//   reference's tie rule bit for bit) runs one block at a time beside 16 words instead of 32:
//   <= 80 registers, 6 CTAs of 128 threads = 24 warps per SM (__launch_bounds__(128, 6)).
// - Compression as in session 3: the search selects compile-time code words (mask | transposed
//   mask << 16); two LOP3 pairs build all 8 keys (4 S(W) rows, 4 column pairs), one LDS.128 per
//   key from the 256-entry QuadTable gives both PRMT selectors and the finished index byte.
// - S(W): each thread row = 2 windows = 4 values (one 8-byte deposit) + one whole index byte.
// - S(W)^T without shared memory: a W^T index byte covers 2 windows = 8 W rows, held by two
//   threads (block rows 2k, 2k+1) that are lanes l, l ^ 4. Each compresses its 8 columns' single
//   window (3 PRMT per column, selectors from the column-key lookups), then one SHFL per column
//   pair swaps halves: the upper thread keeps block 0's 4 columns (window pair = its value word
//   + the partner's), the lower one block 1's; one more SHFL swaps the nibbles. Every W^T row
//   piece is then one 8-byte value deposit + one whole index byte.
// - Lanes 4 (x, 8 columns each) x 8 (y, block rows): a warp covers 32 rows x 32 columns; loads
//   8 rows x 64 B per instruction.
// - CTA: 4 warps (2 x 2) = 64 rows x 64 columns per pass; a CTA walks 8 passes down its 64-column
//   strip (512 rows): the table fill, the argument set-up and the barrier are paid once per 8
//   regions per thread; every pointer advances by a host-computed constant per pass.
// - No guarded path in the kernel (a tail path costs registers and instructions even when not
//   taken): the launcher runs it only for 16-bit searches whose shape (rows, cols multiples of
//   64), pointers (16-byte aligned: Mask24Args::aligned) and outputs (all five non-null) fit;
//   any other call runs the default kernel (mask24_default_variant). The c_fc / c_proj shapes of
//   GPT-2 774M / 1.5B (5120 x 1280, 6400 x 1600 and transposes) all fit.
// Outputs are bit-identical to every other variant (same search, same tables, same layout);
// tests/gpu/test_train_mask.cu checks it against the CPU reference and variant 1.
// (The 80-register budget above was variant 7's; the staged forms keep 24 warps per SM.)
// Instruction count per element: docs/PERF-train.md "Session 4c" (scripts/mask-sass-count).
#pragma once

namespace sparsenm::train::detail {

/// kCW: warp columns per CTA (2: variant 8, 64-column strips; 4: variant 9, 128-column
/// strips of 8 warps, "Session 5c"). Always 2 warp rows, 24 warps per SM.
template <int kCW = 2>
struct Mask24LeanTraits {
  static_assert(kCW == 2 || kCW == 4, "64- or 128-column strips");
  static constexpr int kThreads = 64 * kCW, kTileRows = 64, kTileCols = 32 * kCW, kPasses = 8;
  static constexpr int kMinBlocks = 12 / kCW;  ///< 24 warps per SM (<= 80 registers)
};
static_assert(Mask24LeanTraits<2>::kTileRows == 64 && Mask24LeanTraits<2>::kTileCols == 64, "mask24_lean_fits (train_common.cuh) assumes 64 x 64 tiles");
static_assert(Mask24LeanTraits<4>::kTileCols == 128, "mask24_lean_wide_fits (train_common.cuh) assumes 128-column strips");

/// Magnitudes (rank_magnitude24, fp32) of block b (columns 4b..4b+3) of a 4 x 8 region of a
/// 16-bit type, two elements per word: as block_magnitudes (mask24.cuh).
template <class T>
__device__ __forceinline__ void lean_block_magnitudes(const std::uint32_t (&x)[4][4], int b, float (&a)[4][4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const std::uint32_t w = x[r][2 * b + k];
      if constexpr (std::is_same_v<T, __half>) {
        __half2 h, i2;
        const std::uint32_t inf2 = 0x7c007c00u;
        __builtin_memcpy(&h, &w, 4);
        __builtin_memcpy(&i2, &inf2, 4);
        const __half2 m = __hmin2(__habs2(h), i2);
        a[r][2 * k] = __low2float(m);
        a[r][2 * k + 1] = __high2float(m);
      } else {
        const std::uint32_t m = __vminu2(w & 0x7fff7fffu, 0x7f807f80u);
        a[r][2 * k] = __uint_as_float(m << 16);
        a[r][2 * k + 1] = __uint_as_float(m & 0xffff0000u);
      }
    }
}

/// Per-pass pointer steps and in-region strides (bytes), computed on the host.
struct Mask24LeanSteps {
  std::int64_t w_row, wv_row, wi_row, tv_row, ti_row;  ///< next W row / S(W) row / W^T row
  std::int64_t w_pass, mask_pass, wv_pass, wi_pass;    ///< next pass (64 W rows further)
};

/// Variant 8: every output of a pass is staged in shared memory and leaves in whole 32-byte
/// sectors from 16-byte stores by consecutive lanes (session 4c's variant 7, storing from
/// registers, sent one L2 request per lane: 1-8 bytes, 31 M single-sector write requests;
/// docs/PERF-train.md "Session 5b"). Per
/// pass (double-buffered: one barrier per pass): S(W) values 64 rows x 64 B, S(W)^T values 64
/// W^T rows x 64 B (row base lean_row_base: the deposits of a warp, 8 rows x 32 B, hit every bank
/// twice = the minimum), the mask 16 block rows x 32 B (pitch 48 B), S(W) index bytes 64 rows x
/// 8 B (the two words swapped in rows 16..31 of each 32: conflict-free byte deposits). S(W)^T
/// index bytes collect over the strip's passes: 64 W^T rows x 64 B (8 per pass; words XOR-
/// swizzled by W^T row), written after the last pass. (S(W) index rows of a 64-column strip are
/// 8 bytes: those stay partial sectors, 64 B-runs of 8 rows per warp instruction.)
/// kCW = 4 (variant 9, 128-column strips): S(W) value rows of 128 B (32 words, same skew), 128
/// W^T rows of 64 B, mask rows of 64 B (pitch 20 words), S(W) index rows of 16 B (4 words,
/// swizzled by (row >> 3) & 3), 128 W^T index rows: 2 x 19.8 KB + 8 KB (+ 4 KB table) per CTA,
/// 3 CTAs = 155 KB per SM.
template <int kCW = 2>
struct Mask24LeanStage {
  static constexpr int kSvPitch = 8 * kCW;                  ///< words per staged S(W) value row
  static constexpr int kSvWords = 64 * kSvPitch + 32 * 4;   ///< 64 rows, 32 words of padding per 16 rows
  static constexpr int kTvRows = 32 * kCW;                  ///< W^T rows of the strip
  static constexpr int kTvWords = kTvRows * 16 + 32 * (kTvRows / 16);
  static constexpr int kMaskPitch = kCW == 2 ? 12 : 20;     ///< words per staged mask row (4 kCW used)
  struct Buf {
    uint4 sv[kSvWords / 4], tv[kTvWords / 4];  // uint4: 16-byte aligned
    std::uint32_t mask[16 * kMaskPitch];
    std::uint32_t sidx[64 * (kCW == 2 ? 2 : 4)];
  } buf[2];
  std::uint32_t tidx[kTvRows * 16];
};
template <int kPitch = 16>
constexpr int lean_row_base_c(int row) { return row * kPitch + 8 * ((row >> 2) & 3) + 32 * (row >> 4); }
/// Word offset of staged row `row` (kPitch words each, 8 words of skew per 4-row group, 32 of padding per 16 rows).
template <int kPitch = 16>
__device__ __forceinline__ int lean_row_base(int row) { return lean_row_base_c<kPitch>(row); }
__device__ __forceinline__ int lean_tidx_word(int row, int word) { return row * 16 + (word ^ (((row >> 2) & 7) << 1)); }

template <class T, int kCW = 2>
__global__ void __launch_bounds__(Mask24LeanTraits<kCW>::kThreads, Mask24LeanTraits<kCW>::kMinBlocks)
    mask24_lean_kernel(Mask24Args args, Mask24Geom g, Mask24LeanSteps st) {
  using L = Mask24LeanTraits<kCW>;
  using Stage = Mask24LeanStage<kCW>;
  static_assert(sizeof(T) == 2, "16-bit types only");
  __shared__ QuadTable table;
  // kCW = 4: the stage (48.4 KB) lives in dynamic shared memory (static shared memory stops at 48 KB)
  __shared__ std::conditional_t<kCW == 2, Stage, char> stage_static;
  extern __shared__ uint4 lean_dyn_sm[];
  auto& stage_sm = *reinterpret_cast<Stage*>(kCW == 2 ? static_cast<void*>(&stage_static) : static_cast<void*>(lean_dyn_sm));
  offset_to_matrix(args, g, blockIdx.z);
  const int lane = threadIdx.x & 31, warp0 = threadIdx.x >> 5;
  const int wr = warp0 / kCW, wc = warp0 % kCW;  // warp row (of 2), warp column (of kCW)
  const int xl = lane & 3, yl = lane >> 2;
  const bool top = (yl & 1) == 0;  // upper block row of a window pair; partner lane ^ 4
  const std::int64_t row_base = std::int64_t(blockIdx.y) * (L::kTileRows * L::kPasses);
  const std::int64_t r0 = row_base + 32 * wr + 4 * yl;
  const std::int64_t c0 = std::int64_t(blockIdx.x) * L::kTileCols + 32 * wc + 8 * xl;
  const int passes = int(min(std::int64_t(L::kPasses), (args.rows - row_base) / L::kTileRows));  // CTA-uniform
  const char* pw = static_cast<const char*>(args.w) + (r0 * args.cols + c0) * 2;
  // local coordinates of the thread's deposits and its write-out pointers (W^T rows: the upper
  // thread keeps block 0's columns, the lower block 1's; both deposit the same window pair)
  const int tid = threadIdx.x;
  const int rl = 32 * wr + 4 * yl;                           // region's first row in the pass tile
  const int hv = 4 * wc + xl;                                          // its 8-byte half of an S(W) row
  const int tl = 32 * wc + 8 * xl + (top ? 0 : 4);            // first of its 4 W^T rows
  const int ht = 4 * wr + (yl >> 1);                         // its window pair = 8-byte half of a W^T row
  const int orow = tid / (2 * kCW), och = tid % (2 * kCW);            // S(W) value write-out: row (and + 32), 16-byte chunk
  const int trow = tid >> 2, tch = tid & 3;                            // W^T rows: row (and + 16 kCW), 16-byte chunk
  constexpr int kSiRow = kCW == 2 ? 8 : 16;                            // bytes per S(W) index row of the strip
  constexpr int kSiFirst = 16 * kCW;                                   // threads [kSiFirst, +64) write the S(W) index rows
  char* ov = nullptr;   // S(W) values of (row orow, chunk och) of the pass
  char* ot = nullptr;   // S(W)^T values of W^T row trow, chunk tch of the pass
  char* oq = nullptr;   // threads < 16 kCW: mask rows; [16 kCW, 16 kCW + 64): S(W) index rows
  std::int64_t oq_pass = 0;
  // deposit / read byte offsets in a staging buffer, fixed per thread (rows rl..rl+3 and W^T
  // rows tl..tl+3 share their 4-row group, so row + i lies 64 B after row: lean_row_base)
  int o_sv = 0, o_tv = 0, o_si = 0, o_mk = 0, o_td = 0, o_rd = 0, o_rt = 0, s_td = 0;
  {
    using B = typename Stage::Buf;
    o_sv = int(offsetof(B, sv)) + 4 * lean_row_base<Stage::kSvPitch>(rl) + 8 * hv;
    o_tv = int(offsetof(B, tv)) + 4 * lean_row_base(tl) + 8 * ht;
    // S(W) index words swizzled by row group: kCW 2: word wc ^ bit 4 of the row; 4: wc ^ bits 3-4
    const int si_swz = kCW == 2 ? ((rl >> 4) & 1) : ((rl >> 3) & 3);
    o_si = int(offsetof(B, sidx)) + kSiRow * rl + 4 * (wc ^ si_swz) + xl;
    o_mk = int(offsetof(B, mask)) + 4 * ((8 * wr + yl) * Stage::kMaskPitch + hv);
    o_td = 64 * tl + 4 * wr + (yl >> 1);
    s_td = (tl >> 2) & 7;
    o_rd = 4 * lean_row_base<Stage::kSvPitch>(orow) + 16 * och;
    o_rt = int(offsetof(B, tv)) + 4 * lean_row_base(trow) + 16 * tch;
    const std::int64_t col0 = std::int64_t(blockIdx.x) * L::kTileCols;
    ov = static_cast<char*>(args.w_values) + row_base * st.wv_row + col0 + 16 * och + orow * st.wv_row;
    ot = static_cast<char*>(args.wt_values) + (col0 + trow) * st.tv_row + row_base + 16 * tch;
    if (tid < 16 * kCW) {
      oq = reinterpret_cast<char*>(args.mask_out) + ((row_base / 4 + tid / kCW) * g.bcols + col0 / 4) * 2 + 16 * (tid % kCW);
      oq_pass = st.mask_pass;
    } else if (tid < kSiFirst + 64) {
      oq = reinterpret_cast<char*>(args.w_indices) + (row_base + tid - kSiFirst) * g.wi_pitch + col0 / 8;
      oq_pass = st.wi_pass;
    }
  }
  table.template fill<L::kThreads>();
  __syncthreads();  // the only barrier: the table is ready
#pragma unroll 1
  for (int p = 0; p < passes; ++p) {
    std::uint32_t x[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const uint4 q = __ldcs(reinterpret_cast<const uint4*>(pw + r * st.w_row));
      x[r][0] = q.x, x[r][1] = q.y, x[r][2] = q.z, x[r][3] = q.w;
    }
    unsigned code[2];
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      float a[4][4];
      lean_block_magnitudes<T>(x, b, a);
      code[b] = best_pattern24_code(a);
    }
    char* const sb = reinterpret_cast<char*>(&stage_sm.buf[0]) + (p & 1) * int(sizeof(typename Stage::Buf));  // this pass's buffer
    *reinterpret_cast<std::uint32_t*>(sb + o_mk) = __byte_perm(code[0], code[1], 0x5410);
    // keys: ke bytes = row 0, row 2, column 0, column 2; ko = row 1, row 3, column 1, column 3
    // (quad of block 0 | quad of block 1 << 4)
    const unsigned ke = (code[0] & 0x0f0f0f0fu) | ((code[1] << 4) & 0xf0f0f0f0u);
    const unsigned ko = ((code[0] >> 4) & 0x0f0f0f0fu) | (code[1] & 0xf0f0f0f0u);
    // ---- S(W): 4 rows, 8 value bytes + 1 index byte each ----
    static_for<0, 4>([&](auto rc) {
      constexpr int r = decltype(rc)::value;
      const uint4 e = table.at<r / 2>((r & 1) ? ko : ke);
      const uint2 v = make_uint2(prmt(x[r][0], x[r][1], e.x), prmt(x[r][2], x[r][3], e.y));
      *reinterpret_cast<uint2*>(sb + o_sv + 4 * Stage::kSvPitch * r) = v;
      *reinterpret_cast<std::uint8_t*>(sb + o_si + kSiRow * r) = std::uint8_t(e.z);
    });
    // ---- S(W)^T: column c of both blocks, one window each; pairs swapped with lane ^ 4 ----
    unsigned zw = 0;
    static_for<0, 4>([&](auto cc) {
      constexpr int c = decltype(cc)::value;
      const uint4 e = table.at<2 + c / 2>((c & 1) ? ko : ke);
      constexpr unsigned hs = (c & 1) ? 0x7632u : 0x5410u;  // column c of two rows
      constexpr int k0 = c / 2, k1 = 2 + c / 2;              // its word in block 0 / block 1
      const std::uint32_t v0 = prmt(__byte_perm(x[0][k0], x[1][k0], hs), __byte_perm(x[2][k0], x[3][k0], hs), e.x);
      const std::uint32_t v1 = prmt(__byte_perm(x[0][k1], x[1][k1], hs), __byte_perm(x[2][k1], x[3][k1], hs), e.y);
      const std::uint32_t recv = __shfl_xor_sync(0xffffffffu, top ? v1 : v0, 4);
      const uint2 tvv = top ? make_uint2(v0, recv) : make_uint2(recv, v1);
      *reinterpret_cast<uint2*>(sb + o_tv + 64 * c) = tvv;
      zw |= (e.z & 0xffu) << (8 * c);
    });
    {
      // index bytes: nibble of window br (low) | of window br + 1 (high); upper thread: own
      // block-0 nibble | partner's block-0 nibble << 4; lower: partner's block-1 | own block-1
      const unsigned rz = __shfl_xor_sync(0xffffffffu, zw, 4);
      const int td = o_td + 8 * (p ^ s_td);  // byte 8 p + ht of W^T row tl (words XOR-swizzled by lean_tidx_word)
      const unsigned iw = top ? ((zw & 0x0f0f0f0fu) | ((rz << 4) & 0xf0f0f0f0u)) : (((rz >> 4) & 0x0f0f0f0fu) | (zw & 0xf0f0f0f0u));
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        // W^T row tl + c, byte 8 p + ht of the strip's 64
        reinterpret_cast<std::uint8_t*>(stage_sm.tidx)[td + 64 * c] = std::uint8_t(iw >> (8 * c));
      }
    }
    {
      __syncthreads();  // the pass's deposits are complete (the other buffer was written out a pass ago)
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        constexpr int kHalf = 4 * (lean_row_base_c<Stage::kSvPitch>(32) - lean_row_base_c<Stage::kSvPitch>(0));  // row + 32 lies this many bytes further
        constexpr int kHalfT = 4 * (lean_row_base_c(16 * kCW) - lean_row_base_c(0));  // W^T row + 16 kCW
        __stcs(reinterpret_cast<uint4*>(ov + k * 32 * st.wv_row), *reinterpret_cast<const uint4*>(sb + o_rd + k * kHalf));
        __stcs(reinterpret_cast<uint4*>(ot + k * (16 * kCW) * st.tv_row), *reinterpret_cast<const uint4*>(sb + o_rt + k * kHalfT));
      }
      if (tid < 16 * kCW) {
        const auto* m = reinterpret_cast<const std::uint32_t*>(sb + offsetof(typename Stage::Buf, mask));
        __stcs(reinterpret_cast<uint4*>(oq), *reinterpret_cast<const uint4*>(&m[(tid / kCW) * Stage::kMaskPitch + 4 * (tid % kCW)]));
      } else if (tid < kSiFirst + 64) {
        const int row = tid - kSiFirst;
        if constexpr (kCW == 2) {
          const uint2 q = *reinterpret_cast<const uint2*>(sb + offsetof(typename Stage::Buf, sidx) + 8 * row);
          __stcs(reinterpret_cast<uint2*>(oq), ((row >> 4) & 1) ? make_uint2(q.y, q.x) : q);
        } else {
          const auto* q = reinterpret_cast<const std::uint32_t*>(sb + offsetof(typename Stage::Buf, sidx)) + 4 * row;
          const int sw = (row >> 3) & 3;
          __stcs(reinterpret_cast<uint4*>(oq), make_uint4(q[sw], q[1 ^ sw], q[2 ^ sw], q[3 ^ sw]));
        }
      }
      ov += st.wv_pass;
      ot += 2 * (L::kTileRows / 2);
      oq += oq_pass;
    }
    pw += st.w_pass;
  }
  {
    // S(W)^T index bytes of the strip: 64 W^T rows x 8 bytes per pass (the last pass's barrier
    // ordered every deposit before these reads); a warp writes 8 rows x 64 B per instruction
    const int valid = 8 * passes;  // bytes per W^T row
    const bool idx16 = (g.ti_pitch % 16) == 0;  // rows % 128 == 0 (pointers are 16-byte aligned)
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int row = trow + 16 * kCW * k;
      std::uint32_t w4[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) w4[j] = stage_sm.tidx[lean_tidx_word(row, 4 * tch + j)];
      char* dst = reinterpret_cast<char*>(args.wt_indices) + (std::int64_t(blockIdx.x) * L::kTileCols + row) * g.ti_pitch + row_base / 8 + 16 * tch;
      if (16 * tch + 16 <= valid) {
        if (idx16) {
          __stcs(reinterpret_cast<uint4*>(dst), make_uint4(w4[0], w4[1], w4[2], w4[3]));
        } else {
          __stcs(reinterpret_cast<uint2*>(dst), make_uint2(w4[0], w4[1]));
          __stcs(reinterpret_cast<uint2*>(dst) + 1, make_uint2(w4[2], w4[3]));
        }
      } else if (16 * tch < valid) {
        __stcs(reinterpret_cast<uint2*>(dst), make_uint2(w4[0], w4[1]));
      }
    }
  }
}

/// Launches variant 8 (kCW = 2) or 9 (kCW = 4); the caller checked mask24_lean_staged_fits /
/// mask24_lean_wide_fits.
template <class T, int kCW = 2>
void launch_mask24_lean(const Mask24Args& a, cudaStream_t s) {
  using L = Mask24LeanTraits<kCW>;
  const Mask24Geom g = mask24_geom<typename Elem<T>::Raw>(a);
  Mask24LeanSteps st;
  st.w_row = a.cols * 2;
  st.wv_row = g.wv_pitch * 2;
  st.wi_row = g.wi_pitch;
  st.tv_row = g.tv_pitch * 2;
  st.ti_row = g.ti_pitch;
  st.w_pass = L::kTileRows * st.w_row;
  st.mask_pass = (L::kTileRows / 4) * g.bcols * 2;
  st.wv_pass = L::kTileRows * st.wv_row;
  st.wi_pass = L::kTileRows * st.wi_row;
  const std::int64_t strip = std::int64_t(L::kTileRows) * L::kPasses;
  const dim3 grid(unsigned(a.cols / L::kTileCols), unsigned((a.rows + strip - 1) / strip), unsigned(a.batch));
  if constexpr (kCW != 2) {
    constexpr int kDyn = int(sizeof(Mask24LeanStage<kCW>));
    // every launch (per device, ~1 us on the host: the kernel runs ~0.1-1 ms)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(mask24_lean_kernel<T, kCW>, cudaFuncAttributeMaxDynamicSharedMemorySize, kDyn));
    mask24_lean_kernel<T, kCW><<<grid, L::kThreads, kDyn, s>>>(a, g, st);
  } else {
    mask24_lean_kernel<T><<<grid, L::kThreads, 0, s>>>(a, g, st);
  }
  SPARSENM_CUDA_CHECK_LAUNCH("mask24_lean_kernel");
}

}  // namespace sparsenm::train::detail
