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
// Epilogue as in sptc24_wgmma.cu: accumulators -> shared memory (fp32, over the ring) -> 16-byte
// guarded stores.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <mutex>

#include "cuda/common.cuh"
#include "cuda/sptc/epilogue.cuh"
#include "cuda/sptc/ptx.cuh"
#include "cuda/sptc/sptc.hpp"
#include "cuda/sptc/wgmma_sp.cuh"

namespace sparsenm::cuda::sptc {

namespace {

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
  static constexpr int EPI_BYTES = NCONS * BN * OUT_LD * 4;
  static constexpr int MAIN_BYTES = PIPE_BYTES > EPI_BYTES ? PIPE_BYTES : EPI_BYTES;
  static constexpr int SMEM_BYTES = 1024 + MAIN_BYTES + 2 * STAGES * 8;
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "tiles keep swizzle alignment");
  static_assert(SMEM_BYTES <= 232448, "fits the 227 KB of an H100/H200 SM");
};

}  // namespace

template <class In, class Out>
__global__ void __launch_bounds__(384, 1)
    sptc24_wgmma3_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_x,
                         const std::uint32_t* __restrict__ meta, Out* __restrict__ y, int m, int n, int kblocks,
                         int n64_total, int tiles_n, int tiles_m, int vec_store) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = W3Cfg;
  constexpr int STAGES = C::STAGES, BN = C::BN;
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint8_t* sA = smem;
  std::uint8_t* sB = smem + STAGES * C::A_BYTES;
  std::uint32_t* sM = reinterpret_cast<std::uint32_t*>(sB + STAGES * C::B_BYTES);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + C::MAIN_BYTES);
  std::uint64_t* empty = full + STAGES;

  // Tile order: groups of 8 row tiles sweep all column tiles (as sptc24_wgmma.cu).
  constexpr int GROUP = 8;
  const int tile = blockIdx.x;
  const int per_group = GROUP * tiles_m;
  const int first_n = (tile / per_group) * GROUP;
  const int gsize = min(GROUP, tiles_n - first_n);
  const int tn = first_n + (tile % per_group) % gsize;
  const int tm = (tile % per_group) / gsize;

  const int c = threadIdx.x / 128;  // consumer warpgroup: W rows 64c..64c+63 of the tile
  const int tid = threadIdx.x % 128;
  auto load = [&](int kb) {  // thread 0 only: k-block kb into slot kb % STAGES
    const int s = kb % STAGES;
    mbar_expect_tx(&full[s], C::TX_BYTES);
    tma_load_2d(sA + s * C::A_BYTES, &tm_a, &full[s], kb * 32, tn * C::BM);
    tma_load_2d(sB + s * C::B_BYTES, &tm_x, &full[s], kb * 64, tm * BN);
    bulk_load(sM + s * C::NCONS * 128, meta + (std::size_t(kb) * n64_total + std::size_t(tn) * C::NCONS) * 128,
              C::M_BYTES, &full[s]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], C::NCONS * 4);
    }
    fence_mbar_init();
    tma_prefetch_desc(&tm_a);
    tma_prefetch_desc(&tm_x);
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int kb = 0; kb < min(STAGES, kblocks); ++kb) load(kb);

  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
  fence_regs(acc);
  for (int kb = 0; kb < kblocks; ++kb) {
    const int s = kb % STAGES;
    mbar_wait(&full[s], (kb / STAGES) & 1);
    const std::uint32_t mw = sM[s * C::NCONS * 128 + c * 128 + tid];
    const std::uint64_t da = smem_desc(sA + s * C::A_BYTES + c * 64 * 64, 16, 512, 2);  // 64B swizzle
    const std::uint64_t db = smem_desc(sB + s * C::B_BYTES, 16, 1024, 1);               // 128B swizzle
    wgmma_fence();
    WgmmaSp<BN, In, 0, 0>::run(acc, da, db, mw);
    WgmmaSp<BN, In, 1, 0>::run(acc, da + (32 >> 4), db + (64 >> 4), mw);
    wgmma_commit();
    wgmma_wait<1>();  // the MMAs of k-block kb-1 have retired: its slot may be refilled
    if (kb > 0) {
      const int sp = (kb - 1) % STAGES;
      if ((tid % 32) == 0) mbar_arrive(&empty[sp]);
      if (threadIdx.x == 0 && kb - 1 + STAGES < kblocks) {
        mbar_wait(&empty[sp], ((kb - 1) / STAGES) & 1);
        load(kb - 1 + STAGES);
      }
    }
  }
  wgmma_wait<0>();
  fence_regs(acc);

  // ---- epilogue (the ring is idle: every load issued was waited for, every MMA retired) ----
  asm volatile("bar.sync 1, %0;" ::"n"(C::THREADS) : "memory");
  float* st = reinterpret_cast<float*>(smem) + std::size_t(c) * BN * C::OUT_LD;
  const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  float* base = st + (2 * t) * C::OUT_LD + 16 * w + g;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    base[j * 8 * C::OUT_LD] = acc[4 * j + 0];
    base[j * 8 * C::OUT_LD + C::OUT_LD] = acc[4 * j + 1];
    base[j * 8 * C::OUT_LD + 8] = acc[4 * j + 2];
    base[j * 8 * C::OUT_LD + C::OUT_LD + 8] = acc[4 * j + 3];
  }
  asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
  store_tile<Out, BN, C::OUT_LD>(st, y, tm * BN, tn * C::BM + c * 64, m, n, vec_store, tid);
#else
  (void)meta; (void)y; (void)m; (void)n; (void)kblocks; (void)n64_total; (void)tiles_n; (void)tiles_m; (void)vec_store;
  __trap();
#endif
}

namespace {

template <class In, class Out>
void launch3(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, cudaStream_t stream) {
  using C = W3Cfg;
  auto kernel = sptc24_wgmma3_kernel<In, Out>;
  static std::once_flag once;
  std::call_once(once, [&] {
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM_BYTES));
  });
  const CUtensorMap map_x = encode_tensor_2d(p.x, std::uint64_t(p.ldx), std::uint64_t(p.m), std::uint64_t(p.ldx) * 2, 64,
                                             C::BN, CU_TENSOR_MAP_SWIZZLE_128B, "x");
  const int tiles_n = int(a.rows_pad / C::BM);
  const int tiles_m = int((p.m + C::BN - 1) / C::BN);
  const int kblocks = int(a.k_pad / 64);
  const int vec = (p.n * int(sizeof(Out))) % 16 == 0 && (reinterpret_cast<std::uintptr_t>(p.y) % 16) == 0;
  kernel<<<tiles_n * tiles_m, C::THREADS, C::SMEM_BYTES, stream>>>(map_a, map_x, a.meta, static_cast<Out*>(p.y), int(p.m),
                                                                    int(p.n), kblocks, int(a.rows_pad / 64), tiles_n,
                                                                    tiles_m, vec);
  SPARSENM_CUDA_CHECK_LAUNCH("sptc24_wgmma3_kernel");
}

template <class In>
void dispatch_out3(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, cudaStream_t s) {
  switch (p.out) {
    case DType::f32: return launch3<In, float>(a, map_a, p, s);
    case DType::f16: return launch3<In, __half>(a, map_a, p, s);
    case DType::bf16: return launch3<In, __nv_bfloat16>(a, map_a, p, s);
    default: throw InvalidArgument("y dtype", "must be f32, f16 or bf16 for the sparse tensor-core kernels");
  }
}

}  // namespace

void run_sptc24_wgmma3(const DeviceA& a, const CUtensorMap& values_map, const Problem& p, cudaStream_t stream) {
  if (p.ldx % 8 != 0 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0)
    throw InvalidArgument("x", "the wgmma kernel needs 16-byte aligned rows (ldx % 8 == 0, 16-byte aligned pointer)");
  if (a.rows_pad % W3Cfg::BM != 0) throw InvalidArgument("packed W", "rows_pad must be a multiple of 192 for the 192-row tile");
  if (a.k_pad % 64 != 0) throw InvalidArgument("packed W", "k_pad must be a multiple of 64");
  if (p.m < 1) return;
  if (std::int64_t((p.m + W3Cfg::BN - 1) / W3Cfg::BN) * (a.rows_pad / W3Cfg::BM) > 0x7fffffff)
    throw InvalidArgument("m", "too many tiles for one grid");
  if (p.in == DType::f16)
    dispatch_out3<__half>(a, values_map, p, stream);
  else if (p.in == DType::bf16)
    dispatch_out3<__nv_bfloat16>(a, values_map, p, stream);
  else
    throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
}

}  // namespace sparsenm::cuda::sptc
