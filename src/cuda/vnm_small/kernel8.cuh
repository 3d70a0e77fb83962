// sparsenm — cuda:vnm_gemv variant 12 ("lean"): variant 9's algorithm (asynchronous double-buffered
// X gather by cp.async, weight records through a per-warp cp.async ring, mma.sp) for hardware 2:4
// with direct X staging only (k % 8 == 0, 16-byte aligned X, 8 warps per 128-row group), written
// so that the per-record instruction stream is close to the essential one. Read kernel6.cuh first.
//
// Status (H200 run 04e6c4d, PERF-vnm-small.md "Session 8 measured"): correct (every VnmSmallGpu
// test, memcheck clean); 69 instructions per record at m = 32 (ncu; variant 9: 192), 39 at m = 8
// (119). With the one-wave split rule (layout.hpp lean_direct) the 2:4 default at every m when
// k % 8 == 0: 65.3 / 66.2 / 67.4 / 73.8 us at 28672 x 8192 m = 1 / 8 / 16 / 32 (cuSPARSELt ~70.4-71.3),
// 47.8 / 48.8 / 50.9 / 55.5 at 12288^2 (cuSPARSELt ~48.0-48.5). Left at m = 32: MIO throttle (every
// warp loads the same B fragments) and the chunk barrier.
//
// Why (PERF-vnm-small.md "Session 7d" / "Session 8"). At m = 32 variant 9 is bound by each SM's
// instruction stream (ncu: ~265 warp instructions per 1152-byte record, DRAM 60 %): its inner loop
// is ~103 instructions per record on the common path (the essential part is 2 NT LDSM + 2 NT
// HMMA.SP + 3 LDS + 3 LDGSTS + 2 group ops), the rest is the general record cursor (64-bit
// multiplies per issued record, chunk / tile / pair bookkeeping), run-time cp.async wait counts
// (a branch tree per record), and a chunk loop of ~140 instructions plus an integer division per
// gathered unit, every 16 / NT pairs. This kernel:
//   - fixes the chunk to C = lean_chunk_pairs(NT) pairs at compile time (C % 4 == 0, 8 C | 256) and
//     unrolls the record loop over a chunk, so the ring slot, its shared addresses and the
//     ldmatrix offsets within the chunk are immediates;
//   - walks the warp's records as one pointer (hw24: a warp's records of a split are consecutive);
//   - commits exactly one ring group per record and one gather group per chunk (empty when there
//     is nothing to copy), in the order G0, R0, R1, R2, then per chunk c: G(c + 1), R(cC + 3), ...
//     so every wait count is a constant: the chunk top waits with D - 1 (G(c) is older than the
//     D - 1 newest groups, records cC .. cC + 2), record j of a chunk with D - 1 for j < D - 1
//     (G(c + 1) was committed after it) and D - 2 otherwise;
//   - gathers with a per-thread fixed unit (u = tid % 8C: no division in the loop) and kRounds
//     fixed row offsets computed once.
// Launched by launch_lean (launch.cuh) only when the geometry and X allow it; everything else of
// variant 12 runs variant 9's kernel unchanged.
#pragma once
#include "cuda/vnm_small/kernel6.cuh"

namespace sparsenm::cuda::vnm_small {

/// An opaque copy of v: ptxas keeps it in a register instead of recomputing it from its sources
/// in the record loop (at the 80-register bound it otherwise rematerialises the shared-memory base,
/// lane offsets and ring addresses per record: ~20 instructions, sm_90a).
__device__ __forceinline__ std::uint32_t opaque(std::uint32_t v) {
  asm volatile("mov.b32 %0, %0;" : "+r"(v));
  return v;
}

template <class Tr>
__global__ void __launch_bounds__(256, Tr::kRingMinBlocks) vnm_small_kernel_lean(const Params p) {
  using T = typename Tr::T;
  namespace sv = sparsenm::vnm_small;
  constexpr int NT = Tr::kNTiles;
  constexpr int C = sv::lean_chunk_pairs(NT);
  constexpr int U = C * 8;  // 16-byte units per staged row
  constexpr int D = sv::kRingStages;
  constexpr int kThreads = 256;
  constexpr int kRowsPerRound = kThreads / U;
  constexpr int kRounds = (NT * 8 + kRowsPerRound - 1) / kRowsPerRound;
  constexpr std::uint32_t kBuf = std::uint32_t(NT * 8 * U * 16);
  constexpr std::uint32_t kRec = std::uint32_t(sv::kRecordBytes);
  static_assert(C % D == 0 && kThreads % U == 0 && D == 4, "lean: chunk / ring / thread shape");

  extern __shared__ uint4 smem_u4[];
  const std::uint32_t sbase = smem_addr(smem_u4);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::int64_t rt = std::int64_t(blockIdx.x) * p.tiles_per_group + warp;
  const bool has_tile = warp < p.tiles_per_group && rt < p.row_tiles;  // warp uniform
  // A warp without a row tile (last group of a tail) streams the last tile's records like the
  // others (no per-record predicate) and skips only the store.
  const std::int64_t rt_src = has_tile ? rt : p.row_tiles - 1;
  const std::int64_t pair0 = std::int64_t(blockIdx.y) * p.pairs_per_split;
  const int nrec = int(min(p.pairs, pair0 + p.pairs_per_split) - pair0);  // >= 1 (every split non-empty)
  const int nchunks = (nrec + C - 1) / C;

  // ---- the ring: lane l's bytes of slot s at ring16 + s * kRec (+ 512) and ring4 + s * kRec ----
  const std::uint32_t ring16 = opaque(sbase + 2 * kBuf + std::uint32_t(warp) * (D * kRec) + std::uint32_t(lane) * 16u);
  const std::uint32_t ring4 = opaque(sbase + 2 * kBuf + std::uint32_t(warp) * (D * kRec) + 1024u + std::uint32_t(lane) * 4u);
  const char* wrec = reinterpret_cast<const char*>(p.w + (std::size_t(rt_src) * std::size_t(p.pairs) + std::size_t(pair0)) * kRecordU4);
  const char* src16 = wrec + lane * 16;
  const char* src4 = wrec + 1024 + lane * 4;
  int left = nrec;  // records not yet issued
  auto issue = [&](int slot) {     // slot: a constant after unrolling
    if (left > 0) {
      ring_cp16(ring16 + std::uint32_t(slot) * kRec, src16);
      ring_cp16(ring16 + std::uint32_t(slot) * kRec + 512u, src16 + 512);
      ring_cp4(ring4 + std::uint32_t(slot) * kRec, src4);
      src16 += kRec;
      src4 += kRec;
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
    // rounds 8 rows apart (NT >= 3) keep i % 8, so their offsets differ by a constant (immediates)
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
  for (int s = 0; s < D - 1; ++s) issue(s);  // R0 .. R2

  float acc[NT][4];
#pragma unroll
  for (int b = 0; b < NT; ++b)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[b][c] = 0.0f;

  // Per-lane ldmatrix offsets of pair 0, n8 tile 0 of a chunk (h = 0 / 1). Tile nt adds nt * 8
  // rows (direct_unit(8 nt + r, u) = 8 nt U + direct_unit(r, u)), pair j adds j * 128 bytes
  // (bit 6, flipped for h = 1, is untouched by either): both immediates.
  const std::uint32_t off0 = std::uint32_t(sv::direct_unit(lane & 7, lane >> 3, U)) * 16u;
  const std::uint32_t off1 = off0 ^ 64u;
  constexpr std::uint32_t kTileBytes = std::uint32_t(8 * U * 16);

  for (int c = 0; c < nchunks; ++c) {
    const int b = c & 1;
    ring_wait<D - 1>();  // G(c): older than the D - 1 newest groups (records cC .. cC + 2)
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
          ring_wait<D - 1>();  // G(c + 1) is newer than record cC + j
        else
          ring_wait<D - 2>();
        issue((j + D - 1) % D);  // record cC + j + 3 into the slot record cC + j - 1 used
        {
          const std::uint32_t s = std::uint32_t(j % D) * kRec;
          uint4 a0, a1;
          std::uint32_t e;
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a0.x), "=r"(a0.y), "=r"(a0.z), "=r"(a0.w) : "r"(ring16 + s) : "memory");
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a1.x), "=r"(a1.y), "=r"(a1.z), "=r"(a1.w) : "r"(ring16 + s + 512u) : "memory");
          asm volatile("ld.shared.u32 %0, [%1];" : "=r"(e) : "r"(ring4 + s) : "memory");
#pragma unroll
          for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              const uint4 bf = ldsm_x4((h ? a1base : a0base) + std::uint32_t(nt) * kTileBytes + std::uint32_t(j * 128));
              mma_sp<T>(acc[nt], h ? a1 : a0, bf, e, h);
            }
          }
        }
      }
    }
  }
  ring_wait<0>();  // no copy may still target the block's shared memory at exit

  if (has_tile) store_tile<Tr, NT>(p, acc, rt * 16 + (lane >> 2), lane & 3);
}

}  // namespace sparsenm::cuda::vnm_small
