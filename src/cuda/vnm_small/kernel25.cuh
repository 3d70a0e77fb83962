// sparsenm — cuda:vnm_gemv variant 25 ("V:2:M lean paired, stream-K, continuous ring"): the balanced grid of
// session 10's variant 22 (commit 89ed8bb, kernel12.cuh: an equal run of the flat (slab, pair) work per block,
// crossing slab boundaries, partial slabs summed by their last-arriving block) with one change: a block's
// weight ring, its selection loads and its X gather run straight through the block's segment (slab)
// boundaries. Read kernel10.cuh (variant 20: ring, commit order, wait counts, the division-free Xt gather) first.
//
// Why (PERF-vnm-small.md "Session 10c (s10vnmc)"). Variant 22 lost 1.10-1.23x to variant 20 with its fix-up
// no longer growing with m. Its reading: every segment start drains the ring (wait for everything, block
// barrier) and refills it from empty behind the selection -> Xt -> chunk-0 chain — a second block start per
// block. Here nothing drains between segments:
//  - the ring's producer is a cursor over the block's flat pair run: at a slab's last pair it re-seats its
//    two record pointers on the next slab's tiles (pair 0) and keeps issuing, so the first slots of slab s + 1
//    are in flight while slab s's last pairs are consumed;
//  - the chunks are cut per segment (a chunk never spans two slabs: its pairs share one accumulator set), but
//    the X double buffer, the gather of chunk c + 1 at the top of chunk c and the selection load of chunk c + 2
//    run over the flat chunk list, so chunk 0 of slab s + 1 is gathered during slab s's last chunk;
//  - a segment's end stores y (whole slab) or its fp32 partial slot (no fence, no barrier), zeroes the
//    accumulators and goes on to the next chunk; the arrivals and the last arrival's sum are 89ed8bb's,
//    once at the block's end.
// What changes against variant 20's loop: a segment's last chunk may hold any number of pairs, so the ring
// slot of a pair is (pairs consumed so far + j) mod 4 at run time (4 slot bases computed per chunk) instead of
// j mod 4, and the wait for G(c) at a chunk top keeps min(3, pairs of chunk c - 1) newer groups (switch on 0..3).
// The pair body's waits stay constants: slot t is issued at step t - 3, so for j >= 3 exactly 2 groups are newer
// (slots t + 1, t + 2), for j < 3 at least 3 (those two and G(c + 1), committed at this chunk's top).
// No block waits for another (no co-residency assumption); the flat index fits 32 bits (the plan checks).
#pragma once
#include "cuda/vnm_small/kernel8.cuh"

namespace sparsenm::cuda::vnm_small {

__device__ __forceinline__ int vlean_skc_arrive(int* counter) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
  return old;
}

/// A chunk cursor over a block's flat pair run [.., end): u = the chunk's first flat pair, ue = the flat end of
/// its segment (slab end or the run's end), slab = its slab. A chunk holds min(C, ue - u) pairs.
struct SkcCursor {
  unsigned u, ue, slab;
  __device__ __forceinline__ void next(unsigned C, unsigned P, unsigned end) {
    u = min(u + C, ue);
    if (u == ue) {
      ++slab;
      ue = min(end, ue + P);
    }
  }
};

template <class Tr>
__global__ void __launch_bounds__(128, 2) vnm_small_kernel_vlean_skc(const Params p) {
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
  static_assert(C % D == 0 && kCols % kThreads == 0 && D == 4, "vlean_skc: chunk / ring / thread shape");

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
  const std::uint32_t r4off = 1024u - std::uint32_t(lane) * 12u;  // ring4 - ring16 (the 4-byte words of a record)
  const std::uint32_t gdst = std::uint32_t(tid * NT) * 16u;
  std::uint32_t gnt[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) gnt[nt] = std::uint32_t(nt ^ sv::xt_swizzle(tid, NT)) * 16u;
  std::uint32_t loff[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) loff[nt] = std::uint32_t(sv::xt_unit(lane, nt, NT)) * 16u;
  const uint4* xt = p.xt;

  // ---- the ring's producer: a cursor over the block's pairs, moved on to the next slab at every slab end ----
  // Records are [row tile][pair]: a tile's pair P is the next tile's pair 0, so the step from tile rt's end to
  // tile rt + 8's pair 0 (the next slab, same warp) is 7 P records; tiles past the matrix (the last slab's
  // missing rows: only ever in the last slab) read tile row_tiles - 1 (their sums are never stored): min(., amax).
  const std::int64_t rt_first = std::int64_t(first) * 8 + 2 * warp;
  const std::int64_t s0 = rt_first < p.row_tiles ? rt_first : p.row_tiles - 1;
  const std::int64_t s1 = rt_first + 1 < p.row_tiles ? rt_first + 1 : p.row_tiles - 1;
  const unsigned pair_first = beg - first * P;
  const char* a16 = wbase + (std::size_t(s0) * std::size_t(P) + std::size_t(pair_first)) * kRec + lane * 16;
  const char* b16 = wbase + (std::size_t(s1) * std::size_t(P) + std::size_t(pair_first)) * kRec + lane * 16;
  const char* const amax = wbase + std::size_t(p.row_tiles - 1) * std::size_t(P) * kRec + lane * 16;
  const std::size_t jump = std::size_t(7) * std::size_t(P) * kRec;
  int iseg = int(min(end, (first + 1) * P) - beg);  // pairs of the producer's current segment not yet issued
  int left = int(end - beg);                        // pairs of the run not yet issued
  auto issue = [&](std::uint32_t d16) {             // d16: the slot's 16-byte base (this lane)
    if (left > 0) {
      const std::uint32_t d4 = d16 + r4off;
      const char* a4 = a16 + 1024 - lane * 12;
      const char* b4 = b16 + 1024 - lane * 12;
      ring_cp16(d16, a16);
      ring_cp16(d16 + 512u, a16 + 512);
      ring_cp4(d4, a4);
      ring_cp16(d16 + kRec, b16);
      ring_cp16(d16 + kRec + 512u, b16 + 512);
      ring_cp4(d4 + kRec, b4);
      a16 += kRec;
      b16 += kRec;
      if (--iseg == 0) {  // the slab ends here: go on with the next slab's pair 0 (no-op after the run's end)
        a16 = a16 + jump < amax ? a16 + jump : amax;
        b16 = b16 + jump < amax ? b16 + jump : amax;
        iseg = min(left - 1, int(P));
      }
    }
    --left;
    ring_commit();
  };

  // ---- the selection / gather cursors (one and two chunks ahead of the consumer) ----
  SkcCursor cons{beg, min(end, (first + 1) * P), first};
  SkcCursor gat = cons, selc = cons;
  unsigned selv[kRounds];
  auto load_sel = [&]() {  // selection bytes of chunk selc (sel is [slab][16 P windows][4]: flat in u)
    const unsigned w0 = (selc.u - selc.slab * P) * 16u + unsigned(tid >> 2);
    const std::uint8_t* sel = p.sel + std::size_t(selc.u) * 64u + std::size_t(tid);
#pragma unroll
    for (int r = 0; r < kRounds; ++r) selv[r] = w0 + unsigned(32 * r) < wpad ? unsigned(__ldg(sel + 128 * r)) : 0u;
  };
  auto gather = [&](int b) {  // the copies of chunk gat (selection in selv) into buffer b
    const unsigned w0 = (gat.u - gat.slab * P) * 16u + unsigned(tid >> 2);
    const std::uint32_t d = sbase + std::uint32_t(b) * kBuf + gdst;
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const unsigned col = (w0 + unsigned(32 * r)) * win + selv[r];  // windows past the slab's end: col >= k
      const bool ok = col < kcols;
      const uint4* src = xt + (ok ? std::size_t(col) * NT : 0);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        cp_async16_zfill(d + std::uint32_t(r * kThreads * NT * 16) + gnt[nt], src + nt, ok ? 16 : 0);
    }
  };

#pragma unroll
  for (int s = 0; s < D - 1; ++s) issue(ring16 + std::uint32_t(s) * kSlot);  // S0 .. S2
  load_sel();  // chunk 0's selection
  selc.next(C, P, end);
  pdl_wait();  // Xt complete and visible from here on
  gather(0);
  gat.next(C, P, end);
  cp_async_commit_group();  // G0
  if (selc.u < end) load_sel();  // chunk 1's
  selc.next(C, P, end);

  float acc0[NT][4], acc1[NT][4];
#pragma unroll
  for (int b = 0; b < NT; ++b)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc0[b][c] = acc1[b][c] = 0.0f;

  unsigned seg_beg = beg;  // flat start of the consumer's segment
  unsigned t0 = 0;         // pairs consumed so far (ring phase: slot of the next pair = t0 mod 4)
  int prev = -1;           // pairs of the previous chunk (-1: none)
  bool partial_first = false, partial_last = false;
  for (int c = 0;; ++c) {
    const int b = c & 1;
    const int np = int(min(unsigned(C), cons.ue - cons.u));
    // G(c) is followed by the previous chunk's `prev` slot groups
    if (prev < 0 || prev == 0)
      ring_wait<0>();
    else if (prev == 1)
      ring_wait<1>();
    else if (prev == 2)
      ring_wait<2>();
    else
      ring_wait<D - 1>();
    __syncthreads();  // everyone's copies of G(c); chunk c - 1's reads of buffer b ^ 1 done
    if (gat.u < end) {
      gather(b ^ 1);
      gat.next(C, P, end);
      if (selc.u < end) load_sel();  // chunk c + 2's selection
      selc.next(C, P, end);
    }
    cp_async_commit_group();  // G(c + 1), possibly empty
    const std::uint32_t xb = sbase + std::uint32_t(b) * kBuf;
    std::uint32_t xbase[NT];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) xbase[nt] = opaque(xb + loff[nt]);
    std::uint32_t sb[D];  // slot bases of pairs j = 0 .. 3 (mod 4) of this chunk
#pragma unroll
    for (int q = 0; q < D; ++q) sb[q] = opaque(ring16 + ((t0 + unsigned(q)) & unsigned(D - 1)) * kSlot);
#pragma unroll
    for (int j = 0; j < C; ++j) {
      if (j < np) {
        if (j < D - 1)
          ring_wait<D - 1>();  // G(c + 1) is newer than slot t0 + j
        else
          ring_wait<D - 2>();
        issue(sb[(j + D - 1) % D]);  // slot t0 + j + 3 into the one slot t0 + j - 1 used
        {
          const std::uint32_t s16 = sb[j % D], s4 = s16 + r4off;
          uint4 a0, a1, b0, b1;
          std::uint32_t ea, eb;
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a0.x), "=r"(a0.y), "=r"(a0.z), "=r"(a0.w) : "r"(s16) : "memory");
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a1.x), "=r"(a1.y), "=r"(a1.z), "=r"(a1.w) : "r"(s16 + 512u) : "memory");
          asm volatile("ld.shared.u32 %0, [%1];" : "=r"(ea) : "r"(s4) : "memory");
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(b0.x), "=r"(b0.y), "=r"(b0.z), "=r"(b0.w) : "r"(s16 + kRec) : "memory");
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(b1.x), "=r"(b1.y), "=r"(b1.z), "=r"(b1.w) : "r"(s16 + kRec + 512u) : "memory");
          asm volatile("ld.shared.u32 %0, [%1];" : "=r"(eb) : "r"(s4 + kRec) : "memory");
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
    t0 += unsigned(np);
    prev = np;
    cons.u += unsigned(np);
    if (cons.u != cons.ue) continue;

    // ---- the segment's end: y directly (whole slab) or its partial slot; no drain, no barrier ----
    const unsigned slab = cons.slab;
    const std::int64_t rt0 = std::int64_t(slab) * 8 + 2 * warp;
    if (seg_beg == slab * P && cons.ue == (slab + 1) * P) {
      if (rt0 < p.row_tiles) store_tile<Tr, NT>(p, acc0, rt0 * 16 + (lane >> 2), lane & 3);
      if (rt0 + 1 < p.row_tiles) store_tile<Tr, NT>(p, acc1, (rt0 + 1) * 16 + (lane >> 2), lane & 3);
    } else {
      if (slab == first)
        partial_first = true;
      else
        partial_last = true;
      float* part = p.ws + std::size_t(2 * bx + (slab == first ? 0u : 1u)) * part_elems;
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
    if (cons.ue == end) break;
#pragma unroll
    for (int q = 0; q < NT; ++q)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc0[q][e] = acc1[q][e] = 0.0f;
    seg_beg = cons.ue;
    ++cons.slab;
    cons.ue = min(end, cons.ue + P);
  }
  ring_wait<0>();  // only empty groups can be pending here (every real copy was waited for); kept for exit safety
  if (!partial_first && !partial_last) return;  // block uniform

  // ---- the arrivals, once per block (<= 2 partial slabs), and the last arrival's sum (89ed8bb) ----
  __syncthreads();  // every thread's partial stores precede thread 0's release below
  if (tid == 0) {
    s_last[0] = s_last[1] = 0;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (!(e ? partial_last : partial_first)) continue;
      const unsigned s = e ? last : first;
      const unsigned bf = (s * P) / W, bl = ((s + 1) * P - 1) / W;  // the blocks covering slab s
      s_last[e] = vlean_skc_arrive(p.counters + s) == int(bl - bf);
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
