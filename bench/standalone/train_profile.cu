// Profiling driver for the training kernels (ncu, docs/PERF-train.md "Session 3b"): launches
// every mask and MVUE kernel variant exactly once on one representative case, so that
//   ncu -k regex:'mask24|mvue24' sparsenm_train_profile
// profiles one launch of each (the fill kernels are not matched). Cases: the batched f16 mask
// refresh at 4 x [6400][1600] (search and apply, with the mask the search wrote) and MVUE at
// 8192 x 6400 (f16 token-major, bf16 feature-major). Default set (session 3c): search variants
// 2 (default) and 4, apply 1 (default) and 4, MVUE 1 and 3; SPARSENM_PROFILE_VARIANTS=all:
// every variant. Prints the launch order.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda/common.cuh"
#include "cuda/train/train_common.cuh"
#include "sparsenm/train.hpp"

using namespace sparsenm;

namespace {
__global__ void fill16(std::uint16_t* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h = std::uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = std::uint16_t(h & 0xBFFFu);  // finite f16 / bf16 in about [-2, 2]
  }
}
}  // namespace

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("train profile: no CUDA device\n");
    return 2;
  }
  const char* all = std::getenv("SPARSENM_PROFILE_VARIANTS");
  const bool every = all && std::string(all) == "all";
  {  // ---- mask, f16, batched
    const std::int64_t B = 4, R = 6400, C = 1600;
    const std::size_t n = std::size_t(B * R * C);
    cuda::DeviceBuffer w(n * 2), mask(std::size_t(B * train::mask24_words(R, C)) * 2);
    cuda::DeviceBuffer wv(std::size_t(B * R * train::hw24_value_cols(C)) * 2), wi(std::size_t(B * R * train::hw24_index_row_bytes(C)));
    cuda::DeviceBuffer tv(std::size_t(B * C * train::hw24_value_cols(R)) * 2), ti(std::size_t(B * C * train::hw24_index_row_bytes(R)));
    fill16<<<1024, 256>>>(static_cast<std::uint16_t*>(w.get()), n, 7u);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    auto run = [&](int variant, bool search) {
      train::detail::Mask24Args a;
      a.w = w.get();
      a.rows = R;
      a.cols = C;
      a.batch = B;
      if (search) a.mask_out = static_cast<std::uint16_t*>(mask.get());
      else a.mask_in = static_cast<const std::uint16_t*>(mask.get());
      a.w_values = wv.get();
      a.w_indices = static_cast<std::uint8_t*>(wi.get());
      a.wt_values = tv.get();
      a.wt_indices = static_cast<std::uint8_t*>(ti.get());
      a.aligned = true;
      a.variant = variant;
      train::detail::launch_mask24<__half>(a, search, nullptr);
      SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      std::printf("launched mask24 f16 %s variant %d (%lld x %lld x %lld)\n", search ? "search" : "apply", variant, (long long)B,
                  (long long)R, (long long)C);
    };
    // SPARSENM_PROFILE_VARIANTS=all: every variant; otherwise the session-3c set (search: the
    // default v2 and v4; apply: the default v1 and v4)
    for (int v : {1, 2, 3, 4})
      if (every || v == 2 || v == 4) run(v, true);
    for (int v : {1, 2, 3, 4})
      if (every || v == 1 || v == 4) run(v, false);
  }
  {  // ---- MVUE, 16384 x 6400
    const std::int64_t T = 8192, N = 6400;
    const std::size_t n = std::size_t(T * N);
    cuda::DeviceBuffer g(n * 2), v(std::size_t(N * train::hw24_value_cols(T)) * 2), idx(std::size_t(N * train::hw24_index_row_bytes(T)));
    fill16<<<1024, 256>>>(static_cast<std::uint16_t*>(g.get()), n, 9u);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    for (const bool tm : {true, false})
      for (int variant = 1; variant <= 3; ++variant) {
        if (variant == 2 && !every) continue;
        train::detail::Mvue24Args a = train::detail::make_mvue24_args(
            g.get(), T, N, tm ? train::GradLayout::token_major : train::GradLayout::feature_major, 5, {v.get(), static_cast<std::uint8_t*>(idx.get())});
        a.variant = variant;
        if (tm) train::detail::launch_mvue24<__half>(a, nullptr);
        else train::detail::launch_mvue24<__nv_bfloat16>(a, nullptr);
        SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
        std::printf("launched mvue24 %s %s variant %d (%lld x %lld)\n", tm ? "f16" : "bf16", tm ? "token_major" : "feature_major",
                    variant, (long long)T, (long long)N);
      }
  }
  return 0;
}
