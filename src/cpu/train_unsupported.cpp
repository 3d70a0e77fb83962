// sparsenm — include/sparsenm/train.hpp in a build without CUDA: every entry point throws
// Unsupported (the kernels live in src/cuda/train/, compiled only with SPARSENM_CUDA=ON).
#if !defined(SPARSENM_WITH_CUDA)
#include "sparsenm/error.hpp"
#include "sparsenm/train.hpp"

#include <string>

namespace sparsenm::train {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Unsupported(std::string("sparsenm::train::") + what + ": this build has no CUDA (configure with SPARSENM_CUDA=ON)");
}
}  // namespace

void transposable_mask24(DType, const void*, std::int64_t, std::int64_t, std::uint16_t*, Compressed24View,
                         Compressed24View, void*) {
  no_cuda("transposable_mask24");
}
void apply_mask24(DType, const void*, std::int64_t, std::int64_t, const std::uint16_t*, Compressed24View,
                  Compressed24View, std::uint32_t*, void*) {
  no_cuda("apply_mask24");
}
void transposable_mask24_batched(DType, const void*, std::int64_t, std::int64_t, std::int64_t, std::uint16_t*,
                                 Compressed24View, Compressed24View, void*) {
  no_cuda("transposable_mask24_batched");
}
void apply_mask24_batched(DType, const void*, std::int64_t, std::int64_t, std::int64_t, const std::uint16_t*,
                          Compressed24View, Compressed24View, std::uint32_t*, void*) {
  no_cuda("apply_mask24_batched");
}
void mvue24(DType, const void*, std::int64_t, std::int64_t, GradLayout, std::uint64_t, Compressed24View, void*) {
  no_cuda("mvue24");
}
void masked_decay(DType, void*, const void*, const std::uint16_t*, std::int64_t, std::int64_t, float, void*) {
  no_cuda("masked_decay");
}
void flip_count(const std::uint16_t*, const std::uint16_t*, std::int64_t, std::int64_t, unsigned long long*, void*) {
  no_cuda("flip_count");
}
void glu_forward(Gate, DType, const void*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, void*,
                 std::int64_t, void*) {
  no_cuda("glu_forward");
}
void glu_backward(Gate, DType, const void*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, const void*,
                  std::int64_t, void*, void*) {
  no_cuda("glu_backward");
}

}  // namespace sparsenm::train
#endif
