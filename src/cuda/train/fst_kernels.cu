// sparsenm — small memory-bound kernels of the FST layer (see fst_kernels.hpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/train/fst_kernels.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm::train::detail {
namespace {

unsigned grid_for(std::int64_t total, int threads, std::int64_t cap = 65535LL * 8) {
  return unsigned(std::clamp<std::int64_t>((total + threads - 1) / threads, 1, cap));
}

__global__ void repack_meta_kernel(const std::uint8_t* __restrict__ idx, PackGeom g, std::uint32_t* __restrict__ meta) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < g.meta_words;
       i += std::int64_t(gridDim.x) * blockDim.x)
    meta[i] = meta_word_from_hw24(idx, g, i);
}

// Element pairs: pack_cols and hw_cols are even, both buffers 4-byte aligned (cudaMalloc).
__global__ void repack_values_kernel(const std::uint32_t* __restrict__ hw, PackGeom g, std::uint32_t* __restrict__ packed) {
  const std::int64_t pc = g.pack_cols / 2, hc = g.hw_cols / 2, total = g.rows_pad * pc;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total; i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / pc, c = i % pc;
    packed[i] = (r < g.rows && c < hc) ? hw[r * hc + c] : 0u;
  }
}

// 64 x 64 tile per 256-thread block (32 x 8); thread x handles the column pair 2x, 2x+1 on load
// and the destination pair 2x, 2x+1 (= source rows) on store.
template <bool kVec>
__global__ void transpose16_kernel(const std::uint16_t* __restrict__ src, std::int64_t R, std::int64_t C,
                                   std::uint16_t* __restrict__ dst, std::int64_t ldd) {
  __shared__ std::uint16_t tile[64][66];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * 64, c0 = std::int64_t(blockIdx.y) * 64;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int i = ty; i < 64; i += 8) {
    const std::int64_t r = r0 + i, c = c0 + 2 * tx;
    std::uint16_t lo = 0, hi = 0;
    if (r < R) {
      if (kVec && c + 1 < C) {
        const std::uint32_t v = *reinterpret_cast<const std::uint32_t*>(src + r * C + c);
        lo = std::uint16_t(v & 0xFFFFu);
        hi = std::uint16_t(v >> 16);
      } else {
        if (c < C) lo = src[r * C + c];
        if (c + 1 < C) hi = src[r * C + c + 1];
      }
    }
    tile[i][2 * tx] = lo;
    tile[i][2 * tx + 1] = hi;
  }
  __syncthreads();
  for (int j = ty; j < 64; j += 8) {
    const std::int64_t c = c0 + j, r = r0 + 2 * tx;  // destination row c, columns r, r+1
    if (c >= C) continue;
    const std::uint16_t lo = tile[2 * tx][j], hi = tile[2 * tx + 1][j];  // zero past R (loaded as 0)
    if (kVec && r + 1 < ldd) {
      *reinterpret_cast<std::uint32_t*>(dst + c * ldd + r) = std::uint32_t(lo) | (std::uint32_t(hi) << 16);
    } else {
      if (r < ldd) dst[c * ldd + r] = lo;
      if (r + 1 < ldd) dst[c * ldd + r + 1] = hi;
    }
  }
}

template <class T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ __half from_f(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }

template <class T>
__global__ void add_bias_kernel(T* __restrict__ z, std::int64_t tokens, std::int64_t out, const T* __restrict__ b) {
  const std::int64_t total = tokens * out;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total; i += std::int64_t(gridDim.x) * blockDim.x)
    z[i] = from_f<T>(to_f(z[i]) + to_f(b[i % out]));
}

// Variant 1 (session 8): block (32, 8); thread x owns the 8 columns 8 * (32 * blockIdx.x + x) ..
// + 7 of every row it visits (one 16-byte load / store per row, the bias in registers, no index
// division); rows blockIdx.y * 8 + y, stride gridDim.y * 8. Needs out % 8 == 0 and 16-byte aligned
// z and b. Same arithmetic per element as add_bias_kernel (fp32 add, one rounding): bit-identical.
template <class T>
__global__ void add_bias_vec8_kernel(T* __restrict__ z, std::int64_t tokens, std::int64_t out, const T* __restrict__ b) {
  const std::int64_t c8 = std::int64_t(blockIdx.x) * 32 + threadIdx.x;  // 8-column group
  if (c8 * 8 >= out) return;
  const uint4 bv = reinterpret_cast<const uint4*>(b)[c8];
  const T* bp = reinterpret_cast<const T*>(&bv);
  float bf[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) bf[j] = to_f(bp[j]);
  uint4* zv = reinterpret_cast<uint4*>(z);
  const std::int64_t row8 = out / 8;
  for (std::int64_t t = std::int64_t(blockIdx.y) * 8 + threadIdx.y; t < tokens; t += std::int64_t(gridDim.y) * 8) {
    uint4 v = zv[t * row8 + c8];
    T* e = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = from_f<T>(to_f(e[j]) + bf[j]);
    zv[t * row8 + c8] = v;
  }
}

// Block (32, 8): column o = 32 * blockIdx.x + x, rows of chunk blockIdx.y, row lane y.
template <class T>
__global__ void colsum_partial_kernel(const T* __restrict__ dz, std::int64_t tokens, std::int64_t out, float* __restrict__ partial) {
  __shared__ float red[8][33];
  const std::int64_t o = std::int64_t(blockIdx.x) * 32 + threadIdx.x;
  const std::int64_t t0 = std::int64_t(blockIdx.y) * kColsumChunk, t1 = min(t0 + kColsumChunk, tokens);
  float s = 0.f;
  if (o < out)
    for (std::int64_t t = t0 + threadIdx.y; t < t1; t += 8) s += to_f(dz[t * out + o]);
  red[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && o < out) {
    float acc = 0.f;
#pragma unroll
    for (int y = 0; y < 8; ++y) acc += red[y][threadIdx.x];
    partial[std::int64_t(blockIdx.y) * out + o] = acc;
  }
}

template <class T>
__global__ void colsum_final_kernel(const float* __restrict__ partial, std::int64_t chunks, std::int64_t out, T* __restrict__ db) {
  const std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (o >= out) return;
  float acc = 0.f;
  for (std::int64_t c = 0; c < chunks; ++c) acc += partial[c * out + o];
  db[o] = from_f<T>(acc);
}

// One thread per (row, group of 4 columns): one 8-byte load of W, the row's mask nibble, one 8-byte
// store. Consecutive threads take consecutive groups of a row (coalesced).
__global__ void mask_dense_kernel(const uint2* __restrict__ w, const std::uint16_t* __restrict__ mask, std::int64_t rows,
                                  std::int64_t groups, uint2* __restrict__ out) {
  const std::int64_t total = rows * groups;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total; i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / groups, g = i % groups;
    const unsigned nib = (unsigned(mask[(r / 4) * groups + g]) >> (4 * (r % 4))) & 0xFu;
    uint2 v = w[i];
    v.x &= ((nib & 1u) ? 0x0000FFFFu : 0u) | ((nib & 2u) ? 0xFFFF0000u : 0u);
    v.y &= ((nib & 4u) ? 0x0000FFFFu : 0u) | ((nib & 8u) ? 0xFFFF0000u : 0u);
    out[i] = v;
  }
}

// One thread per (row, group of 4): the group's two values (one 4-byte load), its index nibble, one
// 8-byte store of the dense group.
__global__ void expand24_kernel(const std::uint32_t* __restrict__ vals, const std::uint8_t* __restrict__ idx, std::int64_t rows,
                                std::int64_t groups, std::int64_t irb, uint2* __restrict__ dense) {
  const std::int64_t total = rows * groups;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total; i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / groups, g = i % groups;
    const unsigned nib = (unsigned(idx[r * irb + g / 2]) >> (4 * (g & 1))) & 0xFu;
    const unsigned p0 = nib & 3u, p1 = nib >> 2;
    const std::uint32_t v = vals[i];  // values pitch = 2 * groups: pair g of row r is word r * groups + g
    const std::uint32_t lo = v & 0xFFFFu, hi = v >> 16;
    // p0 < p1 in the canonical format; slot 0 wins should they ever coincide (selects, no local array)
    auto at = [&](unsigned j) { return j == p0 ? lo : (j == p1 ? hi : 0u); };
    dense[i] = make_uint2(at(0) | (at(1) << 16), at(2) | (at(3) << 16));
  }
}

template <class T>
__global__ void fill_random_kernel(T* __restrict__ p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h = std::uint32_t(i) * 2654435761u ^ (seed * 0x9E3779B9u + std::uint32_t(i >> 32));
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = from_f<T>((float(h & 0xFFFFu) / 32768.f - 1.f) * scale);
  }
}

}  // namespace

void fst_mask_dense(const void* w, const std::uint16_t* mask, std::int64_t rows, std::int64_t cols, void* out,
                    cudaStream_t s) {
  if (cols % 4 != 0) throw InvalidArgument("cols", "fst_mask_dense needs cols % 4 == 0");
  if (reinterpret_cast<std::uintptr_t>(w) % 8 != 0 || reinterpret_cast<std::uintptr_t>(out) % 8 != 0)
    throw InvalidArgument("w / out", "fst_mask_dense needs 8-byte aligned pointers");
  const std::int64_t groups = cols / 4;
  mask_dense_kernel<<<grid_for(rows * groups, 256), 256, 0, s>>>(static_cast<const uint2*>(w), mask, rows, groups,
                                                                   static_cast<uint2*>(out));
  SPARSENM_CUDA_CHECK_LAUNCH("mask_dense_kernel");
}

void fst_expand24(const void* values, const std::uint8_t* idx, std::int64_t rows, std::int64_t k, void* dense, cudaStream_t s) {
  if (k % 4 != 0) throw InvalidArgument("k", "fst_expand24 needs k % 4 == 0");
  if (reinterpret_cast<std::uintptr_t>(values) % 4 != 0 || reinterpret_cast<std::uintptr_t>(dense) % 8 != 0)
    throw InvalidArgument("values / dense", "fst_expand24 needs 4-byte aligned values and 8-byte aligned dense");
  const std::int64_t groups = k / 4, irb = (groups + 1) / 2;
  expand24_kernel<<<grid_for(rows * groups, 256), 256, 0, s>>>(static_cast<const std::uint32_t*>(values), idx, rows, groups,
                                                                 irb, static_cast<uint2*>(dense));
  SPARSENM_CUDA_CHECK_LAUNCH("expand24_kernel");
}

void fst_fill_random(DType dtype, void* p, std::size_t elems, std::uint32_t seed, float scale, cudaStream_t s) {
  const unsigned grid = grid_for(std::int64_t(elems), 256, 132LL * 16);
  if (dtype == DType::f16)
    fill_random_kernel<__half><<<grid, 256, 0, s>>>(static_cast<__half*>(p), elems, seed, scale);
  else if (dtype == DType::bf16)
    fill_random_kernel<__nv_bfloat16><<<grid, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), elems, seed, scale);
  else
    throw InvalidArgument("dtype", "must be f16 or bf16");
  SPARSENM_CUDA_CHECK_LAUNCH("fill_random_kernel");
}

void fst_repack_meta(const std::uint8_t* idx, const PackGeom& g, std::uint32_t* meta, cudaStream_t s) {
  repack_meta_kernel<<<grid_for(g.meta_words, 256), 256, 0, s>>>(idx, g, meta);
  SPARSENM_CUDA_CHECK_LAUNCH("repack_meta_kernel");
}

void fst_repack_values(const void* hw, const PackGeom& g, void* packed, cudaStream_t s) {
  repack_values_kernel<<<grid_for(g.rows_pad * g.pack_cols / 2, 256), 256, 0, s>>>(
      static_cast<const std::uint32_t*>(hw), g, static_cast<std::uint32_t*>(packed));
  SPARSENM_CUDA_CHECK_LAUNCH("repack_values_kernel");
}

void fst_transpose16(const void* src, std::int64_t R, std::int64_t C, void* dst, std::int64_t ldd, cudaStream_t s) {
  if (ldd < R) throw InvalidArgument("ldd", "must be >= the source rows");
  if ((C + 63) / 64 > 65535) throw InvalidArgument("C", "must be at most 65535 * 64 (grid limit)");
  const dim3 grid(unsigned((ldd + 63) / 64), unsigned((C + 63) / 64)), block(32, 8);
  const bool vec = C % 2 == 0 && ldd % 2 == 0 && reinterpret_cast<std::uintptr_t>(src) % 4 == 0 &&
                   reinterpret_cast<std::uintptr_t>(dst) % 4 == 0;
  auto* sp = static_cast<const std::uint16_t*>(src);
  auto* dp = static_cast<std::uint16_t*>(dst);
  if (vec)
    transpose16_kernel<true><<<grid, block, 0, s>>>(sp, R, C, dp, ldd);
  else
    transpose16_kernel<false><<<grid, block, 0, s>>>(sp, R, C, dp, ldd);
  SPARSENM_CUDA_CHECK_LAUNCH("transpose16_kernel");
}

namespace {
std::atomic<int> g_bias_variant{1};  // 1: measured 3.0x faster than 0 (fa4ec55)
}  // namespace
void set_fst_bias_variant(int v) noexcept { g_bias_variant.store(v); }
int fst_bias_variant() noexcept { return g_bias_variant.load(); }

void fst_add_bias(DType dtype, void* z, std::int64_t tokens, std::int64_t out, const void* b, cudaStream_t s) {
  if (dtype != DType::f16 && dtype != DType::bf16) throw InvalidArgument("dtype", "must be f16 or bf16");
  const bool vec_ok = out % 8 == 0 && reinterpret_cast<std::uintptr_t>(z) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(b) % 16 == 0;
  if (g_bias_variant.load(std::memory_order_relaxed) == 1 && vec_ok) {
    const std::int64_t groups = out / 8;
    const unsigned gx = unsigned((groups + 31) / 32);
    // about 16 blocks of 256 threads per SM in all; each thread visits >= 1 row
    const std::int64_t gy_want = std::max<std::int64_t>(1, (132LL * 16) / std::int64_t(gx));
    const unsigned gy = unsigned(std::min<std::int64_t>({gy_want, (tokens + 7) / 8, 65535}));
    const dim3 grid(gx, gy), block(32, 8);
    if (dtype == DType::f16)
      add_bias_vec8_kernel<__half><<<grid, block, 0, s>>>(static_cast<__half*>(z), tokens, out, static_cast<const __half*>(b));
    else
      add_bias_vec8_kernel<__nv_bfloat16><<<grid, block, 0, s>>>(static_cast<__nv_bfloat16*>(z), tokens, out,
                                                                 static_cast<const __nv_bfloat16*>(b));
    SPARSENM_CUDA_CHECK_LAUNCH("add_bias_vec8_kernel");
    return;
  }
  const unsigned grid = grid_for(tokens * out, 256, 132LL * 16);
  if (dtype == DType::f16)
    add_bias_kernel<__half><<<grid, 256, 0, s>>>(static_cast<__half*>(z), tokens, out, static_cast<const __half*>(b));
  else if (dtype == DType::bf16)
    add_bias_kernel<__nv_bfloat16><<<grid, 256, 0, s>>>(static_cast<__nv_bfloat16*>(z), tokens, out,
                                                         static_cast<const __nv_bfloat16*>(b));
  else
    throw InvalidArgument("dtype", "must be f16 or bf16");
  SPARSENM_CUDA_CHECK_LAUNCH("add_bias_kernel");
}

void fst_colsum(DType dtype, const void* dz, std::int64_t tokens, std::int64_t out, float* partial, void* db, cudaStream_t s) {
  const std::int64_t chunks = (tokens + kColsumChunk - 1) / kColsumChunk;
  if (chunks > 65535) throw InvalidArgument("tokens", "must be at most 65535 * 256 for the bias gradient");
  const dim3 grid(unsigned((out + 31) / 32), unsigned(chunks)), block(32, 8);
  const unsigned fgrid = unsigned((out + 255) / 256);
  if (dtype == DType::f16) {
    colsum_partial_kernel<__half><<<grid, block, 0, s>>>(static_cast<const __half*>(dz), tokens, out, partial);
    SPARSENM_CUDA_CHECK_LAUNCH("colsum_partial_kernel");
    colsum_final_kernel<__half><<<fgrid, 256, 0, s>>>(partial, chunks, out, static_cast<__half*>(db));
  } else if (dtype == DType::bf16) {
    colsum_partial_kernel<__nv_bfloat16><<<grid, block, 0, s>>>(static_cast<const __nv_bfloat16*>(dz), tokens, out, partial);
    SPARSENM_CUDA_CHECK_LAUNCH("colsum_partial_kernel");
    colsum_final_kernel<__nv_bfloat16><<<fgrid, 256, 0, s>>>(partial, chunks, out, static_cast<__nv_bfloat16*>(db));
  } else {
    throw InvalidArgument("dtype", "must be f16 or bf16");
  }
  SPARSENM_CUDA_CHECK_LAUNCH("colsum_final_kernel");
}

}  // namespace sparsenm::train::detail
