// Profiling driver for the training kernels (ncu, docs/PERF-train.md "Session 3b"): launches
// the mask and MVUE kernel variants once each on the bench's bar cases, so that
//   ncu -k regex:'mask24|mvue24' sparsenm_train_profile
// profiles one launch of each (the fill kernels are not matched). Cases: the batched f16 mask
// refresh at 36 x [5120][1280]: search and apply (with the mask the search wrote) on variant 4
// and on variant 4 under the occupancy control (one resident CTA per SM fewer), then the lean
// staged searches 8 and 9 (9: the default there); MVUE at 16384 x 6400 (SPARSENM_PROFILE_N:
// another feature count, e.g. 5120), f16 and bf16, token-major variants 1, 3, 6, 7, 18, 23, 24
// and 1 under the occupancy control, feature-major 1, 3, 6, 7, 10 and 1 under the occupancy
// control. Prints the launch order. (The session-4 / 5 / 7b launch sets named variants dropped in
// session 9; docs/PERF-train.md "Session 9: variants dropped".)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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
  {  // ---- mask, f16, batched: the bench's 36 x [5120][1280]
    const std::int64_t B = 36, R = 5120, C = 1280;
    const std::size_t n = std::size_t(B * R * C);
    cuda::DeviceBuffer w(n * 2), mask(std::size_t(B * train::mask24_words(R, C)) * 2);
    cuda::DeviceBuffer wv(std::size_t(B * R * train::hw24_value_cols(C)) * 2), wi(std::size_t(B * R * train::hw24_index_row_bytes(C)));
    cuda::DeviceBuffer tv(std::size_t(B * C * train::hw24_value_cols(R)) * 2), ti(std::size_t(B * C * train::hw24_index_row_bytes(R)));
    fill16<<<1024, 256>>>(static_cast<std::uint16_t*>(w.get()), n, 7u);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    auto run = [&](int variant, int limit, bool search) {
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
      a.max_ctas_per_sm = limit;
      train::detail::launch_mask24<__half>(a, search, nullptr);
      SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      std::printf("launched mask24 f16 %s variant %d%s (%lld x %lld x %lld)\n", search ? "search" : "apply", variant,
                  limit ? " minus 1 CTA/SM" : "", (long long)B, (long long)R, (long long)C);
    };
    for (const bool search : {true, false}) {
      run(4, 0, search);
      run(4, -1, search);
    }
    run(8, 0, true);  // the lean search with staged whole-sector stores ("Session 5b")
    run(9, 0, true);  // over 128-column strips ("Session 5c")
  }
  {  // ---- MVUE, 16384 x 6400 (the bar shape)
    const char* nenv = std::getenv("SPARSENM_PROFILE_N");
    const std::int64_t T = 16384, N = nenv ? std::atoll(nenv) : 6400;
    const std::size_t n = std::size_t(T * N);
    cuda::DeviceBuffer g(n * 2), v(std::size_t(N * train::hw24_value_cols(T)) * 2), idx(std::size_t(N * train::hw24_index_row_bytes(T)));
    fill16<<<1024, 256>>>(static_cast<std::uint16_t*>(g.get()), n, 9u);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    struct Launch {
      bool bf16, tm;
      int variant, limit;
    };
    auto run_set = [&](const Launch* begin, const Launch* end) {
    for (const Launch* it = begin; it != end; ++it) {
      const Launch& l = *it;
      train::detail::Mvue24Args a = train::detail::make_mvue24_args(
          g.get(), T, N, l.tm ? train::GradLayout::token_major : train::GradLayout::feature_major, 5, {v.get(), static_cast<std::uint8_t*>(idx.get())});
      a.variant = l.variant;
      a.max_ctas_per_sm = l.limit;
      if (l.bf16) train::detail::launch_mvue24<__nv_bfloat16>(a, nullptr);
      else train::detail::launch_mvue24<__half>(a, nullptr);
      SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      std::printf("launched mvue24 %s %s variant %d%s (%lld x %lld)\n", l.bf16 ? "bf16" : "f16", l.tm ? "token_major" : "feature_major",
                  l.variant, l.limit ? " minus 1 CTA/SM" : "", (long long)T, (long long)N);
    }
    };
    std::vector<Launch> launches;
    for (const bool bf16 : {false, true}) {
      for (const int v : {1, 3, 6, 7, 18, 23, 24}) launches.push_back({bf16, true, v, 0});
      launches.push_back({bf16, true, 1, -1});
      for (const int v : {1, 3, 6, 7, 10}) launches.push_back({bf16, false, v, 0});
      launches.push_back({bf16, false, 1, -1});
    }
    run_set(launches.data(), launches.data() + launches.size());
  }
  return 0;
}
