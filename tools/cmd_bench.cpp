// sparsenm bench [--suite S ...] [--quick] [--out DIR] [--patterns ...] [--dtypes ...] [--m ...]
//                [--shapes NxK,...] [--warmup N] [--reps N] [--seed S] [--list]
// Parses options into bench::Options and hands them to the harness (bench/bench.hpp, BENCH.md).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>

#include "bench.hpp"
#include "cli.hpp"
#include "sparsenm/dtype.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm::cli {

namespace {

struct BenchCli {
  bench::Options options;
  std::vector<std::string> shapes;
  bool list = false;
};

int run_bench(BenchCli& b) {
  if (b.list) {
    Table t({"suite", "gpu", "description"});
    for (const auto& s : bench::suites()) t.add({s.name, s.needs_gpu ? "yes" : "no", s.description});
    fmt::print("{}", t.str());
    return 0;
  }
  bench::Options& o = b.options;
  for (const auto& name : o.suites) {
    bool found = false;
    for (const auto& s : bench::suites()) found = found || s.name == name;
    if (!found) throw UsageError("--suite: unknown suite '" + name + "' (see 'sparsenm bench --list')");
  }
  for (const auto& p : o.patterns) (void)parse_pattern_option(p, "--patterns");
  for (const auto& d : o.dtypes) {
    DType t;
    try {
      t = parse_dtype(d, "--dtypes");
    } catch (const InvalidArgument& e) {
      throw UsageError(e.what());
    }
    if (!is_weight_dtype(t)) throw UsageError("--dtypes: must be f32, f16 or bf16 (got '" + d + "')");
  }
  for (auto m : o.ms)
    if (m < 1) throw UsageError("--m: every m must be >= 1 (got " + std::to_string(m) + ")");
  for (const auto& s : b.shapes) o.shapes.push_back(parse_shape_option(s, "--shapes"));
  if (o.warmup < 0) throw UsageError("--warmup: must be >= 0");
  if (o.reps < 1) throw UsageError("--reps: must be >= 1");
  return bench::run(o);
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto b = std::make_shared<BenchCli>();
  bench::Options& o = b->options;
  CLI::App* sub = app.add_subcommand("bench", "Run the benchmark suites (method and output: BENCH.md)");
  sub->add_option("--suite", o.suites, "suites to run (repeatable or comma list; default: all)")->delimiter(',');
  sub->add_flag("--quick", o.quick, "the quick subset (fits one device call)");
  sub->add_option("--out", o.out_dir, "directory for the JSONL results")->capture_default_str();
  sub->add_option("--patterns", o.patterns, "override the patterns (comma list)")->delimiter(',');
  sub->add_option("--dtypes", o.dtypes, "override the dtypes: f32, f16, bf16 (comma list)")->delimiter(',');
  sub->add_option("--m", o.ms, "override the m values (comma list)")->delimiter(',');
  sub->add_option("--shapes", b->shapes, "override the shapes, NxK (comma list)")->delimiter(',');
  sub->add_option("--warmup", o.warmup, "warm-up runs per case")->capture_default_str();
  sub->add_option("--reps", o.reps, "timed runs per case")->capture_default_str();
  sub->add_option("--seed", o.seed, "random seed")->capture_default_str();
  sub->add_flag("--list", b->list, "list the suites and exit");
  return {sub, [b] { return run_bench(*b); }};
}

}  // namespace sparsenm::cli
