// sparsenm — EW SpMM "async" instances (fp32, 8 warps, X double-buffered by cp.async): the
// specialised patterns (compile-time N, M), the same set as spmm_inst_f32_spec.cu.
#include "cuda/ew/spmm_async_kernel.cuh"
SPARSENM_EW_SPMM_ASYNC_INSTANCE(2, 2, 4, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(3, 4, 8, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(3, 2, 8, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(3, 1, 8, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(4, 2, 16, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(4, 1, 16, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 8, 32, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 16, 32, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 4, 32, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 3, 32, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
