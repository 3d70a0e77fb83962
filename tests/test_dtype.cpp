// fp16 / bf16 conversions against references computed independently in double arithmetic,
// plus dtype names and sizes.
#include <gtest/gtest.h>

#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "sparsenm/dtype.hpp"
#include "sparsenm/error.hpp"
#include "support/random_pattern.hpp"

using namespace sparsenm;

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// ---- references (double arithmetic, no bit tricks) ----

/// The value of binary16 bits h (finite only).
double fp16_value(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  const double mag = exp == 0 ? std::ldexp(double(man), -24) : std::ldexp(double(1024 + man), exp - 25);
  return (h & 0x8000) ? -mag : mag;
}

/// binary16 bits nearest to x (ties to even), from the real value.
std::uint16_t fp16_reference(float f) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double x = std::fabs(double(f));
  if (std::isinf(x)) return sign | 0x7c00;
  if (x == 0) return sign;
  int e;
  std::frexp(x, &e);                          // x in [2^(e-1), 2^e)
  const int E = std::max(e - 1, -14);         // binade, clamped to the subnormal one
  const double ulp = std::ldexp(1.0, E - 10);
  const double val = std::nearbyint(x / ulp) * ulp;  // round half to even (default mode)
  if (val > 65504.0) return sign | 0x7c00;
  if (val < std::ldexp(1.0, -14)) return std::uint16_t(sign | std::uint16_t(val / std::ldexp(1.0, -24)));
  std::frexp(val, &e);
  const int E2 = e - 1;
  const int man = int(val / std::ldexp(1.0, E2 - 10)) - 1024;
  return std::uint16_t(sign | ((E2 + 15) << 10) | man);
}

/// The value of bfloat16 bits b (finite only).
double bf16_value(std::uint16_t b) {
  const int exp = (b >> 7) & 0xff, man = b & 0x7f;
  const double mag = exp == 0 ? std::ldexp(double(man), -133) : std::ldexp(double(128 + man), exp - 134);
  return (b & 0x8000) ? -mag : mag;
}

std::uint16_t bf16_reference(float f) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double x = std::fabs(double(f));
  if (std::isinf(x)) return sign | 0x7f80;
  if (x == 0) return sign;
  int e;
  std::frexp(x, &e);
  const int E = std::max(e - 1, -126);
  const double ulp = std::ldexp(1.0, E - 7);
  const double val = std::nearbyint(x / ulp) * ulp;
  if (val >= std::ldexp(1.0, 128)) return sign | 0x7f80;
  const std::uint32_t u = to_bits(float(val));
  EXPECT_EQ(u & 0xffffu, 0u) << "reference produced a value that is not a bfloat16";
  return std::uint16_t(sign | ((u >> 16) & 0x7fff));
}

bool fp16_is_nan(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
bool bf16_is_nan(std::uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

// ---------------------------------------------------------------------------------------------

TEST(Fp16, EveryBitPatternRoundTrips) {
  int nans = 0;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const std::uint16_t h = std::uint16_t(i);
    const float f = fp16_bits_to_float(h);
    const int exp = (h >> 10) & 0x1f;
    if (exp == 0x1f) {
      if (h & 0x3ff) {
        ++nans;
        ASSERT_TRUE(std::isnan(f)) << std::hex << i;
        const std::uint16_t back = float_to_fp16_bits(f);
        ASSERT_TRUE(fp16_is_nan(back)) << std::hex << i << " -> " << back;
        ASSERT_EQ(back & 0x8000, h & 0x8000) << "NaN sign";
      } else {
        ASSERT_TRUE(std::isinf(f));
        ASSERT_EQ(std::signbit(f), bool(h & 0x8000));
        ASSERT_EQ(float_to_fp16_bits(f), h);
      }
      continue;
    }
    ASSERT_EQ(double(f), fp16_value(h)) << std::hex << i;
    ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << std::hex << i;
    ASSERT_EQ(float_to_fp16_bits(f), h) << std::hex << i;
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(Fp16, HalfwayCasesAndNeighbours) {
  // Midpoints between consecutive finite binary16 values are exact floats; they must round to
  // the even neighbour, and one float ulp either side must round to the nearer one.
  int checked = 0;
  for (std::uint32_t i = 0; i < 0x7bff; ++i) {
    for (std::uint16_t sign : {std::uint16_t(0), std::uint16_t(0x8000)}) {
      const std::uint16_t lo = std::uint16_t(i | sign), hi = std::uint16_t((i + 1) | sign);
      const float mid = float((fp16_value(lo) + fp16_value(hi)) / 2);
      ASSERT_EQ(double(mid), (fp16_value(lo) + fp16_value(hi)) / 2);
      const std::uint16_t even = (lo & 1) ? hi : lo;
      ASSERT_EQ(float_to_fp16_bits(mid), even) << std::hex << lo;
      ASSERT_EQ(fp16_reference(mid), even) << "reference broken at " << std::hex << lo;
      const float toward_zero = std::nextafter(mid, 0.0f), away = std::nextafter(mid, sign ? -1e9f : 1e9f);
      ASSERT_EQ(float_to_fp16_bits(toward_zero), lo) << std::hex << lo;
      ASSERT_EQ(float_to_fp16_bits(away), hi) << std::hex << lo;
      checked += 3;
    }
  }
  EXPECT_GT(checked, 180000);
}

TEST(Fp16, RandomFloatsMatchReference) {
  test::SplitMix rng(16);
  for (int i = 0; i < 300000; ++i) {
    // half the samples over all float bit patterns, half concentrated on the fp16 range
    std::uint32_t u = std::uint32_t(rng.next());
    if (i & 1) u = (u & 0x807fffffu) | (std::uint32_t(100 + rng.below(44)) << 23);
    const float f = from_bits(u);
    if (std::isnan(f)) {
      ASSERT_TRUE(fp16_is_nan(float_to_fp16_bits(f)));
      continue;
    }
    ASSERT_EQ(float_to_fp16_bits(f), fp16_reference(f)) << std::hex << u;
  }
}

TEST(Fp16, OverflowAndSubnormals) {
  EXPECT_EQ(float_to_fp16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16_bits(std::nextafter(65520.0f, 0.0f)), 0x7bff);  // just below the tie
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7c00);                        // tie rounds to even: inf
  EXPECT_EQ(float_to_fp16_bits(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_fp16_bits(1e10f), 0x7c00);
  EXPECT_EQ(float_to_fp16_bits(FLT_MAX), 0x7c00);
  EXPECT_EQ(float_to_fp16_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(fp16_is_nan(float_to_fp16_bits(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(fp16_is_nan(float_to_fp16_bits(from_bits(0x7f800001u))));  // signalling NaN, low payload
  EXPECT_TRUE(fp16_is_nan(float_to_fp16_bits(from_bits(0xff800001u))));

  const float min_sub = std::ldexp(1.0f, -24);
  EXPECT_EQ(float_to_fp16_bits(min_sub), 0x0001);
  EXPECT_EQ(float_to_fp16_bits(min_sub / 2), 0x0000);                          // tie to even: 0
  EXPECT_EQ(float_to_fp16_bits(-min_sub / 2), 0x8000);
  EXPECT_EQ(float_to_fp16_bits(std::nextafter(min_sub / 2, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_fp16_bits(1.5f * min_sub), 0x0002);                      // tie to even: 2
  EXPECT_EQ(float_to_fp16_bits(2.5f * min_sub), 0x0002);
  EXPECT_EQ(float_to_fp16_bits(min_sub / 4), 0x0000);
  EXPECT_EQ(float_to_fp16_bits(FLT_TRUE_MIN), 0x0000);
  EXPECT_EQ(float_to_fp16_bits(-FLT_TRUE_MIN), 0x8000);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -14)), 0x0400);               // min normal
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1023.5f, -24)), 0x0400);            // tie up into normal
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1022.5f, -24)), 0x03fe);
  EXPECT_EQ(float_to_fp16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);        // tie to even
  EXPECT_EQ(float_to_fp16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(Bf16, EveryBitPatternRoundTrips) {
  int nans = 0;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const std::uint16_t b = std::uint16_t(i);
    const float f = bf16_bits_to_float(b);
    if (((b >> 7) & 0xff) == 0xff) {
      if (b & 0x7f) {
        ++nans;
        ASSERT_TRUE(std::isnan(f));
        const std::uint16_t back = float_to_bf16_bits(f);
        ASSERT_TRUE(bf16_is_nan(back)) << std::hex << i;
        ASSERT_EQ(back & 0x8000, b & 0x8000);
      } else {
        ASSERT_TRUE(std::isinf(f));
        ASSERT_EQ(float_to_bf16_bits(f), b);
      }
      continue;
    }
    ASSERT_EQ(double(f), bf16_value(b)) << std::hex << i;
    ASSERT_EQ(std::signbit(f), bool(b & 0x8000));
    ASSERT_EQ(float_to_bf16_bits(f), b) << std::hex << i;
  }
  EXPECT_EQ(nans, 2 * 127);
}

TEST(Bf16, HalfwayCasesAndReference) {
  for (std::uint32_t i = 0; i < 0x7f7f; ++i) {
    for (std::uint16_t sign : {std::uint16_t(0), std::uint16_t(0x8000)}) {
      const std::uint16_t lo = std::uint16_t(i | sign), hi = std::uint16_t((i + 1) | sign);
      const float mid = float((bf16_value(lo) + bf16_value(hi)) / 2);
      const std::uint16_t even = (lo & 1) ? hi : lo;
      ASSERT_EQ(float_to_bf16_bits(mid), even) << std::hex << lo;
      ASSERT_EQ(bf16_reference(mid), even);
      ASSERT_EQ(float_to_bf16_bits(std::nextafter(mid, 0.0f)), lo);
      ASSERT_EQ(float_to_bf16_bits(std::nextafter(mid, sign ? -INFINITY : INFINITY)), hi);
    }
  }
  test::SplitMix rng(17);
  for (int i = 0; i < 300000; ++i) {
    const float f = from_bits(std::uint32_t(rng.next()));
    if (std::isnan(f)) {
      ASSERT_TRUE(bf16_is_nan(float_to_bf16_bits(f)));
      continue;
    }
    ASSERT_EQ(float_to_bf16_bits(f), bf16_reference(f)) << std::hex << to_bits(f);
  }
  EXPECT_EQ(float_to_bf16_bits(FLT_MAX), 0x7f80);  // rounds past the largest bf16: inf
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x7f7f8000u)), 0x7f80);  // tie, odd -> up -> inf
  EXPECT_EQ(float_to_bf16_bits(FLT_TRUE_MIN), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x00008000u)), 0x0000);  // tie to even: 0
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x00018000u)), 0x0002);  // tie to even: 2
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(from_bits(0x7f800001u))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(from_bits(0xffc00000u))));
}

TEST(DType, NamesSizesAndParse) {
  struct Row {
    DType t;
    const char* name;
    std::size_t size;
    bool weight;
  };
  const Row rows[] = {{DType::f32, "f32", 4, true},   {DType::f16, "f16", 2, true}, {DType::bf16, "bf16", 2, true},
                      {DType::f64, "f64", 8, false},  {DType::i64, "i64", 8, false}, {DType::i32, "i32", 4, false},
                      {DType::u32, "u32", 4, false},  {DType::u16, "u16", 2, false}, {DType::u8, "u8", 1, false}};
  for (const Row& r : rows) {
    EXPECT_EQ(to_string(r.t), r.name);
    EXPECT_EQ(dtype_size(r.t), r.size);
    EXPECT_EQ(is_weight_dtype(r.t), r.weight);
    EXPECT_EQ(parse_dtype(r.name), r.t);
  }
  EXPECT_EQ(parse_dtype("fp32"), DType::f32);
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_EQ(parse_dtype("float16"), DType::f16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp64"), DType::f64);
  EXPECT_EQ(parse_dtype("float64"), DType::f64);
  for (const char* bad : {"", "F32", "float", "f8", "bf16 ", "half", "f32\n"}) {
    try {
      parse_dtype(bad, "--dtype");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "--dtype");
      EXPECT_NE(std::string(e.what()).find("f32, f16, bf16"), std::string::npos) << e.what();
    }
  }
  try {
    parse_dtype("x");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dtype");
  }
}

TEST(DType, LoadStoreEveryWeightType) {
  const float vals[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 1e-3f, 3.0e38f};
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    unsigned char buf[8 * 7];
    for (int i = 0; i < 7; ++i) store_from_float(t, buf, std::size_t(i), vals[i]);
    for (int i = 0; i < 7; ++i) {
      float expect = vals[i];
      if (t == DType::f16) expect = fp16_bits_to_float(float_to_fp16_bits(vals[i]));
      if (t == DType::bf16) expect = bf16_bits_to_float(float_to_bf16_bits(vals[i]));
      const float got = load_as_float(t, buf, std::size_t(i));
      EXPECT_EQ(to_bits(got), to_bits(expect)) << to_string(t) << " " << vals[i];
    }
  }
  EXPECT_TRUE(std::isinf(load_as_float(DType::f16, std::array<std::uint16_t, 1>{0x7c00}.data(), 0)));
}

}  // namespace
