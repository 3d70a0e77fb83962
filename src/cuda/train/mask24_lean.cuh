// sparsenm — "lean" 16-bit transposable 2:4 mask search (Mask24Args::variant = 7; opt-in, NOT
// measured on a GPU yet: docs/PERF-train.md "Session 4c (not measured)"). Included by mask24.cuh
// after QuadTable / prmt / Mask24Geom (it uses them).
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
// - S(W): each thread row = 2 windows = 4 values (one 8-byte store) + one whole index byte.
// - S(W)^T without shared memory: a W^T index byte covers 2 windows = 8 W rows, held by two
//   threads (block rows 2k, 2k+1) that are lanes l, l ^ 4. Each compresses its 8 columns' single
//   window (3 PRMT per column, selectors from the column-key lookups), then one SHFL per column
//   pair swaps halves: the upper thread keeps block 0's 4 columns (window pair = its value word
//   + the partner's), the lower one block 1's; one more SHFL swaps the nibbles. Every W^T row
//   piece then leaves as one 8-byte value store + one whole index byte, straight from registers.
// - Lanes 4 (x, 8 columns each) x 8 (y, block rows): a warp covers 32 rows x 32 columns; loads
//   8 rows x 64 B per instruction; S(W) values 32 B per row and S(W)^T values 4 x 8 B = 32 B per
//   W^T row: whole 32-byte sectors. (Index bytes leave as 4-byte runs per row per warp, the mask
//   as 16-byte runs: partial sectors, as in variant 2.)
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
// Instruction count per element: docs/PERF-train.md "Session 4c" (scripts/mask-sass-count).
#pragma once

namespace sparsenm::train::detail {

struct Mask24LeanTraits {
  static constexpr int kThreads = 128, kTileRows = 64, kTileCols = 64, kPasses = 8;
  static constexpr int kMinBlocks = 6;  ///< 6 x 4 warps = 24 warps per SM (<= 80 registers)
};
static_assert(Mask24LeanTraits::kTileRows == 64 && Mask24LeanTraits::kTileCols == 64, "mask24_lean_fits (train_common.cuh) assumes 64 x 64 tiles");

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

template <class T>
__global__ void __launch_bounds__(Mask24LeanTraits::kThreads, Mask24LeanTraits::kMinBlocks)
    mask24_lean_kernel(Mask24Args args, Mask24Geom g, Mask24LeanSteps st) {
  using L = Mask24LeanTraits;
  static_assert(sizeof(T) == 2, "16-bit types only");
  __shared__ QuadTable table;
  offset_to_matrix(args, g, blockIdx.z);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int xl = lane & 3, yl = lane >> 2;
  const bool top = (yl & 1) == 0;  // upper block row of a window pair; partner lane ^ 4
  const std::int64_t row_base = std::int64_t(blockIdx.y) * (L::kTileRows * L::kPasses);
  const std::int64_t r0 = row_base + 32 * (warp >> 1) + 4 * yl;
  const std::int64_t c0 = std::int64_t(blockIdx.x) * L::kTileCols + 32 * (warp & 1) + 8 * xl;
  const std::int64_t br = r0 / 4, bc = c0 / 4;
  const int passes = int(min(std::int64_t(L::kPasses), (args.rows - row_base) / L::kTileRows));  // CTA-uniform
  const char* pw = static_cast<const char*>(args.w) + (r0 * args.cols + c0) * 2;
  char* pm = reinterpret_cast<char*>(args.mask_out + br * g.bcols + bc);
  char* pv = static_cast<char*>(args.w_values) + (r0 * g.wv_pitch + c0 / 2) * 2;
  char* pi = reinterpret_cast<char*>(args.w_indices) + r0 * g.wi_pitch + c0 / 8;
  // W^T rows: the upper thread keeps block 0's columns c0..c0+3, the lower block 1's c0+4..+7;
  // both write the window pair (br & ~1, +1)
  const std::int64_t tc = c0 + (top ? 0 : 4);
  char* pt = static_cast<char*>(args.wt_values) + (tc * g.tv_pitch + 2 * (br & ~std::int64_t(1))) * 2;
  char* pti = reinterpret_cast<char*>(args.wt_indices) + tc * g.ti_pitch + br / 2;
  table.fill();
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
    __stcs(reinterpret_cast<unsigned*>(pm), __byte_perm(code[0], code[1], 0x5410));
    // keys: ke bytes = row 0, row 2, column 0, column 2; ko = row 1, row 3, column 1, column 3
    // (quad of block 0 | quad of block 1 << 4)
    const unsigned ke = (code[0] & 0x0f0f0f0fu) | ((code[1] << 4) & 0xf0f0f0f0u);
    const unsigned ko = ((code[0] >> 4) & 0x0f0f0f0fu) | (code[1] & 0xf0f0f0f0u);
    // ---- S(W): 4 rows, 8 value bytes + 1 index byte each ----
    static_for<0, 4>([&](auto rc) {
      constexpr int r = decltype(rc)::value;
      const uint4 e = table.at<r / 2>((r & 1) ? ko : ke);
      __stcs(reinterpret_cast<uint2*>(pv + r * st.wv_row), make_uint2(prmt(x[r][0], x[r][1], e.x), prmt(x[r][2], x[r][3], e.y)));
      *reinterpret_cast<std::uint8_t*>(pi + r * st.wi_row) = std::uint8_t(e.z);
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
      __stcs(reinterpret_cast<uint2*>(pt + c * st.tv_row), top ? make_uint2(v0, recv) : make_uint2(recv, v1));
      zw |= (e.z & 0xffu) << (8 * c);
    });
    {
      // index bytes: nibble of window br (low) | of window br + 1 (high); upper thread: own
      // block-0 nibble | partner's block-0 nibble << 4; lower: partner's block-1 | own block-1
      const unsigned rz = __shfl_xor_sync(0xffffffffu, zw, 4);
      const unsigned iw = top ? ((zw & 0x0f0f0f0fu) | ((rz << 4) & 0xf0f0f0f0u)) : (((rz >> 4) & 0x0f0f0f0fu) | (zw & 0xf0f0f0f0u));
#pragma unroll
      for (int c = 0; c < 4; ++c) *reinterpret_cast<std::uint8_t*>(pti + c * st.ti_row) = std::uint8_t(iw >> (8 * c));
    }
    pw += st.w_pass;
    pm += st.mask_pass;
    pv += st.wv_pass;
    pi += st.wi_pass;
    pt += 2 * (L::kTileRows / 2);  // 64 W rows = 16 windows = 32 values further along each W^T row
    pti += L::kTileRows / 8;       // 8 index bytes
  }
}

/// Launches variant 7 (the caller checked mask24_lean_fits).
template <class T>
void launch_mask24_lean(const Mask24Args& a, cudaStream_t s) {
  using L = Mask24LeanTraits;
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
  mask24_lean_kernel<T><<<grid, L::kThreads, 0, s>>>(a, g, st);
  SPARSENM_CUDA_CHECK_LAUNCH("mask24_lean_kernel");
}

}  // namespace sparsenm::train::detail
