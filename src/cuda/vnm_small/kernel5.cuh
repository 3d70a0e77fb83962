// sparsenm — cuda:vnm_gemv variant 8 ("ring"): variant 4 (kernel.cuh: read its header first; same
// records, gather, geometry, mma.sp math and reduce kernel) with the weight records streamed
// through a per-warp shared-memory ring by cp.async instead of register batches.
//
// Status (H200 run 46b70eb, PERF-vnm-small.md "Session 7 measured"): correct (every VnmSmallGpu
// test, racecheck and memcheck clean) but not faster: 3-14 % slower than v4 at m <= 8, 0.91-1.08x
// of v4 at m = 32, the same m slope. So opt-in only. The slope is the X gather (serialised L2
// round trips between the chunk barriers, ceil(m / 8) per staged word), which this kernel keeps
// from v4; the ring only helps once the gather no longer holds the warps outside the consume loop.
//
// Why it was built (the hypothesis of session 7, refuted by the run). Variant 4's time grows by ~9 us (128:2:8) to ~14 us (2:4)
// per n8 tile at 28672 x 8192 while the bytes it reads do not change: per (record, n8 tile) ~35
// cycles of a sub-partition that do not overlap the stream. Its warps run load-4-records / wait /
// compute-4-records: while a warp computes (2 NT mma.sp + 2 NT LDS.128 per record, the mma.sp of
// one n8 tile chained through the records) it has no weight load in flight, and all warps of a
// block also stop streaming during each chunk's X gather (between two __syncthreads). Both gaps
// scale with NT: the compute phase is 2 NT mma per record, and the chunk holds 32 / NT pairs, so
// gather phases come NT times as often per weight byte. Registers also grow with NT (a[4][2]
// records + 32 accumulators: 123 at NT = 4, 2 blocks per SM).
//
// What this kernel does instead: each warp owns a ring of kRingStages record slots (1152 B each)
// in shared memory after the staged X. Lane l copies its own 16-byte A fragments (2 x cp.async.cg)
// and its metadata word (cp.async.ca, 4 B) of a record into a slot and later reads back exactly
// what it copied (LDS.128 x 2 + LDS.32, conflict free: consecutive lanes, consecutive 16 / 4
// bytes), so completion is per thread (cp.async.wait_group) and no barrier is needed. The ring
// runs over the warp's whole record sequence (chunk, own row tile, pair) across chunk boundaries:
// kRingStages - 1 records are always in flight, also while the warp computes and while the block
// gathers the next chunk's X (the prologue is issued before the first gather). Refills go into
// the slot consumed in the previous iteration, whose LDS results were already consumed by that
// iteration's mma.sp (issued in order before the refill): no write-after-read race.
//
// Resources: no record registers (one record's 9 registers at a time), 16 NT (kTiles = 1) or
// 32 NT (kTiles = 2, V = 256) fp32 accumulators; shared = one X buffer (<= 35 KB) + warps *
// kRingStages * 1152 B (8 warps x 4 stages = 36 KB): 3 blocks of 8 warps per SM where registers
// allow, i.e. (kRingStages - 1) * 1152 * 24 = 83 KB in flight per SM (Little's law at 4.2 TB/s
// and ~1.5 us loaded latency needs ~48 KB).
//
// Tails / layout: as variant 4 (rows m..8 NT - 1 zeroed once per block; padded records; stores
// guarded; k splits through the fp32 workspace and the reduce kernel). A warp without a row tile
// in a partial last slab has an empty record sequence: it commits empty groups only.
#pragma once
#include "cuda/vnm_small/kernel.cuh"

namespace sparsenm::cuda::vnm_small {

__device__ __forceinline__ void ring_cp16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void ring_cp4(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void ring_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void ring_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/// The warp's record sequence in consumption order: chunk c0 (from pair0 by chunk_pairs), own
/// row tile tp (< ntile), pair cp (< npairs of the chunk). done once past pair1.
struct RingCursor {
  std::int64_t c0 = 0, pair1 = 0;
  int tp = 0, cp = 0, npairs = 0, ntile = 0, chunk = 1;
  bool done = true;
  __device__ __forceinline__ void start(std::int64_t pair0, std::int64_t p1, int chunk_pairs, int tiles) {
    c0 = pair0;
    pair1 = p1;
    chunk = chunk_pairs;
    ntile = tiles;
    tp = cp = 0;
    done = tiles <= 0 || pair0 >= p1;
    npairs = done ? 0 : int(min(std::int64_t(chunk), pair1 - c0));
  }
  __device__ __forceinline__ void next() {
    if (++cp < npairs) return;
    cp = 0;
    if (++tp < ntile) return;
    tp = 0;
    c0 += chunk;
    done = c0 >= pair1;
    npairs = done ? 0 : int(min(std::int64_t(chunk), pair1 - c0));
  }
};

template <class Tr, int kTiles>
__global__ void __launch_bounds__(Tr::kMaxThreads, Tr::kRingMinBlocks) vnm_small_kernel_ring(const Params p) {
  using T = typename Tr::T;
  constexpr int NT = Tr::kNTiles;
  constexpr int kRows = NT * 8;
  constexpr int D = sparsenm::vnm_small::kRingStages;
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
  const std::uint8_t* sel = p.sel ? p.sel + group * p.windows_pad * 4 : nullptr;

  // own row tiles: tp < ntile (a prefix: rt grows with tp)
  int ntile = 0;
#pragma unroll
  for (int tp = 0; tp < kTiles; ++tp)
    if (tp < p.tiles_per_warp && warp + tp * nwarps < tiles_here) ntile = tp + 1;

  // this warp's ring: D slots of kRecordU4 16-byte units after the staged X
  const uint4* ring = smem_u4 + (std::size_t(kRows) * std::size_t(S)) / 4 + std::size_t(warp) * D * kRecordU4;
  const std::uint32_t ring_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(ring));

  RingCursor prod;
  prod.start(pair0, pair1, p.chunk_pairs, ntile);
  auto issue = [&](int slot) {
    if (!prod.done) {
      const uint4* r =
          p.w + (std::size_t(tile0 + warp + prod.tp * nwarps) * std::size_t(p.pairs) + std::size_t(prod.c0 + prod.cp)) *
                    kRecordU4;
      const std::uint32_t d = ring_s + std::uint32_t(slot * kRecordU4 * 16);
      ring_cp16(d + std::uint32_t(lane) * 16u, r + lane);
      ring_cp16(d + 512u + std::uint32_t(lane) * 16u, r + 32 + lane);
      ring_cp4(d + 1024u + std::uint32_t(lane) * 4u, reinterpret_cast<const std::uint32_t*>(r + 64) + lane);
      prod.next();
    }
    ring_commit();  // one group per record (empty past the end: keeps the wait count uniform)
  };
#pragma unroll
  for (int s = 0; s < D - 1; ++s) issue(s);

  float acc[kTiles][NT][4];
#pragma unroll
  for (int a = 0; a < kTiles; ++a)
#pragma unroll
    for (int b = 0; b < NT; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  for (int idx = threadIdx.x; idx < (kRows - p.m) * S; idx += blockDim.x) xs[p.m * S + idx] = 0u;
  int q = 0;  // records consumed by this warp
  for (std::int64_t c0 = pair0; c0 < pair1; c0 += p.chunk_pairs) {
    const int npairs = int(min(std::int64_t(p.chunk_pairs), pair1 - c0));
    gather_rows<kRows>(p, c0 * 16, npairs * 32, sel, xs, S);
    __syncthreads();
#pragma unroll
    for (int tp = 0; tp < kTiles; ++tp) {
      if (tp < ntile) {
        for (int cp = 0; cp < npairs; ++cp, ++q) {
          ring_wait<D - 2>();          // record q has landed (this thread's copies)
          issue((q + D - 1) % D);      // refill the slot consumed by record q - 1
          const uint4* r = ring + (q % D) * kRecordU4;
          const uint4 a0 = r[lane];
          const uint4 a1 = r[32 + lane];
          const std::uint32_t e = reinterpret_cast<const std::uint32_t*>(r + 64)[lane];
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const uint4 b0 = *reinterpret_cast<const uint4*>(xs + (nt * 8 + g) * S + cp * 32 + 4 * t);
            mma_sp<T>(acc[tp][nt], a0, b0, e, 0);
          }
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const uint4 b1 = *reinterpret_cast<const uint4*>(xs + (nt * 8 + g) * S + cp * 32 + 16 + 4 * t);
            mma_sp<T>(acc[tp][nt], a1, b1, e, 1);
          }
        }
      }
    }
    __syncthreads();
  }
  ring_wait<0>();  // no copy may still target the block's shared memory at exit

#pragma unroll
  for (int tp = 0; tp < kTiles; ++tp) {
    if (tp < ntile) {
      store_tile<Tr, NT>(p, acc[tp], (tile0 + warp + tp * nwarps) * 16 + g, t);
    }
  }
}

}  // namespace sparsenm::cuda::vnm_small
