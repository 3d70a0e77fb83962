// sparsenm — small memory-bound kernels of the FST layer (fst_kernels.cu): hw24 -> tensor-core
// operand repack, 16-bit transpose with zero padding, bias add, deterministic column sums.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/train/fst_layout.hpp"
#include "sparsenm/dtype.hpp"

namespace sparsenm::train::detail {

/// meta [g.meta_words] from hw24 indices [g.rows][g.irb].
void fst_repack_meta(const std::uint8_t* idx, const PackGeom& g, std::uint32_t* meta, cudaStream_t s);
/// packed values [g.rows_pad][g.pack_cols] (16-bit) from hw24 values [g.rows][g.hw_cols]; writes
/// the whole padded region (zeros outside the hw24 values).
void fst_repack_values(const void* hw, const PackGeom& g, void* packed, cudaStream_t s);
/// dst [C][ldd] = src^T for 16-bit src [R][C] (ld C); dst columns R..ldd-1 are zero. ldd >= R.
void fst_transpose16(const void* src, std::int64_t R, std::int64_t C, void* dst, std::int64_t ldd, cudaStream_t s);
/// z[t][o] += b[o] (fp32 add, one rounding) for z [tokens][out]; dtype f16 or bf16.
void fst_add_bias(DType dtype, void* z, std::int64_t tokens, std::int64_t out, const void* b, cudaStream_t s);
/// Rows per partial sum of fst_colsum; partial needs ceil(tokens / kColsumChunk) * out floats.
inline constexpr std::int64_t kColsumChunk = 256;
/// db[o] = sum_t dz[t][o]: fp32 partial sums per chunk of 256 rows (fixed order), then summed in
/// chunk order and rounded once to dtype. Deterministic.
void fst_colsum(DType dtype, const void* dz, std::int64_t tokens, std::int64_t out, float* partial, void* db,
                cudaStream_t s);

}  // namespace sparsenm::train::detail
