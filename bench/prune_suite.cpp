// sparsenm bench — suite "prune": CPU pruning, prune() from a dense weight straight to the
// condensed format (no dense temporary), on the host.
//
// Method: std::chrono::steady_clock around each prune() call (output allocation included, its
// release excluded); one warm-up call, then `reps` timed calls (at most 5, since a call takes
// about a second; at most 3 when the warm-up took over 3 s), median and minimum reported. The
// weight is random (random_matrix, the run's seed), fresh per case. bytes = dense input read +
// condensed output written (values + indices + column sets). The output of the last call is
// validated (CondensedMatrix::validate) and one extra untimed call with a PruneReport records
// the retained L2 / L1 in the row's note.
//
// Defaults: (n, k) = (28672, 8192) fp16; patterns 2:8 (the yardstick: <= 2 s on a 2-core
// host), 2:4, 1:8, 2:16, 2:8/vw16, 2:8/bw16x16, 128:2:8, 64:2:16. --quick: 2:8 and 2:4 only.
// The options' patterns / dtypes / shapes override the defaults.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <omp.h>

#include "bench.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/prune.hpp"

namespace sparsenm::bench {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void run_prune_suite(Context& ctx) {
  const Options& o = ctx.options;
  std::vector<std::string> patterns = o.patterns;
  if (patterns.empty()) {
    patterns = {"2:8", "2:4"};
    if (!o.quick)
      for (const char* p : {"1:8", "2:16", "2:8/vw16", "2:8/bw16x16", "128:2:8", "64:2:16"}) patterns.push_back(p);
  }
  std::vector<DType> dtypes;
  for (const std::string& d : o.dtypes) dtypes.push_back(parse_dtype(d, "dtypes"));
  if (dtypes.empty()) dtypes = {DType::f16};
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = o.shapes;
  if (shapes.empty()) shapes = {{28672, 8192}};
  const int reps = std::clamp(o.reps, 1, 5);
  const int warmup = std::min(o.warmup, 1);

  for (const auto& [n, k] : shapes)
    for (DType dtype : dtypes) {
      const DenseMatrix w = random_matrix(dtype, n, k, o.seed);
      for (const std::string& text : patterns) {
        const Pattern p = Pattern::parse(text, "patterns");
        const FormatLayout layout = FormatLayout::of(p, n, k);
        int case_reps = reps;
        for (int i = 0; i < warmup; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          (void)prune(w.view(), p);
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (s > 3.0) case_reps = std::min(case_reps, 3);  // slow patterns (V:2:16): fewer runs
        }
        std::vector<double> ms;
        CondensedMatrix out;
        for (int i = 0; i < case_reps; ++i) {
          out = CondensedMatrix{};  // release the previous result outside the timed region
          const auto t0 = std::chrono::steady_clock::now();
          out = prune(w.view(), p);
          const auto t1 = std::chrono::steady_clock::now();
          ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        out.validate();
        PruneReport report;
        (void)prune(w.view(), p, &report);

        Row row;
        row.suite = "prune";
        row.op = "prune";
        row.format = std::string(to_string(p.kind));
        row.pattern = p.str();
        row.dtype = std::string(to_string(dtype));
        row.m = 0;
        row.n = n;
        row.k = k;
        row.impl = "sparsenm:prune_cpu";
        row.ms_median = median(ms);
        row.ms_min = *std::min_element(ms.begin(), ms.end());
        row.reps = case_reps;
        row.bytes = double(w.size_bytes() + layout.value_bytes(dtype) + layout.index_bytes() + layout.colloc_bytes());
        char note[160];
        std::snprintf(note, sizeof note, "host CPU, %d OpenMP threads; output validated; retained L2 %.4f, L1 %.4f",
                      omp_get_max_threads(), report.retained_l2, report.retained_l1);
        row.note = note;
        ctx.emit(std::move(row));
      }
    }
}

}  // namespace

Suite prune_suite() {
  return Suite{"prune", "CPU pruning: prune() dense -> condensed (28672x8192 fp16, EW/VW/BW/V:N:M)", false,
               run_prune_suite};
}

}  // namespace sparsenm::bench
