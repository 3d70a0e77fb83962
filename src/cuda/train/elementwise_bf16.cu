// sparsenm — instantiation: masked decay and GEGLU / SwiGLU for bf16 (see elementwise.cuh).
#include "cuda/train/elementwise.cuh"

namespace sparsenm::train::detail {
template <> void launch_masked_decay<__nv_bfloat16>(const DecayArgs& a, cudaStream_t s) { launch_masked_decay_impl<__nv_bfloat16>(a, s); }
template <> void launch_glu<__nv_bfloat16>(const GluArgs& a, bool backward, cudaStream_t s) { launch_glu_impl<__nv_bfloat16>(a, backward, s); }
}  // namespace sparsenm::train::detail
