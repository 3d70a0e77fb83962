// Diagnostic for ew_spmv_tc (docs/PERF.md, ew_spmv_tc session 4, "Next"): separates the weight
// stream from the decode. On one pruned fp16 weight and one X (m = 8) it times, one launch at a
// time with L2 flushed before each (a 256 MiB memset), median of 30:
//   prmt, ring                the plan's variants (library instances, default plans);
//   none@prmt, none@ring      the same kernels and grids (same launch configuration and shared
//                             memory) with the decode, X reads and mma removed (kDecNone): the
//                             tiles are loaded and folded into the accumulators, X is staged;
//   *@smallX                  the same with X staged in ~16 KiB phases (smem_budget 16384), so
//                             the SM keeps more of its L1 / shared array as L1;
//   empty                     an empty kernel (the launch floor, timed the same way).
// Prints the grid and, per variant, µs and the weight throughput bytes / (time - empty). If
// none@* streams near the copy bandwidth, the decode is what holds the tc kernels' stream back; if
// it stays near the real kernels, the grid / shared-memory configuration does. The none@* outputs
// are meaningless (not checked); prmt and ring are compared with each other.
//   sparsenm_spmv_tc_probe [N K [PATTERN ...]]   (default: 28672 8192 and 12288 12288, 2:8 1:8)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/ew/spmv_tc.hpp"
#include "cuda/ew/spmv_tc_launch.cuh"
#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/prune.hpp"

using namespace sparsenm;
namespace sew = sparsenm::cuda::ew;

namespace {

__global__ void empty_kernel() {}

struct Timer {
  cudaEvent_t a = nullptr, b = nullptr;
  void* flush = nullptr;
  std::size_t flush_bytes = std::size_t(256) << 20;
  Timer() {
    SPARSENM_CUDA_CHECK(cudaEventCreate(&a));
    SPARSENM_CUDA_CHECK(cudaEventCreate(&b));
    SPARSENM_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(flush);
  }
  /// Median µs of `reps` single launches, L2 flushed before each.
  double time(const std::function<void()>& fn, int reps = 30) {
    for (int i = 0; i < 5; ++i) fn();
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      SPARSENM_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
      SPARSENM_CUDA_CHECK(cudaEventRecord(a));
      fn();
      SPARSENM_CUDA_CHECK(cudaEventRecord(b));
      SPARSENM_CUDA_CHECK(cudaEventSynchronize(b));
      SPARSENM_CUDA_CHECK(cudaGetLastError());
      float ms = 0;
      SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      t.push_back(1000.0 * ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

DenseMatrix random_f16(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  DenseMatrix d(DType::f16, rows, cols);
  auto* p = static_cast<__half*>(d.data());
  std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float u = float((s >> 40) & 0xffffff) / float(1 << 24);  // [0, 1)
    p[i] = __float2half(2.0f * u - 1.0f + (u < 0.5f ? -1e-3f : 1e-3f));  // never zero
  }
  return d;
}

template <int N, int M>
void probe(std::int64_t n, std::int64_t k, Timer& timer, double empty_us, int sms) {
  const Pattern pat = Pattern::element(N, M);
  const CondensedMatrix w = prune(random_f16(n, k, 17).view(), pat);
  const sew::SpmvTcPacked p = sew::pack_spmv_tc(w);
  const auto& l = p.layout;
  const int m = 8;
  sparsenm::cuda::DeviceBuffer dv(p.values.size()), di(p.indices.size() * 4), dx(std::size_t(m * k) * 2),
      dy1(std::size_t(m * n) * 2), dy2(std::size_t(m * n) * 2), dy(std::size_t(m * n) * 2);
  dv.upload(p.values.data(), p.values.size());
  di.upload(p.indices.data(), p.indices.size() * 4);
  const DenseMatrix x = random_f16(m, k, 29);
  dx.upload(x.data(), x.size_bytes());
  const double wbytes = double(p.values.size() + p.indices.size() * 4);
  std::printf("\n%s f16 %lld x %lld, m = %d: weight %.1f MB (values + indices), %lld row blocks x %lld tiles\n",
              pat.str().c_str(), (long long)n, (long long)k, m, wbytes / 1e6, (long long)l.row_blocks,
              (long long)l.tiles);

  struct Run {
    const char* name;
    sew::SpmvTcVariant plan;  // whose launch configuration
    int budget;               // smem_budget (0: the plan's default)
    sew::SpmvTcLaunchFn fn;   // the kernel
    void* y;
  };
  using None2 = sew::SpmvTcTraits<__half, N, M, sew::kDecNone>;
  using None4 = sew::SpmvTcTraits<__half, N, M, sew::kDecNone, sew::kTcRing>;
  const auto prmt = sew::find_spmv_tc(DType::f16, N, M, sew::SpmvTcVariant::prmt);
  const auto ring = sew::find_spmv_tc(DType::f16, N, M, sew::SpmvTcVariant::ring);
  const std::vector<Run> runs = {
      {"prmt", sew::SpmvTcVariant::prmt, 0, prmt, dy1.get()},
      {"ring", sew::SpmvTcVariant::ring, 0, ring, dy2.get()},
      {"none@prmt", sew::SpmvTcVariant::prmt, 0, &sew::launch_spmv_tc<None2>, dy.get()},
      {"none@ring", sew::SpmvTcVariant::ring, 0, &sew::launch_spmv_tc<None4>, dy.get()},
      {"prmt@smallX", sew::SpmvTcVariant::prmt, 16384, prmt, dy.get()},
      {"ring@smallX", sew::SpmvTcVariant::ring, 16384, ring, dy.get()},
      {"none@prmt-smallX", sew::SpmvTcVariant::prmt, 16384, &sew::launch_spmv_tc<None2>, dy.get()},
  };
  std::printf("  %-17s %-34s %9s %12s\n", "variant", "grid", "us", "weight GB/s");
  for (const Run& r : runs) {
    sew::SpmvTcArgs a;
    const sew::SpmvTcConfig cfg = sew::plan_spmv_tc(l, DType::f16, m, sms, a, r.budget, 0, r.plan);
    a.values = dv.get();
    a.indices = static_cast<const std::uint32_t*>(di.get());
    a.x = dx.get();
    a.y = r.y;
    a.y_dtype = 1;
    a.x_vec = sew::spmv_tc_x_vec(dx.get(), k);
    const double us = timer.time([&] { r.fn(a, cfg, nullptr); });
    char grid[96];
    std::snprintf(grid, sizeof grid, "%d warps x split %d, %d tiles/phase, %d B", a.cta_warps, a.ksplit,
                  a.tiles_per_phase, cfg.smem_bytes);
    std::printf("  %-17s %-34s %9.1f %12.0f\n", r.name, grid, us, wbytes / std::max(0.1, us - empty_us) / 1e3);
  }
  // prmt and ring computed the same product (fp32 accumulation in a different order).
  std::vector<__half> y1(std::size_t(m * n)), y2(std::size_t(m * n));
  SPARSENM_CUDA_CHECK(cudaMemcpy(y1.data(), dy1.get(), y1.size() * 2, cudaMemcpyDeviceToHost));
  SPARSENM_CUDA_CHECK(cudaMemcpy(y2.data(), dy2.get(), y2.size() * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (std::size_t i = 0; i < y1.size(); ++i) {
    const double u = __half2float(y1[i]), v = __half2float(y2[i]);
    num += (u - v) * (u - v), den += u * u;
  }
  std::printf("  prmt vs ring: relative difference %.1e\n", den > 0 ? std::sqrt(num / den) : std::sqrt(num));
}

void probe_pattern(const std::string& pat, std::int64_t n, std::int64_t k, Timer& t, double e, int sms) {
  if (pat == "2:8") probe<2, 8>(n, k, t, e, sms);
  else if (pat == "1:8") probe<1, 8>(n, k, t, e, sms);
  else if (pat == "2:16") probe<2, 16>(n, k, t, e, sms);
  else if (pat == "1:16") probe<1, 16>(n, k, t, e, sms);
  else std::printf("pattern %s: not probed (2:8, 1:8, 2:16, 1:16 are)\n", pat.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("spmv_tc probe: no CUDA device\n");
    return 2;
  }
  try {
    cudaDeviceProp prop{};
    SPARSENM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    Timer timer;
    const double empty_us = timer.time([] { empty_kernel<<<1, 32>>>(); });
    std::printf("spmv_tc probe on %s (%d SMs): empty kernel %.1f us (same method)\n", prop.name,
                prop.multiProcessorCount, empty_us);
    std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{28672, 8192}, {12288, 12288}};
    std::vector<std::string> pats = {"2:8", "1:8"};
    if (argc >= 3) shapes = {{std::atoll(argv[1]), std::atoll(argv[2])}};
    if (argc >= 4) pats.assign(argv + 3, argv + argc);
    for (const auto& [n, k] : shapes)
      for (const auto& pat : pats) probe_pattern(pat, n, k, timer, empty_us, prop.multiProcessorCount);
  } catch (const std::exception& e) {
    std::printf("spmv_tc probe failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
