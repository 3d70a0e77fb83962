// sparsenm — instantiation: transposable 2:4 mask search / apply for bf16 (see mask24.cuh).
#include "cuda/train/mask24.cuh"

namespace sparsenm::train::detail {
template <> void launch_mask24<__nv_bfloat16>(const Mask24Args& a, bool search, cudaStream_t s) {
  launch_mask24_impl<__nv_bfloat16>(a, search, s);
}
}  // namespace sparsenm::train::detail
