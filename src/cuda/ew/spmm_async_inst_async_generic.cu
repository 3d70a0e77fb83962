// sparsenm — EW SpMM "async" generic instances (fp32, 8 warps, runtime N, M): index bits 1..8.
#include "cuda/ew/spmm_async_kernel.cuh"
SPARSENM_EW_SPMM_ASYNC_INSTANCE(1, 0, 0, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(2, 0, 0, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(3, 0, 0, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(4, 0, 0, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(5, 0, 0, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(6, 0, 0, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(7, 0, 0, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
SPARSENM_EW_SPMM_ASYNC_INSTANCE(8, 0, 0, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd)
