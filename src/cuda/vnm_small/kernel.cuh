// sparsenm — cuda:vnm_gemv: y = x * W^T for small m (1..32, decode) with W in V:2:M (VENOM,
// seed 002 §3) or hardware 2:4, reading the condensed weight exactly once.
//
// Why tensor cores at all. The product has 2*m FMAs per (row, window) against 4.5 bytes of
// weight. On CUDA cores that is 14 FMA/byte at m = 32 while an H100 offers ~10 (H200 ~7)
// FP32 FMA per byte of HBM bandwidth, so a CUDA-core kernel is compute bound above m ~ 16.
// The V:2:M storage *is* 2:4 metadata over the gathered columns, so mma.sp.m16n8k32 (ordered
// metadata) consumes the canonical values and index nibbles unchanged; the tensor cores run at
// < 15% of their rate here and the kernel stays memory bound for every m in 1..32.
//
// Data layout (layout.hpp). W is streamed as 1152-byte records [row tile of 16][pair of 16
// windows]: 1024 B of A fragments in lane order + 128 B of metadata words. X is gathered per
// block into shared memory as B fragments: xs[i][word], one 32-bit word = two gathered columns
// (k-index kk = 4 * window + q, q = 0..3) of X row i; the 16 words of each k32 step are stored
// permuted (word j at 4 * (j % 4) + j / 4) so that lane (g, t) reads its four B registers
// (k 2t.., 2t+8.., 2t+16.., 2t+24..) with one LDS.128.
//
// Tiling. Block = one group of rows that shares the gathered X: a slab of V rows (venom) or
// kHwGroupRows rows (hw24), split over min(8, V/16) warps, each owning 1 or 2 row tiles of 16.
// grid = (groups, k splits). A block walks its k range in chunks of chunk_pairs * 16 windows:
// stage the chunk's gathered X (2 columns per thread per step, from L2), __syncthreads, then
// every warp streams its records for the chunk — kBatch records (4.6 KB per warp) loaded before
// the mma's that consume them — accumulating in registers (fp32, 4 per n8 tile per row tile).
// One slab's gathered X is staged once and reused by all V rows (the VENOM column sharing).
//
// Coalescing / bank conflicts. Record loads: lane l reads bytes [16 l, 16 l + 16) of a 512-byte
// block (LDG.E.128, fully coalesced), metadata [4 l, 4 l + 4) of 128 B. X gather: consecutive
// threads take consecutive words (consecutive windows of one X row): for M = 8 a warp touches
// 128 contiguous bytes. Stores to xs: the permutation maps the 16 consecutive words of a step to
// 16 distinct banks. B loads: lanes (g, t) read word g*S + 16c + 4t with S = 16 (mod 32), so each
// 8-lane phase of the LDS.128 covers all 32 banks once: conflict free.
//
// Tails. Rows: records are padded to 16 rows (zero values); stores are guarded by r < n.
// k: windows past ceil(k/M) and gathered columns >= k stage 0 (X is never read past k; padding
// slots hold 0 and multiply 0). m: n8 tiles past m stage zeros, stores are guarded by i < m.
// Partial last slab: its warps skip row tiles past n.
//
// Limiter. HBM: 4.5 B per (row, window) at m = 1..32 (+ X gathers served by L2, m * 4 * 2 B per
// slab-window, i.e. <= 25% of the weight bytes for V >= 64). With splits > 1 the fp32 partials
// (splits * m * n * 4 B) go through L2 and a small reduce kernel.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/vnm_small/traits.cuh"

namespace sparsenm::cuda::vnm_small {

template <class T>
__device__ __forceinline__ void mma_sp(float (&d)[4], const uint4& a, const uint4& b, std::uint32_t e, int sel);

template <>
__device__ __forceinline__ void mma_sp<__half>(float (&d)[4], const uint4& a, const uint4& b, std::uint32_t e,
                                               int sel) {
  if (sel == 0)
    asm("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w), "r"(e));
  else
    asm("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x1;"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w), "r"(e));
}

template <>
__device__ __forceinline__ void mma_sp<__nv_bfloat16>(float (&d)[4], const uint4& a, const uint4& b, std::uint32_t e,
                                                      int sel) {
  if (sel == 0)
    asm("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w), "r"(e));
  else
    asm("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x1;"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w), "r"(e));
}

/// Streaming 16-byte load that does not pollute L1 (the weight is read exactly once).
__device__ __forceinline__ uint4 ldg_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ std::uint32_t ldg_stream32(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

template <class Tr>
__device__ __forceinline__ void store_out(const Params& p, int i, std::int64_t r, float v) {
  if (i >= p.m || r >= p.n) return;
  const std::size_t o = std::size_t(i) * std::size_t(p.n) + std::size_t(r);
  if (p.splits > 1) {
    p.ws[std::size_t(blockIdx.y) * std::size_t(p.m) * std::size_t(p.n) + o] = v;
  } else {
    store_y(p.y, p.y_dtype, o, v);
  }
}

/// One row tile's mma accumulators (rows r, r + 8 of the m16n8 fragments; lane quad t) to Y or
/// the split partials: the epilogue of variants 8 / 9 / 10 / 11.
template <class Tr, int NT>
__device__ __forceinline__ void store_tile(const Params& p, const float (&acc)[NT][4], std::int64_t r, int t) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int i = nt * 8 + 2 * t;
    store_out<Tr>(p, i, r, acc[nt][0]);
    store_out<Tr>(p, i + 1, r, acc[nt][1]);
    store_out<Tr>(p, i, r + 8, acc[nt][2]);
    store_out<Tr>(p, i + 1, r + 8, acc[nt][3]);
  }
}

/// Variant 4's gather: word j of the chunk for all m rows at once. The word's two columns are
/// decoded once (one selection load), then each X row costs two 2-byte loads (one 4-byte load
/// for hw24 pairs when k is even), a combine and a store: ~10 instructions per (row, word)
/// instead of ~96 in variant 0's loop (run 2: the gather is instruction bound). Rows are taken in
/// batches of 8 (kRows is a multiple of 8, so a batch never passes the staged rows).
/// The m rows of one gathered word into d[i * S] (i < m), branch free: kPair = one 4-byte load
/// of the adjacent pair (plo), else two 2-byte loads (a missing column reads as 0).
template <int kRows, bool kPair>
__device__ __forceinline__ void rows_of_word(const Params& p, const std::uint16_t* plo, const std::uint16_t* phi,
                                             bool has_lo, bool has_hi, std::uint32_t* d, int S) {
  static_assert(kRows % 8 == 0, "row batches of 8 must tile the staged rows");
  const std::size_t k = std::size_t(p.k);
  // row pointers advance by k per row (no per-row multiply); d by S words
  for (int i0 = 0; i0 < kRows && i0 < p.m; i0 += 8) {
    std::uint32_t v[8];
    const std::uint16_t* rlo = plo;
    const std::uint16_t* rhi = phi;
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      const bool in = i0 + ii < p.m;
      if constexpr (kPair) {
        v[ii] = in ? __ldg(reinterpret_cast<const unsigned int*>(rlo)) : 0u;
      } else {
        const std::uint32_t lo = (in && has_lo) ? std::uint32_t(__ldg(rlo)) : 0u;
        const std::uint32_t hi = (in && has_hi) ? std::uint32_t(__ldg(rhi)) : 0u;
        v[ii] = lo | (hi << 16);
      }
      rlo += k;
      rhi += k;
    }
    std::uint32_t* dd = d;
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      if (i0 + ii < p.m) *dd = v[ii];
      dd += S;
    }
    plo = rlo;
    phi = rhi;
    d = dd;
  }
}

/// Variant 4's gather: word j of the chunk for all m rows at once. The word's two columns are
/// decoded once (one selection load), then each X row costs two 2-byte loads (one 4-byte load
/// for hw24 pairs when k is even), a combine and a store, without branches (rows_of_word),
/// instead of ~96 instructions per row and word in variant 0's loop (run 2: the gather is
/// instruction bound). Rows in batches of 8 (kRows is a multiple of 8: a batch never passes the
/// staged rows).
template <int kRows>
__device__ __forceinline__ void gather_rows(const Params& p, std::int64_t wbase, int words, const std::uint8_t* sel,
                                            std::uint32_t* xs, int S) {
  const std::uint16_t* x = static_cast<const std::uint16_t*>(p.x);
  const bool hw_pairs = sel == nullptr && (p.k & 1) == 0;  // (4w + 2h, +1): 4-byte aligned in every row
  for (int j = threadIdx.x; j < words; j += blockDim.x) {
    const std::int64_t w = wbase + (j >> 1);
    unsigned s16 = sparsenm::vnm_small::identity_sel16(j);
    if (sel != nullptr) s16 = w < p.windows ? unsigned(__ldg(reinterpret_cast<const unsigned short*>(sel + w * 4 + 2 * (j & 1)))) : 0u;
    std::int64_t c_lo, c_hi;
    sparsenm::vnm_small::word_columns(w, s16, p.window, p.windows, p.k, c_lo, c_hi);
    const std::uint16_t* plo = x + (c_lo >= 0 ? c_lo : 0);
    const std::uint16_t* phi = x + (c_hi >= 0 ? c_hi : 0);
    std::uint32_t* d = xs + sparsenm::vnm_small::xs_slot(j);
    if (hw_pairs && c_lo >= 0)  // hw24, k even: c_hi == c_lo + 1 < k
      rows_of_word<kRows, true>(p, plo, phi, true, true, d, S);
    else
      rows_of_word<kRows, false>(p, plo, phi, c_lo >= 0, c_hi >= 0, d, S);
  }
}

/// kRowGather = false: variant 0 (run 1's kernel, unchanged); true: variant 4 (gather_rows, rows
/// m..kRows-1 zeroed once per block instead of once per chunk).
template <class Tr, bool kRowGather = false>
__global__ void __launch_bounds__(Tr::kMaxThreads) vnm_small_kernel(const Params p) {
  using T = typename Tr::T;
  constexpr int NT = Tr::kNTiles;
  constexpr int kRows = NT * 8;  // staged X rows
  extern __shared__ uint4 smem_u4[];
  std::uint32_t* xs = reinterpret_cast<std::uint32_t*>(smem_u4);

  const int S = p.smem_words_per_row;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const std::int64_t group = blockIdx.x;
  const std::int64_t tile0 = group * p.tiles_per_group;
  const int tiles_here = int(min(std::int64_t(p.tiles_per_group), p.row_tiles - tile0));
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const std::int64_t pair1 = min(p.pairs, pair0 + p.pairs_per_split);
  const std::uint16_t* x = static_cast<const std::uint16_t*>(p.x);
  const std::uint8_t* sel = p.sel ? p.sel + group * p.windows_pad * 4 : nullptr;

  float acc[Tr::kMaxTilesPerWarp][NT][4];
#pragma unroll
  for (int a = 0; a < Tr::kMaxTilesPerWarp; ++a)
#pragma unroll
    for (int b = 0; b < NT; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  if constexpr (kRowGather) {
    for (int idx = threadIdx.x; idx < (kRows - p.m) * S; idx += blockDim.x) xs[p.m * S + idx] = 0u;
  }
  for (std::int64_t c0 = pair0; c0 < pair1; c0 += p.chunk_pairs) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    // ---- stage the chunk's gathered X: word j of row i = gathered columns 2j, 2j+1 ----
    const int words = npairs * 32;
    const std::int64_t wbase = c0 * 16;
    if constexpr (kRowGather) gather_rows<kRows>(p, wbase, words, sel, xs, S);
    else
    for (int idx = threadIdx.x; idx < kRows * words; idx += blockDim.x) {
      const int i = idx / words, j = idx - i * words;
      std::uint32_t v = 0;
      if (i < p.m) {
        const std::int64_t w = wbase + (j >> 1);
        if (w < p.windows) {
          const int q = (j & 1) * 2;
          std::int64_t c_lo, c_hi;
          if (sel) {
            const unsigned s2 = *reinterpret_cast<const unsigned short*>(sel + w * 4 + q);
            c_lo = w * p.window + (s2 & 0xffu);
            c_hi = w * p.window + (s2 >> 8);
          } else {
            c_lo = w * 4 + q;
            c_hi = c_lo + 1;
          }
          const std::uint16_t* xr = x + std::size_t(i) * std::size_t(p.k);
          const std::uint32_t lo = c_lo < p.k ? std::uint32_t(__ldg(xr + c_lo)) : 0u;
          const std::uint32_t hi = c_hi < p.k ? std::uint32_t(__ldg(xr + c_hi)) : 0u;
          v = lo | (hi << 16);
        }
      }
      const int step = j >> 4, wi = j & 15;
      xs[i * S + step * 16 + 4 * (wi & 3) + (wi >> 2)] = v;
    }
    __syncthreads();

    // ---- stream the records of this chunk ----
#pragma unroll
    for (int tp = 0; tp < Tr::kMaxTilesPerWarp; ++tp) {
      const int rt = warp + tp * nwarps;
      if (tp < p.tiles_per_warp && rt < tiles_here) {
        const uint4* rec = p.w + (std::size_t(tile0 + rt) * std::size_t(p.pairs) + std::size_t(c0)) * kRecordU4;
        for (int cp = 0; cp < npairs; cp += Tr::kBatch) {
          uint4 a[Tr::kBatch][2];
          std::uint32_t e[Tr::kBatch];
#pragma unroll
          for (int u = 0; u < Tr::kBatch; ++u) {
            if (cp + u < npairs) {
              const uint4* r = rec + std::size_t(cp + u) * kRecordU4;
              a[u][0] = ldg_stream(r + lane);
              a[u][1] = ldg_stream(r + 32 + lane);
              e[u] = ldg_stream32(reinterpret_cast<const std::uint32_t*>(r + 64) + lane);
            }
          }
#pragma unroll
          for (int u = 0; u < Tr::kBatch; ++u) {
            if (cp + u < npairs) {
#pragma unroll
              for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                  const uint4 b =
                      *reinterpret_cast<const uint4*>(xs + (nt * 8 + g) * S + (cp + u) * 32 + h * 16 + 4 * t);
                  mma_sp<T>(acc[tp][nt], a[u][h], b, e[u], h);
                }
              }
            }
          }
        }
      }
    }
    __syncthreads();
  }

  // ---- epilogue: D fragment c0,c1 = (row g, n 2t, 2t+1), c2,c3 = (row g+8, ...) ----
#pragma unroll
  for (int tp = 0; tp < Tr::kMaxTilesPerWarp; ++tp) {
    const int rt = warp + tp * nwarps;
    if (tp < p.tiles_per_warp && rt < tiles_here) {
      const std::int64_t r = (tile0 + rt) * 16 + g;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int i = nt * 8 + 2 * t;
        store_out<Tr>(p, i, r, acc[tp][nt][0]);
        store_out<Tr>(p, i + 1, r, acc[tp][nt][1]);
        store_out<Tr>(p, i, r + 8, acc[tp][nt][2]);
        store_out<Tr>(p, i + 1, r + 8, acc[tp][nt][3]);
      }
    }
  }
}

/// Sums the k-split partials into y (reduce.cu).
void launch_reduce(const Params& p, cudaStream_t stream);

}  // namespace sparsenm::cuda::vnm_small
