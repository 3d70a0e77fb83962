// sparsenm — cuda:vnm_gemv variants 20 / 21 ("V:2:M lean paired"): the lean paired structure of
// variants 13 / 14 (kernel9.cuh) for venom V:2:M with V = 128. Read kernel9.cuh (ring, commit order,
// wait counts, cluster reduction) and kernel6.cuh (the transposed-X gather of venom) first.
//
// Status (H200 run f3a9476, PERF-vnm-small.md "Session 9 (s9vnm) measured"): correct (every VnmSmallGpu
// test, memcheck clean); ncu 47 instructions per record at m = 32 (variant 9: 167); the fastest V:2:M row
// in all 12 cases measured (128:2:8 / 128:2:16, 28672 x 8192 / 12288^2, m = 8 / 16 / 32: 1.009-1.27x of
// the old default), the default for V = 128, M <= 16 at m >= 8 (since session 10: at m > 8 on padded grids only,
// variant 23 below elsewhere); 0.51-0.76 of the byte ratio (bar 0.8):
// DRAM 55 % at 28672 x 8192 m = 32 (224 blocks of short slabs: few bytes in flight per SM).
// Session 9c (s9vnm2, H200 run 5585405, PERF-vnm-small.md "Session 9c"): launched as a programmatic dependent
// of the transpose with room for 3 blocks per SM, a sub-wave grid was placed unevenly beside the transpose's
// blocks (28672 x 8192 m = 32: 67.5 us; without PDL 57.4); the geometry now pads the shared memory to <= 2
// blocks per SM where the grid fits so (layout.hpp vlean_spread: 56.1 us). A ring of 8 slots per warp
// (2.3x the bytes in flight) measured no faster (ncu m = 8: DRAM 69-73 % either way) and was removed.
// Session 9d (s9vnm3, H200 run ad6289b, PERF-vnm-small.md "Session 9d"): this body as stream-K over the flat
// (slab, pair) work (equal runs per block across slab boundaries, fp32 partials summed by the last-arriving
// block) was correct but 1.35-2.6x slower — the sum (a 64-bit division + an L2 trip per element and segment, in
// series, m elements per thread) is a tail on every SM; removed, the code is in commit ad6289b (kernel12.cuh).
// Session 10 (s10vnmk, H200 run 89ed8bb, PERF-vnm-small.md "Session 10"): the same stream-K with a cheap fix-up
// (deferred arrivals, one acq_rel atomic per partial slab, all loads before the adds) is still 1.10-1.23x slower
// than this kernel in all 12 cases (gap ~4-6 us at m -> 0: the extra segment restarts, not the sum); removed,
// the code is in commit 89ed8bb (kernel12.cuh).
// Session 10c (s10vnmc, H200 run 40c24ee, PERF-vnm-small.md "Session 10c"): that stream-K with the ring, the selection
// loads and the X gather running through the segment boundaries (no drain, no restart) measured as slow as 22
// (1.09-1.22x slower than this kernel in all 12 cases): 22's loss is not its restarts; every balanced-grid block's
// pair takes ~1.35x as long as here (ncu: long-scoreboard cycles per pair +37 %, DRAM 60 % against 73 %). Removed, the
// code is in commit 40c24ee (kernel25.cuh).
//
// Why (PERF-vnm-small.md "Session 9 (s9vnm)"). V:2:M at small m still ran variants 4 / 9: variant 9's
// general record cursor, run-time wait counts and per-unit index math (~180 instructions per record
// at m = 32 on hw24, session 7d), every warp loading the same B fragments. The hw24 lean kernels
// (12 / 13 / 14) reached the weight stream's rate; a 128-row V slab is exactly their 128-row group
// (8 mma row tiles), so the same kernel shape applies with one change: the X columns of a chunk are
// the slab's selected ones (4 per window), gathered from the transposed X.
//
// Shape: one block per (slab, k split), 4 warps; warp w owns tiles 2w and 2w + 1 of the slab, their
// records of a pair share one ring slot (2304 B) and every B fragment. Chunk C = lean_chunk_pairs(NT)
// = 16 / 8 / 4 / 4 pairs (compile time), ring of kRingStages two-record slots per warp, commit order
// S0, S1, S2 (before griddepcontrol.wait: the weight does not depend on the transpose), G0, then per
// chunk c: G(c + 1) (possibly empty), S(cC + 3), ... — so every wait is a constant (kernel9.cuh), except
// chunk 0's top, which waits for everything (G0 is the newest group there).
//
// Gather. Chunk c covers gathered columns kk = 0 .. 64 C - 1 (kk = 64 pair + 4 window + q); thread tid
// owns kk = tid + 128 r, r < C / 2 (no division: the window is (tid >> 2) + 32 r, the selected
// position tid & 3). Its selection bytes of chunk c + 1 are loaded (plain loads) one chunk ahead, so
// the copies at the chunk top do not wait for them; column = window * M + sel (>= k, or a window past
// the padded end: zero-filled copy). A column's 8 NT staged X rows are NT contiguous 16-byte units of
// Xt (kernel3.cuh transpose), copied by NT cp.async into xt_unit(kk, nt) (conflict-free
// ldmatrix.x4.trans, kernel3.cuh); rows m .. 8 NT - 1 are zeros in Xt already.
// Shared memory: 2 x 64 C NT 16-byte units (= variant 13's X buffers: 1024 C NT bytes each) + rings
// 4 warps x 4 slots x 2304 B: <= 69.6 KB, 3 blocks per SM.
//
// Variant 23 (kDirect; session 10, s10vnm, PERF-vnm-small.md "Session 10 (s10vnm)"): no transpose launch and
// no Xt. The same thread owns the same units (gathered column tid + 128 r, n8 tile nt) and fills them from
// the X rows: 8 two-byte loads X[8 nt + ii][col] (__ldg; the 4 lanes of a window and the 8 windows of a warp
// read one 128 / 256-byte run of a row per instruction, M = 8 / 16), two rows packed per word, one 16-byte
// st.shared at the same xt_unit offset, so the consumers (ldmatrix.x4.trans, mma.sp) are variant 20's. The
// loads of chunk c + 1 are split in two halves of kRounds / 2 rounds (32 registers at full m): half 0 issued
// at chunk c's top and stored at pair C / 2, half 1 issued there and stored after the chunk's last pair
// (the next chunk top's barrier publishes both); chunk 0 is loaded and stored before the loop. The cp.async
// groups G(c) are committed empty, so every wait count stays 20's. Cost: ~3 instructions per staged 2-byte
// value (address chain + LDG) + the packing, i.e. per thread and chunk 64 values at full m (+~7 per record at
// NT = 1, +~34 at NT = 4 on 20's ~23 / ~47), against the transpose kernel (~2.7 us, ncu) and its PDL
// placement. ptxas (sm_90a f16): 122 / 126 / 131 / 161 registers at NT = 1..4 (20: 75 / 94 / 97 / 119), 0 spills.
// Measured (H200 run da846df): correct (every VnmSmallGpu test, bitwise equal to 20, memcheck / racecheck clean);
// 1.05-1.13x of 20 at m = 1 / 8 in all four cases (ncu m = 8: the kernel as long as 20's main kernel, the
// transpose gone), 1.01-1.04x at m = 16 / 32 on 12288^2 (3 blocks per SM), 0.92-0.99x on 28672 x 8192 m = 16 / 32
// (2 blocks per SM; m = 32: 9.60 M instructions against 5.41 M, exposed). The plan's choice at m <= 8 and where
// 20's grid is not padded (vnm_small.cu).
#pragma once
#include <cooperative_groups.h>

#include "cuda/vnm_small/cluster_reduce.cuh"
#include "cuda/vnm_small/kernel8.cuh"

namespace sparsenm::cuda::vnm_small {

template <class Tr, bool kCluster, bool kDirect = false>
__global__ void __launch_bounds__(128, 3) vnm_small_kernel_vlean(const Params p) {
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
  static_assert(C % D == 0 && kCols % kThreads == 0 && D == 4, "vlean: chunk / ring / thread shape");

  extern __shared__ uint4 smem_u4[];
  const std::uint32_t sbase = smem_addr(smem_u4);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::int64_t group = blockIdx.x;
  const std::int64_t rt0 = group * p.tiles_per_group + 2 * warp;  // tiles rt0, rt0 + 1
  const bool has0 = rt0 < p.row_tiles, has1 = rt0 + 1 < p.row_tiles;  // warp uniform (tiles_per_group == 8)
  const std::int64_t src0 = has0 ? rt0 : p.row_tiles - 1, src1 = has1 ? rt0 + 1 : p.row_tiles - 1;
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const int nrec = int(min(p.pairs, pair0 + p.pairs_per_split) - pair0);  // pairs of this split, >= 1
  const int nchunks = (nrec + C - 1) / C;

  // ---- the ring (kernel9.cuh) ----
  const std::uint32_t ring16 = opaque(sbase + 2 * kBuf + std::uint32_t(warp) * (D * kSlot) + std::uint32_t(lane) * 16u);
  const std::uint32_t ring4 = opaque(sbase + 2 * kBuf + std::uint32_t(warp) * (D * kSlot) + 1024u + std::uint32_t(lane) * 4u);
  const char* wbase = reinterpret_cast<const char*>(p.w);
  const char* a16 = wbase + (std::size_t(src0) * std::size_t(p.pairs) + std::size_t(pair0)) * kRec + lane * 16;
  const char* b16 = wbase + (std::size_t(src1) * std::size_t(p.pairs) + std::size_t(pair0)) * kRec + lane * 16;
  const char* a4 = a16 + 1024 - lane * 12;
  const char* b4 = b16 + 1024 - lane * 12;
  int left = nrec;  // slots (pairs) not yet issued
  auto issue = [&](int slot) {  // slot: a constant after unrolling
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

  // ---- the gather: thread tid owns gathered columns kk = tid + r kThreads of every chunk ----
  // window of (chunk c, round r) = (pair0 + c C) 16 + (tid >> 2) + 32 r; selection byte at
  // sel[slab][window][tid & 3] = sel_slab + window * 4 + (tid & 3) = sel_slab + (pair0 + c C) 64 + tid + 128 r.
  const unsigned wpad = unsigned(p.windows_pad), win = unsigned(p.window), kcols = unsigned(p.k);
  const std::uint8_t* sel = p.sel + std::size_t(group) * std::size_t(p.windows_pad) * 4u + std::size_t(pair0) * 64u + std::size_t(tid);
  unsigned wnext = unsigned(pair0) * 16u + unsigned(tid >> 2);  // window of round 0 of the chunk whose selection is loaded next
  unsigned selv[kRounds];                                        // selection bytes of the next chunk to gather
  auto load_sel = [&]() {  // the selection bytes of the next chunk (plain loads, consumed one chunk later)
#pragma unroll
    for (int r = 0; r < kRounds; ++r) selv[r] = wnext + unsigned(32 * r) < wpad ? unsigned(__ldg(sel + 128 * r)) : 0u;
  };
  unsigned wgather = wnext;  // window of round 0 of the chunk gathered next
  auto advance_sel = [&]() {
    sel += kCols;
    wnext += unsigned(16 * C);
  };
  // destination of round r, n8 tile nt: xt_unit(tid + 128 r, nt) = (tid + 128 r) NT + (nt ^ swz(tid)) (swz: kk % 8 only)
  const std::uint32_t gdst = std::uint32_t(tid * NT) * 16u;
  std::uint32_t gnt[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) gnt[nt] = std::uint32_t(nt ^ sv::xt_swizzle(tid, NT)) * 16u;
  const uint4* xt = p.xt;
  // ---- variant 23 (kDirect): the same units, read from the X rows (no transpose) ----
  // Unit (round r, tile nt) = X[8 nt + ii][col_r], ii < 8, packed two rows per word into one 16-byte
  // st.shared at xt_unit(tid + 128 r, nt): the layout the cp.async gather fills from Xt. The loads of the
  // rounds r < kRounds / 2 (half 0) and the others (half 1) are issued one at a time into the same
  // kRounds / 2 x NT x 8 registers, each half stored half a chunk after its loads.
  constexpr int kHalf = kRounds / 2;
  static_assert(kRounds % 2 == 0 && C % 2 == 0, "vlean direct: two halves of a chunk's gather");
  const char* const xg = static_cast<const char*>(p.x);
  const std::uint32_t xk2 = std::uint32_t(2 * p.k);  // X row pitch in bytes (k < 2^31)
  const int m = p.m;
  unsigned dcol[kRounds];  // columns of the chunk gathered next; kcols: reads as zero
  auto dcols = [&]() {     // from selv (then free for the next load_sel)
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const unsigned col = (wgather + unsigned(32 * r)) * win + selv[r];
      dcol[r] = col < kcols ? col : kcols;
    }
    wgather += unsigned(16 * C);
  };
  // Row i of a unit at src + i * 2k (ptxas: a pointer chain, IADD3 + IMAD.X per load; 3 instructions per 2-byte
  // value with the LDG). A column past k reads column 0 (valid) and is zeroed at the store; rows >= m (the last
  // n8 tile only, a warp-uniform branch) are predicated.
  auto dload = [&](int half, std::uint32_t (&v)[kHalf][NT][8]) {
#pragma unroll
    for (int rr = 0; rr < kHalf; ++rr) {
      const unsigned col = dcol[half * kHalf + rr];
      const char* src = xg + std::size_t(col < kcols ? col : 0u) * 2u;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        if (8 * nt + 8 <= m) {  // warp uniform
#pragma unroll
          for (int ii = 0; ii < 8; ++ii)
            v[rr][nt][ii] = __ldg(reinterpret_cast<const unsigned short*>(src + std::uint64_t(xk2) * std::uint32_t(8 * nt + ii)));
        } else {
#pragma unroll
          for (int ii = 0; ii < 8; ++ii)
            v[rr][nt][ii] = 8 * nt + ii < m ? __ldg(reinterpret_cast<const unsigned short*>(src + std::uint64_t(xk2) * std::uint32_t(8 * nt + ii))) : 0u;
        }
      }
    }
  };
  auto dstore = [&](int half, const std::uint32_t (&v)[kHalf][NT][8], int b) {
    const std::uint32_t d = sbase + std::uint32_t(b) * kBuf + gdst;
#pragma unroll
    for (int rr = 0; rr < kHalf; ++rr)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const std::uint32_t a = d + std::uint32_t((half * kHalf + rr) * kThreads * NT * 16) + gnt[nt];
        const std::uint32_t keep = dcol[half * kHalf + rr] < kcols ? 0xffffffffu : 0u;
        asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(a), "r"(__byte_perm(v[rr][nt][0], v[rr][nt][1], 0x5410) & keep),
                     "r"(__byte_perm(v[rr][nt][2], v[rr][nt][3], 0x5410) & keep), "r"(__byte_perm(v[rr][nt][4], v[rr][nt][5], 0x5410) & keep),
                     "r"(__byte_perm(v[rr][nt][6], v[rr][nt][7], 0x5410) & keep)
                     : "memory");
      }
  };

  auto gather = [&](int b) {  // the copies of the chunk whose selection is in selv into buffer b
    const std::uint32_t d = sbase + std::uint32_t(b) * kBuf + gdst;
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const unsigned col = (wgather + unsigned(32 * r)) * win + selv[r];  // windows past the end: col >= k
      const bool ok = col < kcols;
      const uint4* src = xt + (ok ? std::size_t(col) * NT : 0);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        cp_async16_zfill(d + std::uint32_t(r * kThreads * NT * 16) + gnt[nt], src + nt, ok ? 16 : 0);
    }
    wgather += unsigned(16 * C);
  };

#pragma unroll
  for (int s = 0; s < D - 1; ++s) issue(s);  // S0 .. S2: the weight does not depend on the transpose
  load_sel();                                // chunk 0's selection (nor does it)
  advance_sel();
  pdl_wait();  // Xt is complete and visible from here on (variant 23: no-op, launched plainly)
  if constexpr (kDirect) {
    dcols();
    std::uint32_t v0[kHalf][NT][8], v1[kHalf][NT][8];
    dload(0, v0);
    dload(1, v1);
    dstore(0, v0, 0);
    dstore(1, v1, 0);
  } else {
    gather(0);
  }
  cp_async_commit_group();  // G0 (variant 23: empty, so every wait count below is 20's)
  if (nchunks > 1) load_sel();  // chunk 1's
  advance_sel();

  float acc0[NT][4], acc1[NT][4];
#pragma unroll
  for (int b = 0; b < NT; ++b)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc0[b][c] = acc1[b][c] = 0.0f;

  // Per-lane ldmatrix.trans offsets of a k32 step: row kk = step base + lane, unit nt (kernel3.cuh)
  std::uint32_t loff[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) loff[nt] = std::uint32_t(sv::xt_unit(lane, nt, NT)) * 16u;

  for (int c = 0; c < nchunks; ++c) {
    const int b = c & 1;
    if (c == 0)
      ring_wait<0>();  // G0 is the newest group
    else
      ring_wait<D - 1>();  // G(c): older than the D - 1 newest groups (slots cC .. cC + 2)
    __syncthreads();       // everyone's copies of G(c); chunk c - 1's reads of buffer b ^ 1 done
    const bool more = c + 1 < nchunks;
    std::uint32_t hv[kHalf][NT][8];  // variant 23: one half of chunk c + 1's gather in flight
    if (more) {
      if constexpr (kDirect) {
        dcols();
        dload(0, hv);
      } else {
        gather(b ^ 1);
      }
      if (c + 2 < nchunks) load_sel();  // chunk c + 2's selection
      advance_sel();
    }
    cp_async_commit_group();  // G(c + 1), possibly empty (variant 23: always empty)
    const std::uint32_t xb = sbase + std::uint32_t(b) * kBuf;
    std::uint32_t xbase[NT];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) xbase[nt] = opaque(xb + loff[nt]);
    const int np = min(C, nrec - c * C);
#pragma unroll
    for (int j = 0; j < C; ++j) {
      if constexpr (kDirect) {
        if (j == C / 2 && more) {  // np == C whenever a chunk follows
          dstore(0, hv, b ^ 1);
          dload(1, hv);
        }
      }
      if (j < np) {
        if (j < D - 1)
          ring_wait<D - 1>();  // G(c + 1) is newer than slot cC + j
        else
          ring_wait<D - 2>();
        issue((j + D - 1) % D);  // slot cC + j + 3 into the one slot cC + j - 1 used
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
              // step (j, h): rows kk = 64 j + 32 h + lane of the staged chunk, NT units each
              const uint4 bf = ldsm_x4_trans(xbase[nt] + std::uint32_t((j * 64 + h * 32) * NT * 16));
              mma_sp<T>(acc0[nt], h ? a1 : a0, bf, ea, h);
              mma_sp<T>(acc1[nt], h ? b1 : b0, bf, eb, h);
            }
          }
        }
      }
    }
    if constexpr (kDirect) {
      if (more) dstore(1, hv, b ^ 1);  // visible to every warp after the next chunk top's barrier
    }
  }
  ring_wait<0>();  // no copy may still target the block's shared memory at exit

  if constexpr (!kCluster) {
    if (has0) store_tile<Tr, NT>(p, acc0, rt0 * 16 + (lane >> 2), lane & 3);
    if (has1) store_tile<Tr, NT>(p, acc1, (rt0 + 1) * 16 + (lane >> 2), lane & 3);
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // kernel9.cuh's cluster reduction: the slab's partial sums [8 NT][kRows + 4] floats over the X
    // buffers, cluster barrier, block z sums rows [z 128 / S, ...) over the S blocks in split order.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    constexpr int kPitch = kClusterPitch<kRows>;
    static_assert(std::uint32_t(8 * NT * kPitch * 4) <= 2 * kBuf + std::uint32_t(kWarps) * D * kSlot, "vlean: partials fit");
    float* part = reinterpret_cast<float*>(smem_u4);
    __syncthreads();  // every warp is done with the X buffers and its ring
    stage_pair_partials<NT, kRows>(part, acc0, acc1, warp, lane);
    cluster_sum_store<kRows, kThreads>(cluster, part, p, group * p.tiles_per_group * 16, tid);
#else
    __trap();  // sm_90+ only (clusters); geometry_for maps variant 20 to 4 below sm_90
#endif
  }
}

}  // namespace sparsenm::cuda::vnm_small
