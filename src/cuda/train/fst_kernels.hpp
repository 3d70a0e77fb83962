// sparsenm — small memory-bound kernels of the FST layer (fst_kernels.cu): hw24 -> tensor-core
// operand repack, 16-bit transpose with zero padding, bias add, deterministic column sums, and the
// dense 2:4 operands that cuSPARSELt's compress consumes (masked W, expanded hw24).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

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
/// Bias-add kernel (session 8, internal): 1 = 16-byte vectors, 8 columns per thread, bias in
/// registers (the default; used when out % 8 == 0 and z, b are 16-byte aligned, else variant 0),
/// 0 = the element-wise grid-stride kernel (a 64-bit division per element). Bit-identical results.
/// H200 (fa4ec55, 8192 x 10240 f16): 0.089 ms = 89 % of copy bandwidth vs 0.271 ms (29 %) for 0
/// (docs/PERF-train.md "FST layer, session 8": the bias add was 11-16 % of the FFN step).
void set_fst_bias_variant(int v) noexcept;
int fst_bias_variant() noexcept;
/// Rows per partial sum of fst_colsum; partial needs ceil(tokens / kColsumChunk) * out floats.
inline constexpr std::int64_t kColsumChunk = 256;
/// db[o] = sum_t dz[t][o]: fp32 partial sums per chunk of 256 rows (fixed order), then summed in
/// chunk order and rounded once to dtype. Deterministic.
void fst_colsum(DType dtype, const void* dz, std::int64_t tokens, std::int64_t out, float* partial, void* db,
                cudaStream_t s);

/// Dense S(W) for cuSPARSELt: out[r][c] = mask bit (r, c) ? w[r][c] : 0 for 16-bit w [rows][cols]
/// and a transposable mask (train.hpp layout). cols % 4 == 0; w, out 8-byte aligned. Reads 2 + 1/8
/// bytes and writes 2 bytes per element.
void fst_mask_dense(const void* w, const std::uint16_t* mask, std::int64_t rows, std::int64_t cols, void* out,
                    cudaStream_t s);
/// Dense [rows][k] (row pitch k) of a 16-bit hw24 matrix (values [rows][k / 2], indices
/// [rows][hw24 index bytes]); the two kept values at their positions, zeros elsewhere. k % 4 == 0.
void fst_expand24(const void* values, const std::uint8_t* idx, std::int64_t rows, std::int64_t k, void* dense,
                  cudaStream_t s);
/// Deterministic pseudo-random 16-bit values (f16 / bf16) uniform in [-scale, scale) (hash of the
/// index and seed): scratch operands of the construction-time backend timing.
void fst_fill_random(DType dtype, void* p, std::size_t elems, std::uint32_t seed, float scale, cudaStream_t s);

/// Phase marks of the FST layer's step (the `fst` bench's per-phase breakdown; internal, not a
/// public API). While a sink is set (process-wide; set it only while no other thread runs a
/// layer), every FstLinear records mark(phase, stream) on its stream right after each phase of
/// begin_step / forward / backward: "apply" / "refresh" (begin_step, sparse), "fwd_gemm",
/// "bias_add", "dx_gemm", "mvue" (MVUE + operand repacks), "dw_gemm" (incl. the transposes of the
/// transposing path), "decay", "colsum". Dense phase: the GEMM / bias names only. Null (the
/// default): the layer records nothing.
struct FstPhaseSink {
  virtual ~FstPhaseSink() = default;
  virtual void mark(const char* phase, cudaStream_t s) = 0;
};
void set_fst_phase_sink(FstPhaseSink* sink) noexcept;
FstPhaseSink* fst_phase_sink() noexcept;

/// Tile of the layer's sm_90 wgmma GEMMs (internal; the bench's sweeps and the tests).
/// heuristic: the wave-count rule of FstLinear (the behaviour before session 8); timed: each layer
/// times the tiles 128x256, 128x128, 64x128 on each of its three GEMMs at tokens = max_tokens at
/// construction (scratch operands, once per process and shape) and uses the fastest for calls
/// with tokens = max_tokens (others: heuristic). Read at construction.
enum class FstTilePolicy : int { heuristic = 0, timed = 1 };
void set_fst_tile_policy(FstTilePolicy p) noexcept;
FstTilePolicy fst_tile_policy() noexcept;
/// Forces one wgmma tile (sptc::WgTile as int) on every sparse GEMM of every layer, read at each
/// call; -1 (default): the layer's own choice. For the bench's tile sweeps and the tests.
void set_fst_tile_force(int tile) noexcept;
int fst_tile_force() noexcept;
/// Backward fork (session 8; default OFF: the FFN step forked was -1.6 % to +2.4 % against one
/// stream at 5517176, noise level, docs/PERF-train.md "FST layer, session 8"): when backward computes dX, the weight-gradient chain
/// (MVUE + operand, dW GEMM, masked decay; dense phase: the dW cuBLAS GEMM with its own workspace)
/// runs on a second stream the layer owns, forked from and joined back to the caller's stream
/// with events (no host synchronisation, nothing allocated per step). Off: one stream, the order of
/// sessions 1-7. Never forks with a cuSPARSELt GEMM in the backward or while a phase sink is set.
/// Read at each backward call.
void set_fst_fork_backward(bool on) noexcept;
bool fst_fork_backward() noexcept;
/// The timed tile choice of layers of this shape in this process ("" when none was timed):
/// per GEMM the time of each tile and the tile chosen.
std::string fst_timed_tiles(DType dtype, std::int64_t in, std::int64_t out, std::int64_t max_tokens);

}  // namespace sparsenm::train::detail
