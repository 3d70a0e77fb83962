// sparsenm — hardware 2:4 SpMM on Hopper's sparse tensor cores (wgmma.mma_async.sp, sm_90a).
//
// Computes Y^T = W * X^T tile by tile: A = W values (compressed, K-major, from the plan-time
// packing in layout.hpp), B = X^T (X row-major [m][k] is K-major B), D = Y^T in fp32 registers.
// CTA = 1 producer warpgroup (one thread issues TMA + bulk copies) + NCONS consumer warpgroups,
// each owning 64 rows of W and the CTA's BN columns of Y^T. Stage s of the ring holds, for one
// 64-wide slice of k: A [BM][32 values] (64B swizzle), B [BN][64] (128B swizzle), and the
// metadata words of the BM rows (one 32-bit word per consumer thread). full[s] completes on the
// TMA transaction bytes; empty[s] collects one arrival per consumer warp after the wgmma that
// read stage s has retired (wgmma.wait_group 1 keeps one stage of MMAs in flight).
// Epilogue: accumulators -> shared memory (transposed to Y's row-major order, padded rows) ->
// 16-byte stores, guarded in m and n.
// Options (template flags, used by the FST layer's weight-gradient GEMM to drop two transposes):
//   XT: X is given as X^T [k][ldx] (m contiguous): B is MN-major. The producer loads BN/64 boxes
//       of 64 m x 64 k (128B swizzle, 8 KB each), i.e. the tile [BN/64][64 k][64 m] that wgmma
//       reads with trans-b = 1, LBO = 8 KB between the 64-wide m blocks, SBO = 1 KB between
//       8-k groups, the second k32 half 32 rows = 4 KB further (the layout the venom kernel in
//       wgmma_persistent.cu fills by cp.async and validated on the H200). k rows past k read
//       as zero through the tensor map bounds.
//   YT: Y^T [n][m] is written instead of Y: each consumer stages its 64 W rows x BN Y rows
//       row-major (the accumulator's own orientation, float2 stores, row pitch BN + 8 floats:
//       conflict-free per half-warp) and stores 64 rows of BN contiguous elements.
#include <cuda.h>
#include <cudaTypedefs.h>
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

template <class Out, int BN, int NCONS, int STAGES>
struct WgCfg {
  static constexpr int BM = 64 * NCONS;
  static constexpr int THREADS = 128 * (NCONS + 1);
  static constexpr int A_BYTES = BM * 64;    // BM rows x 32 compressed values x 2 B
  static constexpr int B_BYTES = BN * 128;   // BN rows x 64 k x 2 B
  static constexpr int M_BYTES = NCONS * 512;
  static constexpr int TX_BYTES = A_BYTES + B_BYTES + M_BYTES;
  static constexpr int PIPE_BYTES = STAGES * (A_BYTES + B_BYTES + M_BYTES);
  static constexpr int OUT_LD = 64 + 4;  // staged fp32 row (64 W rows), padded against bank conflicts
  static constexpr int EPI_BYTES = NCONS * BN * OUT_LD * 4;
  static constexpr int OUT_LDT = BN + 8;  // YT staging: 64 W rows x BN Y rows, padded
  static constexpr int EPI_T_BYTES = NCONS * 64 * OUT_LDT * 4;
  static constexpr int EPI_MAX = EPI_BYTES > EPI_T_BYTES ? EPI_BYTES : EPI_T_BYTES;
  static constexpr int MAIN_BYTES = PIPE_BYTES > EPI_MAX ? PIPE_BYTES : EPI_MAX;
  static constexpr int SMEM_BYTES = 1024 + MAIN_BYTES + 2 * STAGES * 8;
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "tiles keep swizzle alignment");
};

template <class In, class Out, int BN, int NCONS, int STAGES, bool XT = false, bool YT = false, bool MG = false>
__global__ void __launch_bounds__(128 * (NCONS + 1), 1)
    sptc24_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_x,
                        const std::uint32_t* __restrict__ meta, Out* __restrict__ y, int m, int n, int kblocks,
                        int n64_total, int tiles_n, int tiles_m, int vec_store) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WgCfg<Out, BN, NCONS, STAGES>;
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint8_t* sA = smem;
  std::uint8_t* sB = smem + STAGES * C::A_BYTES;
  std::uint32_t* sM = reinterpret_cast<std::uint32_t*>(sB + STAGES * C::B_BYTES);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + C::MAIN_BYTES);
  std::uint64_t* empty = full + STAGES;

  // Tile order: groups of 8 row tiles sweep all column tiles (keeps A and X slices in L2).
  constexpr int GROUP = 8;
  const int tile = blockIdx.x;
  const int per_group = GROUP * tiles_m;
  const int first_n = (tile / per_group) * GROUP;
  const int gsize = min(GROUP, tiles_n - first_n);
  const int tn = first_n + (tile % per_group) % gsize;
  const int tm = (tile % per_group) / gsize;

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], NCONS * 4);
    }
    fence_mbar_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      tma_prefetch_desc(&tm_a);
      tma_prefetch_desc(&tm_x);
      for (int kb = 0; kb < kblocks; ++kb) {
        const int s = kb % STAGES;
        if (kb >= STAGES) mbar_wait(&empty[s], ((kb / STAGES) - 1) & 1);
        mbar_expect_tx(&full[s], MG ? C::TX_BYTES - C::M_BYTES : C::TX_BYTES);
        tma_load_2d(sA + s * C::A_BYTES, &tm_a, &full[s], kb * 32, tn * C::BM);
        if constexpr (XT) {
#pragma unroll
          for (int b = 0; b < BN / 64; ++b)
            tma_load_2d(sB + s * C::B_BYTES + b * 8192, &tm_x, &full[s], tm * BN + b * 64, kb * 64);
        } else {
          tma_load_2d(sB + s * C::B_BYTES, &tm_x, &full[s], kb * 64, tm * BN);
        }
        if constexpr (!MG)
          bulk_load(sM + s * NCONS * 128, meta + (std::size_t(kb) * n64_total + std::size_t(tn) * NCONS) * 128,
                    C::M_BYTES, &full[s]);
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
    fence_regs(acc);
    // MG: this thread's metadata word straight from global memory, one stage ahead (ptx.cuh:
    // sp_mainloop_gmeta; past the last k-block the load repeats the last one: no guard)
    const std::uint32_t* gmeta = meta + (std::size_t(tn) * NCONS + c) * 128 + tid;
    const std::size_t kstride = std::size_t(n64_total) * 128;
    // two metadata registers, each held until the wgmma reading it retired (ptx.cuh: sp_mainloop)
    sp_mainloop_sel<MG>(
        kblocks, kblocks, sM + c * 128 + tid,
        [&](int i) { return __ldg(gmeta + std::size_t(min(i, kblocks - 1)) * kstride); },
        [&](int kb, std::uint32_t& mw) {
          const int s = kb % STAGES;
          mbar_wait(&full[s], (kb / STAGES) & 1);
          if constexpr (!MG) mw = sM[s * NCONS * 128 + c * 128 + tid];
          const std::uint8_t* a_tile = sA + s * C::A_BYTES + c * 64 * 64;
          const std::uint8_t* b_tile = sB + s * C::B_BYTES;
          const std::uint64_t da = smem_desc(a_tile, 16, 512, 2);   // 64B swizzle, 8 rows x 64 B
          wgmma_fence();
          if constexpr (XT) {
            const std::uint64_t db = smem_desc(b_tile, 8192, 1024, 1);  // MN-major, 128B swizzle
            WgmmaSp<BN, In, 0, 1>::run(acc, da, db, mw);
            WgmmaSp<BN, In, 1, 1>::run(acc, da + (32 >> 4), db + (4096 >> 4), mw);
          } else {
            const std::uint64_t db = smem_desc(b_tile, 16, 1024, 1);  // 128B swizzle, 8 rows x 128 B
            WgmmaSp<BN, In, 0, 0>::run(acc, da, db, mw);
            WgmmaSp<BN, In, 1, 0>::run(acc, da + (32 >> 4), db + (64 >> 4), mw);
          }
          wgmma_commit();
          wgmma_wait<1>();
        },
        [&](int kb) {
          if (kb > 0) {
            __syncwarp();  // the arrive releases lane 0's accesses only: order the other lanes' metadata reads first
            if ((tid % 32) == 0) mbar_arrive(&empty[(kb - 1) % STAGES]);
          }
        });
    fence_regs(acc);

    // ---- epilogue ----
    asm volatile("bar.sync 1, %0;" ::"n"(128 * NCONS) : "memory");  // all consumers done with the ring
    // Accumulators are staged as fp32 (converting while they are staged would make ptxas
    // serialize the wgmma pipeline, C7514) and converted on the way out.
    const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    if constexpr (YT) {
      // acc[4j + {0,1}] = (W row 16w + g, Y rows 8j + 2t + {0,1}); [4j + {2,3}]: W row + 8
      float* st = reinterpret_cast<float*>(smem) + std::size_t(c) * 64 * C::OUT_LDT;
      float* base = st + (16 * w + g) * C::OUT_LDT + 2 * t;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        *reinterpret_cast<float2*>(base + j * 8) = make_float2(acc[4 * j + 0], acc[4 * j + 1]);
        *reinterpret_cast<float2*>(base + 8 * C::OUT_LDT + j * 8) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
      }
      asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
      store_tile_rows<Out, 64, BN, C::OUT_LDT>(st, y, tn * C::BM + c * 64, tm * BN, n, m, std::size_t(m), vec_store, tid);
    } else {
      float* st = reinterpret_cast<float*>(smem) + std::size_t(c) * BN * C::OUT_LD;
      // one base address, every other offset a compile-time immediate (keeps the epilogue spill-free)
      float* base = st + (2 * t) * C::OUT_LD + 16 * w + g;
      stage_fragments<BN / 8, C::OUT_LD>(base, acc, 0);
      asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
      store_tile<Out, BN, C::OUT_LD>(st, y, tm * BN, tn * C::BM + c * 64, m, n, vec_store, tid);
    }
  }
#else
  (void)meta; (void)y; (void)m; (void)n; (void)kblocks; (void)n64_total; (void)tiles_n; (void)tiles_m; (void)vec_store;
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    SPARSENM_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !p) throw CudaError("cuTensorMapEncodeTiled: driver entry point not found");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

CUtensorMap encode_tensor_2d(const void* base, std::uint64_t inner, std::uint64_t outer, std::uint64_t row_bytes,
                             std::uint32_t box_inner, std::uint32_t box_outer, CUtensorMapSwizzle swizzle, const char* what) {
  CUtensorMap map;
  cuuint64_t dims[2] = {inner, outer};
  cuuint64_t strides[1] = {row_bytes};
  cuuint32_t box[2] = {box_inner, box_outer};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = encode_fn()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, const_cast<void*>(base), dims, strides, box, estr,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError(std::string("cuTensorMapEncodeTiled failed for ") + what + " (CUresult " + std::to_string(int(r)) + ")");
  return map;
}

namespace {

struct TileShape {
  int bm, bn;
};
TileShape shape_of(WgTile t) {
  switch (t) {
    case WgTile::m128n256: return {128, 256};
    case WgTile::m128n128: return {128, 128};
    case WgTile::m64n256: return {64, 256};
    case WgTile::m64n128: return {64, 128};
  }
  return {128, 256};
}

template <class In, class Out, int BN, int NCONS, int STAGES, bool XT = false, bool YT = false, bool MG = false>
void launch(const DeviceA& a, const CUtensorMap& map_a, const Problem& p, cudaStream_t stream) {
  using C = WgCfg<Out, BN, NCONS, STAGES>;
  auto kernel = sptc24_wgmma_kernel<In, Out, BN, NCONS, STAGES, XT, YT, MG>;
  static std::once_flag once;
  std::call_once(once, [&] {
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM_BYTES));
  });
  // XT: x^T [k][ldx] with m columns in use: boxes of 64 m x 64 k, zero past m and past k
  const CUtensorMap map_x =
      XT ? encode_tensor_2d(p.x, std::uint64_t(p.m), std::uint64_t(p.k), std::uint64_t(p.ldx) * 2, 64, 64,
                            CU_TENSOR_MAP_SWIZZLE_128B, "x^T")
         : encode_tensor_2d(p.x, std::uint64_t(p.ldx), std::uint64_t(p.m), std::uint64_t(p.ldx) * 2, 64, BN,
                            CU_TENSOR_MAP_SWIZZLE_128B, "x");
  const int tiles_n = int(a.rows_pad / C::BM);
  const int tiles_m = int((p.m + BN - 1) / BN);
  const int kblocks = int(a.k_pad / 64);
  const std::int64_t y_ld = YT ? p.m : p.n;
  const int vec = (y_ld * std::int64_t(sizeof(Out))) % 16 == 0 && (reinterpret_cast<std::uintptr_t>(p.y) % 16) == 0;
  kernel<<<tiles_n * tiles_m, C::THREADS, C::SMEM_BYTES, stream>>>(
      map_a, map_x, a.meta, static_cast<Out*>(p.y), int(p.m), int(p.n), kblocks, int(a.rows_pad / 64), tiles_n,
      tiles_m, vec);
  SPARSENM_CUDA_CHECK_LAUNCH("sptc24_wgmma_kernel");
}

/// Transposed-operand / transposed-output variants: Out = In only, the tiles the FST layer uses.
template <class In, bool XT, bool YT>
void dispatch_trans_tile(const DeviceA& a, const CUtensorMap& map_a, WgTile tile, const Problem& p, cudaStream_t s) {
  switch (tile) {
    case WgTile::m128n256: return launch<In, In, 256, 2, 5, XT, YT>(a, map_a, p, s);
    case WgTile::m128n128: return launch<In, In, 128, 2, 8, XT, YT>(a, map_a, p, s);
    case WgTile::m64n128: return launch<In, In, 128, 1, 8, XT, YT>(a, map_a, p, s);
    case WgTile::m64n256: break;
  }
  throw InvalidArgument("tile", "x_trans / y_trans support the tiles 128x256, 128x128 and 64x128");
}

template <class In>
void dispatch_trans(const DeviceA& a, const CUtensorMap& map_a, WgTile tile, const Problem& p, cudaStream_t s) {
  if (p.out != p.in) throw InvalidArgument("y dtype", "must equal the x dtype with x_trans / y_trans");
  if (p.x_trans && p.y_trans) return dispatch_trans_tile<In, true, true>(a, map_a, tile, p, s);
  if (p.x_trans) return dispatch_trans_tile<In, true, false>(a, map_a, tile, p, s);
  return dispatch_trans_tile<In, false, true>(a, map_a, tile, p, s);
}

template <class In, class Out>
void dispatch_tile(const DeviceA& a, const CUtensorMap& map_a, WgTile tile, const Problem& p, cudaStream_t s, bool meta_global) {
  if (meta_global) {
    if (tile != WgTile::m128n256) throw InvalidArgument("tile", "meta_global is built for the 128x256 tile only");
    return launch<In, Out, 256, 2, 5, false, false, true>(a, map_a, p, s);
  }
  switch (tile) {
    case WgTile::m128n256: return launch<In, Out, 256, 2, 5>(a, map_a, p, s);
    case WgTile::m128n128: return launch<In, Out, 128, 2, 8>(a, map_a, p, s);
    case WgTile::m64n256: return launch<In, Out, 256, 1, 5>(a, map_a, p, s);
    case WgTile::m64n128: return launch<In, Out, 128, 1, 8>(a, map_a, p, s);
  }
}

template <class In>
void dispatch_out(const DeviceA& a, const CUtensorMap& map_a, WgTile tile, const Problem& p, cudaStream_t s, bool mg) {
  switch (p.out) {
    case DType::f32: return dispatch_tile<In, float>(a, map_a, tile, p, s, mg);
    case DType::f16: return dispatch_tile<In, __half>(a, map_a, tile, p, s, mg);
    case DType::bf16: return dispatch_tile<In, __nv_bfloat16>(a, map_a, tile, p, s, mg);
    default: throw InvalidArgument("y dtype", "must be f32, f16 or bf16 for the sparse tensor-core kernels");
  }
}

}  // namespace

const char* to_string(WgTile t) noexcept {
  switch (t) {
    case WgTile::m128n256: return "128x256";
    case WgTile::m128n128: return "128x128";
    case WgTile::m64n256: return "64x256";
    case WgTile::m64n128: return "64x128";
  }
  return "?";
}
int wg_tile_rows(WgTile t) noexcept { return shape_of(t).bm; }

CUtensorMap make_values_map_rows(const DeviceA& a, int bm) {
  if (bm != 64 && bm != 128 && bm != 192) throw InvalidArgument("bm", "must be 64, 128 or 192");
  return encode_tensor_2d(a.values, std::uint64_t(a.k_pad / 2), std::uint64_t(a.rows_pad), std::uint64_t(a.k_pad / 2) * 2,
                          32, std::uint32_t(bm), CU_TENSOR_MAP_SWIZZLE_64B, "packed W values");
}

CUtensorMap make_values_map(const DeviceA& a, DType in, WgTile tile) {
  (void)in;
  return encode_tensor_2d(a.values, std::uint64_t(a.k_pad / 2), std::uint64_t(a.rows_pad), std::uint64_t(a.k_pad / 2) * 2, 32,
                   std::uint32_t(shape_of(tile).bm), CU_TENSOR_MAP_SWIZZLE_64B, "packed W values");
}

void run_sptc24_wgmma(const DeviceA& a, const CUtensorMap& values_map, WgTile tile, const Problem& p,
                      cudaStream_t stream, bool meta_global) {
  if (p.ldx % 8 != 0 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0)
    throw InvalidArgument("x", "the wgmma kernel needs 16-byte aligned rows (ldx % 8 == 0, 16-byte aligned pointer)");
  if (a.rows_pad % shape_of(tile).bm != 0) throw InvalidArgument("packed W", "rows_pad must be a multiple of the tile rows");
  if (p.x_trans && p.ldx < p.m) throw InvalidArgument("ldx", "must be >= m when x is given transposed (x^T [k][ldx])");
  if (p.m < 1) return;
  if (p.x_trans || p.y_trans) {
    if (meta_global) throw InvalidArgument("meta_global", "is not built for x_trans / y_trans");
    if (p.in == DType::f16) return dispatch_trans<__half>(a, values_map, tile, p, stream);
    if (p.in == DType::bf16) return dispatch_trans<__nv_bfloat16>(a, values_map, tile, p, stream);
    throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
  }
  if (p.in == DType::f16)
    dispatch_out<__half>(a, values_map, tile, p, stream, meta_global);
  else if (p.in == DType::bf16)
    dispatch_out<__nv_bfloat16>(a, values_map, tile, p, stream, meta_global);
  else
    throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
}

}  // namespace sparsenm::cuda::sptc
