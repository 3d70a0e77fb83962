// sparsenm — the CUDA candidates of scripts/sptc-mini-build: dense cuBLAS + the sparse tensor-core
// family only (the full library's src/cuda/register.cpp also registers the EW and vnm_small
// families; for V:2:M and 2:4 weights at m > 32 neither supports the problem, so a plan's race
// there is the same). Not part of the CMake build (bench/standalone is not globbed).
#include "plan/registry.hpp"

namespace sparsenm::detail {

void register_sptc_kernels(KernelRegistry& r);
void register_dense_kernels(KernelRegistry& r);

void register_cuda_kernels(KernelRegistry& r) {
  register_dense_kernels(r);
  register_sptc_kernels(r);
}

}  // namespace sparsenm::detail
