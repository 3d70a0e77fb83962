// sparsenm demo — prune LLaMA-7B-shaped layers to several patterns, plan, multiply, check, time.
//
// Layers (random weights, fixed seed): q/k/v/o_proj 4096x4096, gate/up_proj 11008x4096,
// down_proj 4096x11008 (PyTorch [out, in]). For every layer x pattern x m:
//   prune (magnitude) -> CondensedMatrix -> Plan::create (backend chosen by --backend) ->
//   y = x * W^T with Plan::run -> check against an f64 dense product of expand(pruned W).
// Check: relative Frobenius error over the checked output rows (all rows on CUDA; 256 sampled
// rows on the CPU backend, where the f64 reference would dominate the run time) below a
// tolerance set by the output dtype, and check_pattern(expand(W)) must hold.
// Time: median of --reps runs after --warmup runs; std::chrono around Plan::run on the CPU
// backend (run() is synchronous there), CUDA events around Plan::run on a stream on the CUDA one.
// On the CPU backend, layers of equal shape run once ("q/k/v/o_proj") to stay well under a
// minute on a 2-core machine; --layers all runs every layer. Exit code 1 if any check fails.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "cli.hpp"
#include "device.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/prune.hpp"
#include "sparsenm/reference.hpp"

namespace sparsenm::cli {

namespace {

struct DemoOptions {
  std::vector<std::string> patterns = {"2:4", "2:8", "1:8", "2:16", "128:2:8", "2:8/vw16"};
  std::vector<std::int64_t> ms = {1, 8};
  std::string backend = "auto";
  std::string dtype = "f16";
  std::string layers = "auto";
  std::vector<std::string> shapes;
  int warmup = -1, reps = -1;
  std::int64_t check_rows = -1;
  std::uint64_t seed = 1;
};

struct Layer {
  std::string name;
  std::int64_t n, k;
};

double tolerance(DType y) {
  switch (y) {
    case DType::f32: return 1e-4;
    case DType::f16: return 5e-3;   // output rounding alone is ~3e-4 (Frobenius)
    case DType::bf16: return 2e-2;  // output rounding alone is ~2.3e-3
    default: return 0;
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// Output rows to check: all when count == 0 or count >= n; else `count` rows, one drawn at random
/// from each of `count` equal strides, always including the last row (a tail).
std::vector<std::int64_t> sample_rows(std::int64_t n, std::int64_t count, std::uint64_t seed) {
  std::vector<std::int64_t> rows;
  if (count == 0 || count >= n) {
    for (std::int64_t r = 0; r < n; ++r) rows.push_back(r);
    return rows;
  }
  std::mt19937_64 rng(seed);
  for (std::int64_t j = 0; j < count; ++j) {
    const std::int64_t lo = j * n / count, hi = (j + 1) * n / count;
    rows.push_back(lo + std::int64_t(rng() % std::uint64_t(hi - lo)));
  }
  rows.back() = n - 1;
  return rows;
}

/// Relative Frobenius error of y (m x n) against the f64 product x * dense^T on `rows`.
double check_rows_error(const DenseMatrix& x, const DenseMatrix& dense, const DenseMatrix& y,
                        const std::vector<std::int64_t>& rows) {
  const std::int64_t m = x.rows(), k = x.cols(), s = std::int64_t(rows.size());
  std::vector<double> xd(std::size_t(m * k));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t c = 0; c < k; ++c) xd[std::size_t(i * k + c)] = x.at(i, c);
  std::vector<double> ref(std::size_t(m * s));
  DenseMatrix got(DType::f32, m, s);
#pragma omp parallel for schedule(static)
  for (std::int64_t j = 0; j < s; ++j) {
    std::vector<double> w(static_cast<std::size_t>(k));
    for (std::int64_t c = 0; c < k; ++c) w[std::size_t(c)] = dense.at(rows[std::size_t(j)], c);
    for (std::int64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (std::int64_t c = 0; c < k; ++c) acc += xd[std::size_t(i * k + c)] * w[std::size_t(c)];
      ref[std::size_t(i * s + j)] = acc;
    }
  }
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < s; ++j) got.set(i, j, y.at(i, rows[std::size_t(j)]));
  return relative_error(got.view(), ref);
}

std::string fmt_err(double e) { return std::isnan(e) ? "NaN" : fmt::format("{:.2e}", e); }

int run_demo(const DemoOptions& o) {
  // ---- options ----
  std::vector<Pattern> patterns;
  for (const auto& p : o.patterns) patterns.push_back(parse_pattern_option(p, "--patterns"));
  if (patterns.empty()) throw UsageError("--patterns: give at least one pattern");
  if (o.ms.empty()) throw UsageError("--m: give at least one m");
  for (auto m : o.ms)
    if (m < 1) throw UsageError("--m: every m must be >= 1 (got " + std::to_string(m) + ")");
  DType dtype;
  try {
    dtype = parse_dtype(o.dtype, "--dtype");
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
  if (!is_weight_dtype(dtype)) throw UsageError("--dtype: must be f32, f16 or bf16 (got '" + o.dtype + "')");
  Backend backend;
  if (o.backend == "auto") backend = cuda_available() ? Backend::cuda : Backend::cpu;
  else if (o.backend == "cpu") backend = Backend::cpu;
  else if (o.backend == "cuda") backend = Backend::cuda;
  else throw UsageError("--backend: must be auto, cpu or cuda (got '" + o.backend + "')");
  if (backend == Backend::cuda && !cuda_available())
    throw Unsupported("--backend cuda: no usable CUDA device in this build/machine");
  const bool on_cpu = backend == Backend::cpu;
  if (o.layers != "auto" && o.layers != "all" && o.layers != "unique")
    throw UsageError("--layers: must be auto, all or unique (got '" + o.layers + "')");
  const bool unique = o.layers == "unique" || (o.layers == "auto" && on_cpu);
  const int warmup = o.warmup >= 0 ? o.warmup : (on_cpu ? 1 : 10);
  const int reps = o.reps >= 1 ? o.reps : (on_cpu ? 3 : 50);
  if (o.reps == 0) throw UsageError("--reps: must be >= 1");
  const std::int64_t check_rows = o.check_rows >= 0 ? o.check_rows : (on_cpu ? 256 : 0);

  std::vector<Layer> layers;
  if (!o.shapes.empty()) {
    for (const auto& s : o.shapes) {
      auto [n, k] = parse_shape_option(s, "--shapes");
      layers.push_back({s, n, k});
    }
  } else if (unique) {
    layers = {{"q/k/v/o_proj", 4096, 4096}, {"gate/up_proj", 11008, 4096}, {"down_proj", 4096, 11008}};
  } else {
    layers = {{"q_proj", 4096, 4096},     {"k_proj", 4096, 4096},  {"v_proj", 4096, 4096},
              {"o_proj", 4096, 4096},     {"gate_proj", 11008, 4096}, {"up_proj", 11008, 4096},
              {"down_proj", 4096, 11008}};
  }

  const auto t_start = std::chrono::steady_clock::now();
  fmt::print("sparsenm demo: {} layer(s) x {} pattern(s) x m in {{{}}}, dtype {}, backend {}\n", layers.size(),
             patterns.size(), fmt::join(o.ms, ","), to_string(dtype), to_string(backend));
  Table table({"layer", "n x k", "pattern", "m", "dense", "condensed", "ratio", "kernel", "ms", "rel.err", "check"},
              {false, false, false, true, true, true, true, false, true, true, false});
  const double tol = tolerance(dtype);
  int checks = 0, failures = 0;
  Progress progress("running", layers.size() * patterns.size());
  std::uint64_t seed = o.seed;
  // Where the time goes (printed at the end): weights + pruning, plans + runs, reference checks.
  double t_prune = 0, t_run = 0, t_check = 0;
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto secs_since = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(now() - t).count();
  };
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const Layer& L = layers[li];
    auto t0 = now();
    const DenseMatrix w = random_matrix(dtype, L.n, L.k, seed * 7919 + li);
    t_prune += secs_since(t0);
    for (const Pattern& p : patterns) {
      progress.step(L.name + " " + p.str());
      t0 = now();
      PruneReport rep;
      const CondensedMatrix c = prune(w.view(), p, &rep);
      const Footprint fp = footprint(c.layout, dtype);
      t_prune += secs_since(t0);
      t0 = now();
      const DenseMatrix dense = expand(c);
      const bool pattern_ok = check_pattern(dense.view(), p).ok;
      const auto rows = sample_rows(L.n, check_rows, seed + li);
      t_check += secs_since(t0);
      for (std::int64_t m : o.ms) {
        t0 = now();
        const DenseMatrix x = random_matrix(dtype, m, L.k, seed * 104729 + li * 131 + std::uint64_t(m));
        DenseMatrix y(dtype, m, L.n);
        MatmulDesc desc;
        desc.m = m;
        desc.x_dtype = dtype;
        desc.y_dtype = dtype;
        desc.backend = backend;
        const Plan plan = Plan::create(c, desc);
        std::vector<double> times;
        if (on_cpu) {
          std::memset(y.data(), 0xff, y.size_bytes());  // poison: NaN in every float type
          for (int i = 0; i < warmup; ++i) plan.run(x.data(), y.data(), nullptr);
          for (int i = 0; i < reps; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            plan.run(x.data(), y.data(), nullptr);
            const auto t1 = std::chrono::steady_clock::now();
            times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          }
        } else {
          device::Buffer dx(x.size_bytes()), dy(y.size_bytes());
          dx.upload(x.data(), x.size_bytes());
          dy.poison();
          times = device::time_runs([&](void* stream) { plan.run(dx.get(), dy.get(), stream); }, warmup, reps);
          dy.download(y.data(), y.size_bytes());
        }
        t_run += secs_since(t0);
        t0 = now();
        const double err = check_rows_error(x, dense, y, rows);
        t_check += secs_since(t0);
        const bool ok = pattern_ok && std::isfinite(err) && err <= tol;
        ++checks;
        if (!ok) ++failures;
        table.add({L.name, fmt::format("{}x{}", L.n, L.k), p.str(), std::to_string(m), human_bytes(double(fp.dense_bytes)),
                   human_bytes(double(fp.total())), fmt::format("{:.3f}", fp.ratio()), plan.kernel(),
                   fmt::format("{:.3f}", median(times)), fmt_err(err),
                   ok ? "ok" : (pattern_ok ? "FAIL" : "FAIL (pattern)")});
      }
    }
  }
  progress.done();
  fmt::print("{}", table.str());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  fmt::print("backend {}: {}\n", to_string(backend),
             on_cpu ? "std::chrono around Plan::run (synchronous on the CPU)" : "CUDA events around Plan::run on a stream");
  fmt::print("time: median of {} runs after {} warm-up run(s)\n", reps, warmup);
  if (unique && o.shapes.empty())
    fmt::print("layers of equal shape run once (q/k/v/o_proj, gate/up_proj); --layers all runs each\n");
  fmt::print("check: rel. Frobenius error of y vs f64 x*expand(W)^T on {} (tolerance {:.0e} for {})\n",
             check_rows == 0 ? std::string("all output rows")
                             : fmt::format("{} sampled output rows per layer (--check-rows 0: all)", check_rows),
             tol, to_string(dtype));
  fmt::print("{} of {} checks passed in {:.1f} s (weights + pruning {:.1f} s, plans + runs {:.1f} s, checks {:.1f} s)\n",
             checks - failures, checks, secs, t_prune, t_run, t_check);
  if (failures) {
    fmt::print(stderr, "sparsenm: error: demo: {} of {} checks failed\n", failures, checks);
    return 1;
  }
  return 0;
}

}  // namespace

Command add_demo(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* sub = app.add_subcommand(
      "demo", "Prune LLaMA-7B-shaped layers to several patterns, multiply with the best backend, check and time");
  sub->add_option("--patterns", o->patterns, "patterns (comma list)")->delimiter(',')->capture_default_str();
  sub->add_option("--m", o->ms, "rows of X (tokens), comma list")->delimiter(',')->capture_default_str();
  sub->add_option("--backend", o->backend, "auto, cpu or cuda")->capture_default_str();
  sub->add_option("--dtype", o->dtype, "weight/activation dtype: f16, bf16, f32")->capture_default_str();
  sub->add_option("--layers", o->layers, "auto (unique on CPU, all on CUDA), unique or all")->capture_default_str();
  sub->add_option("--shapes", o->shapes, "replace the layers by these NxK shapes (comma list)")->delimiter(',');
  sub->add_option("--warmup", o->warmup, "warm-up runs (default: 1 on CPU, 10 on CUDA)");
  sub->add_option("--reps", o->reps, "timed runs (default: 3 on CPU, 50 on CUDA)");
  sub->add_option("--check-rows", o->check_rows, "output rows to check, 0 = all (default: 256 on CPU, all on CUDA)");
  sub->add_option("--seed", o->seed, "random seed")->capture_default_str();
  return {sub, [o] { return run_demo(*o); }};
}

}  // namespace sparsenm::cli
