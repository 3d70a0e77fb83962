// sparsenm — persistent sparse-tensor-core SpMM on Hopper (wgmma.mma_async.sp, sm_90a), two B
// sources sharing one mainloop:
//
//   * hardware 2:4 (run_sptc24_wgmma_persistent): B = X [m][k] row-major = K-major B, by TMA
//     (128B swizzle), as in sptc24_wgmma.cu.
//   * V:2:M venom (run_vnm_wgmma, plan candidate "cuda:vnm_wgmma"): after the plan-time gather
//     (pack.hpp PackedVnm) every CTA row tile lies in one row group whose sparse-k index j reads
//     column gather[group][j] of X. The gather is done on B's rows in MN-major form: X is first
//     transposed once per run into a workspace Xt [k][ldt] (ldt = m rounded up to 8, zero padded),
//     so the B tile row of sparse-k index j is the contiguous run Xt[col][m0 .. m0+BN) and the
//     producer warpgroup fetches it with 16-byte cp.async copies into an MN-major 128B-swizzled
//     tile [BN/64 blocks][64 k][64 m] that wgmma reads with trans-b = 1 (LBO = 8 KB between the
//     64-wide m blocks, SBO = 1 KB between groups of 8 k). Why a transposed workspace: the 4
//     selected columns of a window are scattered 2-byte elements of every X row, so a K-major
//     gather would be element-wise; in Xt they are whole rows. Its cost is one pass over X
//     (2*m*k*2 bytes), measured separately by the bench ("sparsenm:vnm_transpose"): ~3.1 TB/s on
//     an H200, 3-10 % of the total. The gather's producer instruction stream limited the kernel
//     (session 4, docs/PERF-sptc.md: the SHFL -> 64-bit address -> LDGSTS chain of 4 producer warps,
//     not the memory path and not the trans-b wgmma); gather mode 6 (the plan's) streamlines it,
//     1.9-2.3x faster; see the gather modes below and the schedule options (PSched): the tile order (groups of row tiles
//     sweeping the column tiles, or groups of column tiles sweeping the row tiles so that the Xt
//     slice every row tile gathers from stays in L2) and the prefetch of the gather indices one
//     stage ahead (off the producer's critical path).
//
// CTA = 1 producer warpgroup + 2 consumer warpgroups; the grid is persistent (one CTA per SM, a
// static round-robin over tiles), the mbarrier ring runs on across tiles, so the producer loads
// tile i+1 while the consumers run tile i's epilogue (which stages 64 Y rows at a time through
// a dedicated buffer, so the ring never waits for it). Consumers split the tile by rows (ROWSPLIT:
// BM = 128 W rows, 64 each, sharing B) or by columns (BM = 64 W rows shared, BN/2 Y rows each),
// the latter for V = 64 and V = 32 weights whose slabs are 64 rows.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/sptc/epilogue.cuh"
#include "cuda/sptc/ptx.cuh"
#include "cuda/sptc/sptc.hpp"
#include "cuda/sptc/wgmma_sp.cuh"

namespace sparsenm::cuda::sptc {

template <int BN, bool ROWSPLIT, int STAGES>
struct PCfg {
  static constexpr int NCONS = 2;
  static constexpr int BM = ROWSPLIT ? 128 : 64;
  static constexpr int BNC = ROWSPLIT ? BN : BN / 2;  // Y rows per consumer
  static constexpr int THREADS = 384;
  static constexpr int A_BYTES = BM * 64;   // BM rows x 32 compressed values x 2 B
  static constexpr int B_BYTES = BN * 128;  // BN x 64 k x 2 B
  static constexpr int M_BYTES = (BM / 64) * 512;
  static constexpr int OUT_LD = 64 + 4;
  static constexpr int RING_BYTES = STAGES * (A_BYTES + B_BYTES + M_BYTES);
  // gather-index ring (PSched::smem_index): IDX_SLOTS stages of 64 indices, filled IDX_AHEAD
  // stages ahead by one bulk copy each, with a full and an empty mbarrier per slot
  static constexpr int IDX_SLOTS = 8, IDX_AHEAD = 3;
  static constexpr int IDX_BYTES = IDX_SLOTS * 256;
  static constexpr int BAR_BYTES = 2 * STAGES * 8 + 2 * IDX_SLOTS * 8 + 16;  // + the index cursor
  // the epilogue stages ER Y rows at a time per consumer: 64, or 32 where 64 would not fit (the
  // 5-stage 128 x 256 ring)
  static constexpr int ER = 1024 + RING_BYTES + NCONS * 64 * OUT_LD * 4 + IDX_BYTES + BAR_BYTES <= 232448 ? 64 : 32;
  static constexpr int EPI_BYTES = NCONS * ER * OUT_LD * 4;
  static constexpr int SMEM_BYTES = 1024 + RING_BYTES + EPI_BYTES + IDX_BYTES + BAR_BYTES;
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "tiles keep swizzle alignment");
  static_assert(BNC % 64 == 0, "the epilogue stages 64 or 32 Y rows at a time");
  static_assert(SMEM_BYTES <= 232448, "fits the 227 KB of an H100/H200 SM");
};

__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// GM (B source): 0 = X by TMA (2:4); 1 = gather by cp.async + consumer-side proxy fence;
// 2 = gather by cp.async without the fence (experiment); 3 = gather by one 128-byte TMA box per
// (sparse-k row, 64-wide m block) from a tensor map over Xt (experiment);
// 4 = DIAGNOSTIC, wrong result: B = Xt rows kb*64 .. kb*64+63 (no gather) by BN/64 TMA boxes of
//     64 m x 64 k in the same MN-major 128B-swizzled layout (what the consumer costs when B arrives
//     at TMA speed); 5 = DIAGNOSTIC, wrong result: the GM 1 gather with the wgmma skipped (what
//     the gather costs alone); both f16, r128n256 only, never a plan candidate;
// 6 = gather by cp.async, streamlined producer (fully unrolled, per-tile source / destination
//     bases, one SHFL + one IMAD.WIDE per 16-byte copy; flags bit 1: commit/wait_group with one
//     mbarrier arrival per warp instead of cp.async.mbarrier.arrive per thread);
// 7 = hybrid: producer warp 0 loads its 16 sparse-k rows by 128-byte TMA boxes (as GM 3), warps
//     1..3 gather the other 48 rows as GM 6 (two independent copy paths);
// 9 = GM 6's producer, early release (session 4b): each consumer waits for its stage's wgmma to
//     retire (wait_group 0) and frees the ring slot right away, instead of one stage later after
//     the next stage arrived (wait_group 1): with the gather slower than the MMA, the consumers
//     otherwise hold a slot until the next stage lands and the producer has STAGES - 1 in flight.
// GM 6 / 9, flags bit 2 (PSched::smem_index): the gather indices come through a ring of their own
//     in shared memory (one 256-byte bulk copy per stage, IDX_AHEAD stages ahead, by thread 0)
//     instead of a per-warp __ldg per stage on the LDGSTS path.
// CL = 2 (experiment, GM = 0 and ROWSPLIT only): 2x1 clusters along W rows; the two CTAs work
// on tiles (2p, tm) and (2p+1, tm) in lockstep, each loads half of the shared X tile and multicasts
// it to both, so X leaves L2 once per pair. A stage may be refilled only when the consumers of
// both CTAs have released it: consumers arrive on the empty barriers of both CTAs.
// raster: tile order (PSched::raster); flags bit 0: prefetch the gather indices one stage ahead.
template <class In, class Out, int BN, bool ROWSPLIT, int GM, int STAGES, int CL = 1>
__global__ void __launch_bounds__(384, 1)
    wgmma_sp_persistent_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_x,
                               const std::uint32_t* __restrict__ meta, const std::int32_t* __restrict__ gather,
                               const In* __restrict__ xt, int ldt, Out* __restrict__ y, int m, int n, int kblocks,
                               int n64_total, int tiles_n, int tiles_m, int vec_store, int b_lbo, int b_sbo,
                               int rows_valid, int raster, int flags) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool GATHER = GM != 0;
  constexpr bool CPASYNC = GM == 1 || GM == 2 || GM == 5;  // every producer thread: cp.async + arrive.noinc
  constexpr bool FAST = GM == 6 || GM == 7 || GM == 9;     // the streamlined cp.async producer
  constexpr bool FENCE = GM == 1 || GM == 5 || FAST;       // generic-proxy writes of B -> wgmma reads
  constexpr bool EARLY = GM == 9;                          // release each stage when its wgmma retired
  const bool waitgroup = GM == 6 && (flags & 2) != 0;
  const bool sidx = (GM == 6 || GM == 9) && !waitgroup && (flags & 4) != 0;
  static_assert(CL == 1 || (CL == 2 && GM == 0 && ROWSPLIT), "clusters: X by TMA, row-split tiles only");
  const int rank = CL == 2 ? int(cluster_ctarank()) : 0;
  using C = PCfg<BN, ROWSPLIT, STAGES>;
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint8_t* sA = smem;
  std::uint8_t* sB = smem + STAGES * C::A_BYTES;
  std::uint32_t* sM = reinterpret_cast<std::uint32_t*>(sB + STAGES * C::B_BYTES);
  float* epi = reinterpret_cast<float*>(smem + C::RING_BYTES);
  std::int32_t* sidx_ring = reinterpret_cast<std::int32_t*>(smem + C::RING_BYTES + C::EPI_BYTES);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + C::RING_BYTES + C::EPI_BYTES + C::IDX_BYTES);
  std::uint64_t* empty = full + STAGES;
  std::uint64_t* ifull = empty + STAGES;
  std::uint64_t* iempty = ifull + C::IDX_SLOTS;
  int* icur = reinterpret_cast<int*>(iempty + C::IDX_SLOTS);  // thread 0's index look-ahead cursor: tile, k block, count

  // CL = 2: units are pairs of row tiles (the last pair may have a row tile past the matrix: its
  // A rows are zero-filled by TMA, its metadata read from the last real tile, nothing is stored)
  const int units_n = (tiles_n + CL - 1) / CL;
  const int total = units_n * tiles_m;
  const int first_unit = CL == 2 ? int(blockIdx.x) / 2 : int(blockIdx.x);
  const int unit_stride = CL == 2 ? int(gridDim.x) / 2 : int(gridDim.x);
  // raster > 0: groups of `raster` row units sweep all column tiles (the W slice of a group stays
  // in L2); raster < 0: groups of -raster column tiles sweep all row units (the X / Xt slice of a
  // group stays in L2: what the V:2:M gather re-reads from every row tile)
  auto tile_coords = [&](int tile, int& tn, int& tm) {
    if (raster > 0) {
      const int per_group = raster * tiles_m;
      const int first_n = (tile / per_group) * raster;
      const int gsize = min(raster, units_n - first_n);
      tn = (first_n + (tile % per_group) % gsize) * CL + rank;
      tm = (tile % per_group) / gsize;
    } else {
      const int per_group = -raster * units_n;
      const int first_m = (tile / per_group) * -raster;
      const int gsize = min(-raster, tiles_m - first_m);
      tm = first_m + (tile % per_group) % gsize;
      tn = ((tile % per_group) / gsize) * CL + rank;
    }
  };

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      // full: the expect_tx arrival (+ one cp.async arrival per gathering producer thread, or one
      // arrival per producer warp with waitgroup)
      mbar_init(&full[s], CPASYNC || ((GM == 6 || GM == 9) && !waitgroup) ? 129 : GM == 6 ? 5 : GM == 7 ? 97 : 1);
      mbar_init(&empty[s], C::NCONS * 4 * CL);
    }
    for (int s = 0; s < C::IDX_SLOTS; ++s) {
      mbar_init(&ifull[s], 1);   // thread 0's expect_tx arrival + the bulk copy's bytes
      mbar_init(&iempty[s], 4);  // one arrival per producer warp once it read the slot
    }
    fence_mbar_init();
  }
  if constexpr (CL == 2)
    cluster_sync();  // the peer's barriers exist before anything is multicast or arrived on
  else
    __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<56>();  // 56 + 2 x 224 registers x 128 threads <= 64K (56: no spills in the gather producer)
    if (GATHER || tid == 0) {
      if (tid == 0) {
        tma_prefetch_desc(&tm_a);
        if (GM == 0 || GM == 3 || GM == 4 || GM == 7) tma_prefetch_desc(&tm_x);
      }
      const int w = tid / 32, lane = tid % 32;
      const bool prefetch = (flags & 1) != 0;
      // sidx: thread 0's look-ahead cursor over (tile, k block) in this CTA's order fills the
      // index ring; every producer warp takes slot j at iteration j - 1 (the prefetch). The cursor
      // lives in shared memory (no producer registers held across the loop: the producer has 56)
      auto idx_issue = [&] {
        int l_tile = icur[0], l_kb = icur[1];
        const int l_it = icur[2];
        if (l_tile >= total) return;
        const int slot = l_it % C::IDX_SLOTS;
        if (l_it >= C::IDX_SLOTS) mbar_wait(&iempty[slot], ((l_it / C::IDX_SLOTS) - 1) & 1);
        int ltn, ltm;
        tile_coords(l_tile, ltn, ltm);
        mbar_expect_tx(&ifull[slot], 256);
        bulk_load(sidx_ring + slot * 64, gather + (std::size_t(ltn) * std::size_t(kblocks) + std::size_t(l_kb)) * 64, 256,
                  &ifull[slot]);
        if (++l_kb == kblocks) {
          l_kb = 0;
          l_tile += unit_stride;
        }
        icur[0] = l_tile;
        icur[1] = l_kb;
        icur[2] = l_it + 1;
      };
      auto idx_take = [&](int j) {  // warp-wide: lane l < 16 gets sparse-k row 16w + l's column of iteration j
        const int slot = j % C::IDX_SLOTS;
        mbar_wait(&ifull[slot], (j / C::IDX_SLOTS) & 1);
        const int col = lane < 16 ? sidx_ring[slot * 64 + w * 16 + lane] : -1;
        __syncwarp();
        if (lane == 0) mbar_arrive(&iempty[slot]);
        return col;
      };
      int nextcol = -1;
      if (FAST && sidx) {
        if (tid == 0) {
          icur[0] = first_unit;
          icur[1] = 0;
          icur[2] = 0;
          for (int j = 0; j < C::IDX_AHEAD; ++j) idx_issue();
        }
        if (first_unit < total) nextcol = idx_take(0);
      }
      int it = 0;
      for (int tile = first_unit; tile < total; tile += unit_stride) {
        int tn, tm;
        tile_coords(tile, tn, tm);
        const int tn_meta = min(tn, tiles_n - 1);
        const std::int32_t* gcol = gather + std::size_t(tn) * std::size_t(kblocks) * 64 + w * 16;
        const int m0 = tm * BN;
        // FAST: per-tile constants of this thread's 16-byte copies (instruction j of a stage copies
        // chunk chl of sparse-k row 16w + j*RPI + rsub; the source row start is clamped into Xt so
        // that a zero-filled copy still names a valid address)
        constexpr int CHF = BN / 8, RPI = 32 / CHF, NI = 16 / RPI;
        const int chl = lane % CHF, rsub = lane / CHF;
        const int gmf = m0 + chl * 8;
        const bool mok = gmf < ldt;
        const In* fbase = xt + min(gmf, ldt - 8);
        const std::uint32_t doff = std::uint32_t((chl >> 3) * 8192 + (w * 16 + rsub) * 128);
        const int c7 = (chl & 7) ^ rsub;
        // prefetch: lane l < 16 holds the column of sparse-k row 16w+l of the NEXT stage, loaded
        // before the wait for that stage's ring slot (the load's latency hides behind the wait)
        if (((CPASYNC && prefetch) || (FAST && !sidx)) && lane < 16) nextcol = __ldg(gcol + lane);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
          const int s = it % STAGES;
          if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
          if (tid == 0) {
            mbar_expect_tx(&full[s], CPASYNC || GM == 6 || GM == 9 ? C::A_BYTES + C::M_BYTES
                                     : GM == 7          ? C::A_BYTES + C::M_BYTES + 16 * BN * 2
                                                        : C::A_BYTES + C::B_BYTES + C::M_BYTES);
            tma_load_2d(sA + s * C::A_BYTES, &tm_a, &full[s], kb * 32, tn * C::BM);
            if constexpr (CL == 2)
              tma_load_2d_multicast(sB + s * C::B_BYTES + rank * (BN / 2) * 128, &tm_x, &full[s], kb * 64,
                                    m0 + rank * (BN / 2), std::uint16_t(0x3));
            else if (!GATHER)
              tma_load_2d(sB + s * C::B_BYTES, &tm_x, &full[s], kb * 64, m0);
            else if (GM == 4)  // DIAGNOSTIC: contiguous Xt rows, no gather
#pragma unroll
              for (int b = 0; b < BN / 64; ++b) tma_load_2d(sB + s * C::B_BYTES + b * 8192, &tm_x, &full[s], m0 + b * 64, kb * 64);
            bulk_load(sM + s * (C::BM / 64) * 128,
                      meta + (std::size_t(kb) * n64_total + std::size_t(tn_meta) * (C::BM / 64)) * 128, C::M_BYTES,
                      &full[s]);
          }
          if constexpr (GM == 3) {
            // thread t: sparse-k row t/2 of the stage, m blocks of its half; a -1 column is out of
            // bounds for the tensor map, so TMA fills zeros (and still counts the bytes)
            constexpr int NB = BN / 64;
            const int row = tid >> 1;
            const int col = __ldg(gcol - w * 16 + kb * 64 + row);
            std::uint8_t* bst = sB + s * C::B_BYTES;
#pragma unroll
            for (int j = 0; j < NB / 2; ++j) {
              const int b = (tid & 1) * (NB / 2) + j;
              tma_load_2d(bst + b * 8192 + row * 128, &tm_x, &full[s], m0 + b * 64, col);
            }
          }
          if constexpr (FAST) {
            const int mycol = nextcol;
            if (!sidx && kb + 1 < kblocks && lane < 16) nextcol = __ldg(gcol + (kb + 1) * 64 + lane);
            std::uint8_t* bst = sB + s * C::B_BYTES;
            if (GM == 7 && w == 0) {
              // rows 0..15 by TMA: lane l takes row l % 16 and half of its BN/64 boxes; a -1 column
              // is out of bounds for the tensor map, so TMA writes zeros (and counts the bytes)
              constexpr int NB = BN / 64;
              const int col = __shfl_sync(0xffffffffu, mycol, lane & 15);
#pragma unroll
              for (int j = 0; j < NB / 2; ++j) {
                const int b = (lane >> 4) * (NB / 2) + j;
                tma_load_2d(bst + b * 8192 + (lane & 15) * 128, &tm_x, &full[s], m0 + b * 64, col);
              }
            } else {
              const std::uint32_t sdst = smem_u32(bst) + doff;
#pragma unroll
              for (int j = 0; j < NI; ++j) {
                const int col = __shfl_sync(0xffffffffu, mycol, j * RPI + rsub);
                const In* src = fbase + std::size_t(unsigned(max(col, 0))) * unsigned(ldt);
                cp_async16_s(sdst + j * RPI * 128 + ((c7 ^ ((j * RPI) & 7)) << 4), src, col >= 0 && mok ? 16 : 0);
              }
              if (!waitgroup) {
                cp_async_mbar_arrive(&full[s]);
              } else {
                // stage it - (STAGES - 2) is complete for this thread; one arrival per warp
                cp_async_commit();
                if (it >= STAGES - 2) {
                  cp_async_wait<STAGES - 2>();
                  __syncwarp();
                  if (lane == 0) mbar_arrive(&full[(it - (STAGES - 2)) % STAGES]);
                }
              }
            }
            if (sidx) {  // after this stage's copies: refill the index ring, then take the next stage's slot
              if (tid == 0) idx_issue();
              if (kb + 1 < kblocks || tile + unit_stride < total) nextcol = idx_take(it + 1);
            }
          }
          if constexpr (CPASYNC) {
            // warp w gathers sparse-k rows 16w..16w+15 of this stage: lane l < 16 holds row 16w+l's column
            int mycol;
            if (prefetch) {
              mycol = nextcol;
              if (kb + 1 < kblocks && lane < 16) nextcol = __ldg(gcol + (kb + 1) * 64 + lane);
            } else {
              mycol = lane < 16 ? __ldg(gcol + kb * 64 + lane) : -1;
            }
            std::uint8_t* bst = sB + s * C::B_BYTES;
            constexpr int CH = BN / 8;  // 16-byte chunks per B row
#pragma unroll 2
            for (int i = lane; i < 16 * CH; i += 32) {
              const int r = i / CH, ch = i % CH;
              const int col = __shfl_sync(0xffffffffu, mycol, r);
              const int row = w * 16 + r;
              const int gm = m0 + ch * 8;
              const bool ok = col >= 0 && gm < ldt;
              const In* src = ok ? xt + std::size_t(col) * std::size_t(ldt) + gm : xt;
              std::uint8_t* dst = bst + (ch >> 3) * 8192 + row * 128 + (((ch & 7) ^ (row & 7)) << 4);
              cp_async16(dst, src, ok ? 16 : 0);
            }
            cp_async_mbar_arrive(&full[s]);
          }
        }
      }
      if constexpr (CPASYNC || FAST) cp_async_wait<0>();
      if (waitgroup) {  // the last STAGES - 2 stages' arrivals
        __syncwarp();
        if (lane == 0)
          for (int j = max(0, it - (STAGES - 2)); j < it; ++j) mbar_arrive(&full[j % STAGES]);
      }
    }
  } else {
    setmaxnreg_inc<224>();
    const int c = wg - 1;
    constexpr int ACC = C::BNC / 2;
    float acc[ACC];
    int it = 0;
    auto release = [&](int stage) {
      // one lane arrives for the warp: __syncwarp first, so the arrive (release semantics, this
      // thread's accesses only) also orders the other lanes' metadata reads before the refill
      __syncwarp();
      if ((tid % 32) == 0) {
        if constexpr (CL == 2) {
          mbar_arrive_cluster(&empty[stage], 0);
          mbar_arrive_cluster(&empty[stage], 1);
        } else {
          mbar_arrive(&empty[stage]);
        }
      }
    };
    for (int tile = first_unit; tile < total; tile += unit_stride) {
      int tn, tm;
      tile_coords(tile, tn, tm);
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
      fence_regs(acc);
      // two metadata registers, each held until the wgmma reading it retired (ptx.cuh: sp_mainloop)
      const int it0 = it;
      sp_mainloop(
          kblocks, kblocks, sM + tid,
          [&](int kb, std::uint32_t& mw) {
            const int s = (it0 + kb) % STAGES;
            mbar_wait(&full[s], ((it0 + kb) / STAGES) & 1);
            if constexpr (FENCE) fence_proxy_async_smem();  // cp.async (generic proxy) writes -> wgmma reads
            mw = sM[s * (C::BM / 64) * 128 + (ROWSPLIT ? c * 128 : 0) + tid];
            const std::uint8_t* a_tile = sA + s * C::A_BYTES + (ROWSPLIT ? c * 64 * 64 : 0);
            const std::uint64_t da = smem_desc(a_tile, 16, 512, 2);  // 64B swizzle, 8 rows x 64 B
            if constexpr (GATHER) {
              // MN-major, 128B swizzle: 64-wide m blocks 8 KB apart (LBO), 8-k groups 1 KB apart (SBO)
              const std::uint8_t* b_tile = sB + s * C::B_BYTES + (ROWSPLIT ? 0 : c * (C::BNC / 64) * 8192);
              const std::uint64_t db = smem_desc(b_tile, b_lbo, b_sbo, 1);
              wgmma_fence();
              if constexpr (GM != 5) {  // GM 5: DIAGNOSTIC, the gather alone
                WgmmaSp<C::BNC, In, 0, 1>::run(acc, da, db, mw);
                WgmmaSp<C::BNC, In, 1, 1>::run(acc, da + (32 >> 4), db + (4096 >> 4), mw);
              }
            } else {
              const std::uint8_t* b_tile = sB + s * C::B_BYTES + (ROWSPLIT ? 0 : c * C::BNC * 128);
              const std::uint64_t db = smem_desc(b_tile, 16, 1024, 1);  // K-major, 128B swizzle
              wgmma_fence();
              WgmmaSp<C::BNC, In, 0, 0>::run(acc, da, db, mw);
              WgmmaSp<C::BNC, In, 1, 0>::run(acc, da + (32 >> 4), db + (64 >> 4), mw);
            }
            wgmma_commit();
            if constexpr (EARLY)
              wgmma_wait<0>();  // this stage's wgmma retired: its slot is free now
            else
              wgmma_wait<1>();
          },
          [&](int kb) {
            if constexpr (EARLY)
              release((it0 + kb) % STAGES);
            else if (kb > 0)
              release((it0 + kb - 1) % STAGES);
          });
      it = it0 + kblocks;
      fence_regs(acc);
      if constexpr (!EARLY) release((it - 1) % STAGES);

      // ---- epilogue: ER Y rows at a time through this consumer's staging buffer ----
      constexpr int ER = C::ER;
      float* st = epi + c * ER * C::OUT_LD;
      const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
      float* base = st + (2 * t) * C::OUT_LD + 16 * w + g;
      const int y_m0 = tm * BN + (ROWSPLIT ? 0 : c * C::BNC);
      const int y_n0 = tn * rows_valid + (ROWSPLIT ? c * 64 : 0);
      const int n_end = tn * rows_valid + rows_valid;
#pragma unroll
      for (int q = 0; q < C::BNC / ER; ++q) {
        asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");  // previous chunk's stores are done
        stage_fragments<ER / 8, C::OUT_LD>(base, acc, 4 * (ER / 8) * q);
        asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
        store_tile<Out, ER, C::OUT_LD>(st, y, y_m0 + ER * q, y_n0, m, n, vec_store, tid, n_end);
      }
    }
  }
  if constexpr (CL == 2) cluster_sync();  // no CTA leaves while its peer may still write or arrive here
#else
  (void)meta; (void)gather; (void)xt; (void)ldt; (void)y; (void)m; (void)n; (void)kblocks; (void)n64_total;
  (void)tiles_n; (void)tiles_m; (void)vec_store; (void)b_lbo; (void)b_sbo; (void)rows_valid; (void)raster; (void)flags;
  __trap();
#endif
}

// Xt [k][ldt] = X^T with zero columns m..ldt-1. 64 x 64 tiles through shared memory; 16-byte
// loads when X rows allow (k % 8 == 0, aligned), 16-byte stores always (ldt % 8 == 0).
template <bool VEC>
__global__ void __launch_bounds__(256) transpose_x_kernel(const std::uint16_t* __restrict__ x, std::uint16_t* __restrict__ xt,
                                                          int m, int k, int ldt) {
  __shared__ __align__(16) std::uint16_t tile[64][64 + 2];  // 33-word rows: at most 2-way bank conflicts below
  const int m0 = blockIdx.y * 64, k0 = blockIdx.x * 64;
  const int tid = threadIdx.x;
  // load 64 rows (m) x 64 k
  for (int idx = tid; idx < 64 * 8; idx += 256) {
    const int r = idx / 8, cch = idx % 8;
    const int gm = m0 + r, gk = k0 + cch * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (VEC) {
      if (gm < m && gk < k) v = *reinterpret_cast<const uint4*>(x + std::size_t(gm) * k + gk);
    } else {
      alignas(16) std::uint16_t e[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) e[q] = (gm < m && gk + q < k) ? x[std::size_t(gm) * k + gk + q] : std::uint16_t(0);
      v = *reinterpret_cast<const uint4*>(e);
    }
    auto* dst = reinterpret_cast<std::uint32_t*>(&tile[r][cch * 8]);
    dst[0] = v.x;
    dst[1] = v.y;
    dst[2] = v.z;
    dst[3] = v.w;
  }
  __syncthreads();
  // store 64 rows (k) x 64 m: lane -> (k row offset, 8-wide m chunk)
  for (int idx = tid; idx < 64 * 8; idx += 256) {
    const int kk = idx / 8, mch = idx % 8;
    const int gk = k0 + kk, gm = m0 + mch * 8;
    if (gk >= k || gm >= ldt) continue;
    alignas(16) std::uint16_t e[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) e[q] = tile[mch * 8 + q][kk];
    *reinterpret_cast<uint4*>(xt + std::size_t(gk) * ldt + gm) = *reinterpret_cast<const uint4*>(e);
  }
}

// Xt [k][ldt] = X^T (session 4b): no shared memory, each thread transposes 8 x 8 blocks in
// registers: 8 16-byte loads (8 m rows x 8 k), 32 byte permutes, 8 16-byte stores (8 k rows x 8 m).
// A warp tile is 32 m x 64 k (lane: k chunk lane % 8, m chunk lane / 8): each load instruction
// reads 4 full 128-byte lines of X, each store writes 8 runs of 64 bytes of Xt. Persistent grid
// (the resident blocks, a grid-stride loop over warp tiles): 128 bytes of loads in flight per
// thread, every SM busy to the end. Needs k % 8 == 0 and 16-byte aligned rows of x.
__global__ void __launch_bounds__(256) transpose_x_reg_kernel(const uint4* __restrict__ x, uint4* __restrict__ xt, int m,
                                                              int k, int ldt, int ktiles, long long tiles) {
  const int lane = threadIdx.x % 32;
  const long long nwarps = (long long)gridDim.x * (blockDim.x / 32);
  const int kc = lane % 8, mc = lane / 8;
  const std::size_t k8 = std::size_t(k) / 8, ldt8 = std::size_t(ldt) / 8;
  for (long long t = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; t < tiles; t += nwarps) {
    const int gm = int(t / ktiles) * 32 + mc * 8, gk = int(t % ktiles) * 64 + kc * 8;
    if (gk >= k || gm >= ldt) continue;
    uint4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
      v[j] = gm + j < m ? __ldg(x + std::size_t(gm + j) * k8 + std::size_t(gk) / 8) : make_uint4(0, 0, 0, 0);
    auto word = [](const uint4& q, int i) { return i == 0 ? q.x : i == 1 ? q.y : i == 2 ? q.z : q.w; };
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      std::uint32_t o[4];
#pragma unroll
      for (int p = 0; p < 4; ++p)
        o[p] = __byte_perm(word(v[2 * p], kk / 2), word(v[2 * p + 1], kk / 2), (kk % 2) ? 0x7632 : 0x5410);
      xt[std::size_t(gk + kk) * ldt8 + std::size_t(gm) / 8] = make_uint4(o[0], o[1], o[2], o[3]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Host side

namespace {

int sm_count() {
  static int sms = [] {
    int dev = 0, n = 132;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n;
  }();
  return sms;
}

template <class In, class Out, int BN, bool ROWSPLIT, int GM, int STAGES, int CL = 1>
void launch(const DeviceA& a, const CUtensorMap& map_a, const std::int32_t* gather, int rows_valid, const Problem& p,
            cudaStream_t stream, PSched sched, bool waitgroup = false) {
  using C = PCfg<BN, ROWSPLIT, STAGES>;
  auto kernel = wgmma_sp_persistent_kernel<In, Out, BN, ROWSPLIT, GM, STAGES, CL>;
  static std::once_flag once;
  std::call_once(once, [&] {
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM_BYTES));
  });
  CUtensorMap map_x{};
  if (GM == 0)  // CL = 2: each CTA of a pair loads half of the X tile (and multicasts it)
    map_x = encode_tensor_2d(p.x, std::uint64_t(p.ldx), std::uint64_t(p.m), std::uint64_t(p.ldx) * 2, 64, BN / CL,
                             CU_TENSOR_MAP_SWIZZLE_128B, "x");
  if (GM == 3 || GM == 7)
    map_x = encode_tensor_2d(p.x, std::uint64_t(p.ldx), std::uint64_t(p.k), std::uint64_t(p.ldx) * 2, 64, 1,
                             CU_TENSOR_MAP_SWIZZLE_128B, "xt");
  if (GM == 4)
    map_x = encode_tensor_2d(p.x, std::uint64_t(p.ldx), std::uint64_t(p.k), std::uint64_t(p.ldx) * 2, 64, 64,
                             CU_TENSOR_MAP_SWIZZLE_128B, "xt");
  const int tiles_n = int(a.rows_pad / C::BM);
  const int tiles_m = int((p.m + BN - 1) / BN);
  const int kblocks = int(a.k_pad / 64);
  const int vec = (p.n * int(sizeof(Out))) % 16 == 0 && (reinterpret_cast<std::uintptr_t>(p.y) % 16) == 0;
  const int units = ((tiles_n + CL - 1) / CL) * tiles_m;
  int resident = sm_count() / CL;  // CTAs (CL = 1) or clusters (CL = 2) that fit at once
  if constexpr (CL > 1) {
    // pairs must sit in one GPC: not every SM can host half of a cluster
    static int max_clusters = [&] {
      cudaLaunchConfig_t q{};
      q.gridDim = dim3(unsigned(2 * resident));
      q.blockDim = dim3(C::THREADS);
      q.dynamicSmemBytes = C::SMEM_BYTES;
      cudaLaunchAttribute qa[1];
      qa[0].id = cudaLaunchAttributeClusterDimension;
      qa[0].val.clusterDim.x = unsigned(CL);
      qa[0].val.clusterDim.y = 1;
      qa[0].val.clusterDim.z = 1;
      q.attrs = qa;
      q.numAttrs = 1;
      int nc = 0;
      SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&nc, kernel, &q));
      return nc;
    }();
    if (max_clusters < 1) throw CudaError("wgmma_sp_persistent_kernel: no 2-CTA cluster fits on this device");
    resident = std::min(resident, max_clusters);
  }
  const int grid = std::min(units, resident) * CL;
  // MN-major B descriptor: LBO = 8 KB between 64-wide m blocks, SBO = 1 KB between 8-k groups
  // (PTX canonical layout; the swapped pair was tried on the H200 and fails, as expected).
  cudaLaunchConfig_t lc{};
  lc.gridDim = dim3(unsigned(grid));
  lc.blockDim = dim3(C::THREADS);
  lc.dynamicSmemBytes = C::SMEM_BYTES;
  lc.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(CL);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  lc.attrs = attr;
  lc.numAttrs = CL > 1 ? 1 : 0;
  SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(&lc, kernel, map_a, map_x, a.meta, gather, static_cast<const In*>(p.x), int(p.ldx),
                                         static_cast<Out*>(p.y), int(p.m), int(p.n), kblocks, int(a.rows_pad / 64),
                                         tiles_n, tiles_m, vec, 8192, 1024, rows_valid, sched.raster,
                                         (sched.prefetch ? 1 : 0) | (waitgroup ? 2 : 0) | (sched.smem_index ? 4 : 0)));
  SPARSENM_CUDA_CHECK_LAUNCH("wgmma_sp_persistent_kernel");
}

template <class In, class Out, int GM, int S256 = 4>  // S256: ring stages of the 128 x 256 tile
void dispatch_tile(const DeviceA& a, const CUtensorMap& map_a, const std::int32_t* gather, int rows_valid, PTile tile,
                   const Problem& p, cudaStream_t s, PSched q, bool wg = false) {
  if constexpr (GM == 4 || GM == 5) {  // diagnostics: the plan's 128 x 256 tile only
    if (tile != PTile::r128n256) throw InvalidArgument("gather_mode", "the diagnostic modes 4 and 5 take the p128x256 tile only");
    return launch<In, Out, 256, true, GM, 4>(a, map_a, gather, rows_valid, p, s, q);
  } else {
  switch (tile) {
    case PTile::r128n256: return launch<In, Out, 256, true, GM, S256>(a, map_a, gather, rows_valid, p, s, q, wg);
    case PTile::r128n128: return launch<In, Out, 128, true, GM, 6>(a, map_a, gather, rows_valid, p, s, q, wg);
    case PTile::c64n256: return launch<In, Out, 256, false, GM, 5>(a, map_a, gather, rows_valid, p, s, q, wg);
    case PTile::c64n128: return launch<In, Out, 128, false, GM, 7>(a, map_a, gather, rows_valid, p, s, q, wg);
    case PTile::r128n256x2:
      if constexpr (GM == 0) return launch<In, Out, 256, true, 0, 4, 2>(a, map_a, gather, rows_valid, p, s, q);
      throw InvalidArgument("tile", "the 2x1 cluster tile is for hardware 2:4 (X by TMA) only");
  }
  }
}

template <int GM>
void dispatch(const DeviceA& a, const CUtensorMap& map_a, const std::int32_t* gather, int rows_valid, PTile tile,
              const Problem& p, cudaStream_t s, int mode, PSched q) {
  if (q.raster == 0) throw InvalidArgument("raster", "must not be 0 (> 0: row groups, < 0: column groups)");
  constexpr bool GATHER = GM != 0;
  if (p.ldx % 8 != 0 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0)
    throw InvalidArgument(GATHER ? "xt" : "x", "needs 16-byte aligned rows (leading dimension % 8 == 0, aligned pointer)");
  if (a.rows_pad % ptile_rows(tile) != 0) throw InvalidArgument("packed W", "rows_pad must be a multiple of the tile rows");
  if (q.smem_index && !(GATHER && (mode == 6 || mode == 9 || mode == 10 || mode == 11)))
    throw InvalidArgument("smem_index", "needs gather mode 6, 9, 10 or 11 (the streamlined cp.async producer)");
  if (p.m < 1) return;
  if (GATHER && ((mode >= 2 && mode <= 5) || mode == 11)) {  // experimental and diagnostic gather modes: f16 in and out only
    if (p.in != DType::f16 || p.out != DType::f16) throw InvalidArgument("gather_mode", "modes 2 to 5 and 11 take f16 in and out only");
    if (mode == 11) return dispatch_tile<__half, __half, 6, 5>(a, map_a, gather, rows_valid, tile, p, s, q);
    if (mode == 2) return dispatch_tile<__half, __half, 2>(a, map_a, gather, rows_valid, tile, p, s, q);
    if (mode == 4) return dispatch_tile<__half, __half, 4>(a, map_a, gather, rows_valid, tile, p, s, q);
    if (mode == 5) return dispatch_tile<__half, __half, 5>(a, map_a, gather, rows_valid, tile, p, s, q);
    return dispatch_tile<__half, __half, 3>(a, map_a, gather, rows_valid, tile, p, s, q);
  }
  auto out_gm = [&](auto in_tag, auto gm_tag, auto s256_tag) {
    using In = decltype(in_tag);
    constexpr int G = decltype(gm_tag)::value;
    constexpr int S256 = decltype(s256_tag)::value;
    const bool wg = mode == 8;
    switch (p.out) {
      case DType::f32: return dispatch_tile<In, float, G, S256>(a, map_a, gather, rows_valid, tile, p, s, q, wg);
      case DType::f16: return dispatch_tile<In, __half, G, S256>(a, map_a, gather, rows_valid, tile, p, s, q, wg);
      case DType::bf16: return dispatch_tile<In, __nv_bfloat16, G, S256>(a, map_a, gather, rows_valid, tile, p, s, q, wg);
      default: throw InvalidArgument("y dtype", "must be f32, f16 or bf16 for the sparse tensor-core kernels");
    }
  };
  using S4 = std::integral_constant<int, 4>;
  auto out = [&](auto in_tag) {
    if constexpr (GATHER) {
      if (mode == 6 || mode == 8) return out_gm(in_tag, std::integral_constant<int, 6>{}, S4{});
      // mode 7's 128-byte TMA boxes are 64 elements wide: below that Xt row length, the cp.async path
      if (mode == 7 && p.ldx >= 64) return out_gm(in_tag, std::integral_constant<int, 7>{}, S4{});
      if (mode == 7) return out_gm(in_tag, std::integral_constant<int, 6>{}, S4{});
      if (mode == 9) return out_gm(in_tag, std::integral_constant<int, 9>{}, S4{});
      if (mode == 10) return out_gm(in_tag, std::integral_constant<int, 9>{}, std::integral_constant<int, 5>{});
    }
    return out_gm(in_tag, std::integral_constant<int, GM>{}, S4{});
  };
  if (p.in == DType::f16)
    out(__half{});
  else if (p.in == DType::bf16)
    out(__nv_bfloat16{});
  else
    throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
}

}  // namespace

const char* to_string(PTile t) noexcept {
  switch (t) {
    case PTile::r128n256: return "p128x256";
    case PTile::r128n128: return "p128x128";
    case PTile::c64n256: return "p64x256";
    case PTile::c64n128: return "p64x128";
    case PTile::r128n256x2: return "p128x256c2";
  }
  return "?";
}
int ptile_rows(PTile t) noexcept { return (t == PTile::c64n256 || t == PTile::c64n128) ? 64 : 128; }

void run_sptc24_wgmma_persistent(const DeviceA& a, const CUtensorMap& values_map, PTile tile, const Problem& p,
                                 cudaStream_t stream, PSched sched) {
  dispatch<0>(a, values_map, nullptr, ptile_rows(tile), tile, p, stream, 0, sched);
}

void run_vnm_wgmma(const DeviceA& a, const CUtensorMap& values_map, const std::int32_t* gather, int rows_per_tile,
                   PTile tile, const Problem& p, cudaStream_t stream, int gather_mode, PSched sched) {
  if (!gather) throw InvalidArgument("gather", "must not be null");
  if (rows_per_tile != ptile_rows(tile) && !(rows_per_tile == 32 && ptile_rows(tile) == 64))
    throw InvalidArgument("rows_per_tile", "must be the tile's rows, or 32 for 64-row tiles (V = 32)");
  if (gather_mode < 0 || gather_mode > 11) throw InvalidArgument("gather_mode", "must be 0..11");
  if (tile == PTile::r128n256x2) throw InvalidArgument("tile", "V:2:M takes the r128 / c64 tiles (clusters: hardware 2:4 only)");
  dispatch<1>(a, values_map, gather, rows_per_tile, tile, p, stream, gather_mode, sched);
}

void transpose_x(const void* x, std::int64_t m, std::int64_t k, void* xt, std::int64_t ldt, cudaStream_t stream,
                 int variant) {
  if (ldt % 8 != 0 || ldt < m || reinterpret_cast<std::uintptr_t>(xt) % 16 != 0)
    throw InvalidArgument("xt", "needs ldt >= m, ldt % 8 == 0 and a 16-byte aligned pointer");
  if (variant != 0 && variant != 1) throw InvalidArgument("variant", "must be 0 (shared-memory tiles) or 1 (registers)");
  if (m < 1 || k < 1) return;
  const bool vec = k % 8 == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0;
  if (variant == 1 && vec) {
    if (ldt > (std::int64_t(1) << 30) || k > (std::int64_t(1) << 30)) throw InvalidArgument("m, k", "must be < 2^30");
    static int per_sm = [] {
      int b = 1;
      SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, transpose_x_reg_kernel, 256, 0));
      return std::max(b, 1);
    }();
    const int ktiles = int((k + 63) / 64);
    const long long tiles = (long long)((ldt + 31) / 32) * ktiles;
    const long long blocks = std::min<long long>((tiles + 7) / 8, (long long)sm_count() * per_sm);
    transpose_x_reg_kernel<<<unsigned(blocks), 256, 0, stream>>>(static_cast<const uint4*>(x), static_cast<uint4*>(xt), int(m),
                                                                 int(k), int(ldt), ktiles, tiles);
    SPARSENM_CUDA_CHECK_LAUNCH("transpose_x_reg_kernel");
    return;
  }
  dim3 grid(unsigned((k + 63) / 64), unsigned((ldt + 63) / 64));
  if (grid.y > 65535u) throw InvalidArgument("m", "too many rows for the transpose grid (m <= 4194240)");
  auto* xs = static_cast<const std::uint16_t*>(x);
  auto* xd = static_cast<std::uint16_t*>(xt);
  if (vec)
    transpose_x_kernel<true><<<grid, 256, 0, stream>>>(xs, xd, int(m), int(k), int(ldt));
  else
    transpose_x_kernel<false><<<grid, 256, 0, stream>>>(xs, xd, int(m), int(k), int(ldt));
  SPARSENM_CUDA_CHECK_LAUNCH("transpose_x_kernel");
}

}  // namespace sparsenm::cuda::sptc
