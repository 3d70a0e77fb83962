// sparsenm — flip count ||m_new - m_old||_1 of two transposable masks (seed 003 Definition 4.1).
// Layout: uint16 per 4x4 block (train.hpp). Each thread XORs 8 words per 16-byte load of each
// mask and popcounts; padding bits (blocks on the right/bottom edge of a matrix whose sides are
// not multiples of 4) are masked out. Reduction: warp shuffle, shared memory, then ONE 64-bit
// integer atomicAdd per CTA: integer addition is associative, so the count is deterministic.
// Bytes: 2 x 2 B per 16 elements read; floor = bytes / copy bandwidth.
#include "cuda/train/elementwise.cuh"

namespace sparsenm::train::detail {

/// Bits of block (br, bc) that are real elements (not padding).
__device__ __forceinline__ unsigned valid_bits(std::int64_t br, std::int64_t bc, std::int64_t rows, std::int64_t cols) {
  const std::int64_t nr = rows - 4 * br, nc = cols - 4 * bc;
  const unsigned colm = nc >= 4 ? 0xfu : ((1u << nc) - 1u);
  unsigned m = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r)
    if (r < nr) m |= colm << (4 * r);
  return m;
}

__global__ void __launch_bounds__(kEwThreads) flip_count_kernel(const std::uint16_t* __restrict__ a,
                                                               const std::uint16_t* __restrict__ b,
                                                               std::int64_t rows, std::int64_t cols,
                                                               bool vec, unsigned long long* count) {
  const std::int64_t bcols = (cols + 3) / 4, words = ((rows + 3) / 4) * bcols;
  const bool all_valid = rows % 4 == 0 && cols % 4 == 0;
  unsigned long long local = 0;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t tid = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (vec && all_valid) {  // 8 words per 16-byte load
    for (std::int64_t i = tid; i < words / 8; i += stride) {
      const uint4 p = __ldcs(reinterpret_cast<const uint4*>(a) + i), q = __ldcs(reinterpret_cast<const uint4*>(b) + i);
      local += __popc(p.x ^ q.x) + __popc(p.y ^ q.y) + __popc(p.z ^ q.z) + __popc(p.w ^ q.w);
    }
    for (std::int64_t i = words / 8 * 8 + tid; i < words; i += stride) local += __popc(unsigned(a[i] ^ b[i]));
  } else {
    for (std::int64_t i = tid; i < words; i += stride) {
      unsigned x = unsigned(a[i] ^ b[i]);
      if (!all_valid) x &= valid_bits(i / bcols, i % bcols, rows, cols);
      local += __popc(x);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) local += __shfl_down_sync(0xffffffffu, local, o);
  __shared__ unsigned long long warp_sum[kEwThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long s = 0;
    for (int k = 0; k < kEwThreads / 32; ++k) s += warp_sum[k];
    if (s) atomicAdd(count, s);  // integer sums: the total is independent of the order
  }
}

void launch_flip_count(const std::uint16_t* a, const std::uint16_t* b, std::int64_t rows, std::int64_t cols,
                       unsigned long long* count, cudaStream_t s) {
  const std::int64_t words = ((rows + 3) / 4) * ((cols + 3) / 4);
  const bool vec = (reinterpret_cast<std::uintptr_t>(a) % 16 == 0) && (reinterpret_cast<std::uintptr_t>(b) % 16 == 0);
  SPARSENM_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned long long), s));
  flip_count_kernel<<<ew_blocks((words + 7) / 8), kEwThreads, 0, s>>>(a, b, rows, cols, vec, count);
  SPARSENM_CUDA_CHECK_LAUNCH("flip_count_kernel");
}

}  // namespace sparsenm::train::detail
