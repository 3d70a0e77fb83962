// sparsenm prune — internal helpers shared by the CPU pruners: element traits (raw bits,
// magnitude keys, conversion to float), argument checks and the dtype dispatch.
//
// Magnitude keys. For IEEE binary16, bfloat16 and binary32 the bit pattern with the sign bit
// cleared, read as an unsigned integer, is monotone in |x| (0 < subnormals < normals < inf).
// Clamping it at the +inf pattern maps every NaN to +inf, which is our documented NaN rule:
// |NaN| counts as +inf, so NaNs are kept first and never silently dropped; among equal keys
// (NaN vs inf, equal magnitudes, +0 vs -0) the lower column wins. Element patterns select on
// these integer keys alone and copy the kept bits unchanged (no rounding, no conversion).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "sparsenm/dtype.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/matrix.hpp"

namespace sparsenm::prune_detail {

/// fp16 -> float for all 65536 patterns (filled during static initialisation).
extern const float* const kFp16Table;

struct F16 {
  using bits = std::uint16_t;
  using key_t = std::uint32_t;
  static constexpr DType dtype = DType::f16;
  static key_t key(bits b) noexcept {
    key_t k = b & 0x7fffu;
    return k > 0x7c00u ? 0x7c00u : k;
  }
  static float to_float(bits b) noexcept { return kFp16Table[b]; }
};

struct BF16 {
  using bits = std::uint16_t;
  using key_t = std::uint32_t;
  static constexpr DType dtype = DType::bf16;
  static key_t key(bits b) noexcept {
    key_t k = b & 0x7fffu;
    return k > 0x7f80u ? 0x7f80u : k;
  }
  static float to_float(bits b) noexcept { return bf16_bits_to_float(b); }
};

struct F32 {
  using bits = std::uint32_t;
  using key_t = std::uint32_t;
  static constexpr DType dtype = DType::f32;
  static key_t key(bits b) noexcept {
    key_t k = b & 0x7fffffffu;
    return k > 0x7f800000u ? 0x7f800000u : k;
  }
  static float to_float(bits b) noexcept {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
};

/// |x| as double with NaN mapped to +inf (the ranking magnitude of vector/block/venom scores).
inline double rank_magnitude(float x) noexcept {
  double a = std::fabs(double(x));
  return std::isnan(a) ? std::numeric_limits<double>::infinity() : a;
}

/// |x| as float with NaN mapped to +inf (the ranking magnitude of the transposable 2:4 search).
inline float rank_magnitude_f32(float x) noexcept {
  return std::isnan(x) ? std::numeric_limits<float>::infinity() : std::fabs(x);
}

/// Calls f(Traits{}) for the weight dtype t (f32, f16, bf16); the caller has checked t.
template <class F>
decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f16: return f(F16{});
    case DType::bf16: return f(BF16{});
    default: return f(F32{});
  }
}

/// check_view + at least one row and one column.
void check_input(const MatrixView& w, const char* argument);

/// Below this many elements the pruners stay on one thread: a parallel region costs more than
/// the work (and much more on a busy machine).
constexpr std::int64_t kParallelMinElements = std::int64_t(1) << 16;
/// Venom spends far more time per element: fork sooner.
constexpr std::int64_t kParallelMinVenom = std::int64_t(1) << 12;

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }

}  // namespace sparsenm::prune_detail
