// sparsenm — hardware 2:4 at decode sizes (m <= 32) on Hopper's sparse warpgroup MMA
// (wgmma.mma_async.sp, sm_90a): cuda:sptc_24_wgmma_dec.
//
// At m <= 32 the product is a weight stream (12288^2: 151 MB values + 19 MB metadata, ~5 us of
// sparse tensor-core work at BN = 32), so the kernel is built around keeping DRAM busy, not
// around the MMA:
// - A = packed W (layout.hpp, the same packing as cuda:sptc_24_wgmma), B = X [m][k] (K-major B,
//   rows m..BN-1 zero-filled by the TMA bounds), D = Y^T in fp32 registers, BN = 8 / 16 / 32
//   (the smallest instantiated wgmma N >= m): a consumer thread holds BN / 2 accumulators and
//   issues two wgmma.sp per 64-k block; it spends no instruction per weight element.
// - CTA = 2 consumer warpgroups (64 W rows each, a 128-row tile) + 1 producer warp whose lane 0
//   issues, per stage, one TMA of the 128 x 64-k W tile (8 KB, 64B swizzle), one TMA of the
//   BN x 64 X tile (128B swizzle) and one 1 KB bulk copy of the metadata words, into a ring of
//   15-16 stages (~140 KB of W in flight per SM; 4.2 TB/s at ~1 us latency needs ~32 KB per SM).
//   full[s] completes on the transaction bytes; empty[s] takes one arrival per consumer warp
//   after the wgmma reading stage s retired.
// - Independent accumulator sets (session 10f): with one accumulator per warpgroup every unit's
//   two wgmma.sp depend on the previous unit's, so a warpgroup ran one chain of tiny (N = 8..32)
//   MMAs, latency-bound at ~380-510 ns per unit (session 10e). Each consumer thread now holds SETS
//   (default 4) accumulator sets; unit i of a segment goes to set i % SETS, wgmma.wait_group
//   SETS - 1 keeps SETS units in flight, the stage of unit i - (SETS - 1) is released after that
//   wait, and the sets are summed in registers before the flush. The metadata word of each
//   in-flight unit has its own register (a rotation of SETS words, each held by hold_sp_meta until
//   the wait that retires its unit; scripts/sass-meta-check: 0 in-flight rewrites).
// - Stream-K split: the units (128-row tile, 64-k block), tile-major, are cut into one
//   contiguous range per CTA, one CTA per SM (grid = min(units, #SMs)): every CTA streams the
//   same number of W bytes (within one k-block), one wave, and the ring never drains between
//   tiles. A range covers the end of one tile, whole tiles, the start of another; each piece
//   ("segment") of a tile ends with a flush.
// - Reduction: fp32 atomics (float2 red.global.add) into a workspace Yp [rows_pad][BN] that is
//   zero between launches, then a per-64-row-block counter of k-blocks done: the warpgroup whose
//   segment completes the count (the last arrival) reads the block back (L2), writes Y
//   (f32 / f16 / bf16, guarded in m and n, 64 consecutive Y columns per row) and re-zeroes the
//   block and its counter. Chosen over a cluster reduction through distributed shared memory
//   because a stream-K range does not align with tiles (a tile's pieces live in 1-3 CTAs that are
//   not a cluster, and a split fixed to a cluster size would leave 12288 rows = 96 tiles at 96 or
//   192 CTAs on 132 SMs); the atomic traffic is ~2.4-3 pieces x rows x BN x 4 B (4-11 MB of L2
//   atomics at BN = 32 against 120-170 MB of DRAM reads). One launch at a time per workspace.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "cuda/common.cuh"
#include "cuda/sptc/epilogue.cuh"
#include "cuda/sptc/ptx.cuh"
#include "cuda/sptc/sptc.hpp"
#include "cuda/sptc/wgmma_sp.cuh"

namespace sparsenm::cuda::sptc {

template <int BN, int STAGES>
struct DecCfg {
  static constexpr int NCONS = 2;
  static constexpr int BM = 64 * NCONS;
  static constexpr int THREADS = 128 * NCONS + 32;
  static constexpr int A_BYTES = BM * 64;   // BM rows x 32 compressed values x 2 B
  static constexpr int B_BYTES = BN * 128;  // BN rows x 64 k x 2 B
  static constexpr int M_BYTES = NCONS * 512;
  static constexpr int TX_BYTES = A_BYTES + B_BYTES + M_BYTES;
  static constexpr int EPI_LD = 64 + 1;  // staged Y^T block, transposed: [BN][64 W rows], padded
  static constexpr int EPI_BYTES = NCONS * BN * EPI_LD * 4;
  static constexpr int OFF_B = STAGES * A_BYTES;
  static constexpr int OFF_M = OFF_B + STAGES * B_BYTES;
  static constexpr int OFF_EPI = OFF_M + STAGES * M_BYTES;
  static constexpr int OFF_BAR = OFF_EPI + EPI_BYTES;
  static constexpr int SMEM_BYTES = 1024 + OFF_BAR + 2 * STAGES * 8 + 16;
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "tiles keep swizzle alignment");
  static_assert(SMEM_BYTES <= 227 * 1024, "fits one CTA per SM");
};

/// BN -> ring depth (the deepest ring that fits beside the epilogue staging).
template <int BN>
constexpr int dec_stages() {
  return BN == 32 ? 15 : 16;
}

/// Accumulator sets -> wgmma groups left in flight after each commit (SETS = 1: the chained form
/// of session 10e, one group behind the chain) and the metadata-register rotation (WAIT + 1 words).
template <int SETS>
constexpr int dec_wait() {
  return SETS == 1 ? 1 : SETS - 1;
}
template <int SETS>
constexpr int dec_ring() {
  return dec_wait<SETS>() + 1;
}

/// The consumer's metadata word: a shared-window load (the ring pointer is a rounded-up generic
/// address, which the compiler would otherwise load through a generic LD).
__device__ __forceinline__ std::uint32_t lds_u32(const void* p) {
  std::uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(smem_u32(p)) : "memory");
  return v;
}

template <class Out>
__device__ __forceinline__ void store_out(void* y, std::size_t i, float v) {
  static_cast<Out*>(y)[i] = to_out<Out>(v);
}

/// Stream-K decode kernel (see the file comment). out_kind: 0 = f32, 1 = f16, 2 = bf16.
template <class In, int BN, int STAGES, int SETS>
__global__ void __launch_bounds__(DecCfg<BN, STAGES>::THREADS, 1)
    sptc24_wgmma_dec_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_x,
                            const std::uint32_t* __restrict__ meta, void* __restrict__ y, float* __restrict__ ws,
                            unsigned* __restrict__ counters, int m, int n, int kblocks, int n64_total,
                            long long units, int out_kind) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = DecCfg<BN, STAGES>;
  static_assert(SETS == 1 || SETS == 2 || SETS == 4 || SETS == 8, "accumulator sets");
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint8_t* sA = smem;
  std::uint8_t* sB = smem + C::OFF_B;
  std::uint32_t* sM = reinterpret_cast<std::uint32_t*>(smem + C::OFF_M);
  float* sE = reinterpret_cast<float*>(smem + C::OFF_EPI);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + C::OFF_BAR);
  std::uint64_t* empty = full + STAGES;
  volatile int* last_flag = reinterpret_cast<volatile int*>(empty + STAGES);

  // this CTA's units [u0, u1): balanced to one k-block
  const long long u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], C::NCONS * 4);
    }
    fence_mbar_init();
  }
  __syncthreads();

  if (wg == C::NCONS) {
    // ---- producer: lane 0 of the last warp streams units u0 .. u1-1 through the ring ----
    if (tid == 0) {
      tma_prefetch_desc(&tm_a);
      tma_prefetch_desc(&tm_x);
      for (long long u = u0; u < u1; ++u) {
        const long long q = u - u0;
        const int s = int(q % STAGES);
        if (q >= STAGES) mbar_wait(&empty[s], std::uint32_t(((q / STAGES) - 1) & 1));
        const int tile = int(u / kblocks), kb = int(u % kblocks);
        mbar_expect_tx(&full[s], C::TX_BYTES);
        tma_load_2d(sA + s * C::A_BYTES, &tm_a, &full[s], kb * 32, tile * C::BM);
        tma_load_2d(sB + s * C::B_BYTES, &tm_x, &full[s], kb * 64, 0);
        bulk_load(sM + s * C::NCONS * 128, meta + (std::size_t(kb) * n64_total + std::size_t(tile) * C::NCONS) * 128,
                  C::M_BYTES, &full[s]);
      }
    }
    return;
  }

  // ---- consumers: warpgroup c owns W rows 64c .. 64c+63 of every tile of the range ----
  const int c = wg;
  const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  float* st = sE + c * BN * C::EPI_LD;
  for (long long u = u0; u < u1;) {
    const int tile = int(u / kblocks), kb0 = int(u % kblocks);
    const int nkb = int(min(static_cast<long long>(kblocks - kb0), u1 - u));
    const long long q0 = u - u0;
    // SETS independent accumulator sets: unit i of the segment accumulates into set i % SETS, so
    // the wgmma groups of consecutive units do not depend on each other; WAIT groups stay in flight
    // after each commit (WAIT + 1 units issued ahead of the retire point). The metadata word of
    // unit i lives in mw[i % R] and is held (hold_sp_meta) right after the wait that retires unit
    // i, so no register an in-flight wgmma.sp reads is rewritten (scripts/sass-meta-check).
    constexpr int WAIT = dec_wait<SETS>();
    constexpr int R = dec_ring<SETS>();
    float acc[SETS][BN / 2];
#pragma unroll
    for (int j = 0; j < SETS; ++j) {
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[j][i] = 0.f;
      fence_regs(acc[j]);
    }
    std::uint32_t mw[R];
#pragma unroll
    for (int j = 0; j < R; ++j) mw[j] = 0u;
    for (int base = 0; base < nkb; base += R) {
#pragma unroll
      for (int j = 0; j < R; ++j) {
        const int i = base + j;
        if (i >= nkb) goto segment_done;  // leaves both loops (a plain break would leave a CFG path back to the next load)
        const long long q = q0 + i;
        const int s = int(q % STAGES);
        mbar_wait(&full[s], std::uint32_t((q / STAGES) & 1));
        mw[j] = lds_u32(sM + s * C::NCONS * 128 + c * 128 + tid);
        const std::uint8_t* a_tile = sA + s * C::A_BYTES + c * 64 * 64;
        const std::uint8_t* b_tile = sB + s * C::B_BYTES;
        const std::uint64_t da = smem_desc(a_tile, 16, 512, 2);   // 64B swizzle, 8 rows x 64 B
        const std::uint64_t db = smem_desc(b_tile, 16, 1024, 1);  // 128B swizzle, 8 rows x 128 B
        wgmma_fence();
        WgmmaSp<BN, In, 0, 0>::run(acc[j % SETS], da, db, mw[j]);
        WgmmaSp<BN, In, 1, 0>::run(acc[j % SETS], da + (32 >> 4), db + (64 >> 4), mw[j]);
        wgmma_commit();
        wgmma_wait<WAIT>();  // unit i - WAIT retired
        hold_sp_meta(mw[(j + R - WAIT) % R], kblocks, sM);
        if (i >= WAIT) {
          __syncwarp();  // the arrive releases lane 0's accesses only: order the other lanes' metadata reads first
          if (lane == 0) mbar_arrive(&empty[int((q - WAIT) % STAGES)]);
        }
      }
    }
  segment_done:
    wgmma_wait<0>();
#pragma unroll
    for (int j = 0; j < R; ++j) hold_sp_meta(mw[j], kblocks, sM);
#pragma unroll
    for (int j = 0; j < SETS; ++j) fence_regs(acc[j]);
    __syncwarp();
    if (lane == 0)  // the segment's last min(WAIT, nkb) stages (wait_group 0 above)
      for (int i = max(0, nkb - WAIT); i < nkb; ++i) mbar_arrive(&empty[int((q0 + i) % STAGES)]);
#pragma unroll
    for (int j = 1; j < SETS; ++j)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[0][i] += acc[j][i];

    // ---- flush: add the partial Y^T block into the workspace, the last arrival writes Y ----
    // acc[4j + {0,1}] = (W row 16w + g, Y row 8j + 2t + {0,1}); acc[4j + {2,3}]: W row + 8
    const int rb = tile * C::NCONS + c;  // 64-row block
    float* wsb = ws + std::size_t(rb) * 64 * BN;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      atomicAdd(reinterpret_cast<float2*>(wsb + (16 * w + g) * BN + 8 * j + 2 * t), make_float2(acc[0][4 * j + 0], acc[0][4 * j + 1]));
      atomicAdd(reinterpret_cast<float2*>(wsb + (16 * w + g + 8) * BN + 8 * j + 2 * t), make_float2(acc[0][4 * j + 2], acc[0][4 * j + 3]));
    }
    __threadfence();
    asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");
    if (tid == 0) last_flag[c] = atomicAdd(&counters[rb], unsigned(nkb)) + unsigned(nkb) == unsigned(kblocks);
    asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");
    if (last_flag[c]) {
      __threadfence();
      // block [64][BN] fp32 -> staging [BN][64] (transposed: Y rows), workspace back to zero
      constexpr int Q = BN / 4;  // float4 per W row
      static_assert(64 * Q % 128 == 0, "whole float4 passes");
#pragma unroll
      for (int i = 0; i < 64 * Q / 128; ++i) {
        const int idx = tid + 128 * i, r = idx / Q, c4 = idx % Q;
        float4* src = reinterpret_cast<float4*>(wsb) + idx;
        const float4 v = __ldcg(src);
        __stcg(src, make_float4(0.f, 0.f, 0.f, 0.f));
        st[(4 * c4 + 0) * C::EPI_LD + r] = v.x;
        st[(4 * c4 + 1) * C::EPI_LD + r] = v.y;
        st[(4 * c4 + 2) * C::EPI_LD + r] = v.z;
        st[(4 * c4 + 3) * C::EPI_LD + r] = v.w;
      }
      if (tid == 0) counters[rb] = 0u;
      asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");
      const int row0 = rb * 64;
      for (int idx = tid; idx < m * 64; idx += 128) {
        const int mi = idx / 64, r = idx % 64;
        if (row0 + r >= n) continue;
        const std::size_t o = std::size_t(mi) * std::size_t(n) + std::size_t(row0 + r);
        const float v = st[mi * C::EPI_LD + r];
        if (out_kind == 0)
          store_out<float>(y, o, v);
        else if (out_kind == 1)
          store_out<__half>(y, o, v);
        else
          store_out<__nv_bfloat16>(y, o, v);
      }
      asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");  // staging and flag reused by the next flush
    }
    u += nkb;
  }
#else
  (void)meta; (void)y; (void)ws; (void)counters; (void)m; (void)n; (void)kblocks; (void)n64_total; (void)units; (void)out_kind;
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side

int dec_bn(std::int64_t m) noexcept { return m <= 8 ? 8 : m <= 16 ? 16 : 32; }

std::size_t dec_workspace_bytes(const DeviceA& a, std::int64_t m) {
  return std::size_t(a.rows_pad) * std::size_t(dec_bn(m)) * 4 + std::size_t(a.rows_pad / 64) * 4;
}

namespace {

int sm_count_dev() {
  int dev = 0, sms = 132;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

template <class In, int BN, int SETS>
DecLaunch launch_dec(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, void* workspace, int grid_limit,
                     cudaStream_t stream, bool dry) {
  constexpr int STAGES = dec_stages<BN>();
  using C = DecCfg<BN, STAGES>;
  auto kernel = sptc24_wgmma_dec_kernel<In, BN, STAGES, SETS>;
  static std::once_flag once;
  std::call_once(once, [&] {
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM_BYTES));
  });
  const int tiles = int(a.rows_pad / C::BM);
  const int kblocks = int(a.k_pad / 64);
  const long long units = static_cast<long long>(tiles) * kblocks;
  int grid = sm_count_dev();
  if (grid_limit > 0) grid = std::min(grid, grid_limit);
  grid = int(std::min<long long>(grid, units));
  DecLaunch info{BN, STAGES, grid, units, SETS};
  if (dry) return info;
  const CUtensorMap map_x = encode_tensor_2d(p.x, std::uint64_t(p.ldx), std::uint64_t(p.m), std::uint64_t(p.ldx) * 2, 64,
                                             BN, CU_TENSOR_MAP_SWIZZLE_128B, "x");
  float* ws = static_cast<float*>(workspace);
  unsigned* counters = reinterpret_cast<unsigned*>(ws + std::size_t(a.rows_pad) * BN);
  const int out_kind = p.out == DType::f32 ? 0 : p.out == DType::f16 ? 1 : 2;
  kernel<<<grid, C::THREADS, C::SMEM_BYTES, stream>>>(map_a, map_x, a.meta, p.y, ws, counters, int(p.m), int(p.n), kblocks,
                                                      int(a.rows_pad / 64), units, out_kind);
  SPARSENM_CUDA_CHECK_LAUNCH("sptc24_wgmma_dec_kernel");
  return info;
}

template <class In, int BN>
DecLaunch dispatch_sets(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, void* ws, int sets, int grid_limit,
                        cudaStream_t s, bool dry) {
  switch (sets) {
    case 1: return launch_dec<In, BN, 1>(a, map_a, p, ws, grid_limit, s, dry);
    case 2: return launch_dec<In, BN, 2>(a, map_a, p, ws, grid_limit, s, dry);
    case 4: return launch_dec<In, BN, 4>(a, map_a, p, ws, grid_limit, s, dry);
    default: return launch_dec<In, BN, 8>(a, map_a, p, ws, grid_limit, s, dry);
  }
}

template <class In>
DecLaunch dispatch_dec(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, void* ws, int sets, int grid_limit,
                       cudaStream_t s, bool dry) {
  switch (dec_bn(p.m)) {
    case 8: return dispatch_sets<In, 8>(a, map_a, p, ws, sets, grid_limit, s, dry);
    case 16: return dispatch_sets<In, 16>(a, map_a, p, ws, sets, grid_limit, s, dry);
    default: return dispatch_sets<In, 32>(a, map_a, p, ws, sets, grid_limit, s, dry);
  }
}

}  // namespace

int dec_default_sets(std::int64_t) noexcept { return 4; }

DecLaunch run_sptc24_wgmma_dec(const DeviceA& a, const CUtensorMap& values_map, const Problem& p, void* workspace,
                               cudaStream_t stream, int grid_limit, bool dry, int sets) {
  if (sets == 0) sets = dec_default_sets(p.m);
  if (sets != 1 && sets != 2 && sets != 4 && sets != 8) throw InvalidArgument("sets", "must be 0 (default), 1, 2, 4 or 8");
  if (p.m < 1 || p.m > 32) throw InvalidArgument("m", "the decode kernel takes 1 <= m <= 32");
  if (p.x_trans || p.y_trans) throw InvalidArgument("x_trans / y_trans", "are not built for the decode kernel");
  if (p.ldx % 8 != 0 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0)
    throw InvalidArgument("x", "the decode kernel needs 16-byte aligned rows (ldx % 8 == 0, 16-byte aligned pointer)");
  if (a.rows_pad % 128 != 0) throw InvalidArgument("packed W", "rows_pad must be a multiple of 128");
  if (p.out != DType::f32 && p.out != DType::f16 && p.out != DType::bf16)
    throw InvalidArgument("y dtype", "must be f32, f16 or bf16 for the sparse tensor-core kernels");
  if (!dry && (workspace == nullptr || reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0))
    throw InvalidArgument("workspace", "must be a 16-byte aligned buffer of dec_workspace_bytes(), zero before the first launch");
  if (p.in == DType::f16) return dispatch_dec<__half>(a, values_map, p, workspace, sets, grid_limit, stream, dry);
  if (p.in == DType::bf16) return dispatch_dec<__nv_bfloat16>(a, values_map, p, workspace, sets, grid_limit, stream, dry);
  throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
}

}  // namespace sparsenm::cuda::sptc
