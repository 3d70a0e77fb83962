// sparsenm — instantiation: MVUE 2:4 + compression for f16 (see mvue24.cuh).
#include "cuda/train/mvue24.cuh"

namespace sparsenm::train::detail {
template <> void launch_mvue24<__half>(const Mvue24Args& a, cudaStream_t s) { launch_mvue24_impl<__half>(a, s); }
}  // namespace sparsenm::train::detail
