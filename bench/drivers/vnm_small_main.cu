// A stand-alone driver for the "vnm_small" bench suite, for use before the `sparsenm bench`
// harness lands (it is not part of the CMake build: scripts/vnm-small-bench compiles it).
// Measures the copy bandwidth, runs the suite, writes BENCH.md JSONL rows and prints the
// speedups of ours over cuBLAS / cuSPARSELt next to the byte-ratio ideal.
//   vnm_small_bench OUTDIR [--quick]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench.hpp"
#include "cuda/common.cuh"

namespace sparsenm::bench {
Suite vnm_small_suite();
}

using namespace sparsenm;

static std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

static double copy_bandwidth() {
  const std::size_t bytes = std::size_t(1) << 30;
  cuda::DeviceBuffer a(bytes), b(bytes);
  SPARSENM_CUDA_CHECK(cudaMemset(a.get(), 1, bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(e0);
    SPARSENM_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (i >= 2) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return 2.0 * double(bytes) / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

int main(int argc, char** argv) {
  std::string out = argc > 1 ? argv[1] : "bench/results";
  bench::Options opt;
  auto split = [](const std::string& v) {
    std::vector<std::string> out;
    std::size_t a = 0;
    while (a <= v.size()) {
      const std::size_t b = v.find(',', a);
      out.push_back(v.substr(a, b == std::string::npos ? std::string::npos : b - a));
      if (b == std::string::npos) break;
      a = b + 1;
    }
    return out;
  };
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") opt.quick = true;
    else if (a.rfind("--ms=", 0) == 0)
      for (const auto& t : split(a.substr(5))) opt.ms.push_back(std::stoll(t));
    else if (a.rfind("--patterns=", 0) == 0)
      opt.patterns = split(a.substr(11));
    else if (a.rfind("--shapes=", 0) == 0)  // n x k pairs: 28672x8192,12288x12288
      for (const auto& t : split(a.substr(9))) {
        const std::size_t x = t.find('x');
        opt.shapes.push_back({std::stoll(t.substr(0, x)), std::stoll(t.substr(x + 1))});
      }
  }
  cudaDeviceProp prop{};
  SPARSENM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  char date[16];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const char* commit = std::getenv("SPARSENM_COMMIT");
  std::string dev = prop.name, devfile = dev;
  for (char& c : devfile)
    if (c == ' ') c = '_';
  const std::string path = out + "/" + devfile + "-vnm_small-" + date + ".jsonl";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  const double bw = copy_bandwidth();
  std::printf("device %s, copy bandwidth %.0f GB/s, L2 %d MB\n", dev.c_str(), bw, prop.l2CacheSize >> 20);
  std::vector<bench::Row> rows;
  bench::Context ctx{opt, dev, bw, commit ? commit : "unknown", date, nullptr};
  ctx.emit = [&](bench::Row r) {
    r.device = dev;
    r.copy_GBps = bw;
    r.commit = ctx.commit;
    r.date = date;
    std::fprintf(f,
                 "{\"suite\": \"%s\", \"op\": \"%s\", \"format\": \"%s\", \"pattern\": \"%s\", \"dtype\": \"%s\", \"m\": %lld, "
                 "\"n\": %lld, \"k\": %lld, \"impl\": \"%s\", \"ms_median\": %.6g, \"ms_min\": %.6g, \"reps\": %d, "
                 "\"rel_err\": %.3g, \"bytes\": %.0f, \"flops\": %.0f, \"device\": \"%s\", \"copy_GBps\": %.0f, "
                 "\"commit\": \"%s\", \"date\": \"%s\", \"note\": \"%s\"}\n",
                 r.suite.c_str(), r.op.c_str(), r.format.c_str(), r.pattern.c_str(), r.dtype.c_str(), (long long)r.m,
                 (long long)r.n, (long long)r.k, r.impl.c_str(), r.ms_median, r.ms_min, r.reps, r.rel_err, r.bytes, r.flops,
                 esc(r.device).c_str(), r.copy_GBps, esc(r.commit).c_str(), r.date.c_str(), esc(r.note).c_str());
    std::fflush(f);
    const double floor_us = r.bytes / (bw * 1e9) * 1e6;
    std::printf("%-9s %-8s %6lld %6lld %3lld %-26s %9.2f us  floor %7.2f us (%3.0f%%)  err %.2e  %s\n", r.op.c_str(),
                r.pattern.c_str(), (long long)r.n, (long long)r.k, (long long)r.m, r.impl.c_str(), r.ms_median * 1e3,
                floor_us, r.ms_median > 0 ? 100.0 * floor_us / (r.ms_median * 1e3) : 0.0, r.rel_err, r.note.c_str());
    std::fflush(stdout);
    rows.push_back(r);
  };
  try {
    bench::vnm_small_suite().run(ctx);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "suite failed: %s\n", e.what());
    return 1;
  }
  std::fclose(f);
  // Speedup table: ours vs peers, next to the byte-ratio ideal (peer bytes / our bytes).
  std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>, std::map<std::string, bench::Row>> by;
  for (const auto& r : rows)
    if (r.op != "prune") by[{r.pattern, r.n, r.k, r.m}][r.impl] = r;
  std::printf("\n%-9s %6s %6s %3s %9s | %8s %8s %6s %6s | %8s %6s\n", "pattern", "n", "k", "m", "floor_us", "ours_us",
              "vs_cublas", "ideal", "frac", "vs_lt", "bar");
  for (auto& [key, impls] : by) {
    for (auto& [name, o] : impls) {
      if (name.rfind("sparsenm:vnm_gemv", 0) != 0) continue;
      const double floor_us = o.bytes / (bw * 1e9) * 1e6;
      double vs_cublas = 0, ideal = 0, vs_lt = 0;
      if (impls.count("cublas")) {
        vs_cublas = impls["cublas"].ms_median / o.ms_median;
        ideal = impls["cublas"].bytes / o.bytes;
      }
      if (impls.count("cusparselt")) vs_lt = impls["cusparselt"].ms_median / o.ms_median;
      std::printf("%-9s %6lld %6lld %3lld %9.2f | %8.2f %8.2fx %5.2fx %5.2f | %7.2fx %s %s\n", std::get<0>(key).c_str(),
                  (long long)std::get<1>(key), (long long)std::get<2>(key), (long long)std::get<3>(key), floor_us,
                  o.ms_median * 1e3, vs_cublas, ideal, ideal > 0 ? vs_cublas / ideal : 0.0, vs_lt,
                  floor_us < 10 ? "(floor<10us)" : (vs_cublas / ideal >= 0.8 ? "meets 0.8x ideal" : "BELOW 0.8x ideal"),
                  name.c_str());
    }
  }
  std::printf("\nresults: %s\n", path.c_str());
  return 0;
}
