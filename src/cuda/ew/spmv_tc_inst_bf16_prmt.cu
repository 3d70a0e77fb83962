// sparsenm — EW tensor-core SpMV instances: bf16, the PRMT-table decode (kDecPrmt).
#include "cuda/ew/spmv_tc_launch.cuh"
SPARSENM_EW_SPMV_TC_INSTANCE_DEC(__nv_bfloat16, 2, 8, ::sparsenm::cuda::ew::kDecPrmt)
SPARSENM_EW_SPMV_TC_INSTANCE_DEC(__nv_bfloat16, 1, 8, ::sparsenm::cuda::ew::kDecPrmt)
SPARSENM_EW_SPMV_TC_INSTANCE_DEC(__nv_bfloat16, 2, 16, ::sparsenm::cuda::ew::kDecPrmt)
SPARSENM_EW_SPMV_TC_INSTANCE_DEC(__nv_bfloat16, 1, 16, ::sparsenm::cuda::ew::kDecPrmt)
