// sparsenm — EW SpMM "async16" instances (fp32, 16 warps, X double-buffered by cp.async): the
// specialised patterns (compile-time N, M), the same set as spmm_inst_f32_spec.cu.
#include "cuda/ew/spmm_async_kernel.cuh"
SPARSENM_EW_SPMM_ASYNC_INSTANCE(2, 2, 4, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(3, 4, 8, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(3, 2, 8, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(3, 1, 8, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(4, 2, 16, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(4, 1, 16, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 8, 32, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 16, 32, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 4, 32, 16, ::sparsenm::cuda::ew::kSpmmLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 3, 32, 16, ::sparsenm::cuda::ew::kSpmmLd)
