// sparsenm — cuda:vnm_gemv variant 10 ("paired tiles"): variant 9 (asynchronous double-buffered
// X gather, per-warp cp.async weight ring) with every warp owning TWO row tiles of the block's slab
// and consuming their records of one pair together, so that each B fragment (X, from shared
// memory) is loaded once per k32 step and feeds both tiles' mma.sp. Read kernel6.cuh first.
//
// Status (H200 run 9a76b61, PERF-vnm-small.md "Session 7c measured"): correct (every VnmSmallGpu
// test, memcheck 0), but 0.81-1.00x of variant 9 in all 18 measured cases, already at m = 8 (NT =
// 1, where the B traffic is smallest) and no better at m = 32: halving the B fragment traffic
// bought nothing, so it is not what grows with NT; half the warps per SM cost 3-9 %. Opt-in only.
//
// Why (PERF-vnm-small.md "Session 7c"). Variant 9's time at m > 8 grows faster than linearly in
// the n8 tiles NT (128:2:8 28672 x 8192: +3.0 us from NT 1 to 2, +14.8 from 2 to 4). Per record
// (16 rows x one pair, 1152 bytes of weight) and warp, variant 9 reads from shared memory 2 NT
// ldmatrix.x4 of B (512 bytes each: every warp of the block loads the same fragments), the record
// twice (cp.async write + LDS read back, 2 x 1152 bytes) and its share of the staged X write
// (~128 NT bytes): in 128-byte wavefronts 8 NT + 18 + NT = 54 at NT = 4 (36 at NT = 2, 27 at
// NT = 1), i.e. ~6 bytes of shared-memory traffic per weight byte at NT = 4. At the stream rate
// (~4.2 TB/s over 132 SMs at ~1.9 GHz: ~17 weight bytes per SM clock) that is ~100 of the SM's
// 128 bytes per clock (~80 %) at NT = 4, ~55 % at NT = 2, ~40 % at NT = 1: the shared-memory pipe
// (shared by ldmatrix, LDS, the LDGSTS writes, and with the MIO queue the mma.sp operand traffic)
// crosses into the limit between NT = 2 and 4, the superlinear growth measured. Sharing each B
// fragment between two tiles halves the B part: 4 NT + 18 + NT = 38 wavefronts per record at
// NT = 4 (-30 %), 28 at NT = 2.
//
// Records. The warp owns tiles `warp` and `warp + nwarps` (nwarps = tiles of the slab / 2: 4 at
// V = 128 and hw24, 8 at V = 256, 2 at V = 64, 1 at V = 32). Its ring runs in the order chunk ->
// pair -> tile, two records per step (an empty cp.async group stands for the second tile when the
// warp has one: the group accounting stays uniform; the mma of that tile then reads stale ring
// bytes into accumulators that are never stored). kPairRingStages = 8 slots (9.2 KB) per warp:
// step s waits for its two records, refills the two slots step s - 1 read (their registers were
// consumed by that step's mma.sp, which precede in program order), so 6 records (3 steps) are in
// flight while the warp computes. Accounting: layout.hpp pair_ring_wait_newer /
// pair_gather_wait_newer (chunks >= kPairMinChunk pairs), replayed on the CPU.
//
// Per step and k32 half h: NT ldmatrix.x4 (one per n8 tile), 2 NT mma.sp. Registers: 2 x 4 NT
// accumulators (32 at NT = 4) + two records' A / metadata (18) + one B fragment at a time.
// Shared: 2 X buffers as variant 9 (16 / NT pairs per chunk, >= 3) + 4 warps x 9.2 KB = ~71-74 KB
// at V = 128: 3 blocks of 4 warps per SM (12 warps, 72 records = 83 KB of weight in flight per SM,
// as variant 9's 24 warps x 3); V = 256: 8 warps, 2 blocks. Geometry: run 1's rule (splits from the
// warps, separate reduce kernel), so half the warps per block means up to twice the splits.
#pragma once
#include "cuda/vnm_small/kernel6.cuh"

namespace sparsenm::cuda::vnm_small {

/// cp.async.wait_group with a runtime count in [0, kPairRingStages - 2].
__device__ __forceinline__ void pair_wait_newer(int newer) {
  static_assert(sparsenm::vnm_small::kPairRingStages == 8, "pair_wait_newer covers counts 0..6");
  switch (newer) {
    case 0: ring_wait<0>(); break;
    case 1: ring_wait<1>(); break;
    case 2: ring_wait<2>(); break;
    case 3: ring_wait<3>(); break;
    case 4: ring_wait<4>(); break;
    case 5: ring_wait<5>(); break;
    default: ring_wait<6>(); break;
  }
}

/// The warp's record sequence of variant 10: chunk c0 (from pair0 by chunk_pairs), pair cp (<
/// npairs of the chunk), tile tp (0, 1; tp >= ntile: an empty group). done once past pair1.
struct PairCursor {
  std::int64_t c0 = 0, pair1 = 0;
  int tp = 0, cp = 0, npairs = 0, chunk = 1;
  bool done = true;
  __device__ __forceinline__ void start(std::int64_t pair0, std::int64_t p1, int chunk_pairs, int tiles) {
    c0 = pair0;
    pair1 = p1;
    chunk = chunk_pairs;
    tp = cp = 0;
    done = tiles <= 0 || pair0 >= p1;
    npairs = done ? 0 : int(min(std::int64_t(chunk), pair1 - c0));
  }
  __device__ __forceinline__ void next() {
    if (++tp < 2) return;
    tp = 0;
    if (++cp < npairs) return;
    cp = 0;
    c0 += chunk;
    done = c0 >= pair1;
    npairs = done ? 0 : int(min(std::int64_t(chunk), pair1 - c0));
  }
};

template <class Tr, bool kDirect>
__global__ void __launch_bounds__(Tr::kMaxThreads, 2) vnm_small_kernel_pair(const Params p) {
  using T = typename Tr::T;
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  constexpr int D = sv::kPairRingStages;
  extern __shared__ uint4 smem_u4[];
  const std::uint32_t sbase = smem_addr(smem_u4);
  const std::uint32_t buf_bytes = std::uint32_t(NT * 8 * p.smem_words_per_row * 4);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const std::int64_t group = blockIdx.x;
  const std::int64_t tile0 = group * p.tiles_per_group;
  const int tiles_here = int(min(std::int64_t(p.tiles_per_group), p.row_tiles - tile0));
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const std::int64_t pair1 = min(p.pairs, pair0 + p.pairs_per_split);
  const std::uint8_t* sel = p.sel ? p.sel + group * p.windows_pad * 4 : nullptr;
  const int U = p.chunk_pairs * 8;  // direct: 16-byte units per staged row

  int ntile = 0;  // own tiles: warp, warp + nwarps
#pragma unroll
  for (int tp = 0; tp < 2; ++tp)
    if (tp < p.tiles_per_warp && warp + tp * nwarps < tiles_here) ntile = tp + 1;

  // ---- the ring: D slots per warp after the two X buffers ----
  const uint4* ring = smem_u4 + std::size_t(2) * (buf_bytes / 16) + std::size_t(warp) * D * kRecordU4;
  const std::uint32_t ring_s = smem_addr(ring);
  PairCursor prod;
  prod.start(pair0, pair1, p.chunk_pairs, ntile);
  int ni = 0;  // ring groups committed by this thread (record r is ring group r)
  auto issue = [&](int slot) {
    if (!prod.done) {
      if (prod.tp < ntile) {
        const uint4* r =
            p.w + (std::size_t(tile0 + warp + prod.tp * nwarps) * std::size_t(p.pairs) + std::size_t(prod.c0 + prod.cp)) *
                      kRecordU4;
        const std::uint32_t d = ring_s + std::uint32_t(slot * kRecordU4 * 16);
        ring_cp16(d + std::uint32_t(lane) * 16u, r + lane);
        ring_cp16(d + 512u + std::uint32_t(lane) * 16u, r + 32 + lane);
        ring_cp4(d + 1024u + std::uint32_t(lane) * 4u, reinterpret_cast<const std::uint32_t*>(r + 64) + lane);
      }
      prod.next();
    }
    ring_commit();  // one group per record (empty for a missing tile or past the end)
    ++ni;
  };
#pragma unroll
  for (int s = 0; s < D - 2; ++s) issue(s);  // the weight does not depend on the transpose

  if constexpr (kDirect) {  // rows m .. 8 NT - 1 of both buffers are never copied; zero them once
    std::uint32_t* xs = reinterpret_cast<std::uint32_t*>(smem_u4);
    const int per_buf = (NT * 8 - p.m) * U * 4, words_buf = int(buf_bytes / 4);
    for (int idx = threadIdx.x; idx < 2 * per_buf; idx += blockDim.x) {
      const int b = idx >= per_buf ? 1 : 0;
      xs[b * words_buf + p.m * U * 4 + (idx - b * per_buf)] = 0u;
    }
  }
  pdl_wait();  // transposed path: Xt is complete and visible from here on (no-op otherwise)

  // ---- the gather of chunk [c0, c0 + npairs) into buffer b: kernel6.cuh's async_gather_chunk, one group ----
  auto gather = [&](std::int64_t c0, int b) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    async_gather_chunk<NT, kDirect>(p, sel, c0, npairs, sbase + std::uint32_t(b) * buf_bytes, U);
  };

  float acc[2][NT][4];
#pragma unroll
  for (int a = 0; a < 2; ++a)
#pragma unroll
    for (int b = 0; b < NT; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  std::uint32_t lane_off[NT];
  ldsm_lane_offsets<NT, kDirect>(lane, U, lane_off);

  int qg = 0;  // ni when the latest gather group was committed
  if (pair0 < pair1) {
    gather(pair0, 0);
    qg = ni;
  }
  int q = 0, buf = 0;  // q: the step's first record (2 per step)
  for (std::int64_t c0 = pair0; c0 < pair1; c0 += p.chunk_pairs, buf ^= 1) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    pair_wait_newer(sv::pair_gather_wait_newer(ni, qg));  // this chunk's copies (this thread's) ...
    __syncthreads();                                      // ... everyone's; chunk c - 1's reads done
    const std::int64_t cn = c0 + p.chunk_pairs;
    if (cn < pair1) {  // the next chunk's copies into the buffer chunk c - 1 used
      gather(cn, buf ^ 1);
      qg = ni;
    }
    const std::uint32_t xb = sbase + std::uint32_t(buf) * buf_bytes;
    if (ntile > 0) {
      for (int cp = 0; cp < npairs; ++cp, q += 2) {
        if (sv::pair_ring_wait_newer(q + 1, qg) == D - 3)  // records q and q + 1 have landed
          ring_wait<D - 3>();
        else
          ring_wait<D - 4>();
        issue((q + D - 2) % D);  // refill the slots step s - 1 read
        issue((q + D - 1) % D);
        const uint4* r0 = ring + (q % D) * kRecordU4;
        const uint4* r1 = ring + ((q + 1) % D) * kRecordU4;
        const uint4 a00 = r0[lane], a01 = r0[32 + lane];
        const std::uint32_t e0 = reinterpret_cast<const std::uint32_t*>(r0 + 64)[lane];
        const uint4 a10 = r1[lane], a11 = r1[32 + lane];
        const std::uint32_t e1 = reinterpret_cast<const std::uint32_t*>(r1 + 64)[lane];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const uint4 bf = kDirect ? ldsm_x4(xb + ((std::uint32_t(cp * 128) + lane_off[nt]) ^ std::uint32_t(h * 64)))
                                     : ldsm_x4_trans(xb + std::uint32_t((cp * 64 + h * 32) * NT * 16) + lane_off[nt]);
            mma_sp<T>(acc[0][nt], h ? a01 : a00, bf, e0, h);
            mma_sp<T>(acc[1][nt], h ? a11 : a10, bf, e1, h);
          }
        }
      }
    }
  }
  ring_wait<0>();  // no copy may still target the block's shared memory at exit

  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int tp = 0; tp < 2; ++tp) {
    if (tp < ntile) {
      store_tile<Tr, NT>(p, acc[tp], (tile0 + warp + tp * nwarps) * 16 + g, t);
    }
  }
}

}  // namespace sparsenm::cuda::vnm_small
