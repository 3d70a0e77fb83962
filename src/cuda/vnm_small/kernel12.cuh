// sparsenm — cuda:vnm_gemv variant 22 ("V:2:M lean paired, stream-K"): variant 20's slab loop
// (kernel10.cuh: read it first — ring, commit order, constant wait counts, the division-free Xt gather)
// over an equal run of the (slab, pair) work per block, so that every SM streams the same bytes.
//
// Why (PERF-vnm-small.md "Session 9d (s9vnm3)"). Variant 20 runs one block per slab; at 28672 x 8192 (224
// slabs on 132 SMs, 2 blocks per SM) 92 SMs stream 2 slabs and 40 stream one, and the time follows the
// busy SMs (~32 KB/us per SM, s9vnm2's ncu). Here the grid is B blocks (2 per SM) and the work is the
// flat list of groups x pairs (slab-major); block b streams pairs [b W, (b + 1) W) of it, W = ceil(total /
// B), crossing slab boundaries: each slab piece ("segment") runs variant 20's ring / chunk loop for its
// pair range (the ring drains between segments: a refill per segment, <= ceil(W / pairs) + 1 of them).
//
// Output of a segment: a whole slab (one block covers it) is stored as variant 20 stores. A slab split
// over several blocks: each block writes its fp32 partial [m][128] to the workspace slot 2b (the slab is
// the block's first) or 2b + 1 (its last; a partial slab is always one of the two), fences, and counts
// itself on the slab's arrival counter; the block that arrives last sums the slab's partials in block
// order (deterministic: the same sum whichever block arrives last), stores y and resets the counter (it
// is zeroed once at plan creation; every launch leaves it at zero). No block waits for another.
//
// kLong (variant 23): the chunk of lean_long_chunk_pairs (16 / 16 / 8 / 8 pairs at NT = 1..4 instead of
// 16 / 8 / 4 / 4): half the chunk barriers and Xt gather round trips at m > 8 (s9vnm2: m = 32's kernel 52 us
// against 38.5 at m = 8 with the same bytes); 2 x 32 KB of X + 37 KB of ring still fit 2 blocks per SM.
#pragma once
#include "cuda/vnm_small/kernel8.cuh"

namespace sparsenm::cuda::vnm_small {

template <class Tr, bool kLong>
__global__ void __launch_bounds__(128, 2) vnm_small_kernel_vlean_sk(const Params p) {
  using T = typename Tr::T;
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  constexpr int C = sv::vlean_sk_chunk_pairs(kLong, NT);
  constexpr int D = sv::kRingStages;
  constexpr int kWarps = 4;
  constexpr int kThreads = 32 * kWarps;
  constexpr int kRows = 32 * kWarps;             // the slab: 8 tiles of 16 rows
  constexpr int kCols = 64 * C;                  // gathered columns per chunk
  constexpr int kRounds = kCols / kThreads;      // columns per thread per chunk
  constexpr std::uint32_t kBuf = std::uint32_t(kCols * NT * 16);
  constexpr std::uint32_t kRec = std::uint32_t(sv::kRecordBytes);
  constexpr std::uint32_t kSlot = 2 * kRec;
  static_assert(C % D == 0 && kCols % kThreads == 0 && D == 4, "vlean_sk: chunk / ring / thread shape");

  extern __shared__ uint4 smem_u4[];
  __shared__ int s_last;
  const std::uint32_t sbase = smem_addr(smem_u4);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::int64_t P = p.pairs, W = p.pairs_per_split;
  const std::int64_t groups = (p.row_tiles + 7) / 8;
  const std::int64_t total = groups * P;
  const std::int64_t bx = blockIdx.x;
  const std::int64_t beg = bx * W, end = min(total, beg + W);
  const std::int64_t first_slab = beg / P;
  const std::size_t part_elems = std::size_t(p.m) * kRows;
  const unsigned wpad = unsigned(p.windows_pad), win = unsigned(p.window), kcols = unsigned(p.k);
  const char* wbase = reinterpret_cast<const char*>(p.w);
  const std::uint32_t ring16 = opaque(sbase + 2 * kBuf + std::uint32_t(warp) * (D * kSlot) + std::uint32_t(lane) * 16u);
  const std::uint32_t ring4 = opaque(sbase + 2 * kBuf + std::uint32_t(warp) * (D * kSlot) + 1024u + std::uint32_t(lane) * 4u);
  const std::uint32_t gdst = std::uint32_t(tid * NT) * 16u;
  std::uint32_t gnt[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) gnt[nt] = std::uint32_t(nt ^ sv::xt_swizzle(tid, NT)) * 16u;
  std::uint32_t loff[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) loff[nt] = std::uint32_t(sv::xt_unit(lane, nt, NT)) * 16u;
  const uint4* xt = p.xt;

  for (std::int64_t u = beg; u < end;) {
    // ---- one segment: slab `group`, pairs [pair0, pair0 + nrec) (variant 20's block body) ----
    const std::int64_t group = u / P;
    const std::int64_t pair0 = u - group * P;
    const int nrec = int(min(end, (group + 1) * P) - u);  // >= 1
    u += nrec;
    const int nchunks = (nrec + C - 1) / C;
    const std::int64_t rt0 = group * 8 + 2 * warp;  // tiles rt0, rt0 + 1
    const bool has0 = rt0 < p.row_tiles, has1 = rt0 + 1 < p.row_tiles;
    const std::int64_t src0 = has0 ? rt0 : p.row_tiles - 1, src1 = has1 ? rt0 + 1 : p.row_tiles - 1;
    const char* a16 = wbase + (std::size_t(src0) * std::size_t(P) + std::size_t(pair0)) * kRec + lane * 16;
    const char* b16 = wbase + (std::size_t(src1) * std::size_t(P) + std::size_t(pair0)) * kRec + lane * 16;
    const char* a4 = a16 + 1024 - lane * 12;
    const char* b4 = b16 + 1024 - lane * 12;
    int left = nrec;
    auto issue = [&](int slot) {
      if (left > 0) {
        const std::uint32_t d16 = ring16 + std::uint32_t(slot) * kSlot, d4 = ring4 + std::uint32_t(slot) * kSlot;
        ring_cp16(d16, a16);
        ring_cp16(d16 + 512u, a16 + 512);
        ring_cp4(d4, a4);
        ring_cp16(d16 + kRec, b16);
        ring_cp16(d16 + kRec + 512u, b16 + 512);
        ring_cp4(d4 + kRec, b4);
        a16 += kRec;
        a4 += kRec;
        b16 += kRec;
        b4 += kRec;
      }
      --left;
      ring_commit();
    };
    const std::uint8_t* sel = p.sel + std::size_t(group) * std::size_t(p.windows_pad) * 4u + std::size_t(pair0) * 64u + std::size_t(tid);
    unsigned wnext = unsigned(pair0) * 16u + unsigned(tid >> 2);
    unsigned selv[kRounds];
    auto load_sel = [&]() {
#pragma unroll
      for (int r = 0; r < kRounds; ++r) selv[r] = wnext + unsigned(32 * r) < wpad ? unsigned(__ldg(sel + 128 * r)) : 0u;
    };
    unsigned wgather = wnext;
    auto advance_sel = [&]() {
      sel += kCols;
      wnext += unsigned(16 * C);
    };
    auto gather = [&](int b) {
      const std::uint32_t d = sbase + std::uint32_t(b) * kBuf + gdst;
#pragma unroll
      for (int r = 0; r < kRounds; ++r) {
        const unsigned col = (wgather + unsigned(32 * r)) * win + selv[r];
        const bool ok = col < kcols;
        const uint4* src = xt + (ok ? std::size_t(col) * NT : 0);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          cp_async16_zfill(d + std::uint32_t(r * kThreads * NT * 16) + gnt[nt], src + nt, ok ? 16 : 0);
      }
      wgather += unsigned(16 * C);
    };

#pragma unroll
    for (int s = 0; s < D - 1; ++s) issue(s);
    load_sel();
    advance_sel();
    pdl_wait();  // Xt complete (returns at once after the first segment)
    gather(0);
    cp_async_commit_group();  // G0
    if (nchunks > 1) load_sel();
    advance_sel();

    float acc0[NT][4], acc1[NT][4];
#pragma unroll
    for (int b = 0; b < NT; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc0[b][c] = acc1[b][c] = 0.0f;

    for (int c = 0; c < nchunks; ++c) {
      const int b = c & 1;
      if (c == 0)
        ring_wait<0>();
      else
        ring_wait<D - 1>();
      __syncthreads();
      if (c + 1 < nchunks) {
        gather(b ^ 1);
        if (c + 2 < nchunks) load_sel();
        advance_sel();
      }
      cp_async_commit_group();  // G(c + 1), possibly empty
      const std::uint32_t xb = sbase + std::uint32_t(b) * kBuf;
      std::uint32_t xbase[NT];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) xbase[nt] = opaque(xb + loff[nt]);
      const int np = min(C, nrec - c * C);
#pragma unroll
      for (int j = 0; j < C; ++j) {
        if (j < np) {
          if (j < D - 1)
            ring_wait<D - 1>();
          else
            ring_wait<D - 2>();
          issue((j + D - 1) % D);
          {
            const std::uint32_t s = std::uint32_t(j % D) * kSlot;
            uint4 a0, a1, b0, b1;
            std::uint32_t ea, eb;
            asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a0.x), "=r"(a0.y), "=r"(a0.z), "=r"(a0.w) : "r"(ring16 + s) : "memory");
            asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a1.x), "=r"(a1.y), "=r"(a1.z), "=r"(a1.w) : "r"(ring16 + s + 512u) : "memory");
            asm volatile("ld.shared.u32 %0, [%1];" : "=r"(ea) : "r"(ring4 + s) : "memory");
            asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(b0.x), "=r"(b0.y), "=r"(b0.z), "=r"(b0.w) : "r"(ring16 + s + kRec) : "memory");
            asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(b1.x), "=r"(b1.y), "=r"(b1.z), "=r"(b1.w) : "r"(ring16 + s + kRec + 512u) : "memory");
            asm volatile("ld.shared.u32 %0, [%1];" : "=r"(eb) : "r"(ring4 + s + kRec) : "memory");
#pragma unroll
            for (int h = 0; h < 2; ++h) {
#pragma unroll
              for (int nt = 0; nt < NT; ++nt) {
                const uint4 bf = ldsm_x4_trans(xbase[nt] + std::uint32_t((j * 64 + h * 32) * NT * 16));
                mma_sp<T>(acc0[nt], h ? a1 : a0, bf, ea, h);
                mma_sp<T>(acc1[nt], h ? b1 : b0, bf, eb, h);
              }
            }
          }
        }
      }
    }
    ring_wait<0>();  // the ring and the X buffers are free for the next segment after the barrier below
    __syncthreads();

    // ---- the segment's output ----
    const std::int64_t bf = (group * P) / W, bl = ((group + 1) * P - 1) / W;  // the blocks covering the slab
    if (bf == bl) {  // the whole slab is this block's
      if (has0) store_tile<Tr, NT>(p, acc0, rt0 * 16 + (lane >> 2), lane & 3);
      if (has1) store_tile<Tr, NT>(p, acc1, (rt0 + 1) * 16 + (lane >> 2), lane & 3);
      continue;
    }
    {
      float* part = p.ws + std::size_t(2 * bx + (group == first_slab ? 0 : 1)) * part_elems;
      const int g = lane >> 2, t = lane & 3;
#pragma unroll
      for (int a = 0; a < 2; ++a) {
        const int rl = (2 * warp + a) * 16 + g;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const int i = nt * 8 + 2 * t;
          const float(&ac)[4] = a ? acc1[nt] : acc0[nt];
          if (i < p.m) {
            part[i * kRows + rl] = ac[0];
            part[i * kRows + rl + 8] = ac[2];
          }
          if (i + 1 < p.m) {
            part[(i + 1) * kRows + rl] = ac[1];
            part[(i + 1) * kRows + rl + 8] = ac[3];
          }
        }
      }
    }
    __threadfence();  // the partial is visible device-wide before the arrival is counted
    __syncthreads();
    if (tid == 0) s_last = atomicAdd(p.counters + group, 1) == int(bl - bf);
    __syncthreads();
    if (s_last) {
      __threadfence();  // the other blocks' partials (fenced before their arrivals)
      const std::int64_t row0 = group * kRows;
      for (int idx = tid; idx < int(part_elems); idx += kThreads) {
        const int i = idx / kRows, rl = idx - i * kRows;
        float sum = 0.0f;
        for (std::int64_t b = bf; b <= bl; ++b) {  // block order: deterministic
          const std::size_t slot = std::size_t(2 * b + (group == (b * W) / P ? 0 : 1));
          sum += __ldcg(p.ws + slot * part_elems + idx);
        }
        const std::int64_t r = row0 + rl;
        if (r < p.n) store_y(p.y, p.y_dtype, std::size_t(i) * std::size_t(p.n) + std::size_t(r), sum);
      }
      if (tid == 0) p.counters[group] = 0;  // for the next launch
    }
    __syncthreads();  // s_last is read by every thread before the next segment may rewrite it
  }
}

}  // namespace sparsenm::cuda::vnm_small
