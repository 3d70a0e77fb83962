// sparsenm bench — the suites compiled into this build. One line per suite.
#include "bench.hpp"

namespace sparsenm::bench {

Suite prune_suite();  // bench/prune_suite.cpp (CPU)

#if defined(SPARSENM_WITH_CUDA)
Suite spmv_suite();  // bench/ew_suites.cu
Suite spmm_suite();  // bench/ew_suites.cu
Suite ew_prune_suite();  // bench/ew_suites.cu
Suite sptc_suite();  // bench/sptc_suite.cu
Suite train_suite();  // bench/train_suite.cu
Suite fst_suite();    // bench/fst_suite.cu
Suite vnm_small_suite();  // bench/vnm_small_suite.cu
#endif

const std::vector<Suite>& suites() {
  static const std::vector<Suite> all = [] {
    std::vector<Suite> v;
    v.push_back(prune_suite());
#if !defined(SPARSENM_WITH_CUDA)
    // A CPU-only build lists the GPU suites so that `sparsenm bench` names them as skipped
    // (needs_gpu: the harness never runs them without a device).
    for (const char* name : {"spmv", "spmm", "ew_prune", "sptc", "train", "vnm_small"})
      v.push_back({name, "GPU suite (this build has no CUDA)", true, [](Context&) {}});
#else
    v.push_back(spmv_suite());
    v.push_back(spmm_suite());
    v.push_back(ew_prune_suite());
    v.push_back(sptc_suite());
    v.push_back(train_suite());
    v.push_back(fst_suite());
    v.push_back(vnm_small_suite());
#endif
    return v;
  }();
  return all;
}

}  // namespace sparsenm::bench
