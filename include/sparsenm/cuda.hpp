// sparsenm — CUDA-only entry points (available when the library is built with CUDA).
#pragma once
#include <cstdint>

#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/pattern.hpp"

namespace sparsenm {

/// Magnitude pruning + condensing on the GPU for element N:M and hw24 patterns: the same result,
/// bit for bit, as prune(w, p) (the n largest |w| of every window, |NaN| counting as +inf, ties
/// to the lower column, kept bits copied unchanged, positions ascending, tail windows padded).
/// w: host matrix (f32, f16 or bf16). Copies w to the device, prunes there, copies the result
/// back. Throws InvalidArgument (other patterns, bad view) or CudaError.
CondensedMatrix prune_cuda(const MatrixView& w, const Pattern& p);

/// Device-resident variant, stream-ordered and allocation-free: w_dev holds rows x cols elements
/// of dtype with leading dimension ld (elements); values_dev / indices_dev must hold
/// layout.value_bytes(dtype) / layout.index_bytes() bytes for layout = FormatLayout::of(p, rows,
/// cols). Every byte of both outputs is written. stream: a cudaStream_t (nullptr: default).
void prune_cuda_device(const void* w_dev, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                       const Pattern& p, void* values_dev, std::uint8_t* indices_dev, void* stream = nullptr);

}  // namespace sparsenm
