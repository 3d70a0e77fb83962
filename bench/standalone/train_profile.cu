// Profiling driver for the training kernels (ncu, docs/PERF-train.md "Session 3b"): launches
// the mask and MVUE kernel variants of docs/PERF-train.md "Session 4" once each on the bench's
// bar cases, so that
//   ncu -k regex:'mask24|mvue24' sparsenm_train_profile
// profiles one launch of each (the fill kernels are not matched). Cases: the batched f16 mask
// refresh at 36 x [5120][1280] (search, then apply with the mask the search wrote): variants 4
// (default), 5, 6 and 4 under the occupancy control (one resident CTA per SM fewer); MVUE at
// 16384 x 6400: f16 / bf16 token-major and feature-major, variant 1 (the default before session 4),
// its register-capped forms (4, 5) and variant 1 under the occupancy control. Prints the launch order.
// SPARSENM_PROFILE_SET=s5 (docs/PERF-train.md "Session 5"): only the mask searches of variants 4
// and 7 (the lean search) and the MVUE defaults beside their ALU-lean forms (variants 6 / 7).
// SPARSENM_PROFILE_SET=s7b (docs/PERF-train.md "Session 7b"): no mask launches; MVUE at 16384 x
// 5120: token-major bf16 variant 1 (default), f16 variants 1 and 5 (default), bf16 variants 15 - 17,
// f16 variant 16, feature-major bf16 / f16 variant 10 (default).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <iterator>
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
  const char* set = std::getenv("SPARSENM_PROFILE_SET");
  const bool s5b = set && std::string(set) == "s5b";  // session 5b: the mask searches 4, 7, 8 only
  const bool s5 = s5b || (set && std::string(set) == "s5");
  const bool s7b = set && std::string(set) == "s7b";
  if (!s7b) {  // ---- mask, f16, batched: the bench's 36 x [5120][1280]
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
    if (s5) {
      run(4, 0, true);
    } else {
      for (const bool search : {true, false}) {
        run(4, 0, search);
        run(5, 0, search);
        run(6, 0, search);
        run(4, -1, search);
      }
    }
    run(7, 0, true);  // the lean 16-bit search (mask24_lean.cuh, docs/PERF-train.md "Session 4c")
    if (s5b) run(8, 0, true);  // the lean search with staged whole-sector stores ("Session 5b")
  }
  if (s5b) return 0;
  {  // ---- MVUE, 16384 x 6400 (the bar shape)
    const std::int64_t T = 16384, N = s7b ? 5120 : 6400;
    const std::size_t n = std::size_t(T * N);
    cuda::DeviceBuffer g(n * 2), v(std::size_t(N * train::hw24_value_cols(T)) * 2), idx(std::size_t(N * train::hw24_index_row_bytes(T)));
    fill16<<<1024, 256>>>(static_cast<std::uint16_t*>(g.get()), n, 9u);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    struct Launch {
      bool bf16, tm;
      int variant, limit;
    };
    const Launch launches[] = {{false, true, 1, 0},  {false, true, 4, 0},  {false, true, 1, -1}, {true, true, 1, 0},
                               {true, true, 4, 0},   {true, false, 1, 0},  {true, false, 4, 0},  {true, false, 5, 0},
                               {true, false, 1, -1}, {false, false, 1, 0}, {false, false, 5, 0}, {false, false, 1, -1}};
    // session 5: the defaults (bf16 token-major 1, feature-major 5; f16 token-major 5, feature-major 1)
    // and their ALU-lean forms (6 = lean 1, 7 = lean 5)
    const Launch launches_s5[] = {{true, true, 1, 0},   {true, true, 6, 0},   {true, true, 7, 0},   {true, false, 5, 0},
                                  {true, false, 7, 0},  {true, false, 6, 0},  {false, true, 5, 0},  {false, true, 7, 0},
                                  {false, false, 1, 0}, {false, false, 6, 0}};
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
    const Launch launches_s7b[] = {{true, true, 1, 0},   {false, true, 1, 0},  {false, true, 5, 0},
                                   {true, true, 15, 0},  {true, true, 16, 0},  {true, true, 17, 0},  {false, true, 16, 0},
                                   {true, false, 10, 0}, {false, false, 10, 0}};
    if (s7b) run_set(std::begin(launches_s7b), std::end(launches_s7b));
    else if (s5) run_set(std::begin(launches_s5), std::end(launches_s5));
    else run_set(std::begin(launches), std::end(launches));
  }
  return 0;
}
