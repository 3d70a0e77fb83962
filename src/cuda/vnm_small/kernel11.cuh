// sparsenm — cuda:vnm_gemv variant 19 ("lean paired, warp-specialized bulk ring"; session 9b): variant
// 14's kernel (kernel9.cuh: 4 warps of two row tiles per 128-row group, compile-time chunk, X staged
// directly by cp.async behind a chunk barrier, k splits of a group reduced in a cluster) with the weight
// records delivered by a fifth, producer warp through one CTA-wide ring. Read kernel9.cuh first.
//
// Why (PERF-vnm-small.md "Session 9" / "Session 9b"). At 12288^2 the same DRAM bytes (records + X once,
// ncu at 848b735) take 44.1 us at m = 1 and 49-51 us at m = 32 on the same grid. In variants 13-17 a warp
// re-issues a ring slot only after the mma of the record that used it: at m = 32 (16 mma.sp per pair
// against 4 at m = 1) a landed slot waits ~4x longer for its consumer, so fewer of the nominal 83 KB per
// SM (3 slots per warp) are actually requests in flight: the per-warp ring couples the bytes in flight
// to the consumer's speed. Here the ring belongs to the block and is refilled by a warp that does
// nothing else, and a consumer releases a stage right after its ld.shared of the stage (before its mma).
//
// Shape: 160 threads = consumer warps 0..3 (warp w: tiles 2w, 2w + 1, as kernel9) + producer warp 4.
// Ring: kWsStages = 8 stages after the two X buffers, stage = one pair of the group's 8 row tiles = 8
// records of 1152 B (tile t's record at + t 1152: the consumers' ld.shared offsets are kernel9's within
// a stage). Two mbarriers per stage (static shared memory): full (arrival count 1: the producer's
// arrive.expect_tx of 9216 B; the 8 bulk copies complete_tx on it) and empty (arrival count 128: every
// consumer thread arrives after its 6 ld.shared of the stage; mbarrier.arrive has release semantics,
// so the reads are ordered before the producer's acquire-wait and the copy that overwrites them).
// Pair q of the split uses stage q % 8 for the (q / 8)-th time: consumers wait full with parity
// (q / 8) & 1, the producer waits empty with the opposite parity (a fresh barrier's previous phase
// counts as complete, so the first 8 stages issue at once). Producer lanes 0..7 own tile t = lane's
// record stream (a missing tile of a tail group streams the last tile's records, as kernel9; never
// stored); lane 0 posts expect_tx, then lanes 0..7 issue one 1152-byte cp.async.bulk each.
// Shared memory at NT = 4: 2 x 18,432 B of X + 73,728 B of ring = 110,592 B: 2 blocks per SM, i.e.
// 16 stages = 147 KB of weights in flight per SM (14: 83 KB nominal, less while slots wait for mma).
// The chunk barrier is a named barrier (bar.sync 1, 128) of the consumers only. Every issued stage is
// consumed, so no bulk copy is in flight at the epilogue, where the cluster partials reuse the buffers.
//
// Measured (H200 d1ddc26, PERF-vnm-small.md "Session 9b measured"): correct (every VnmSmallGpu test,
// memcheck 0 errors, racecheck 0 hazards). Its time does not grow with m (12288^2 ncu 48.42 / 48.16 us at
// m = 1 / 32; the lean paired kernels 44.86 / 50.50): the coupling is gone, but its stream rate is lower
// (74-75 % of DRAM at 12288^2, 79 % at 28672 x 8192, against 80-81 % for 14 / 12 at m <= 8). 12288^2 m = 32
// 49.95 us against 16's 51.33 (cuSPARSELt 48.61); 5-8 % slower than the default at m <= 16, 2 % at 28672 x
// 8192 m = 32. The plan takes it at m > 24 where 14 would run a cluster of splits (vnm_small.cu).
// Session 9e (s9v24c, d7d9292; PERF-vnm-small.md "Session 9e"): two knobs of this kernel raced and removed —
// 16-byte cp.async from all producer lanes instead of cp.async.bulk ties it (the copy engine is not the
// rate limiter); 4 stages at 3 blocks per SM (14's grid) is 12-23 % slower.
// Session 9f (s9v24d, 94e17f6; PERF-vnm-small.md "Session 9f"): per-warp stage slices (each warp's 2-record
// slice of a stage with its own full / empty mbarriers, the producer refilling the slices round-robin) raced as
// variant 23 and removed: 13 % slower than this kernel at 12288^2 m = 32 (56.54 against 49.89 us), 3-5 % faster
// at 28672 x 8192 m <= 16 but still behind 12 there.
// Session 10 (s10v24, 3d88be0; PERF-vnm-small.md "Session 10 (s10v24)"): the same slices with a producer that never
// blocks on one warp (one refill stream per consumer warp, mbarrier.test_wait + ballot; variant 23) and this
// kernel with its producer polling test_wait instead of try_wait (variant 24) raced and removed: both faster than
// this kernel at 12288^2 m <= 16 (2.5-6.6 %), slower at m = 32 (53.98 / 50.43 against 49.82 us), never faster than
// the default.
#pragma once
#include <cooperative_groups.h>

#include "cuda/vnm_small/kernel9.cuh"

namespace sparsenm::cuda::vnm_small {

/// mbarrier and bulk-copy wrappers of variant 19 (variant 17, session 9, used them too; removed in 9b) (shared-memory addresses as 32-bit values).
__device__ __forceinline__ void bulk_mbar_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bulk_mbar_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "BULK_WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra BULK_WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
/// 1-D bulk copy global -> shared (bytes % 16 == 0, both addresses 16-byte aligned), completing on `bar`.
__device__ __forceinline__ void bulk_copy(std::uint32_t dst, const void* src, std::uint32_t bytes, std::uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst), "l"(src),
               "r"(bytes), "r"(bar)
               : "memory");
}

__device__ __forceinline__ void ws_mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/// The consumers' chunk barrier (barrier 1, 128 threads; __syncthreads is barrier 0).
__device__ __forceinline__ void ws_consumer_sync() { asm volatile("bar.sync 1, 128;" ::: "memory"); }

inline constexpr int kWsConsumerWarps = 4;
inline constexpr int kWsThreads = 32 * (kWsConsumerWarps + 1);

template <class Tr, bool kCluster>
__global__ void __launch_bounds__(kWsThreads, 2) vnm_small_kernel_ws(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using T = typename Tr::T;
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  constexpr int C = sv::lean_chunk_pairs(NT);
  constexpr int U = C * 8;  // 16-byte units per staged row
  constexpr int S = sv::kWsStages;
  constexpr int kThreads = 32 * kWsConsumerWarps;  // consumer threads (gather, named barrier)
  constexpr int kRows = 2 * 16 * kWsConsumerWarps;  // 128 rows of the group
  constexpr int kRowsPerRound = kThreads / U;
  constexpr int kRounds = (NT * 8 + kRowsPerRound - 1) / kRowsPerRound;
  constexpr std::uint32_t kBuf = std::uint32_t(NT * 8 * U * 16);
  constexpr std::uint32_t kRec = std::uint32_t(sv::kRecordBytes);
  constexpr std::uint32_t kStage = 2 * kWsConsumerWarps * kRec;  // 8 records
  static_assert(kThreads % U == 0 && kStage % 16 == 0 && kBuf % 16 == 0, "ws: shapes");

  extern __shared__ uint4 smem_u4[];
  __shared__ alignas(8) std::uint64_t ws_bar[2 * S];  // full [0, S), empty [S, 2 S)
  const std::uint32_t sbase = smem_addr(smem_u4);
  const std::uint32_t full0 = smem_addr(&ws_bar[0]), empty0 = smem_addr(&ws_bar[S]);
  const std::uint32_t ring = sbase + 2 * kBuf;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const int nrec = int(min(p.pairs, pair0 + p.pairs_per_split) - pair0);  // pairs of this split, >= 1
  const char* wbase = reinterpret_cast<const char*>(p.w);

  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      bulk_mbar_init(full0 + 8u * std::uint32_t(s), 1u);
      bulk_mbar_init(empty0 + 8u * std::uint32_t(s), std::uint32_t(kThreads));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the bulk copies' complete_tx
  }
  __syncthreads();

  float acc0[NT][4], acc1[NT][4];
#pragma unroll
  for (int b = 0; b < NT; ++b)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc0[b][c] = acc1[b][c] = 0.0f;
  const std::int64_t rt0 = std::int64_t(blockIdx.x) * p.tiles_per_group + 2 * warp;  // consumers: tiles rt0, rt0 + 1

  if (warp == kWsConsumerWarps) {
    // ---- producer: lane t < 8 streams tile t's records; one stage per pair ----
    const int t = lane & 7;
    const std::int64_t rt = std::int64_t(blockIdx.x) * p.tiles_per_group + t;
    const std::int64_t src = t < p.tiles_per_group && rt < p.row_tiles ? rt : p.row_tiles - 1;
    const char* wsrc = wbase + (std::size_t(src) * std::size_t(p.pairs) + std::size_t(pair0)) * kRec;
    const std::uint32_t dst0 = ring + std::uint32_t(t) * kRec;
    int s = 0;
    std::uint32_t ph = 0;
    for (int q = 0; q < nrec; ++q) {
      const std::uint32_t full = full0 + 8u * std::uint32_t(s);
      bulk_mbar_wait(empty0 + 8u * std::uint32_t(s), ph ^ 1u);  // the stage's previous use released
      if (lane == 0) bulk_mbar_expect_tx(full, kStage);
      __syncwarp();
      if (lane < 8) bulk_copy(dst0 + std::uint32_t(s) * kStage, wsrc, kRec, full);
      wsrc += kRec;
      if (++s == S) s = 0, ph ^= 1u;
    }
    __syncwarp();
  } else {
    // ---- consumers: kernel9's gather and mma, records from the block's ring ----
    const int nchunks = (nrec + C - 1) / C;
    const std::uint32_t ring16 = opaque(ring + std::uint32_t(2 * warp) * kRec + std::uint32_t(lane) * 16u);
    const std::uint32_t ring4 = opaque(ring + std::uint32_t(2 * warp) * kRec + 1024u + std::uint32_t(lane) * 4u);

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
    const std::size_t kstride = std::size_t(kRowsPerRound) * std::size_t(p.k);
    std::int64_t gcol = pair0 * 64 + std::int64_t(gu) * 8;
    const std::uint16_t* gsrc = x + std::size_t(gi0 < p.m ? gi0 : 0) * std::size_t(p.k) + std::size_t(gcol);
    auto gather = [&](int b) {
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
    {  // rows m .. 8 NT - 1 of both buffers are never copied: zero them once
      std::uint32_t* xs = reinterpret_cast<std::uint32_t*>(smem_u4);
      const int per_buf = (NT * 8 - p.m) * U * 4;
      for (int idx = tid; idx < 2 * per_buf; idx += kThreads) {
        const int b = idx >= per_buf ? 1 : 0;
        xs[b * int(kBuf / 4) + p.m * U * 4 + (idx - b * per_buf)] = 0u;
      }
    }
    gather(0);
    cp_async_commit_group();  // G0

    const std::uint32_t off0 = std::uint32_t(sv::direct_unit(lane & 7, lane >> 3, U)) * 16u;
    const std::uint32_t off1 = off0 ^ 64u;
    constexpr std::uint32_t kTileBytes = std::uint32_t(8 * U * 16);
    int s = 0;
    std::uint32_t ph = 0, soff = 0;
    for (int c = 0; c < nchunks; ++c) {
      const int b = c & 1;
      ring_wait<0>();      // G(c), this thread's only cp.async group
      ws_consumer_sync();  // every consumer's copies of G(c); chunk c - 1's reads of buffer b ^ 1 done
      if (c + 1 < nchunks) gather(b ^ 1);
      cp_async_commit_group();  // G(c + 1), possibly empty
      const std::uint32_t xb = sbase + std::uint32_t(b) * kBuf;
      const std::uint32_t a0base = opaque(xb + off0), a1base = opaque(xb + off1);
      const int np = min(C, nrec - c * C);
#pragma unroll
      for (int j = 0; j < C; ++j) {
        if (j < np) {
          bulk_mbar_wait(full0 + 8u * std::uint32_t(s), ph);
          uint4 a0, a1, b0, b1;
          std::uint32_t ea, eb;
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a0.x), "=r"(a0.y), "=r"(a0.z), "=r"(a0.w) : "r"(ring16 + soff) : "memory");
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a1.x), "=r"(a1.y), "=r"(a1.z), "=r"(a1.w) : "r"(ring16 + soff + 512u) : "memory");
          asm volatile("ld.shared.u32 %0, [%1];" : "=r"(ea) : "r"(ring4 + soff) : "memory");
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(b0.x), "=r"(b0.y), "=r"(b0.z), "=r"(b0.w) : "r"(ring16 + soff + kRec) : "memory");
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(b1.x), "=r"(b1.y), "=r"(b1.z), "=r"(b1.w) : "r"(ring16 + soff + kRec + 512u) : "memory");
          asm volatile("ld.shared.u32 %0, [%1];" : "=r"(eb) : "r"(ring4 + soff + kRec) : "memory");
          ws_mbar_arrive(empty0 + 8u * std::uint32_t(s));  // release the stage before the mma
          if (++s == S) s = 0, soff = 0, ph ^= 1u;
          else soff += kStage;
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
    ring_wait<0>();  // no copy may still target the block's shared memory at exit
  }

  const bool consumer = warp < kWsConsumerWarps;
  const bool has0 = consumer && 2 * warp < p.tiles_per_group && rt0 < p.row_tiles;
  const bool has1 = consumer && 2 * warp + 1 < p.tiles_per_group && rt0 + 1 < p.row_tiles;
  if constexpr (!kCluster) {
    if (has0) store_tile<Tr, NT>(p, acc0, rt0 * 16 + (lane >> 2), lane & 3);
    if (has1) store_tile<Tr, NT>(p, acc1, (rt0 + 1) * 16 + (lane >> 2), lane & 3);
  } else {
    // kernel9's cluster reduction: [8 NT][128 + 4] fp32 partials at the start of shared memory (every
    // stage consumed, every bulk copy complete, every gather waited: the buffers are free after the barrier).
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    constexpr int kPitch = kClusterPitch<kRows>;
    static_assert(std::uint32_t(8 * NT * kPitch * 4) <= 2 * kBuf + S * kStage, "ws: partials fit the block's shared memory");
    float* part = reinterpret_cast<float*>(smem_u4);
    __syncthreads();
    if (consumer) stage_pair_partials<NT, kRows>(part, acc0, acc1, warp, lane);
    cluster_sum_store<kRows, kWsThreads>(cluster, part, p, std::int64_t(blockIdx.x) * p.tiles_per_group * 16, tid);
  }
#else
  __trap();  // sm_90+ only (bulk copies, clusters); the plan maps variant 19 to 4 below sm_90 (geometry_for)
#endif
}

}  // namespace sparsenm::cuda::vnm_small
