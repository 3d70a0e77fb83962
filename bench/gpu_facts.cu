// sparsenm bench — device facts: name, clocks, in-run copy bandwidth.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/common.cuh"
#include "gpu_facts.hpp"

namespace sparsenm::bench {

bool gpu_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::string gpu_name() {
  if (!gpu_present()) return "cpu";
  cudaDeviceProp p{};
  SPARSENM_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  return p.name;
}

std::string gpu_clocks() {
  if (!gpu_present()) return "";
  int sm = 0, mem = 0;
  cudaDeviceGetAttribute(&sm, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem, cudaDevAttrMemoryClockRate, 0);
  return "max SM clock " + std::to_string(sm / 1000) + " MHz, memory clock " + std::to_string(mem / 1000) + " MHz";
}

double measure_copy_GBps() {
  if (!gpu_present()) return 0;
  const std::size_t bytes = std::size_t(1) << 30;
  cuda::DeviceBuffer a(bytes), b(bytes);
  SPARSENM_CUDA_CHECK(cudaMemset(a.get(), 1, bytes));
  SPARSENM_CUDA_CHECK(cudaMemset(b.get(), 2, bytes));
  cudaEvent_t e0, e1;
  SPARSENM_CUDA_CHECK(cudaEventCreate(&e0));
  SPARSENM_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    SPARSENM_CUDA_CHECK(cudaEventRecord(e0));
    SPARSENM_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
    SPARSENM_CUDA_CHECK(cudaEventRecord(e1));
    SPARSENM_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 3) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return 2.0 * double(bytes) / (double(ms[ms.size() / 2]) * 1e-3) / 1e9;
}

}  // namespace sparsenm::bench
