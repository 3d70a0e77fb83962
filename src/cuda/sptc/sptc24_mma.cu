// sparsenm — hardware 2:4 SpMM with mma.sp::ordered_metadata m16n8k32 (sm_80+; the Ampere path).
//
// CTA tile 64 rows of W x 128 rows of X, k step 64, 3-stage cp.async ring (zero-filled tails),
// 4 warps, warp w owns W rows 16w..16w+15 of the tile and all 128 columns of Y^T. Operands:
// the same packed values / metadata as the wgmma kernel (layout.hpp): the per-warp metadata
// word of thread `lane` serves k32 step kk with sparsity selector kk. A fragments by ldmatrix.x4
// on the compressed tile, B fragments by ldmatrix.x4 on X rows (K-major).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <mutex>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/sptc/epilogue.cuh"
#include "cuda/sptc/ptx.cuh"
#include "cuda/sptc/sptc.hpp"

namespace sparsenm::cuda::sptc {
namespace {

constexpr int kBM = 64, kBN = 128, kStages = 3;
constexpr int kALd = 32 + 8;  // compressed values per staged A row (+16 B pad: conflict-free ldmatrix)
constexpr int kBLd = 64 + 8;  // k per staged B row (+16 B pad)
constexpr int kABytes = kBM * kALd * 2, kBBytes = kBN * kBLd * 2;
constexpr int kSmem = kStages * (kABytes + kBBytes);
constexpr int kOutLd = 64 + 4;
static_assert(kBN * kOutLd * 4 <= kSmem, "epilogue staging fits in the ring");

__device__ __forceinline__ void ldsm_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

template <class In, int SEL>
__device__ __forceinline__ void mma_sp(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[4],
                                       std::uint32_t e) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<In, __half>) {
    asm volatile(
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, %13;"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e), "n"(SEL));
  } else {
    asm volatile(
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, %13;"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e), "n"(SEL));
  }
#else
  (void)d; (void)a; (void)b; (void)e;
  __trap();
#endif
}

template <class In, class Out>
__global__ void __launch_bounds__(128) sptc24_mma_kernel(const In* __restrict__ av, const std::uint32_t* __restrict__ meta,
                                                         const In* __restrict__ x, Out* __restrict__ y, int m, int n,
                                                         int ldx, int k_pad, int n64_total, int vec_store) {
  extern __shared__ __align__(16) std::uint8_t smem[];
  In* sA = reinterpret_cast<In*>(smem);
  In* sB = reinterpret_cast<In*>(smem + kStages * kABytes);
  const int tn = blockIdx.x, tm = blockIdx.y;
  const int tid = threadIdx.x, w = tid / 32, lane = tid % 32;
  const int kblocks = k_pad / 64;
  const int vcols = k_pad / 2;

  auto load_stage = [&](int kb) {
    const int s = kb % kStages;
    In* a_dst = sA + s * (kBM * kALd);
    In* b_dst = sB + s * (kBN * kBLd);
#pragma unroll
    for (int i = 0; i < 2; ++i) {  // A: 64 rows x 4 chunks
      const int idx = tid + 128 * i, r = idx / 4, c = idx % 4;
      cp_async16(a_dst + r * kALd + c * 8, av + std::size_t(tn * kBM + r) * vcols + kb * 32 + c * 8, 16);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {  // B: 128 rows x 8 chunks, zero-filled outside X
      const int idx = tid + 128 * i, r = idx / 8, c = idx % 8;
      const int gm = tm * kBN + r, kc = kb * 64 + c * 8;
      const bool ok = gm < m && kc < ldx;
      cp_async16(b_dst + r * kBLd + c * 8, ok ? x + std::size_t(gm) * ldx + kc : x, ok ? 16 : 0);
    }
  };

  float acc[kBN / 8][4];
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < kblocks) load_stage(s);
    cp_async_commit();
  }
  for (int kb = 0; kb < kblocks; ++kb) {
    const std::uint32_t mw = __ldg(meta + (std::size_t(kb) * n64_total + tn) * 128 + tid);
    cp_async_wait<kStages - 2>();
    __syncthreads();
    if (kb + kStages - 1 < kblocks) load_stage(kb + kStages - 1);
    cp_async_commit();
    const int s = kb % kStages;
    const In* a_src = sA + s * (kBM * kALd);
    const In* b_src = sB + s * (kBN * kBLd);
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      std::uint32_t a[4];
      ldsm_x4(a, a_src + (16 * w + lane % 16) * kALd + 16 * kk + 8 * (lane / 16));
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        std::uint32_t b[4];
        ldsm_x4(b, b_src + (8 * j + lane % 8) * kBLd + 32 * kk + 8 * (lane / 8));
        if (kk == 0)
          mma_sp<In, 0>(acc[j], a, b, mw);
        else
          mma_sp<In, 1>(acc[j], a, b, mw);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  float* st = reinterpret_cast<float*>(smem);
  const int g = lane / 4, t = lane % 4;
  float* base = st + (2 * t) * kOutLd + 16 * w + g;
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    base[j * 8 * kOutLd] = acc[j][0];
    base[j * 8 * kOutLd + kOutLd] = acc[j][1];
    base[j * 8 * kOutLd + 8] = acc[j][2];
    base[j * 8 * kOutLd + kOutLd + 8] = acc[j][3];
  }
  __syncthreads();
  store_tile<Out, kBN, kOutLd>(st, y, tm * kBN, tn * kBM, m, n, vec_store, tid);
}

template <class In, class Out>
void launch(const DeviceA& a, const Problem& p, cudaStream_t stream) {
  auto kernel = sptc24_mma_kernel<In, Out>;
  static std::once_flag once;
  std::call_once(once, [&] {
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  });
  dim3 grid(unsigned(a.rows_pad / kBM), unsigned((p.m + kBN - 1) / kBN));
  const int vec = (p.n * int(sizeof(Out))) % 16 == 0 && (reinterpret_cast<std::uintptr_t>(p.y) % 16) == 0;
  kernel<<<grid, 128, kSmem, stream>>>(static_cast<const In*>(a.values), a.meta, static_cast<const In*>(p.x),
                                       static_cast<Out*>(p.y), int(p.m), int(p.n), int(p.ldx), int(a.k_pad),
                                       int(a.rows_pad / 64), vec);
  SPARSENM_CUDA_CHECK_LAUNCH("sptc24_mma_kernel");
}

template <class In>
void dispatch(const DeviceA& a, const Problem& p, cudaStream_t s) {
  switch (p.out) {
    case DType::f32: return launch<In, float>(a, p, s);
    case DType::f16: return launch<In, __half>(a, p, s);
    case DType::bf16: return launch<In, __nv_bfloat16>(a, p, s);
    default: throw InvalidArgument("y dtype", "must be f32, f16 or bf16 for the sparse tensor-core kernels");
  }
}

template <class T>
__global__ void pad_x_kernel(const T* __restrict__ x, std::int64_t m, std::int64_t k, T* __restrict__ xp, std::int64_t ldx) {
  const std::int64_t total = m * ldx;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total; i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / ldx, c = i % ldx;
    xp[i] = c < k ? x[r * k + c] : T(0);
  }
}

}  // namespace

void run_sptc24_mma(const DeviceA& a, const Problem& p, cudaStream_t stream) {
  if (p.x_trans || p.y_trans) throw InvalidArgument("problem", "x_trans / y_trans are options of the sm_90a wgmma kernel only");
  if (p.ldx % 8 != 0 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0)
    throw InvalidArgument("x", "the mma.sp kernel needs 16-byte aligned rows (ldx % 8 == 0, 16-byte aligned pointer)");
  if (a.rows_pad % kBM != 0) throw InvalidArgument("packed W", "rows_pad must be a multiple of 64");
  if (p.m < 1) return;
  if (p.in == DType::f16)
    dispatch<__half>(a, p, stream);
  else if (p.in == DType::bf16)
    dispatch<__nv_bfloat16>(a, p, stream);
  else
    throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
}

void pad_x(DType in, const void* x, std::int64_t m, std::int64_t k, void* xp, std::int64_t ldx, cudaStream_t stream) {
  if (m < 1) return;
  const std::int64_t total = m * ldx;
  const unsigned blocks = unsigned(std::min<std::int64_t>((total + 255) / 256, 65535));
  if (dtype_size(in) != 2) throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
  pad_x_kernel<std::uint16_t><<<blocks, 256, 0, stream>>>(static_cast<const std::uint16_t*>(x), m, k,
                                                           static_cast<std::uint16_t*>(xp), ldx);
  SPARSENM_CUDA_CHECK_LAUNCH("pad_x_kernel");
}

int device_cc() {
  int dev = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  int major = 0, minor = 0;
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  return major * 10 + minor;
}

}  // namespace sparsenm::cuda::sptc
