// sparsenm — GPU kernels for 2:4 fully sparse training (seed 003 §3-5, Appendix A/B).
//
// Every function takes DEVICE pointers and a cudaStream_t passed as void* (nullptr = the legacy
// default stream); it validates its arguments on the host (InvalidArgument naming the argument
// and the rule), enqueues one kernel and returns without synchronising. CUDA failures throw
// CudaError. A build without CUDA throws Unsupported.
//
// Conventions shared by all functions here
// - Matrices are row-major with ld == cols (dense, packed rows).
// - hw24 compressed outputs follow the canonical element 2:4 format of format.hpp exactly:
//   values [rows][hw24_value_cols(cols)] (2 per window of 4, ascending position) and indices
//   [rows][hw24_index_row_bytes(cols)]: field j = 2*window + slot holds the 2-bit position,
//   packed LSB first (so window w is the nibble (w & 1) of byte w / 2: pos0 | pos1 << 2).
//   Bits past the last window are written as 0.
// - Tails: a matrix whose rows or cols are not multiples of 4 is padded LOGICALLY with zero
//   elements up to the next multiple of 4 (nothing is read or written outside the real arrays).
//   Mask blocks and compressed windows cover the padded matrix; a kept slot that lies in the
//   padding stores the value 0 (as format.hpp requires).
// - Transposable 2:4 mask: uint16 mask[ceil(rows/4)][ceil(cols/4)], one word per 4x4 block,
//   bit 4*r + c = element (4*br + r, 4*bc + c) kept. A valid block keeps exactly 2 per row
//   and exactly 2 per column of the (padded) block.
#pragma once
#include <cstdint>

#include "sparsenm/dtype.hpp"

namespace sparsenm::train {

/// Values per row of the hw24 format for a row of `cols` elements: 2 * ceil(cols / 4).
constexpr std::int64_t hw24_value_cols(std::int64_t cols) noexcept { return 2 * ((cols + 3) / 4); }
/// Index bytes per row of the hw24 format: ceil(windows * 4 bits / 8).
constexpr std::int64_t hw24_index_row_bytes(std::int64_t cols) noexcept { return ((cols + 3) / 4 + 1) / 2; }
/// Number of uint16 words of a transposable mask of a rows x cols matrix.
constexpr std::int64_t mask24_words(std::int64_t rows, std::int64_t cols) noexcept {
  return ((rows + 3) / 4) * ((cols + 3) / 4);
}

/// Device view of a hw24-compressed matrix (both arrays on the device, packed rows).
struct Compressed24View {
  void* values = nullptr;           ///< [rows][hw24_value_cols(cols)] of the matrix dtype
  std::uint8_t* indices = nullptr;  ///< [rows][hw24_index_row_bytes(cols)]
};

/// Transposable 2:4 mask search (seed 003 §3.2 / Hubara et al.) in one pass over W: every 4x4
/// block gets the best of the 90 patterns with two kept per row and per column (all 90 scored),
/// bit for bit the rule of the CPU reference sparsenm::transposable_24_mask (prune.hpp,
/// src/prune/transposable.hpp): magnitudes |w| in fp32 (NaN ranks as +inf), score = kept
/// magnitude sum grouped as (rows 2+3) + (rows 0+1), every sum in fp32; ties to the smallest top
/// half of the mask, then the largest rows-0+1 sum, then the smallest bottom half. (Exact sums
/// for f16 blocks whose exponents span <= ~10 binades; otherwise optimal up to the fp32 rounding
/// of the score, relative 2^-23.) A block always gets a valid pattern. Writes `mask` (may be null) and, when the
/// views are non-null, S(W) as hw24 `w24` ([rows][...]) and S(W)^T as hw24 `wt24`
/// ([cols][hw24_value_cols(rows)]). dtype: f16, bf16 or f32.
void transposable_mask24(DType dtype, const void* w, std::int64_t rows, std::int64_t cols,
                         std::uint16_t* mask, Compressed24View w24, Compressed24View wt24,
                         void* stream = nullptr);

/// Applies a given transposable mask to W and writes S(W) and S(W)^T as hw24 (either view may
/// be null, not both). A mask row (column) quad that does not keep exactly 2 is a violation:
/// the two lowest kept positions (then the lowest free ones) are stored, and, when
/// `violations` is non-null, the device counter is incremented once per bad quad (the caller
/// zeroes it). Use violations to check masks you did not produce with transposable_mask24.
void apply_mask24(DType dtype, const void* w, std::int64_t rows, std::int64_t cols,
                  const std::uint16_t* mask, Compressed24View w24, Compressed24View wt24,
                  std::uint32_t* violations = nullptr, void* stream = nullptr);

/// Batched forms: `batch` matrices of one shape rows x cols stored back to back, one launch
/// (e.g. every FFN weight of a model at a mask refresh). Matrix i is w + i * rows * cols
/// elements; its mask starts at mask + i * mask24_words(rows, cols); its S(W) at values +
/// i * rows * hw24_value_cols(cols) and indices + i * rows * hw24_index_row_bytes(cols); its
/// S(W)^T at values + i * cols * hw24_value_cols(rows) and indices + i * cols *
/// hw24_index_row_bytes(rows). Each matrix gets exactly what the single-matrix call writes.
/// batch in 1..65535.
void transposable_mask24_batched(DType dtype, const void* w, std::int64_t batch, std::int64_t rows,
                                 std::int64_t cols, std::uint16_t* mask, Compressed24View w24,
                                 Compressed24View wt24, void* stream = nullptr);
void apply_mask24_batched(DType dtype, const void* w, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                          const std::uint16_t* mask, Compressed24View w24, Compressed24View wt24,
                          std::uint32_t* violations = nullptr, void* stream = nullptr);

/// Layout of the output-activation gradient given to mvue24.
enum class GradLayout {
  token_major,    ///< G is [tokens][features] (row-major dZ); the kernel transposes on the fly
  feature_major,  ///< G is [features][tokens] (dZ^T, i.e. column-major dZ)
};

/// MVUE 2:4 of dZ^T along the token dimension (seed 003 eq. 6, Chmiel et al. 2023), fused
/// with compression: writes hw24 of the [features][tokens] matrix MVUE(dZ^T), equal byte for
/// byte to condense(sparsenm::mvue24(dZ^T, seed), hw24) of the CPU reference (prune.hpp): same
/// estimator (water-filling inclusion probabilities min(1, c |x_i|), values x_i / p_i, pair
/// drawn by systematic sampling; exact arithmetic order in src/cuda/train/mvue_rule.hpp), same
/// Philox-4x32-10 stream (key = seed, counter = (token / 16, feature), word (token / 4) % 4;
/// philox.hpp), the dtype
/// rounding of the dense result, then the canonical condense positions (nonzero values first,
/// then the lowest free positions). Unbiased, minimum variance among 2-of-4 estimators.
/// Groups past the last token are padded with zeros; non-finite groups keep their two largest
/// |x| unscaled (NaN ranks highest).
void mvue24(DType dtype, const void* g, std::int64_t tokens, std::int64_t features, GradLayout layout,
            std::uint64_t seed, Compressed24View out, void* stream = nullptr);

/// Masked decay on gradients (seed 003 eq. 10): grad <- grad + lambda * (!mask) . w, in place,
/// per element fmaf(lambda, w, grad) in fp32, rounded once to dtype. grad and w share dtype
/// and shape [rows][cols]; mask as transposable_mask24 writes it.
void masked_decay(DType dtype, void* grad, const void* w, const std::uint16_t* mask, std::int64_t rows,
                  std::int64_t cols, float lambda, void* stream = nullptr);

/// Flip count ||m_new - m_old||_1 over the rows x cols real elements (padding bits ignored),
/// written to *count (device, overwritten; integer reduction, so deterministic).
/// Flip rate r = count / (rows * cols) (seed 003 Definition 4.1).
void flip_count(const std::uint16_t* mask_new, const std::uint16_t* mask_old, std::int64_t rows,
                std::int64_t cols, unsigned long long* count, void* stream = nullptr);

/// Gated activations: out = a * act(b) with act = GELU (tanh form, as seed 003's toolkit) or
/// SiLU. Strided 2-D form that covers both layouts:
///   a(i, j) = in[i * ld_in + j], b(i, j) = in[i * ld_in + gate_offset + j], i < rows, j < cols,
///   out(i, j) = out[i * ld_out + j].
/// Row-major Z [T][2h]: rows = T, cols = h, ld_in = 2h, gate_offset = h.
/// Column-major Z (what a sparse GEMM writing Z^T produces, seed 003 §5.2): Z^T is [2h][T]:
///   rows = h, cols = T, ld_in = T, gate_offset = h * T.
enum class Gate { geglu, swiglu };
void glu_forward(Gate gate, DType dtype, const void* in, std::int64_t rows, std::int64_t cols,
                 std::int64_t ld_in, std::int64_t gate_offset, void* out, std::int64_t ld_out,
                 void* stream = nullptr);
/// Backward: given dout (same indexing as out, ld_dout), writes din with in's layout:
///   din(a) = dout * act(b), din(b) = dout * a * act'(b).
void glu_backward(Gate gate, DType dtype, const void* in, std::int64_t rows, std::int64_t cols,
                  std::int64_t ld_in, std::int64_t gate_offset, const void* dout, std::int64_t ld_dout,
                  void* din, void* stream = nullptr);

}  // namespace sparsenm::train
