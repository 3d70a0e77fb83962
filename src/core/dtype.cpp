#include "sparsenm/dtype.hpp"

#include <array>

#include "sparsenm/error.hpp"

namespace sparsenm {

std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::f16: case DType::bf16: case DType::u16: return 2;
    case DType::u8: return 1;
  }
  return 0;
}

std::string_view to_string(DType t) noexcept {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::u32: return "u32";
    case DType::u16: return "u16";
    case DType::u8: return "u8";
  }
  return "?";
}

DType parse_dtype(std::string_view text, std::string_view argument) {
  struct Name { std::string_view name; DType t; };
  static constexpr std::array<Name, 16> names{{
      {"f32", DType::f32}, {"fp32", DType::f32}, {"float32", DType::f32},
      {"f16", DType::f16}, {"fp16", DType::f16}, {"float16", DType::f16},
      {"bf16", DType::bf16}, {"bfloat16", DType::bf16},
      {"f64", DType::f64}, {"fp64", DType::f64},
      {"i64", DType::i64}, {"i32", DType::i32}, {"u32", DType::u32}, {"u16", DType::u16},
      {"u8", DType::u8}, {"float64", DType::f64}}};
  for (const auto& n : names)
    if (n.name == text) return n.t;
  throw InvalidArgument(std::string(argument),
                        "must be one of f32, f16, bf16 (or f64, i64, i32, u32, u16, u8); got '" +
                            std::string(text) + "'");
}

}  // namespace sparsenm
