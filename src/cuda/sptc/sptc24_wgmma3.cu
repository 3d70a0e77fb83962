// sparsenm — hardware 2:4 SpMM on Hopper's sparse tensor cores, 192 x 256 tiles on three
// warpgroups (wgmma.mma_async.sp, sm_90a).
//
// Why: a sparse m64n256k32 wgmma reads its B operand (256 x 32 f16 = 16 KB) from shared memory in
// the 128 tensor clocks it takes at the full sparse rate, i.e. the 128 B/clk an SM's shared memory
// delivers, and every warpgroup re-reads the X stage for its own 64 W rows. Per dense-equivalent
// FLOP the 128 x 256 tile (2 consumers) costs 1/64 (B reads) + 1/512 (A reads) + 1/128 (TMA
// writes of X) + 1/512 (TMA writes of W) = 14/512 byte, i.e. at most ~57 % of the sparse peak at
// 128 B/clk; a 192-row tile shares each X stage among 3 warpgroups: 12.67/512 byte, ~63 %
// (docs/PERF-sptc.md). Three consumers + a producer warpgroup (512 threads) cannot hold the 128 fp32
// accumulators each (the compile-time cap is 65536/512 = 128 registers), so there is no producer
// warpgroup: 384 threads = 3 consumer warpgroups (168 registers), and thread 0 refills the ring.
//
// Ring: STAGES slots of {A [192][32 values] (64B swizzle), B = X [256][64] (128B swizzle), the
// metadata words of the 192 rows}. full[s]: TMA transaction bytes; empty[s]: one arrival per
// warp once the wgmma that read slot s has retired (wgmma.wait_group 1). At iteration kb, after its
// own arrival for slot (kb-1) % STAGES, thread 0 waits until all 12 warps released that slot and
// loads k-block kb-1+STAGES into it, so STAGES-1 k-blocks are in flight while one is consumed.
// Epilogue as in sptc24_wgmma.cu: accumulators -> shared memory (fp32) -> 16-byte guarded stores.
//
// One option (template parameter, one kernel body; an experiment, not a plan candidate: measured at
// c026676 it lost to the 128 x 256 kernels in every bench case, docs/PERF-sptc.md):
//  * SK = stream-k for the last wave (W3Opts::stream_k): a persistent grid of G = #SMs CTAs. With
//    T tiles, the first (T/G - 1) full waves are whole tiles (CTA c: c, c+G, ...); the remaining
//    r + G tiles (r = T % G; all T when T < G) are cut into k-block iterations split evenly over
//    the G CTAs, so every CTA runs the same number of iterations (no 5.33-wave quantization at
//    n = 4096). A CTA's work is a list of local iterations j -> (tile, k-block); the ring runs on
//    across its tiles (thread 0 refills slot j-1 with j-1+STAGES whatever tile that belongs to),
//    and the epilogue stages 32 Y rows at a time through a dedicated buffer. A tile split between
//    CTAs: the CTA holding its k-block 0 (the tile is the last one of its range) owns it; every
//    other piece is the first segment of a later CTA's range, written as fp32 accumulator
//    fragments to partials[cta] and published with a release flag; the owner acquires the flags
//    of the following CTAs, adds their fragments and stores. Each CTA writes at most one partial;
//    owners only wait on higher CTAs, which are resident (G <= #SMs, one CTA per SM).
//
// Metadata hazard: the tensor core reads the metadata register of a wgmma.mma_async.sp while the
// wgmma is in flight, and ptxas does not protect it; with one wgmma group in flight the k-loop
// therefore alternates two metadata registers (ptx.cuh: sp_mainloop), checked in the SASS by
// scripts/sass-meta-check (the 0442059 version of this kernel reused one register and was wrong).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <mutex>

#include "cuda/common.cuh"
#include "cuda/sptc/epilogue.cuh"
#include "cuda/sptc/ptx.cuh"
#include "cuda/sptc/sptc.hpp"
#include "cuda/sptc/wgmma_sp.cuh"

namespace sparsenm::cuda::sptc {

namespace {

template <bool SK>
struct W3Cfg {
  static constexpr int NCONS = 3;
  static constexpr int BM = 192, BN = 256, STAGES = 4;
  static constexpr int THREADS = 384;
  static constexpr int A_BYTES = BM * 64;   // 192 rows x 32 compressed values x 2 B
  static constexpr int B_BYTES = BN * 128;  // 256 rows x 64 k x 2 B
  static constexpr int M_BYTES = NCONS * 512;
  static constexpr int TX_BYTES = A_BYTES + B_BYTES + M_BYTES;
  static constexpr int PIPE_BYTES = STAGES * TX_BYTES;
  static constexpr int OUT_LD = 64 + 4;
  // epilogue staging per consumer: one-tile grid: all 256 Y rows, over the idle ring; stream-k:
  // ER = 32 rows at a time in a buffer of its own (the ring is already loading the next tile)
  static constexpr int ER = SK ? 32 : BN;
  static constexpr int EPI_BYTES = NCONS * ER * OUT_LD * 4;
  static constexpr int EPI_OFFSET = SK ? PIPE_BYTES : 0;
  static constexpr int MAIN_BYTES = SK ? PIPE_BYTES + EPI_BYTES : (PIPE_BYTES > EPI_BYTES ? PIPE_BYTES : EPI_BYTES);
  static constexpr int SMEM_BYTES = 1024 + MAIN_BYTES + 2 * STAGES * 8;
  static constexpr int PARTIAL_FLOATS = THREADS * BN / 2;  // one CTA's fp32 accumulators
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "tiles keep swizzle alignment");
  static_assert(SMEM_BYTES <= 232448, "fits the 227 KB of an H100/H200 SM");
};

/// Work of one launch: CTA c runs whole tiles c, c + G, ..., c + (dp_tiles - 1) G, then its share
/// [c sk_iters / G, (c + 1) sk_iters / G) of the sk_iters k-block iterations of tiles sk_tile0...
struct W3Work {
  int dp_tiles = 1;
  int sk_tile0 = 0;
  long long sk_iters = 0;
  float* partials = nullptr;  ///< [G][PARTIAL_FLOATS] (stream-k)
  int* flags = nullptr;       ///< [G], 0 between launches (stream-k)
};

__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_gpu(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

}  // namespace

template <class In, class Out, bool SK, bool MG = false>
__global__ void __launch_bounds__(384, 1)
    sptc24_wgmma3_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_x,
                         const std::uint32_t* __restrict__ meta, Out* __restrict__ y, int m, int n, int kblocks,
                         int n64_total, int tiles_n, int tiles_m, int vec_store, W3Work wk) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = W3Cfg<SK>;
  constexpr int STAGES = C::STAGES, BN = C::BN, NCONS = C::NCONS;
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint8_t* sA = smem;
  std::uint8_t* sB = smem + STAGES * C::A_BYTES;
  std::uint32_t* sM = reinterpret_cast<std::uint32_t*>(sB + STAGES * C::B_BYTES);
  float* epi = reinterpret_cast<float*>(smem + C::EPI_OFFSET);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + C::MAIN_BYTES);
  std::uint64_t* empty = full + STAGES;

  const int K = kblocks;
  const int G = int(gridDim.x), cta = int(blockIdx.x);
  auto sk_bound = [&](int cc) { return (static_cast<long long>(cc) * wk.sk_iters) / G; };
  const long long ska = sk_bound(cta);
  const int dp_iters = wk.dp_tiles * K;
  const int n_local = dp_iters + int(sk_bound(cta + 1) - ska);
  // local iteration j -> (linear tile, k-block)
  auto coords = [&](int j, int& tile, int& kb) {
    if (j < dp_iters) {
      tile = cta + (j / K) * G;
      kb = j % K;
    } else {
      const long long g = ska + (j - dp_iters);
      tile = wk.sk_tile0 + int(g / K);
      kb = int(g % K);
    }
  };
  // linear tile -> (row tile tn, column tile tm): groups of 8 row tiles sweep all column tiles
  auto tile_nm = [&](int tile, int& tn, int& tm) {
    constexpr int GROUP = 8;
    const int per_group = GROUP * tiles_m;
    const int first_n = (tile / per_group) * GROUP;
    const int gsize = min(GROUP, tiles_n - first_n);
    tn = first_n + (tile % per_group) % gsize;
    tm = (tile % per_group) / gsize;
  };

  const int c = threadIdx.x / 128;  // consumer warpgroup: W rows 64c..64c+63 of the tile
  const int tid = threadIdx.x % 128;
  // thread 0's load cursor: loads are issued in order j = 0, 1, 2, ..., so (tile, k-block, tn, tm)
  // advance by one k-block per load; the divisions of coords/tile_nm run once per tile, not on the
  // refill path of every stage (thread 0 is also a consumer: its warp's wgmma waits for it)
  int cur_j = 0, cur_tile = 0, cur_kb = 0, cur_tn = 0, cur_tm = 0;
  auto seek = [&](int j) {
    cur_j = j;
    coords(j, cur_tile, cur_kb);
    tile_nm(cur_tile, cur_tn, cur_tm);
  };
  auto load = [&]() {  // thread 0 only: the cursor's iteration into slot cur_j % STAGES, then advance
    const int s = cur_j % STAGES;
    mbar_expect_tx(&full[s], MG ? C::TX_BYTES - C::M_BYTES : C::TX_BYTES);
    tma_load_2d(sA + s * C::A_BYTES, &tm_a, &full[s], cur_kb * 32, cur_tn * C::BM);
    tma_load_2d(sB + s * C::B_BYTES, &tm_x, &full[s], cur_kb * 64, cur_tm * BN);
    if constexpr (!MG) bulk_load(sM + s * NCONS * 128, meta + (std::size_t(cur_kb) * n64_total + std::size_t(cur_tn) * NCONS) * 128,
              C::M_BYTES, &full[s]);
    ++cur_j;
    if (++cur_kb == K || cur_j == dp_iters) seek(cur_j);  // next tile, or the start of the stream-k range
  };
  // after the wgmma of iteration i retired: release its slot; thread 0 then waits until all 12
  // warps did and refills the slot with iteration i + STAGES
  auto release = [&](int i) {
    __syncwarp();  // the arrive releases lane 0's accesses only: order the other lanes' metadata reads first
    if ((tid % 32) == 0) mbar_arrive(&empty[i % STAGES]);
    if (threadIdx.x == 0 && i + STAGES < n_local) {
      mbar_wait(&empty[i % STAGES], (i / STAGES) & 1);
      load();  // the cursor is at i + STAGES
    }
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], NCONS * 4);
    }
    fence_mbar_init();
    tma_prefetch_desc(&tm_a);
    tma_prefetch_desc(&tm_x);
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (seek(0); cur_j < min(STAGES, n_local);) load();

  float acc[BN / 2];
  const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  int j = 0;
  while (j < n_local) {
    // segment: k-blocks kb0 .. kb0 + len - 1 of one tile
    int tile, kb0, tn, tm;
    coords(j, tile, kb0);
    tile_nm(tile, tn, tm);
    const int len = min(K - kb0, n_local - j);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
    fence_regs(acc);
    const int j0 = j;
    // MG: this thread's metadata word straight from global memory, one stage ahead (ptx.cuh:
    // sp_mainloop_gmeta; past the segment end the load repeats its last k-block)
    const std::uint32_t* gmeta = meta + (std::size_t(tn) * NCONS + c) * 128 + tid;
    const std::size_t kstride = std::size_t(n64_total) * 128;
    const int kb_last = kb0 + len - 1;
    // metadata double-buffered across the unrolled pair (ptx.cuh: sp_mainloop / hold_sp_meta)
    sp_mainloop_sel<MG>(
        len, K, sM + c * 128 + tid,
        [&](int i) { return __ldg(gmeta + std::size_t(min(kb0 + i, kb_last)) * kstride); },
        [&](int i, std::uint32_t& mw) {
          const int jj = j0 + i, s = jj % STAGES;
          mbar_wait(&full[s], (jj / STAGES) & 1);
          if constexpr (!MG) mw = sM[s * NCONS * 128 + c * 128 + tid];
          const std::uint64_t da = smem_desc(sA + s * C::A_BYTES + c * 64 * 64, 16, 512, 2);  // 64B swizzle
          const std::uint64_t db = smem_desc(sB + s * C::B_BYTES, 16, 1024, 1);               // 128B swizzle
          wgmma_fence();
          WgmmaSp<BN, In, 0, 0>::run(acc, da, db, mw);
          WgmmaSp<BN, In, 1, 0>::run(acc, da + (32 >> 4), db + (64 >> 4), mw);
          wgmma_commit();
          wgmma_wait<1>();  // the MMAs of iteration jj-1 have retired: its slot may be refilled
        },
        [&](int i) {
          if (i > 0) release(j0 + i - 1);
        });
    j = j0 + len;
    fence_regs(acc);
    release(j - 1);

    if constexpr (SK) {
      if (kb0 > 0) {
        // not the tile's owner (this is the first segment of this CTA's range): publish the fragments
        float4* dst = reinterpret_cast<float4*>(wk.partials + std::size_t(cta) * C::PARTIAL_FLOATS) + threadIdx.x;
#pragma unroll
        for (int q = 0; q < BN / 8; ++q)
          __stcg(dst + q * C::THREADS, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
        asm volatile("bar.sync 1, %0;" ::"n"(C::THREADS) : "memory");
        if (threadIdx.x == 0) {
          __threadfence();
          st_release_gpu(wk.flags + cta, 1);
        }
        continue;
      }
      if (len < K) {
        // owner of a tile that continues in the next CTAs' ranges: add their fragments
        const long long tile_end = static_cast<long long>(tile - wk.sk_tile0 + 1) * K;
        for (int cc = cta + 1; cc < G; ++cc) {
          if (threadIdx.x == 0) {
            while (ld_acquire_gpu(wk.flags + cc) == 0) {
            }
            wk.flags[cc] = 0;  // consumed (each partial has one owner): 0 again for the next launch
          }
          asm volatile("bar.sync 1, %0;" ::"n"(C::THREADS) : "memory");
          const float4* src = reinterpret_cast<const float4*>(wk.partials + std::size_t(cc) * C::PARTIAL_FLOATS) + threadIdx.x;
#pragma unroll
          for (int q = 0; q < BN / 8; ++q) {
            const float4 v = __ldcg(src + q * C::THREADS);
            acc[4 * q] += v.x;
            acc[4 * q + 1] += v.y;
            acc[4 * q + 2] += v.z;
            acc[4 * q + 3] += v.w;
          }
          if (sk_bound(cc + 1) >= tile_end) break;
        }
      }
    }

    // ---- epilogue: ER Y rows at a time through this consumer's staging buffer ----
    if constexpr (!SK) asm volatile("bar.sync 1, %0;" ::"n"(C::THREADS) : "memory");  // staging overlays the idle ring
    float* st = epi + std::size_t(c) * C::ER * C::OUT_LD;
    float* base = st + (2 * t) * C::OUT_LD + 16 * w + g;
#pragma unroll
    for (int q = 0; q < BN / C::ER; ++q) {
      if constexpr (SK) asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");  // previous chunk's stores are done
#pragma unroll
      for (int jj = 0; jj < C::ER / 8; ++jj) {
        const int a4 = 4 * ((C::ER / 8) * q + jj);
        base[jj * 8 * C::OUT_LD] = acc[a4 + 0];
        base[jj * 8 * C::OUT_LD + C::OUT_LD] = acc[a4 + 1];
        base[jj * 8 * C::OUT_LD + 8] = acc[a4 + 2];
        base[jj * 8 * C::OUT_LD + C::OUT_LD + 8] = acc[a4 + 3];
      }
      asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
      store_tile<Out, C::ER, C::OUT_LD>(st, y, tm * BN + C::ER * q, tn * C::BM + c * 64, m, n, vec_store, tid);
    }
  }
#else
  (void)meta; (void)y; (void)m; (void)n; (void)kblocks; (void)n64_total; (void)tiles_n; (void)tiles_m; (void)vec_store;
  (void)wk;
  __trap();
#endif
}

namespace {

int sm_count3() {
  static int sms = [] {
    int dev = 0, n = 132;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n;
  }();
  return sms;
}
std::size_t flags_bytes3() { return (std::size_t(sm_count3()) * 4 + 255) / 256 * 256; }

template <class In, class Out, bool SK, bool MG = false>
void launch3(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, cudaStream_t stream, void* workspace) {
  using C = W3Cfg<SK>;
  auto kernel = sptc24_wgmma3_kernel<In, Out, SK, MG>;
  static std::once_flag once;
  std::call_once(once, [&] {
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM_BYTES));
  });
  const CUtensorMap map_x = encode_tensor_2d(p.x, std::uint64_t(p.ldx), std::uint64_t(p.m), std::uint64_t(p.ldx) * 2, 64,
                                             C::BN, CU_TENSOR_MAP_SWIZZLE_128B, "x");
  const int tiles_n = int(a.rows_pad / C::BM);
  const int tiles_m = int((p.m + C::BN - 1) / C::BN);
  const int kblocks = int(a.k_pad / 64);
  const int tiles = tiles_n * tiles_m;
  const int vec = (p.n * int(sizeof(Out))) % 16 == 0 && (reinterpret_cast<std::uintptr_t>(p.y) % 16) == 0;
  W3Work wk;
  int grid = tiles;
  if constexpr (SK) {
    const long long iters = static_cast<long long>(tiles) * kblocks;
    grid = int(std::min<long long>(sm_count3(), iters));
    const int waves = tiles / grid, rest = tiles % grid;
    // whole-tile waves, then the last partial wave plus one full wave (r + G tiles: every split
    // tile spans at most ~2 CTAs) as stream-k iterations; T < G: all tiles stream-k
    const int sk_tiles = rest == 0 ? 0 : (waves >= 1 ? rest + grid : rest);
    wk.dp_tiles = (tiles - sk_tiles) / grid;
    wk.sk_tile0 = wk.dp_tiles * grid;
    wk.sk_iters = static_cast<long long>(sk_tiles) * kblocks;
    wk.flags = static_cast<int*>(workspace);
    wk.partials = reinterpret_cast<float*>(static_cast<std::uint8_t*>(workspace) + flags_bytes3());
  }
  kernel<<<grid, C::THREADS, C::SMEM_BYTES, stream>>>(map_a, map_x, a.meta, static_cast<Out*>(p.y), int(p.m), int(p.n),
                                                       kblocks, int(a.rows_pad / 64), tiles_n, tiles_m, vec, wk);
  SPARSENM_CUDA_CHECK_LAUNCH("sptc24_wgmma3_kernel");
}

template <class In, class Out>
void dispatch_opts3(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, cudaStream_t s, W3Opts o, void* ws) {
  if (o.meta_global) return launch3<In, Out, false, true>(a, map_a, p, s, ws);
  if (o.stream_k) return launch3<In, Out, true>(a, map_a, p, s, ws);
  return launch3<In, Out, false>(a, map_a, p, s, ws);
}

template <class In>
void dispatch_out3(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, cudaStream_t s, W3Opts o, void* ws) {
  switch (p.out) {
    case DType::f32: return dispatch_opts3<In, float>(a, map_a, p, s, o, ws);
    case DType::f16: return dispatch_opts3<In, __half>(a, map_a, p, s, o, ws);
    case DType::bf16: return dispatch_opts3<In, __nv_bfloat16>(a, map_a, p, s, o, ws);
    default: throw InvalidArgument("y dtype", "must be f32, f16 or bf16 for the sparse tensor-core kernels");
  }
}

}  // namespace

std::size_t sptc24_wgmma3_workspace_bytes() {
  return flags_bytes3() + std::size_t(sm_count3()) * std::size_t(W3Cfg<true>::PARTIAL_FLOATS) * 4;
}

void run_sptc24_wgmma3(const DeviceA& a, const CUtensorMap& values_map, const Problem& p, cudaStream_t stream, W3Opts opts,
                       void* workspace) {
  if (p.ldx % 8 != 0 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0)
    throw InvalidArgument("x", "the wgmma kernel needs 16-byte aligned rows (ldx % 8 == 0, 16-byte aligned pointer)");
  if (a.rows_pad % W3Cfg<false>::BM != 0) throw InvalidArgument("packed W", "rows_pad must be a multiple of 192 for the 192-row tile");
  if (a.k_pad % 64 != 0) throw InvalidArgument("packed W", "k_pad must be a multiple of 64");
  if (opts.stream_k && (workspace == nullptr || reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0))
    throw InvalidArgument("workspace", "stream-k needs sptc24_wgmma3_workspace_bytes() of 256-byte aligned, once-zeroed memory");
  if (opts.stream_k && opts.meta_global) throw InvalidArgument("opts", "meta_global is built for the one-tile grid only, not with stream_k");
  if (p.m < 1) return;
  if (std::int64_t((p.m + W3Cfg<false>::BN - 1) / W3Cfg<false>::BN) * (a.rows_pad / W3Cfg<false>::BM) > 0x7fffffff)
    throw InvalidArgument("m", "too many tiles for one grid");
  if (p.in == DType::f16)
    dispatch_out3<__half>(a, values_map, p, stream, opts, workspace);
  else if (p.in == DType::bf16)
    dispatch_out3<__nv_bfloat16>(a, values_map, p, stream, opts, workspace);
  else
    throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
}

}  // namespace sparsenm::cuda::sptc
