// sparsenm — instantiation: masked decay and GEGLU / SwiGLU for f16 (see elementwise.cuh).
#include "cuda/train/elementwise.cuh"

namespace sparsenm::train::detail {
template <> void launch_masked_decay<__half>(const DecayArgs& a, cudaStream_t s) { launch_masked_decay_impl<__half>(a, s); }
template <> void launch_glu<__half>(const GluArgs& a, bool backward, cudaStream_t s) { launch_glu_impl<__half>(a, backward, s); }
}  // namespace sparsenm::train::detail
