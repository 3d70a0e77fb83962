// sparsenm — cuda:vnm_gemv k-split epilogue: y[i][r] = sum over splits of ws[z][i][r], in split
// order (deterministic), converted to y's dtype. Streams splits * m * n * 4 bytes (L2-resident
// for the shapes that split).
#include <algorithm>

#include "cuda/common.cuh"
#include "cuda/vnm_small/kernel.cuh"

namespace sparsenm::cuda::vnm_small {

namespace {
__global__ void vnm_small_reduce(const Params p) {
  const std::size_t total = std::size_t(p.m) * std::size_t(p.n);
  for (std::size_t o = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += std::size_t(gridDim.x) * blockDim.x) {
    float s = 0.0f;
    for (int z = 0; z < p.splits; ++z) s += p.ws[std::size_t(z) * total + o];
    store_y(p.y, p.y_dtype, o, s);
  }
}
}  // namespace

void launch_reduce(const Params& p, cudaStream_t stream) {
  const std::int64_t total = std::int64_t(p.m) * p.n;
  const int blocks = int(std::min<std::int64_t>(1024, (total + 255) / 256));
  vnm_small_reduce<<<blocks, 256, 0, stream>>>(p);
  SPARSENM_CUDA_CHECK_LAUNCH("vnm_small_reduce");
}

}  // namespace sparsenm::cuda::vnm_small
