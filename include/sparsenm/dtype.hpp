// sparsenm — element types and host-side fp16/bf16 conversion (round to nearest even).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sparsenm {

/// Element types. Weights and activations use f32, f16 or bf16; the others appear in files.
enum class DType : std::uint8_t { f32, f16, bf16, f64, i64, i32, u32, u16, u8 };

std::size_t dtype_size(DType t) noexcept;
/// "f32", "f16", "bf16", "f64", "i64", "i32", "u32", "u16", "u8".
std::string_view to_string(DType t) noexcept;
/// Accepts the names above (and "fp32", "fp16", "float32", "float16", "bfloat16", "fp64").
/// Throws InvalidArgument naming `argument`.
DType parse_dtype(std::string_view text, std::string_view argument = "dtype");
/// True for f32, f16 and bf16: the types a weight or an activation may have.
constexpr bool is_weight_dtype(DType t) noexcept {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

// ---- fp16 / bf16 bit conversions (IEEE binary16; bfloat16 = upper half of binary32) ----

inline float bf16_bits_to_float(std::uint16_t b) noexcept {
  std::uint32_t u = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_bf16_bits(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return std::uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return std::uint16_t(u >> 16);
}

inline float fp16_bits_to_float(std::uint16_t h) noexcept {
  std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t man = h & 0x3ffu;
  std::uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400u));
      u = sign | (std::uint32_t(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_fp16_bits(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  std::uint32_t absu = u & 0x7fffffffu;
  if (absu >= 0x7f800000u) return std::uint16_t(sign | 0x7c00u | (absu > 0x7f800000u ? 0x200u : 0u));
  if (absu >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (absu < 0x38800000u) {                                       // below 2^-14: subnormal or zero
    if (absu < 0x33000000u) return sign;                          // below 2^-25: rounds to zero
    std::uint32_t exp = absu >> 23;
    std::uint32_t man = (absu & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = 126 - exp;  // 14 + (112 - exp) ... bits to drop beyond 13
    std::uint32_t keep = man >> shift;
    std::uint32_t rem = man & ((1u << shift) - 1u);
    std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (keep & 1u))) ++keep;
    return std::uint16_t(sign | keep);
  }
  std::uint32_t r = absu + 0xfffu + ((absu >> 13) & 1u);  // round to nearest even at bit 13
  return std::uint16_t(sign | ((r - (112u << 23)) >> 13));
}

/// Reads element i of a buffer of weight dtype t as float.
inline float load_as_float(DType t, const void* p, std::size_t i) noexcept {
  switch (t) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f16: return fp16_bits_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case DType::bf16: return bf16_bits_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case DType::f64: return float(static_cast<const double*>(p)[i]);
    default: return 0.0f;
  }
}

/// Writes v (rounded to nearest even) as element i of a buffer of weight dtype t.
inline void store_from_float(DType t, void* p, std::size_t i, float v) noexcept {
  switch (t) {
    case DType::f32: static_cast<float*>(p)[i] = v; break;
    case DType::f16: static_cast<std::uint16_t*>(p)[i] = float_to_fp16_bits(v); break;
    case DType::bf16: static_cast<std::uint16_t*>(p)[i] = float_to_bf16_bits(v); break;
    case DType::f64: static_cast<double*>(p)[i] = v; break;
    default: break;
  }
}

}  // namespace sparsenm
