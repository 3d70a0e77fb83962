// sparsenm — instantiation: masked decay and GEGLU / SwiGLU for f32 (see elementwise.cuh).
#include "cuda/train/elementwise.cuh"

namespace sparsenm::train::detail {
template <> void launch_masked_decay<float>(const DecayArgs& a, cudaStream_t s) { launch_masked_decay_impl<float>(a, s); }
template <> void launch_glu<float>(const GluArgs& a, bool backward, cudaStream_t s) { launch_glu_impl<float>(a, backward, s); }
}  // namespace sparsenm::train::detail
