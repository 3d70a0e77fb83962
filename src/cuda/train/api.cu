// sparsenm — host API of the training kernels (include/sparsenm/train.hpp): argument checks,
// alignment detection (vector path or guarded path), dtype dispatch.
#include <cstdint>
#include <string>

#include "sparsenm/error.hpp"
#include "sparsenm/train.hpp"
#include "cuda/train/train_common.cuh"

namespace sparsenm::train {
namespace {

using detail::launch_glu;
using detail::launch_mask24;
using detail::launch_masked_decay;
using detail::launch_mvue24;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

void require(bool ok, const char* argument, const std::string& rule) {
  if (!ok) throw InvalidArgument(argument, rule);
}

void check_dtype(DType t) {
  require(is_weight_dtype(t), "dtype", "must be f32, f16 or bf16 (got " + std::string(to_string(t)) + ")");
}

void check_dims(std::int64_t rows, std::int64_t cols, const char* rname, const char* cname) {
  require(rows >= 1, rname, "must be >= 1 (got " + std::to_string(rows) + ")");
  require(cols >= 1, cname, "must be >= 1 (got " + std::to_string(cols) + ")");
  require(rows <= (std::int64_t(1) << 40) / cols, rname, "rows * cols must be below 2^40");
}

template <class F>
void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f16: f(__half{}); break;
    case DType::bf16: f(__nv_bfloat16{}); break;
    case DType::f32: f(float{}); break;
    default: check_dtype(t);
  }
}

void mask_common(DType dtype, const void* w, std::int64_t rows, std::int64_t cols) {
  check_dtype(dtype);
  require(w != nullptr, "w", "must be a device pointer (got null)");
  check_dims(rows, cols, "rows", "cols");
  require((rows + 127) / 128 <= 65535, "rows", "must be at most 65535*128 (grid limit)");
}

bool mask_aligned(std::int64_t rows, std::int64_t cols, std::initializer_list<const void*> ptrs) {
  bool ok = rows % 32 == 0 && cols % 32 == 0;
  for (const void* p : ptrs) ok = ok && aligned16(p);
  return ok;
}

}  // namespace

/// The fields the mask search and apply share: input, shape, batch and the compressed outputs.
static detail::Mask24Args mask24_args(const void* w, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                               Compressed24View w24, Compressed24View wt24) {
  detail::Mask24Args a;
  a.w = w;
  a.rows = rows;
  a.cols = cols;
  a.batch = batch;
  a.w_values = w24.values;
  a.w_indices = w24.indices;
  a.wt_values = wt24.values;
  a.wt_indices = wt24.indices;
  return a;
}

void transposable_mask24_batched(DType dtype, const void* w, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                                 std::uint16_t* mask, Compressed24View w24, Compressed24View wt24, void* stream) {
  mask_common(dtype, w, rows, cols);
  require(batch >= 1 && batch <= 65535, "batch", "must be in 1..65535 (got " + std::to_string(batch) + ")");
  require(mask || w24.values || w24.indices || wt24.values || wt24.indices, "mask/w24/wt24",
          "at least one output must be non-null");
  detail::Mask24Args a = mask24_args(w, batch, rows, cols, w24, wt24);
  a.mask_out = mask;
  a.aligned = mask_aligned(rows, cols, {w, mask, w24.values, wt24.values, wt24.indices});
  dispatch(dtype, [&](auto tag) { launch_mask24<decltype(tag)>(a, true, as_stream(stream)); });
}

void transposable_mask24(DType dtype, const void* w, std::int64_t rows, std::int64_t cols, std::uint16_t* mask,
                         Compressed24View w24, Compressed24View wt24, void* stream) {
  transposable_mask24_batched(dtype, w, 1, rows, cols, mask, w24, wt24, stream);
}

void apply_mask24_batched(DType dtype, const void* w, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                          const std::uint16_t* mask, Compressed24View w24, Compressed24View wt24,
                          std::uint32_t* violations, void* stream) {
  mask_common(dtype, w, rows, cols);
  require(batch >= 1 && batch <= 65535, "batch", "must be in 1..65535 (got " + std::to_string(batch) + ")");
  require(mask != nullptr, "mask", "must be a device pointer (got null)");
  require(w24.values || w24.indices || wt24.values || wt24.indices, "w24/wt24", "at least one output must be non-null");
  detail::Mask24Args a = mask24_args(w, batch, rows, cols, w24, wt24);
  a.mask_in = mask;
  a.violations = violations;
  a.aligned = mask_aligned(rows, cols, {w, mask, w24.values, wt24.values, wt24.indices});
  dispatch(dtype, [&](auto tag) { launch_mask24<decltype(tag)>(a, false, as_stream(stream)); });
}

void apply_mask24(DType dtype, const void* w, std::int64_t rows, std::int64_t cols, const std::uint16_t* mask,
                  Compressed24View w24, Compressed24View wt24, std::uint32_t* violations, void* stream) {
  apply_mask24_batched(dtype, w, 1, rows, cols, mask, w24, wt24, violations, stream);
}

namespace detail {
Mvue24Args make_mvue24_args(const void* g, std::int64_t tokens, std::int64_t features, GradLayout layout,
                            std::uint64_t seed, Compressed24View out) {
  Mvue24Args a;
  a.g = g;
  a.tokens = tokens;
  a.features = features;
  a.token_major = layout == GradLayout::token_major;
  a.seed = seed;
  a.keys = philox_keys(seed);
  a.values = out.values;
  a.indices = out.indices;
  if (a.token_major) {
    // interior tiles: 8-byte (16-bit) / 16-byte (f32) loads of 4 features, 16-byte value rows,
    // 4-byte index stores
    a.aligned = tokens % 32 == 0 && features % 4 == 0 && aligned16(g) && aligned16(out.values) &&
                reinterpret_cast<std::uintptr_t>(out.indices) % 4 == 0;
  } else {
    // 16-byte loads / value stores; 32 tokens per thread (tokens % 32 == 0): 4-byte index stores
    a.aligned = tokens % 16 == 0 && aligned16(g) && aligned16(out.values) &&
                reinterpret_cast<std::uintptr_t>(out.indices) % 4 == 0;
  }
  return a;
}
}  // namespace detail

void mvue24(DType dtype, const void* g, std::int64_t tokens, std::int64_t features, GradLayout layout,
            std::uint64_t seed, Compressed24View out, void* stream) {
  check_dtype(dtype);
  require(g != nullptr, "g", "must be a device pointer (got null)");
  check_dims(tokens, features, "tokens", "features");
  require(out.values || out.indices, "out", "values or indices must be non-null");
  if (layout == GradLayout::token_major)
    require((tokens + 127) / 128 <= 65535, "tokens", "must be at most 65535*128 for token_major (grid limit)");
  const detail::Mvue24Args a = detail::make_mvue24_args(g, tokens, features, layout, seed, out);
  dispatch(dtype, [&](auto tag) { launch_mvue24<decltype(tag)>(a, as_stream(stream)); });
}

void masked_decay(DType dtype, void* grad, const void* w, const std::uint16_t* mask, std::int64_t rows,
                  std::int64_t cols, float lambda, void* stream) {
  check_dtype(dtype);
  require(grad != nullptr, "grad", "must be a device pointer (got null)");
  require(w != nullptr, "w", "must be a device pointer (got null)");
  require(mask != nullptr, "mask", "must be a device pointer (got null)");
  check_dims(rows, cols, "rows", "cols");
  require(lambda == lambda, "lambda", "must not be NaN");
  detail::DecayArgs a;
  a.grad = grad;
  a.w = w;
  a.mask = mask;
  a.rows = rows;
  a.cols = cols;
  a.lambda = lambda;
  a.aligned = cols % 8 == 0 && aligned16(grad) && aligned16(w);
  dispatch(dtype, [&](auto tag) { launch_masked_decay<decltype(tag)>(a, as_stream(stream)); });
}

void flip_count(const std::uint16_t* mask_new, const std::uint16_t* mask_old, std::int64_t rows, std::int64_t cols,
                unsigned long long* count, void* stream) {
  require(mask_new != nullptr, "mask_new", "must be a device pointer (got null)");
  require(mask_old != nullptr, "mask_old", "must be a device pointer (got null)");
  require(count != nullptr, "count", "must be a device pointer (got null)");
  check_dims(rows, cols, "rows", "cols");
  detail::launch_flip_count(mask_new, mask_old, rows, cols, count, as_stream(stream));
}

namespace {
detail::GluArgs glu_common(Gate gate, DType dtype, const void* in, std::int64_t rows, std::int64_t cols,
                           std::int64_t ld_in, std::int64_t gate_offset, void* out) {
  check_dtype(dtype);
  require(gate == Gate::geglu || gate == Gate::swiglu, "gate", "must be geglu or swiglu");
  require(in != nullptr, "in", "must be a device pointer (got null)");
  require(out != nullptr, "out", "must be a device pointer (got null)");
  check_dims(rows, cols, "rows", "cols");
  require(ld_in >= cols, "ld_in", "must be >= cols (got " + std::to_string(ld_in) + ")");
  require(gate_offset >= cols || gate_offset <= -cols, "gate_offset",
          "must not overlap the value half: |gate_offset| >= cols (got " + std::to_string(gate_offset) + ")");
  detail::GluArgs a;
  a.gate = gate == Gate::geglu ? 0 : 1;
  a.in = in;
  a.rows = rows;
  a.cols = cols;
  a.ld_in = ld_in;
  a.gate_offset = gate_offset;
  a.out = out;
  return a;
}
}  // namespace

void glu_forward(Gate gate, DType dtype, const void* in, std::int64_t rows, std::int64_t cols, std::int64_t ld_in,
                 std::int64_t gate_offset, void* out, std::int64_t ld_out, void* stream) {
  detail::GluArgs a = glu_common(gate, dtype, in, rows, cols, ld_in, gate_offset, out);
  require(ld_out >= cols, "ld_out", "must be >= cols (got " + std::to_string(ld_out) + ")");
  a.ld_out = ld_out;
  const std::int64_t per = dtype == DType::f32 ? 4 : 8;
  a.aligned = cols % 8 == 0 && ld_in % per == 0 && gate_offset % per == 0 && ld_out % per == 0 && aligned16(in) &&
              aligned16(out);
  dispatch(dtype, [&](auto tag) { launch_glu<decltype(tag)>(a, false, as_stream(stream)); });
}

void glu_backward(Gate gate, DType dtype, const void* in, std::int64_t rows, std::int64_t cols, std::int64_t ld_in,
                  std::int64_t gate_offset, const void* dout, std::int64_t ld_dout, void* din, void* stream) {
  detail::GluArgs a = glu_common(gate, dtype, in, rows, cols, ld_in, gate_offset, din);
  require(dout != nullptr, "dout", "must be a device pointer (got null)");
  require(ld_dout >= cols, "ld_dout", "must be >= cols (got " + std::to_string(ld_dout) + ")");
  a.dout = dout;
  a.ld_dout = ld_dout;
  const std::int64_t per = dtype == DType::f32 ? 4 : 8;
  a.aligned = cols % 8 == 0 && ld_in % per == 0 && gate_offset % per == 0 && ld_dout % per == 0 && aligned16(in) &&
              aligned16(dout) && aligned16(din);
  dispatch(dtype, [&](auto tag) { launch_glu<decltype(tag)>(a, true, as_stream(stream)); });
}

}  // namespace sparsenm::train
