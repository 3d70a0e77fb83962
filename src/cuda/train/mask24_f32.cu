// sparsenm — instantiation: transposable 2:4 mask search / apply for f32 (see mask24.cuh).
#include "cuda/train/mask24.cuh"

namespace sparsenm::train::detail {
template <> void launch_mask24<float>(const Mask24Args& a, bool search, cudaStream_t s) {
  launch_mask24_impl<float>(a, search, s);
}
}  // namespace sparsenm::train::detail
