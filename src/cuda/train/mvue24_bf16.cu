// sparsenm — instantiation: MVUE 2:4 + compression for bf16 (see mvue24.cuh).
#include "cuda/train/mvue24.cuh"

namespace sparsenm::train::detail {
template <> void launch_mvue24<__nv_bfloat16>(const Mvue24Args& a, cudaStream_t s) { launch_mvue24_impl<__nv_bfloat16>(a, s); }
}  // namespace sparsenm::train::detail
