// sparsenm — standalone driver of the "sptc" bench suite (for a device run before the CLI
// harness lands): sptc_bench OUT.jsonl [--quick] [--reps N] [--warmup N] [--shape n,k]... [--m m]...
// Prints one line per row and writes JSON Lines (BENCH.md fields).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench.hpp"

namespace sparsenm::bench {
Suite sptc_suite();
}

int main(int argc, char** argv) {
  using namespace sparsenm::bench;
  if (argc < 2) {
    std::fprintf(stderr, "usage: sptc_bench OUT.jsonl [--quick] [--reps N] [--warmup N] [--shape n,k] [--m m] [--pattern 2:4|V:2:M]\n");
    return 2;
  }
  Options o;
  o.warmup = 10;
  o.reps = 50;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") o.quick = true;
    else if (a == "--reps" && i + 1 < argc) o.reps = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) o.warmup = std::atoi(argv[++i]);
    else if (a == "--m" && i + 1 < argc) o.ms.push_back(std::atoll(argv[++i]));
    else if (a == "--pattern" && i + 1 < argc) o.patterns.push_back(argv[++i]);
    else if (a == "--shape" && i + 1 < argc) {
      long long n = 0, k = 0;
      std::sscanf(argv[++i], "%lld,%lld", &n, &k);
      o.shapes.emplace_back(n, k);
    }
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  FILE* f = std::fopen(argv[1], "w");
  if (!f) return 1;
  const char* commit = std::getenv("SPARSENM_COMMIT");
  Context ctx{o, prop.name, 0, commit ? commit : "unknown", "", {}};
  ctx.emit = [&](Row r) {
    std::fprintf(f,
                 "{\"suite\": \"%s\", \"op\": \"%s\", \"format\": \"%s\", \"pattern\": \"%s\", \"dtype\": \"%s\", "
                 "\"m\": %lld, \"n\": %lld, \"k\": %lld, \"impl\": \"%s\", \"ms_median\": %.5f, \"ms_min\": %.5f, "
                 "\"reps\": %d, \"rel_err\": %.3g, \"bytes\": %.0f, \"flops\": %.0f, \"device\": \"%s\", "
                 "\"commit\": \"%s\", \"note\": \"%s\"}\n",
                 r.suite.c_str(), r.op.c_str(), r.format.c_str(), r.pattern.c_str(), r.dtype.c_str(), (long long)r.m,
                 (long long)r.n, (long long)r.k, r.impl.c_str(), r.ms_median, r.ms_min, r.reps, r.rel_err, r.bytes,
                 r.flops, ctx.device.c_str(), ctx.commit.c_str(), r.note.c_str());
    std::fflush(f);
    std::printf("%6lld x %6lld m=%5lld  %-34s %8.4f ms  %7.1f TF/s  err %.2e\n", (long long)r.n, (long long)r.k,
                (long long)r.m, r.impl.c_str(), r.ms_median, r.flops / r.ms_median / 1e9, r.rel_err);
    std::fflush(stdout);
  };
  try {
    sptc_suite().run(ctx);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sptc_bench: %s\n", e.what());
    return 1;
  }
  std::fclose(f);
  return 0;
}
