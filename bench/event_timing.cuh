// sparsenm bench — back-to-back CUDA-event timing shared by the "train" and "fst" suites: after
// the warm-up calls, one event before each of `reps` calls and one after the last (per-call time
// = gap between consecutive events; no synchronisation between calls); median and min in ms.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include "cuda/common.cuh"

namespace sparsenm::bench {

struct Timing {
  double median = 0, min = 0;
};

/// Times call(slot) with slot = call index % slots (operands rotate over `slots` copies).
inline Timing time_calls(const std::function<void(int)>& call, int slots, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) call(i % slots);
  std::vector<cudaEvent_t> ev(std::size_t(reps) + 1);
  for (auto& e : ev) SPARSENM_CUDA_CHECK(cudaEventCreate(&e));
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < reps; ++i) {
    SPARSENM_CUDA_CHECK(cudaEventRecord(ev[std::size_t(i)]));
    call(i % slots);
  }
  SPARSENM_CUDA_CHECK(cudaEventRecord(ev[std::size_t(reps)]));
  SPARSENM_CUDA_CHECK(cudaEventSynchronize(ev[std::size_t(reps)]));
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  std::vector<double> t(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[std::size_t(i)], ev[std::size_t(i) + 1]));
    t[std::size_t(i)] = ms;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

/// Times call() (no rotation).
inline Timing time_calls(const std::function<void()>& call, int warmup, int reps) {
  return time_calls([&](int) { call(); }, 1, warmup, reps);
}

}  // namespace sparsenm::bench
