// sparsenm — cuda:vnm_gemv variants 5 and 6: X transposed once per call, staged by cp.async.
//
// Same records, tiling, mma.sp math, geometry (run-1 rule) and split reduce kernel as variant 4
// (kernel.cuh: read its header first). What differs is how a chunk's gathered X reaches shared
// memory, the part whose cost grew with m in variants 0-4 (PERF-vnm-small.md: instruction bound;
// variant 4 still spends ~17 SASS instructions per X row of every gathered word).
//
// Transpose (vnm_small_transpose_x, one tiny kernel per call). Xt[c][i] = X[i][c] for i < m, 0
// for m <= i < 8 * NT: column c of all staged rows is NT contiguous, 16-byte aligned units
// (k * NT * 16 bytes of workspace, allocated at plan time). It reads and writes 2 m k bytes
// (<= 0.8 MB for k = 12288, m = 32; L2 resident for the main kernel).
//
// Gather. Gathered column kk of a chunk (kk = 64 * pair + 4 * window + q, q = selected position)
// is X column c = window * M + sel[q] (hw24: 4 * window + q); thread tid stages kk = tid, tid +
// threads, ...: one selection byte, then NT cp.async.cg of 16 bytes (zero-filled when the window
// is past the end or c >= k) into units xt_unit(kk, nt) (layout.hpp: swizzled so that the reads
// below are conflict free). Per thread and chunk: 8 / NT columns, i.e. 8 cp.async whatever m is
// (variant 4 at m = 32: one word x 32 rows = ~540 instructions).
//
// B fragments. Step (pair, h) covers kk = 64 pair + 32 h + 0..31; ldmatrix.x4.trans with lane l
// addressing row kk = base + l (unit nt) gives lane (g, t) the k rows 8 j + 2 t, +1 of column g
// in register j: exactly mma.m16n8k32's B fragment. One LDSM per (step, n8 tile), as variant
// 4's one LDS.128.
//
// Pipelining. Two staged buffers. The copies of chunk c + 1 are issued right after the first
// record batch's loads of chunk c (so the weight stream is already in flight), committed as one
// group; at the top of chunk c + 1 a thread waits for its group and __syncthreads makes every
// thread's copies visible and every read of the other buffer (chunk c) finished before it is
// overwritten (chunk c + 2). One __syncthreads per chunk.
//
// Variant 6 (PDL). The main kernel is launched as a programmatic dependent of the transpose
// (which triggers its dependents at its start): its blocks prefetch their first records into L2,
// then griddepcontrol.wait (waits for the transpose grid to complete and its writes to be
// visible) before the first gather. Variant 5 launches normally (the wait is then a no-op).
#pragma once
#include "cuda/vnm_small/kernel.cuh"

namespace sparsenm::cuda::vnm_small {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16_zfill(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit_group() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ uint4 ldsm_x4_trans(std::uint32_t addr) {
  uint4 v;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Xt[c * NT + nt] = X rows 8 nt .. 8 nt + 7 of column c (rows >= m: 0). grid = (columns / 256,
/// NT), grid-stride over c.
template <int NT>
__global__ void __launch_bounds__(256) vnm_small_transpose_x(const std::uint16_t* __restrict__ x, uint4* __restrict__ xt,
                                                             int m, std::int64_t k) {
  pdl_trigger();
  const int nt = int(blockIdx.y);
  for (std::int64_t c = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < k; c += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint32_t v[8];
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      const int i = nt * 8 + ii;
      v[ii] = i < m ? std::uint32_t(__ldg(x + std::size_t(i) * std::size_t(k) + std::size_t(c))) : 0u;
    }
    xt[std::size_t(c) * NT + nt] = make_uint4(v[0] | (v[1] << 16), v[2] | (v[3] << 16), v[4] | (v[5] << 16), v[6] | (v[7] << 16));
  }
}

template <class Tr>
__global__ void __launch_bounds__(Tr::kMaxThreads) vnm_small_kernel_xt(const Params p) {
  using T = typename Tr::T;
  constexpr int NT = Tr::kNTiles;
  extern __shared__ uint4 smem_u4[];
  const std::uint32_t sbase = smem_addr(smem_u4);
  // buffer stride (bytes): the geometry's buffer (8 NT rows x S words) >= chunk_pairs * 64 * NT units
  const std::uint32_t buf_bytes = std::uint32_t(NT * 8 * p.smem_words_per_row * 4);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const std::int64_t group = blockIdx.x;
  const std::int64_t tile0 = group * p.tiles_per_group;
  const int tiles_here = int(min(std::int64_t(p.tiles_per_group), p.row_tiles - tile0));
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const std::int64_t pair1 = min(p.pairs, pair0 + p.pairs_per_split);
  const std::uint8_t* sel = p.sel ? p.sel + group * p.windows_pad * 4 : nullptr;
  const uint4* xt = p.xt;

  // ldmatrix: lane l addresses row kk = step base + l; its unit offset within the step is a lane
  // constant (xt_unit depends on kk % 8 = l % 8 only besides the base, a multiple of 32).
  std::uint32_t lane_off[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) lane_off[nt] = std::uint32_t(sparsenm::vnm_small::xt_unit(lane, nt, NT)) * 16u;

  float acc[Tr::kMaxTilesPerWarp][NT][4];
#pragma unroll
  for (int a = 0; a < Tr::kMaxTilesPerWarp; ++a)
#pragma unroll
    for (int b = 0; b < NT; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  // Before the dependency wait (variant 6: the transpose may still run): the first records of
  // this warp's first tile into L2.
  if (warp < tiles_here && pair0 < pair1) {
    const int nrec = int(min(std::int64_t(Tr::kBatch), pair1 - pair0));
    const char* base = reinterpret_cast<const char*>(p.w + (std::size_t(tile0 + warp) * std::size_t(p.pairs) + std::size_t(pair0)) * kRecordU4);
    for (int o = lane * 128; o < nrec * 1152; o += 32 * 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(base + o));
  }
  pdl_wait();

  // Stage chunk [c0, c0 + npairs) into buffer b: cp.async only; commits one group.
  auto gather = [&](std::int64_t c0, int b) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    const int nkk = npairs * 64;
    // 32-bit index math: windows_pad * 4 and every column + M fit (n, k < 2^31, M >= 4)
    const unsigned wbase = unsigned(c0) * 16u, nwin = unsigned(p.windows), win = unsigned(p.window), kcols = unsigned(p.k);
    const std::uint32_t dbase = sbase + std::uint32_t(b) * buf_bytes;
    for (int kk = threadIdx.x; kk < nkk; kk += blockDim.x) {
      const unsigned w = wbase + unsigned(kk >> 2), q = unsigned(kk & 3);
      unsigned c = ~0u;
      if (w < nwin) c = sel ? w * win + unsigned(__ldg(sel + (w * 4u + q))) : w * 4u + q;
      const bool ok = c < kcols;
      const uint4* src = xt + (ok ? std::size_t(c) * NT : 0);
      const int bytes = ok ? 16 : 0;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        cp_async16_zfill(dbase + std::uint32_t(sparsenm::vnm_small::xt_unit(kk, nt, NT)) * 16u, src + nt, bytes);
    }
    cp_async_commit_group();
  };

  if (pair0 < pair1) gather(pair0, 0);
  int buf = 0;
  for (std::int64_t c0 = pair0; c0 < pair1; c0 += p.chunk_pairs, buf ^= 1) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    const std::int64_t cn = c0 + p.chunk_pairs;
    bool issued = cn >= pair1;  // nothing to prefetch after the last chunk
    cp_async_wait_all();
    __syncthreads();
    const std::uint32_t xb = sbase + std::uint32_t(buf) * buf_bytes;

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
          if (!issued) {  // the next chunk's copies, behind this batch's weight loads
            gather(cn, buf ^ 1);
            issued = true;
          }
#pragma unroll
          for (int u = 0; u < Tr::kBatch; ++u) {
            if (cp + u < npairs) {
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                const std::uint32_t step = xb + std::uint32_t(((cp + u) * 64 + h * 32) * NT * 16);
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                  const uint4 b = ldsm_x4_trans(step + lane_off[nt]);
                  mma_sp<T>(acc[tp][nt], a[u][h], b, e[u], h);
                }
              }
            }
          }
        }
      }
    }
    if (!issued) gather(cn, buf ^ 1);  // warps without a row tile here
  }

  // ---- epilogue (as kernel.cuh): D fragment c0,c1 = (row g, n 2t, 2t+1), c2,c3 = (row g+8, ...) ----
  const int g = lane >> 2, t = lane & 3;
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

}  // namespace sparsenm::cuda::vnm_small
