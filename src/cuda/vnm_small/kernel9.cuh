// sparsenm — cuda:vnm_gemv variant 13 ("lean paired"): variant 12's lean kernel (kernel8.cuh) with
// every warp owning two row tiles of the block's 128-row group, so each B fragment loaded from
// shared memory feeds two mma.sp (variant 10's idea, in the lean form). Read kernel8.cuh first.
//
// Status (H200 run aa971bd, PERF-vnm-small.md "Session 8b measured"): correct (every VnmSmallGpu
// test, memcheck clean). 2:4 28672 x 8192 m = 32 (1 split): 69.3 us against variant 12's 73.7
// (cuSPARSELt 70.5; ncu: shared wavefronts per record 46.8 -> 28.8, MIO throttle 2.97 -> 0.15, DRAM
// 77 -> 83 %); m <= 16 within 1 % of 12. 12288^2: variant 13 (4 splits + reduce kernel) ties 12;
// variant 14 (cluster reduce) 45.1 / 46.3 / 48.2 / 53.1 us at m = 1 / 8 / 16 / 32 with 2 splits,
// 44.2 / 45.1 / 47.1 / 52.4 with 3 (cuSPARSELt 46.8-47.7). Default (vnm_small.cu): 14 for hw24 with
// k % 8 == 0 except one-split geometries at m <= 16 (12 there).
//
// Why (PERF-vnm-small.md "Session 8" / "Session 8b"). At m = 32 variant 12 is limited by the
// shared-memory instruction path (ncu: MIO throttle 4.3 per issue, DRAM 73 %): per 1152-byte record
// a warp issues 2 NT ldmatrix.x4 of X fragments (every warp of the block loads the same ones),
// 3 LDS + 3 LDGSTS of its ring: at NT = 4 ~14 MIO instructions and ~54 shared wavefronts per record.
// With two tiles per warp the X fragments of one pair are loaded once for two records: 2 NT
// ldmatrix per two records, i.e. ~10 MIO instructions and ~38 wavefronts per record at NT = 4.
//
// Shape: 4 warps (128 threads) per 128-row group; warp w owns tiles 2w and 2w + 1 (consecutive
// record streams: tile 2w + 1's records of a split follow tile 2w's by pairs x 1152 bytes). The
// ring has kRingStages slots per warp of two records each (2304 B: tile 2w's record at +0, tile
// 2w + 1's at +1152), one cp.async group per slot, so the commit order and every wait count are
// variant 12's with "record" read as "slot" (G0, S0, S1, S2, then per chunk c: G(c + 1), S(cC + 3),
// ...). Shared memory is variant 12's (the same two X buffers, 4 x 4 x 2304 = 8 x 4 x 1152 ring
// bytes): 3 blocks of 4 warps per SM, 3 slots = 6 records in flight per warp (the bytes in flight
// per SM of variant 12). The gather is variant 12's with 128 threads (twice the rounds per thread).
// Launched by launch_lean2 (launch.cuh) only when X is 16-byte aligned; otherwise variant 9's
// transposed kernel (two tiles per warp) runs in this geometry.
//
// kCluster (variant 14): the k splits of a group form one thread-block cluster (1, splits, 1) and are
// summed through distributed shared memory at the end (variant 7's reduction): no fp32 partials in
// global memory, no reduce launch. Each block writes its 128 x 8 NT accumulators to its own shared
// memory (the X buffers, free after the last chunk), cluster barrier, block z sums rows
// [z 128 / S, (z + 1) 128 / S) over the S blocks in split order and stores y, cluster barrier.
//
// kWarps = 8 (variant 15, session 8c): 256-row groups (16 tiles per block, two layout groups), so a
// staged X chunk — copied from L2 once per block — feeds twice the rows: half the X bytes through
// L2 per weight byte (12288^2 m = 32: 75 -> 38 MB). 2 blocks of 8 warps per SM (110.6 KB of shared
// memory at NT = 4); the cluster partials [8 NT][256 + 4] overlap the X buffers and the rings.
// Measured (H200 9edc68e, PERF-vnm-small.md "Session 8c measured"): correct, but slower than
// variant 14 everywhere (12288^2 m = 32 51.65 us at its best split vs 51.36): halving the X bytes
// did not help; MIO-throttle and barrier stalls rose (16 warps per SM, 8 per chunk barrier). Opt-in.
//
// kLong (variant 16, session 8d): variant 14 with the chunk lean_long_chunk_pairs(NT) = 16 / 16 / 8 /
// 8 pairs (14: 16 / 8 / 4 / 4), so at m > 8 a block meets its barrier (and issues a gather) half as
// often per weight byte and the next chunk's X copies are issued C pairs (not 4) ahead of their
// first use. The X buffers double (NT = 4: 2 x 32 KB): 2 blocks of 4 warps per SM (launch bounds
// (128, 2)); the ring, the commit order and every wait count are variant 14's (C % 4 == 0).
// Measured (H200 80b4392, PERF-vnm-small.md "Session 8d measured"): correct; barrier stalls halved
// (ncu 1.63 -> 0.73 per issue) but the time unchanged: 12288^2 m = 32 51.39 us (2 splits) vs 14's
// 51.68-51.87, ties at m = 16 and at 28672 x 8192. The plan took it at m > 24 where 14 runs splits
// until session 9b (variant 19 there since, kernel11.cuh).
//
// Variants 17 / 18 (session 9, s9v24; removed in session 9b): this kernel with the weight ring filled by
// cp.async.bulk (one mbarrier per two-record slot, issued by lane 0; 18 with L2 cache hints). Measured
// (H200 848b735 and d1ddc26): not faster than 14 / 16 anywhere (12288^2 m = 32 51.20 / 51.62 us against
// 16's 50.82 / 51.33; 0.6-2.2 % slower elsewhere); the ncu showed no L2 re-fetch for 18's hints to fix.
// The record is PERF-vnm-small.md "Session 9" / "Session 9b"; the mbarrier / bulk-copy wrappers moved
// to kernel11.cuh (variant 19: a producer warp and a block-wide ring, which did pay at m = 32).
#pragma once
#include <cooperative_groups.h>

#include "cuda/vnm_small/cluster_reduce.cuh"
#include "cuda/vnm_small/kernel8.cuh"

namespace sparsenm::cuda::vnm_small {

template <class Tr, bool kCluster, int kWarps = 4, bool kLong = false>
__global__ void __launch_bounds__(32 * kWarps, kWarps == 4 && !kLong ? 3 : 2) vnm_small_kernel_lean2(const Params p) {
  using T = typename Tr::T;
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  constexpr int C = kLong ? sv::lean_long_chunk_pairs(NT) : sv::lean_chunk_pairs(NT);
  constexpr int U = C * 8;  // 16-byte units per staged row
  constexpr int D = sv::kRingStages;
  constexpr int kThreads = 32 * kWarps;
  constexpr int kRows = 32 * kWarps;  // rows of the block's group (2 tiles of 16 per warp)
  constexpr int kRowsPerRound = kThreads / U;
  constexpr int kRounds = (NT * 8 + kRowsPerRound - 1) / kRowsPerRound;
  constexpr std::uint32_t kBuf = std::uint32_t(NT * 8 * U * 16);
  constexpr std::uint32_t kRec = std::uint32_t(sv::kRecordBytes);
  constexpr std::uint32_t kSlot = 2 * kRec;
  static_assert(C % D == 0 && kThreads % U == 0 && D == 4, "lean2: chunk / ring / thread shape");
  static_assert(kWarps == 4 || kWarps == 8, "lean2: 128-row (13 / 14 / 16) or 256-row (15) groups");
  static_assert(!kLong || kWarps == 4, "lean2: the long chunk is variant 16 (4 warps)");

  extern __shared__ uint4 smem_u4[];
  const std::uint32_t sbase = smem_addr(smem_u4);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::int64_t rt0 = std::int64_t(blockIdx.x) * p.tiles_per_group + 2 * warp;  // tiles rt0, rt0 + 1
  const bool has0 = 2 * warp < p.tiles_per_group && rt0 < p.row_tiles;               // warp uniform
  const bool has1 = 2 * warp + 1 < p.tiles_per_group && rt0 + 1 < p.row_tiles;
  // A missing tile (last group of a tail) streams the last tile's records (no per-record
  // predicate) and is not stored.
  const std::int64_t src0 = has0 ? rt0 : p.row_tiles - 1, src1 = has1 ? rt0 + 1 : p.row_tiles - 1;
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const int nrec = int(min(p.pairs, pair0 + p.pairs_per_split) - pair0);  // pairs of this split, >= 1
  const int nchunks = (nrec + C - 1) / C;

  // ---- the ring: slot s of lane l: tile a's bytes at ring16 + s kSlot + a kRec (+ 512), ring4 + ... ----
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

  // ---- the gather: thread tid copies unit u = tid % U of rows tid / U + r * kRowsPerRound ----
  const int gu = tid % U, gi0 = tid / U;
  std::uint32_t gdst[kRounds];
  bool grow[kRounds];
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    const int i = gi0 + r * kRowsPerRound;
    grow[r] = i < p.m;
    gdst[r] = kRowsPerRound % 8 == 0 ? std::uint32_t(sv::direct_unit(gi0, gu, U)) * 16u + std::uint32_t(r * kRowsPerRound * U * 16)
                                     : std::uint32_t(sv::direct_unit(i, gu, U)) * 16u;
  }
  const std::uint16_t* x = static_cast<const std::uint16_t*>(p.x);
  const std::size_t kstride = std::size_t(kRowsPerRound) * std::size_t(p.k);  // elements per round
  std::int64_t gcol = pair0 * 64 + std::int64_t(gu) * 8;                     // column of the unit, chunk 0
  const std::uint16_t* gsrc = x + std::size_t(gi0 < p.m ? gi0 : 0) * std::size_t(p.k) + std::size_t(gcol);
  auto gather = [&](int b) {  // the next chunk's copies into buffer b, then advance one chunk
    const std::uint32_t d = sbase + std::uint32_t(b) * kBuf;
    if (gcol < p.k) {  // k % 8 == 0: a unit is whole or past the end
#pragma unroll
      for (int r = 0; r < kRounds; ++r)
        if (grow[r]) ring_cp16(d + gdst[r], gsrc + r * kstride);
    } else {
#pragma unroll
      for (int r = 0; r < kRounds; ++r)
        if (grow[r]) cp_async16_zfill(d + gdst[r], x, 0);  // past k: zeros (no bytes read)
    }
    gcol += C * 64;
    gsrc += C * 64;
  };

  // rows m .. 8 NT - 1 of both buffers are never copied: zero them once
  {
    std::uint32_t* xs = reinterpret_cast<std::uint32_t*>(smem_u4);
    const int per_buf = (NT * 8 - p.m) * U * 4;
    for (int idx = tid; idx < 2 * per_buf; idx += kThreads) {
      const int b = idx >= per_buf ? 1 : 0;
      xs[b * int(kBuf / 4) + p.m * U * 4 + (idx - b * per_buf)] = 0u;
    }
  }

  gather(0);
  cp_async_commit_group();  // G0
#pragma unroll
  for (int s = 0; s < D - 1; ++s) issue(s);  // S0 .. S2

  float acc0[NT][4], acc1[NT][4];
#pragma unroll
  for (int b = 0; b < NT; ++b)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc0[b][c] = acc1[b][c] = 0.0f;

  // Per-lane ldmatrix offsets of pair 0, n8 tile 0 of a chunk (kernel8.cuh)
  const std::uint32_t off0 = std::uint32_t(sv::direct_unit(lane & 7, lane >> 3, U)) * 16u;
  const std::uint32_t off1 = off0 ^ 64u;
  constexpr std::uint32_t kTileBytes = std::uint32_t(8 * U * 16);

  for (int c = 0; c < nchunks; ++c) {
    const int b = c & 1;
    ring_wait<D - 1>();  // G(c): older than the D - 1 newest groups (slots cC .. cC + 2)
    __syncthreads();     // everyone's copies of G(c); chunk c - 1's reads of buffer b ^ 1 done
    if (c + 1 < nchunks) gather(b ^ 1);
    cp_async_commit_group();  // G(c + 1), possibly empty
    const std::uint32_t xb = sbase + std::uint32_t(b) * kBuf;
    const std::uint32_t a0base = opaque(xb + off0), a1base = opaque(xb + off1);
    const int np = min(C, nrec - c * C);
#pragma unroll
    for (int j = 0; j < C; ++j) {
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
              const uint4 bf = ldsm_x4((h ? a1base : a0base) + std::uint32_t(nt) * kTileBytes + std::uint32_t(j * 128));
              mma_sp<T>(acc0[nt], h ? a1 : a0, bf, ea, h);
              mma_sp<T>(acc1[nt], h ? b1 : b0, bf, eb, h);
            }
          }
        }
      }
    }
  }
  ring_wait<0>();  // no copy may still target the block's shared memory at exit

  if constexpr (!kCluster) {
    if (has0) store_tile<Tr, NT>(p, acc0, rt0 * 16 + (lane >> 2), lane & 3);
    if (has1) store_tile<Tr, NT>(p, acc1, (rt0 + 1) * 16 + (lane >> 2), lane & 3);
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // The group's partial sums [8 NT][kRows (+ 4)] floats at the start of shared memory (X buffers,
    // then the rings: every copy is complete and every warp past its last ring read at the barrier
    // below); lanes (g, t) write banks g + 8 t (pitch = 4 mod 32): conflict free.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    constexpr int kPitch = kClusterPitch<kRows>;
    static_assert(std::uint32_t(8 * NT * kPitch * 4) <= 2 * kBuf + std::uint32_t(kWarps) * D * kSlot, "lean2: partials fit the block's shared memory");
    float* part = reinterpret_cast<float*>(smem_u4);
    __syncthreads();  // every warp is done with the X buffers and its ring (no copies outstanding: ring_wait<0>)
    stage_pair_partials<NT, kRows>(part, acc0, acc1, warp, lane);
    cluster_sum_store<kRows, kThreads>(cluster, part, p, std::int64_t(blockIdx.x) * p.tiles_per_group * 16, tid);
#else
    __trap();  // sm_90+ only (clusters); the plan maps variant 14 to 4 below sm_90 (geometry_for)
#endif
  }
}

}  // namespace sparsenm::cuda::vnm_small
