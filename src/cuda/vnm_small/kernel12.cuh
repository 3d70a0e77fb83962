// sparsenm — cuda:vnm_gemv variant 22 ("V:2:M lean paired, stream-K, cheap fix-up"): variant 20's slab loop
// (kernel10.cuh: read it first — ring, commit order, constant wait counts, the division-free Xt gather)
// over an equal run of the (slab, pair) work per block, so that every SM streams the same bytes.
//
// Why (PERF-vnm-small.md "Session 10 (s10vnmk)"). Variant 20 runs one block per slab (or per slab third):
// at 28672 x 8192 (224 slabs on 132 SMs, 2 blocks per SM) 92 SMs stream 2 slabs and 40 stream one; at
// 12288^2 (96 slabs x 3 splits = 288 blocks, 3 per SM) 24 SMs stream 3 thirds and 108 two: the busiest SM
// carries 1.18x / 1.37x the mean. Here the grid is B = 2 x SMs blocks and the work is the flat list of
// slabs x pairs (slab-major); block b streams pairs [b W, (b + 1) W), W = ceil(total / B), crossing slab
// boundaries: each slab piece ("segment") runs variant 20's ring / chunk loop for its pair range (the ring
// drains between segments: one refill per segment; W < pairs per slab gives <= 2 segments per block).
//
// Session 9d's form of this (commit ad6289b) lost 1.35-2.6x to variant 20: its last-arrival sum ran a 64-bit
// division call before every L2 load, in a serial un-unrolled loop, m elements per thread, after two SC
// fences per partial segment. This form:
//  - a slab streamed whole by one block is stored as variant 20 stores (no partial);
//  - a partial segment's fp32 sums [m][128] go to the workspace slot 2b (the slab is the block's first) or
//    2b + 1 (its last) as plain stores, and nothing waits for them there: the block streams on;
//  - the arrivals are counted once, at the end of the block's run: one block barrier, then thread 0 does one
//    `atom.acq_rel.gpu` add per partial slab (<= 2; release: the block's partial stores, ordered before it
//    by the barrier, become visible with the count; acquire: so do the other blocks' partials when it is
//    the last arrival), a second barrier;
//  - the last-arriving block sums the slab: the covering blocks bf..bl and their slots are known without a
//    division in the loop (a slab is the first slab of every covering block but bf, whose slot is 2 bf or
//    2 bf + 1 by one compare); every thread issues all its float4 loads of up to 3 slots (m / 4 per slot and
//    thread) before any add, in block order (the same sum whichever block arrives last), stores y and
//    resets the slab's counter (zeroed once at plan creation; every launch leaves it at zero).
// No block waits for another (no co-residency assumption). The flat index fits 32 bits (the plan checks
// slabs x pairs < 2^31), so the per-block setup divides in 32 bits (inline, no call).
#pragma once
#include "cuda/vnm_small/kernel8.cuh"

namespace sparsenm::cuda::vnm_small {

__device__ __forceinline__ int vlean_sk_arrive(int* counter) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
  return old;
}

template <class Tr>
__global__ void __launch_bounds__(128, 2) vnm_small_kernel_vlean_sk(const Params p) {
  using T = typename Tr::T;
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  constexpr int C = sv::lean_chunk_pairs(NT);
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
  __shared__ int s_last[2];
  const std::uint32_t sbase = smem_addr(smem_u4);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned P = unsigned(p.pairs), W = unsigned(p.pairs_per_split);
  const unsigned groups = unsigned((p.row_tiles + 7) / 8);
  const unsigned total = groups * P;
  const unsigned bx = blockIdx.x;
  const unsigned beg = bx * W, end = min(total, beg + W);
  const unsigned first = beg / P, last = (end - 1) / P;  // the block's first and last slab
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
  bool partial_first = false, partial_last = false;

  for (unsigned group = first; group <= last; ++group) {
    // ---- one segment: slab `group`, pairs [pair0, pair0 + nrec) (variant 20's block body) ----
    const unsigned u0 = max(beg, group * P), u1 = min(end, (group + 1) * P);
    const unsigned pair0 = u0 - group * P;
    const int nrec = int(u1 - u0);  // >= 1
    const bool whole = u0 == group * P && u1 == (group + 1) * P;
    const int nchunks = (nrec + C - 1) / C;
    const std::int64_t rt0 = std::int64_t(group) * 8 + 2 * warp;  // tiles rt0, rt0 + 1
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
    unsigned wnext = pair0 * 16u + unsigned(tid >> 2);
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

    // ---- the segment's output: y directly (whole slab) or its partial slot (no fence, no wait here) ----
    if (whole) {
      if (has0) store_tile<Tr, NT>(p, acc0, rt0 * 16 + (lane >> 2), lane & 3);
      if (has1) store_tile<Tr, NT>(p, acc1, (rt0 + 1) * 16 + (lane >> 2), lane & 3);
      continue;
    }
    if (group == first)
      partial_first = true;
    else
      partial_last = true;
    float* part = p.ws + std::size_t(2 * bx + (group == first ? 0u : 1u)) * part_elems;
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
  if (!partial_first && !partial_last) return;  // block uniform

  // ---- the arrivals, once per block (<= 2 partial slabs), and the last arrival's sum ----
  __syncthreads();  // every thread's partial stores precede thread 0's release below
  if (tid == 0) {
    s_last[0] = s_last[1] = 0;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (!(e ? partial_last : partial_first)) continue;
      const unsigned s = e ? last : first;
      const unsigned bf = (s * P) / W, bl = ((s + 1) * P - 1) / W;  // the blocks covering slab s
      s_last[e] = vlean_sk_arrive(p.counters + s) == int(bl - bf);
    }
  }
  __syncthreads();  // the acquire of thread 0 orders the other blocks' partials before these threads' loads
  const int nq = p.m * (kRows / 4);  // float4 of one slot
  const float4* ws4 = reinterpret_cast<const float4*>(p.ws);
  constexpr int kR = 2 * NT;  // float4 per thread and slot: m <= 8 NT -> m 32 / 128 <= 2 NT
  constexpr int kS = 3;       // slots whose loads are all issued before the adds
#pragma unroll 1
  for (int e = 0; e < 2; ++e) {
    if (!s_last[e]) continue;  // block uniform
    const unsigned s = e ? last : first;
    const unsigned bf = (s * P) / W, bl = ((s + 1) * P - 1) / W;
    const unsigned slot_bf = 2 * bf + (bf * W >= s * P ? 0u : 1u);  // every other covering block: 2 b (its first slab)
    float4 sum[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) sum[r] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 1
    for (unsigned b0 = bf; b0 <= bl; b0 += kS) {
      float4 v[kS][kR];
#pragma unroll
      for (int i = 0; i < kS; ++i) {
        const unsigned b = b0 + unsigned(i);
        const unsigned slot = b == bf ? slot_bf : 2 * b;
        const float4* src = ws4 + std::size_t(slot) * std::size_t(nq);
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          const int q = tid + kThreads * r;
          v[i][r] = b <= bl && q < nq ? __ldcg(src + q) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
      }
#pragma unroll
      for (int i = 0; i < kS; ++i)  // block order: deterministic
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          sum[r].x += v[i][r].x;
          sum[r].y += v[i][r].y;
          sum[r].z += v[i][r].z;
          sum[r].w += v[i][r].w;
        }
    }
    const std::int64_t row0 = std::int64_t(s) * kRows;
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int q = tid + kThreads * r;
      if (q >= nq) break;
      const int i = q / (kRows / 4), rl = (q % (kRows / 4)) * 4;  // output column i, rows rl .. rl + 3 of the slab
      const std::size_t o = std::size_t(i) * std::size_t(p.n) + std::size_t(row0 + rl);
      const float f[4] = {sum[r].x, sum[r].y, sum[r].z, sum[r].w};
#pragma unroll
      for (int e2 = 0; e2 < 4; ++e2)
        if (row0 + rl + e2 < p.n) store_y(p.y, p.y_dtype, o + std::size_t(e2), f[e2]);
    }
    if (tid == 0) p.counters[s] = 0;  // every covering block has arrived: reset for the next launch
  }
}

}  // namespace sparsenm::cuda::vnm_small
