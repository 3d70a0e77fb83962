// sparsenm bench — the harness interface (method and row format: shared design BENCH.md).
// Suites register themselves in bench/registry.cpp's list; the CLI calls bench::run.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sparsenm::bench {

struct Options {
  std::vector<std::string> suites;     ///< empty = all
  bool quick = false;                  ///< the --quick subset (fits one device call)
  std::string out_dir = "bench/results";
  std::vector<std::string> patterns;   ///< override the suite's default patterns
  std::vector<std::string> dtypes;     ///< override: f32, f16, bf16
  std::vector<std::int64_t> ms;        ///< override the m values
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;  ///< override (n, k)
  int warmup = 20;
  int reps = 100;
  std::uint64_t seed = 1;
};

/// One JSONL row (BENCH.md). Fields not known are left at their defaults and omitted.
struct Row {
  std::string suite, op, format, pattern, dtype;
  std::int64_t m = 0, n = 0, k = 0;
  std::string impl;  ///< "sparsenm:<kernel>" or "cublas", "cusparse_csr", "cusparselt", ...
  double ms_median = 0, ms_min = 0;
  int reps = 0;
  double rel_err = -1;  ///< < 0: not checked (never for a timed GPU implementation)
  double bytes = 0, flops = 0;
  std::string device;
  double copy_GBps = 0;
  std::string commit, date;
  std::string note;  ///< free text (e.g. "m padded to 8", "L2 rotated over 6 copies")
};

/// Context every suite receives: options, the device facts measured once per run, the sink.
struct Context {
  const Options& options;
  std::string device;     ///< e.g. "NVIDIA H200" or "cpu"
  double copy_GBps = 0;   ///< device-to-device copy bandwidth measured in this run (0 on CPU)
  std::string commit, date;
  std::function<void(Row)> emit;  ///< fills device/copy/commit/date, writes JSONL, keeps for the table
};

struct Suite {
  std::string name;
  std::string description;
  bool needs_gpu = false;
  std::function<void(Context&)> run;
};

/// All suites compiled into this build.
const std::vector<Suite>& suites();
/// Runs the selected suites, writes bench/results/<device>-<suite>-<date>.jsonl, prints the
/// comparison table. Returns a process exit code.
int run(const Options& options);

}  // namespace sparsenm::bench
