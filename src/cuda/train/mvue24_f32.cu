// sparsenm — instantiation: MVUE 2:4 + compression for f32 (see mvue24.cuh).
#include "cuda/train/mvue24.cuh"

namespace sparsenm::train::detail {
template <> void launch_mvue24<float>(const Mvue24Args& a, cudaStream_t s) { launch_mvue24_impl<float>(a, s); }
}  // namespace sparsenm::train::detail
