// sparsenm bench — the suites compiled into this build. One line per suite.
#include "bench.hpp"

namespace sparsenm::bench {

Suite prune_suite();  // bench/prune_suite.cpp (CPU)

#if defined(SPARSENM_WITH_CUDA)
Suite spmv_suite();  // bench/ew_suites.cu
Suite spmm_suite();  // bench/ew_suites.cu
Suite sptc_suite();  // bench/sptc_suite.cu
Suite train_suite();  // bench/train_suite.cu
#endif

const std::vector<Suite>& suites() {
  static const std::vector<Suite> all = [] {
    std::vector<Suite> v;
    v.push_back(prune_suite());
#if defined(SPARSENM_WITH_CUDA)
    v.push_back(spmv_suite());
    v.push_back(spmm_suite());
    v.push_back(sptc_suite());
    v.push_back(train_suite());
#endif
    return v;
  }();
  return all;
}

}  // namespace sparsenm::bench
