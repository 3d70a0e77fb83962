// sparsenm — hardware 2:4 SpMM on Hopper with the sparse A operand in registers
// (wgmma.mma_async.sp with A from registers, sm_90a). Kernel + launch template; the
// instantiations live in wgmma_ra_f16.cu / wgmma_ra_bf16.cu, the host entry in wgmma_ra.cu.
//
// Why: the 2:4 kernels with both operands in shared memory sit on the shared-memory roof
// (docs/PERF-sptc.md, "A floor we had missed"): per dense-equivalent FLOP a BM x 256 tile whose
// warpgroups each run m64n256k32 moves 1/64 B of B reads (every warpgroup re-reads the X stage),
// 1/BM B of TMA writes of X, and 1/512 + 1/512 B of TMA writes and wgmma reads of the packed W.
// At 128 B/clk per SM that caps 128 x 256 at 14/512 B/FLOP (57 % of the sparse peak by bytes;
// ncu measured shared memory ~90 % busy at ~71 % tensor-pipe activity). Here W never enters
// shared memory: every consumer thread loads its A fragment (4 x 32-bit registers per k32 step)
// and its metadata word straight from global memory into registers, from a fragment-ordered copy
// of W packed once at plan time (layout.hpp: pack_ra), so each load is one coalesced
// 16-byte access (512 contiguous bytes per warp). Shared memory then carries only X: 12/512 B/FLOP
// at 128 x 256 (-14 %), 10.67/512 at 192 x 192 and 10/512 at 256 x 128 - plus up to 1/(2 BN)
// where the global loads' return path through L1 costs shared-memory cycles too.
//
// Structure (like sptc24_wgmma3.cu, no producer warpgroup): NCONS consumer warpgroups (64 W rows
// x BN Y rows each, m64nBNk32, BN/2 fp32 accumulators per thread); thread 0 also refills the X
// ring by TMA once all warps released a slot. The ring holds X only; the epilogue staging (fp32,
// as in sptc24_wgmma.cu) overlays the idle ring at the end of the tile. One tile per CTA. Tiles
// (the register file decides): 128 x 256 (2 warpgroups), 192 x 192 (3), 256 x 128 (4); 192 x 256
// does not fit (168 registers: ptxas serializes the wgmmas, C7512).
//
// A and metadata registers: the tensor core reads the A fragment and the metadata register of an
// in-flight wgmma asynchronously (PTX: A registers must not be modified before the wait_group
// that retires the wgmma; the metadata register behaves the same, docs/PERF-sptc.md 0442059).
// Every buffer is held (hold_ra: a never-taken predicated store, so ptxas cannot give those
// physical registers to anything else) until after the wait_group that retires its wgmma, and
// all buffer indices are compile-time constants (unrolled loops). scripts/sass-meta-check checks
// the SASS (metadata and A registers never rewritten in flight).
//
// Two forms of the k-loop (RaOpts::batched):
//  * per-stage (measured at fa61bfc, 0.60-0.73x of the shared-memory kernels): a ring of DEPTH = 4
//    buffers, loads issued DEPTH-1 k-blocks ahead, one wgmma.fence + one commit group per k-block,
//    wait_group 1. It loses because ptxas implements wgmma.fence (WARPGROUP.ARRIVE) as a wait for
//    every pending register load (all of them share one scoreboard): the fence of k-block kb
//    waits for the loads issued one iteration earlier, so the prefetch distance is one iteration
//    and each k-block exposes one L2-load latency (~0.9 us under load) with one group queued.
//  * batched (built and SASS-checked, not yet measured): one fence per batch of FB k-blocks, FB
//    commit groups, wait_group FB, then the next batch's loads into the other register set (2 FB
//    buffers). The fence of batch b+1 waits for those loads while batch b's FB k-blocks execute:
//    one exposed latency per FB k-blocks, hidden if FB k-blocks of tensor work outlast it. No
//    register write between a fence and its batch's wgmmas (else ptxas inserts its own WG.AR and
//    serializes, C7520); k padded to 2 FB k-blocks (pack_ra), so the loop has no guards.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <mutex>

#include "cuda/common.cuh"
#include "cuda/sptc/epilogue.cuh"
#include "cuda/sptc/ptx.cuh"
#include "cuda/sptc/sptc.hpp"
#include "cuda/sptc/wgmma_sp.cuh"

namespace sparsenm::cuda::sptc {

template <int NCONS_, int BN_, int DEPTH_, int FB_>
struct RaCfg {
  static constexpr int NCONS = NCONS_, BN = BN_, DEPTH = DEPTH_, FB = FB_;
  static constexpr int BM = 64 * NCONS;
  static constexpr int THREADS = 128 * NCONS;
  static constexpr int B_BYTES = BN * 128;  // BN Y rows x 64 k x 2 B
  // ring: <= 192 KB in the per-stage form (as measured at fa61bfc); the batched form holds two
  // batches of slots (one in flight, one loading), so up to 224 KB (7 slots at BN = 256)
  static constexpr int RING = FB == 0 ? 196608 : 229376;
  static constexpr int STAGES = RING / B_BYTES < 8 ? RING / B_BYTES : 8;
  static_assert(STAGES >= 2 * FB, "two batches of ring slots");
  static constexpr int PIPE_BYTES = STAGES * B_BYTES;
  static constexpr int OUT_LD = 64 + 4;
  static constexpr int EPI_BYTES = NCONS * BN * OUT_LD * 4;
  static constexpr int MAIN_BYTES = PIPE_BYTES > EPI_BYTES ? PIPE_BYTES : EPI_BYTES;
  static constexpr int SMEM_BYTES = 1024 + MAIN_BYTES + 2 * STAGES * 8 + 64;  // + the hold word
  static_assert(SMEM_BYTES <= 232448, "fits the 227 KB of an H100/H200 SM");
};

/// 16-byte / 4-byte global loads that skip L1 allocation (each fragment is read once per CTA).
__device__ __forceinline__ uint4 ldg_frag(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ std::uint32_t ldg_word(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

/// hold_sp_meta for a whole register buffer (two A fragments + the metadata word): a predicated
/// store that never executes (`never` >= 0), so the registers stay untouched up to here.
__device__ __forceinline__ void hold_ra(const uint4& a0, const uint4& a1, std::uint32_t mw, int never, std::uint32_t saddr) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.lt.s32 p, %9, 0;\n"
      "@p st.shared.v4.b32 [%10], {%0, %1, %2, %3};\n"
      "@p st.shared.v4.b32 [%10+16], {%4, %5, %6, %7};\n"
      "@p st.shared.b32 [%10+32], %8;\n}" ::"r"(a0.x),
      "r"(a0.y), "r"(a0.z), "r"(a0.w), "r"(a1.x), "r"(a1.y), "r"(a1.z), "r"(a1.w), "r"(mw), "r"(never), "r"(saddr));
#else
  (void)a0; (void)a1; (void)mw; (void)never; (void)saddr;
#endif
}

template <class In, class Out, int NCONS, int BN_, int DEPTH, int FB>
__global__ void __launch_bounds__(128 * NCONS, 1)
    sptc24_wgmma_ra_kernel(const __grid_constant__ CUtensorMap tm_x, const uint4* __restrict__ frags,
                           const std::uint32_t* __restrict__ meta, Out* __restrict__ y, int m, int n, int kblocks,
                           int n64_total, int tiles_n, int tiles_m, int vec_store) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = RaCfg<NCONS, BN_, DEPTH, FB>;
  constexpr int STAGES = C::STAGES, BN = C::BN;
  static_assert(C::B_BYTES % 1024 == 0, "ring slots keep the 128B swizzle alignment");
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint8_t* sB = smem;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + C::MAIN_BYTES);
  std::uint64_t* empty = full + STAGES;
  const std::uint32_t hold_addr = smem_u32(empty + STAGES);

  // Tile order: groups of 8 row tiles sweep all column tiles (keeps the W and X slices in L2).
  constexpr int GROUP = 8;
  const int tile = blockIdx.x;
  const int per_group = GROUP * tiles_m;
  const int first_n = (tile / per_group) * GROUP;
  const int gsize = min(GROUP, tiles_n - first_n);
  const int tn = first_n + (tile % per_group) % gsize;
  const int tm = (tile % per_group) / gsize;

  const int c = threadIdx.x / 128;  // consumer warpgroup: W rows 64c..64c+63 of the tile
  const int tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], NCONS * 4);
    }
    fence_mbar_init();
    tma_prefetch_desc(&tm_x);
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int kb = 0; kb < min(STAGES, kblocks); ++kb) {
      mbar_expect_tx(&full[kb], C::B_BYTES);
      tma_load_2d(sB + kb * C::B_BYTES, &tm_x, &full[kb], kb * 64, tm * BN);
    }

  // this thread's A fragments: frags[kb][rb][kk][tid] (uint4), metadata meta[kb][rb][tid]
  const std::int64_t rb = std::int64_t(tn) * NCONS + c;
  const uint4* fp = frags + rb * 256 + tid;
  const std::uint32_t* mp = meta + rb * 128 + tid;
  const std::int64_t f_step = std::int64_t(n64_total) * 256, m_step = std::int64_t(n64_total) * 128;
  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
  fence_regs(acc);

  // register buffers: per-stage form (FB = 0) a ring of DEPTH; batched form two sets of FB
  constexpr int NB = FB > 0 ? 2 * FB : DEPTH;
  uint4 a0[NB], a1[NB];
  std::uint32_t mw[NB];
  auto load = [&](int kb, int d) {
    if (kb < kblocks) {
      a0[d] = ldg_frag(fp + kb * f_step);
      a1[d] = ldg_frag(fp + kb * f_step + 128);
      mw[d] = ldg_word(mp + kb * m_step);
    }
  };
#pragma unroll
  for (int d = 0; d < NB; ++d) {
    a0[d] = make_uint4(0, 0, 0, 0);
    a1[d] = a0[d];
    mw[d] = 0x44444444u;  // every group: positions (0, 1)
  }
  // the wgmma of k-block r retired: release its ring slot; thread 0 waits until every warp did
  // and refills the slot with k-block r + STAGES
  auto release = [&](int r) {
    if ((tid % 32) == 0) mbar_arrive(&empty[r % STAGES]);
    if (threadIdx.x == 0 && r + STAGES < kblocks) {
      const int s1 = r % STAGES;
      mbar_wait(&empty[s1], (r / STAGES) & 1);
      mbar_expect_tx(&full[s1], C::B_BYTES);
      tma_load_2d(sB + s1 * C::B_BYTES, &tm_x, &full[s1], (r + STAGES) * 64, tm * BN);
    }
  };
  // the two wgmmas of k-block kb (k32 steps 0 / 1, sparsity selectors 0 / 1) from buffer d
  auto mma = [&](int kb, int d) {
    const std::uint64_t db = smem_desc(sB + (kb % STAGES) * C::B_BYTES, 16, 1024, 1);  // 128B swizzle
    WgmmaSpRa<BN, In, 0>::run(acc, a0[d], db, mw[d]);
    WgmmaSpRa<BN, In, 1>::run(acc, a1[d], db + (64 >> 4), mw[d]);
  };

  if constexpr (FB == 0) {
    // per-stage form (measured at fa61bfc; this loop is the code of that build)
#pragma unroll
    for (int d = 0; d + 1 < DEPTH; ++d) load(d, d);
    for (int kb0 = 0; kb0 < kblocks; kb0 += DEPTH) {
#pragma unroll
      for (int d = 0; d < DEPTH; ++d) {
        const int kb = kb0 + d;
        if (kb < kblocks) {
          const int s = kb % STAGES;
          mbar_wait(&full[s], (kb / STAGES) & 1);
          const std::uint64_t db = smem_desc(sB + s * C::B_BYTES, 16, 1024, 1);  // 128B swizzle, 8 rows x 128 B
          wgmma_fence();
          WgmmaSpRa<BN, In, 0>::run(acc, a0[d], db, mw[d]);
          WgmmaSpRa<BN, In, 1>::run(acc, a1[d], db + (64 >> 4), mw[d]);
          wgmma_commit();
          wgmma_wait<1>();  // k-block kb-1 retired: its ring slot and its register buffer are free
          const int dp = (d + DEPTH - 1) % DEPTH;
          hold_ra(a0[dp], a1[dp], mw[dp], kblocks, hold_addr);
          if (kb > 0) {
            if ((tid % 32) == 0) mbar_arrive(&empty[(kb - 1) % STAGES]);
            if (threadIdx.x == 0 && kb - 1 + STAGES < kblocks) {
              const int s1 = (kb - 1) % STAGES;
              mbar_wait(&empty[s1], ((kb - 1) / STAGES) & 1);
              mbar_expect_tx(&full[s1], C::B_BYTES);
              tma_load_2d(sB + s1 * C::B_BYTES, &tm_x, &full[s1], (kb - 1 + STAGES) * 64, tm * BN);
            }
          }
          load(kb + DEPTH - 1, dp);
        }
      }
    }
  } else {
    // batched form (kblocks % (2 FB) == 0: pack_ra padding, checked by the host, so no guard and
    // no path that skips part of a batch): batch b = k-blocks FB b .. FB b + FB - 1 in set b % 2.
    // Wait for its X slots, one wgmma.fence (it waits for the batch's loads), issue all its
    // wgmmas (one commit group per k-block), then wait_group FB: batch b-1 has retired while
    // batch b stays queued. Release b-1's slots, hold its set, load batch b+1 into it. The next
    // fence then waits for those loads while FB k-blocks of this warpgroup's wgmmas execute.
#pragma unroll
    for (int j = 0; j < FB; ++j) load(j, j);
    for (int kb0 = 0; kb0 < kblocks; kb0 += 2 * FB) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int first = kb0 + h * FB;
#pragma unroll
        for (int j = 0; j < FB; ++j) mbar_wait(&full[(first + j) % STAGES], ((first + j) / STAGES) & 1);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < FB; ++j) {
          mma(first + j, h * FB + j);
          wgmma_commit();
        }
        wgmma_wait<FB>();  // batch b-1 retired
#pragma unroll
        for (int j = 0; j < FB; ++j) {
          const int d = (1 - h) * FB + j;
          hold_ra(a0[d], a1[d], mw[d], kblocks, hold_addr);
          if (first - FB + j >= 0) release(first - FB + j);
        }
#pragma unroll
        for (int j = 0; j < FB; ++j) load(first + FB + j, (1 - h) * FB + j);
      }
    }
  }
  wgmma_wait<0>();
#pragma unroll
  for (int d = 0; d < NB; ++d) hold_ra(a0[d], a1[d], mw[d], kblocks, hold_addr);
  fence_regs(acc);

  // ---- epilogue (as sptc24_wgmma.cu): fp32 staging over the idle ring, 16-byte guarded stores ----
  asm volatile("bar.sync 1, %0;" ::"n"(C::THREADS) : "memory");  // every warpgroup is done with the ring
  const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  float* st = reinterpret_cast<float*>(smem) + std::size_t(c) * BN * C::OUT_LD;
  float* base = st + (2 * t) * C::OUT_LD + 16 * w + g;
  stage_fragments<BN / 8, C::OUT_LD>(base, acc, 0);
  asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
  store_tile<Out, BN, C::OUT_LD>(st, y, tm * BN, tn * C::BM + c * 64, m, n, vec_store, tid);
#else
  (void)frags; (void)meta; (void)y; (void)m; (void)n; (void)kblocks; (void)n64_total; (void)tiles_n; (void)tiles_m;
  (void)vec_store;
  __trap();
#endif
}

/// Launch of one instantiation (a.rows_pad % (64 * NCONS) == 0, checked by the caller).
template <class In, class Out, int NCONS, int BN, int DEPTH, int FB>
void launch_ra(const DeviceRa& a, const Problem& p, cudaStream_t stream) {
  using C = RaCfg<NCONS, BN, DEPTH, FB>;
  auto kernel = sptc24_wgmma_ra_kernel<In, Out, NCONS, BN, DEPTH, FB>;
  static std::once_flag once;
  std::call_once(once, [&] {
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM_BYTES));
  });
  const CUtensorMap map_x = encode_tensor_2d(p.x, std::uint64_t(p.ldx), std::uint64_t(p.m), std::uint64_t(p.ldx) * 2, 64,
                                             C::BN, CU_TENSOR_MAP_SWIZZLE_128B, "x");
  const int tiles_n = int(a.rows_pad / C::BM);
  const int tiles_m = int((p.m + C::BN - 1) / C::BN);
  const int kblocks = int(a.k_pad / 64);
  const int vec = (p.n * std::int64_t(sizeof(Out))) % 16 == 0 && (reinterpret_cast<std::uintptr_t>(p.y) % 16) == 0;
  kernel<<<tiles_n * tiles_m, C::THREADS, C::SMEM_BYTES, stream>>>(
      map_x, static_cast<const uint4*>(a.frags), a.meta, static_cast<Out*>(p.y), int(p.m), int(p.n), kblocks,
      int(a.rows_pad / 64), tiles_n, tiles_m, vec);
  SPARSENM_CUDA_CHECK_LAUNCH("sptc24_wgmma_ra_kernel");
}

/// Per-input-type dispatch over tiles and output types (defined in wgmma_ra_{f16,bf16}.cu).
template <class In>
void run_ra_in(const DeviceRa& a, RaTile tile, const Problem& p, cudaStream_t stream, RaOpts opts);

template <class In, int NCONS, int BN, int DEPTH, int FB>
void run_ra_out(const DeviceRa& a, const Problem& p, cudaStream_t s) {
  switch (p.out) {
    case DType::f32: return launch_ra<In, float, NCONS, BN, DEPTH, FB>(a, p, s);
    case DType::f16: return launch_ra<In, __half, NCONS, BN, DEPTH, FB>(a, p, s);
    case DType::bf16: return launch_ra<In, __nv_bfloat16, NCONS, BN, DEPTH, FB>(a, p, s);
    default: throw InvalidArgument("y dtype", "must be f32, f16 or bf16 for the sparse tensor-core kernels");
  }
}

/// Tile -> (warpgroups, BN) x form: per-stage (register ring of 4, as measured at fa61bfc) or
/// batched (RaOpts::batched; fence batch ra_fence_batch(tile), sptc.hpp).
template <class In, int NCONS, int BN, int FB>
void run_ra_form(const DeviceRa& a, const Problem& p, cudaStream_t s, RaOpts o) {
  if (o.batched) return run_ra_out<In, NCONS, BN, 0, FB>(a, p, s);
  return run_ra_out<In, NCONS, BN, 4, 0>(a, p, s);
}
#define SPARSENM_SPTC_RA_INSTANTIATE(IN)                                                          \
  template <>                                                                                     \
  void run_ra_in<IN>(const DeviceRa& a, RaTile tile, const Problem& p, cudaStream_t s, RaOpts o) { \
    switch (tile) {                                                                               \
      case RaTile::r128n256: return run_ra_form<IN, 2, 256, ra_fence_batch(RaTile::r128n256)>(a, p, s, o); \
      case RaTile::r192n192: return run_ra_form<IN, 3, 192, ra_fence_batch(RaTile::r192n192)>(a, p, s, o); \
      case RaTile::r256n128: return run_ra_form<IN, 4, 128, ra_fence_batch(RaTile::r256n128)>(a, p, s, o); \
    }                                                                                             \
  }

}  // namespace sparsenm::cuda::sptc
