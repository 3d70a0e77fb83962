// sparsenm — instantiation: transposable 2:4 mask search / apply for f16 (see mask24.cuh).
#include "cuda/train/mask24.cuh"

namespace sparsenm::train::detail {
template <> void launch_mask24<__half>(const Mask24Args& a, bool search, cudaStream_t s) {
  launch_mask24_impl<__half>(a, search, s);
}
}  // namespace sparsenm::train::detail
