// Standalone driver for bench/train_suite.cu, for use until the bench harness (bench/registry.cpp,
// `sparsenm bench`) is on main: measures the copy bandwidth the way BENCH.md asks (1 GiB
// device-to-device cudaMemcpyAsync, bytes read + written, median of 20), runs the suite, writes
// <out>/<device>-train-<date>.jsonl and prints one line per row.
//   sparsenm_train_bench [--quick] [--out DIR] [--reps N] [--warmup N]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cuda/common.cuh"

namespace sparsenm::bench {
Suite train_suite();
}

using namespace sparsenm::bench;

static std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

int main(int argc, char** argv) {
  Options opt;
  opt.out_dir = ".";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") opt.quick = true;
    else if (a == "--out" && i + 1 < argc) opt.out_dir = argv[++i];
    else if (a == "--reps" && i + 1 < argc) opt.reps = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) opt.warmup = std::atoi(argv[++i]);
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("train bench: no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop{};
  SPARSENM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  // copy bandwidth
  const std::size_t cb = std::size_t(1) << 30;
  sparsenm::cuda::DeviceBuffer src(cb), dst(cb);
  SPARSENM_CUDA_CHECK(cudaMemset(src.get(), 1, cb));
  std::vector<float> t;
  cudaEvent_t e0, e1;
  SPARSENM_CUDA_CHECK(cudaEventCreate(&e0));
  SPARSENM_CUDA_CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 25; ++i) {
    SPARSENM_CUDA_CHECK(cudaEventRecord(e0));
    SPARSENM_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), cb, cudaMemcpyDeviceToDevice));
    SPARSENM_CUDA_CHECK(cudaEventRecord(e1));
    SPARSENM_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 5) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  const double copy = 2.0 * double(cb) / (t[t.size() / 2] * 1e6);
  src.reset();
  dst.reset();

  char date[16];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::string dev = prop.name;
  std::string file_dev = dev;
  for (auto& c : file_dev)
    if (c == ' ') c = '_';
  const char* commit = std::getenv("SPARSENM_COMMIT");
  const std::string path = opt.out_dir + "/" + file_dev + "-train-" + date + ".jsonl";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::printf("train bench: cannot write %s\n", path.c_str());
    return 1;
  }
  std::printf("device %s, copy bandwidth %.0f GB/s (1 GiB D2D, read+write)\n", dev.c_str(), copy);
  Context ctx{opt, dev, copy, commit ? commit : "unknown", date, nullptr};
  ctx.emit = [&](Row r) {
    r.device = ctx.device;
    r.copy_GBps = ctx.copy_GBps;
    r.commit = ctx.commit;
    r.date = ctx.date;
    std::fprintf(f,
                 "{\"suite\": \"%s\", \"op\": \"%s\", \"format\": \"%s\", \"pattern\": \"%s\", \"dtype\": \"%s\", \"m\": %lld, "
                 "\"n\": %lld, \"k\": %lld, \"impl\": \"%s\", \"ms_median\": %.6f, \"ms_min\": %.6f, \"reps\": %d, "
                 "\"rel_err\": %g, \"bytes\": %.0f, \"flops\": 0, \"device\": \"%s\", \"copy_GBps\": %.1f, \"commit\": \"%s\", "
                 "\"date\": \"%s\", \"note\": \"%s\"}\n",
                 r.suite.c_str(), r.op.c_str(), r.format.c_str(), r.pattern.c_str(), r.dtype.c_str(), (long long)r.m,
                 (long long)r.n, (long long)r.k, r.impl.c_str(), r.ms_median, r.ms_min, r.reps, r.rel_err, r.bytes,
                 json_escape(r.device).c_str(), r.copy_GBps, r.commit.c_str(), r.date.c_str(), json_escape(r.note).c_str());
    std::fflush(f);
    std::printf("%-22s %-5s m=%-6lld n=%-7lld k=%-6lld %9.4f ms  %s\n", r.op.c_str(), r.dtype.c_str(), (long long)r.m,
                (long long)r.n, (long long)r.k, r.ms_median, r.note.c_str());
  };
  Suite s = train_suite();
  s.run(ctx);
  std::fclose(f);
  std::printf("wrote %s\n", path.c_str());
  return 0;
}
