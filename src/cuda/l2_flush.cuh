// sparsenm — internal: evicting the L2 before a timed run by READING a buffer of twice its size.
//
// Why a read, not a memset: a memset leaves up to a whole L2 of dirty lines, which the timed
// kernel then writes back to HBM while it streams its weight (measured on the H200: the plan's
// race timed every SpMV candidate ~10 % slow, and the shared-memory-ring kernel ew_spmv_skr ~40 %
// slow, so the plan picked it where the benchmark measured it slower; docs/PERF.md session 6).
// The bench harness and Plan::create's timer use the same flush, so they rank kernels alike.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/common.cuh"

namespace sparsenm::cuda {

/// Reads n 16-byte vectors with evict-first loads; the sink is written only if the (zeroed)
/// buffer sums to an impossible value, which keeps the loads alive.
static __global__ void l2_flush_read_kernel(const float4* p, std::size_t n, float* sink) {
  float acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float4 v = __ldcs(p + i);
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) *sink = acc;
}

/// A zeroed device buffer of 2 x L2 (plus the sink) and the launch that reads it.
class L2Flush {
 public:
  L2Flush() {
    int dev = 0, l2 = 0;
    SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
    SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
    bytes_ = std::size_t(2) * std::size_t(l2 > (1 << 20) ? l2 : (1 << 20));
    buf_ = DeviceBuffer(bytes_ + 16);
    SPARSENM_CUDA_CHECK(cudaMemset(buf_.get(), 0, bytes_ + 16));
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  }
  void operator()(cudaStream_t s) const {
    l2_flush_read_kernel<<<sms_ * 4, 512, 0, s>>>(buf_.as<float4>(), bytes_ / 16,
                                                  reinterpret_cast<float*>(buf_.as<char>() + bytes_));
    SPARSENM_CUDA_CHECK_LAUNCH("l2_flush_read_kernel");
  }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  DeviceBuffer buf_;
  std::size_t bytes_ = 0;
  int sms_ = 1;
};

}  // namespace sparsenm::cuda
