// sparsenm — the MVUE 2:4 rule for one group, host and device, bit for bit the CPU reference
// `sparsenm::mvue24` (src/prune/mvue.cpp; spec in src/prune/mvue.hpp and docs/PRUNE.md).
//
// Water-filling form (session 3): a_i = |x_i|, the level c solves sum_i min(a_i, c) = 2c, the
// element i is kept with probability p_i = min(a_i, c) / c and then has the value
// sign(x_i) * max(a_i, c) (= x_i / p_i). c needs no argmax:
//   m01 = max(a0, a1), n01 = min(a0, a1), m23 = max(a2, a3), n23 = min(a2, a3),
//   amax = max(m01, m23), R = (n01 + n23) + min(m01, m23)  (the sum of the three others),
//   S = R + amax, c = min(0.5 * S, R)    (= S/2 if amax <= R, else R: the capped case).
// The pair is drawn by systematic sampling: interval ends B_k = b_0 + ... + b_k (b_i = min(a_i, c),
// index order), points p1 = u * c and p2 = p1 + c; a point p selects #{k <= 2 : B_k <= p}.
// Corners (rounding only): if p2 >= B_3, the second is the last nonzero element; if the first
// is not below the second, it becomes the last nonzero element before the second.
// Special groups: non-finite (any NaN / inf): the two largest |x| (|NaN| = +inf, ties: lower
// index) kept unscaled; <= 2 nonzeros: unchanged (what the arithmetic gives for exactly 2
// nonzeros anyway); S overflowing (finite inputs): the rule on a_i / 4, values times 4.
// Every float operation is a correctly rounded add / mul (device: _rn intrinsics, never contracted
// into FMAs; the one FMA below computes u * c exactly rounded once, as the host's product).
//
// Fast path (mvue_pick, the kernels' common case): the same arithmetic branch-free, valid iff
// S < inf and p2 < B_3 (which implies p1 < B_2). Then the first point selects an interval before the last
// one, both selected intervals are non-empty, and first < second: b_i <= c and round-to-nearest
// is monotone, so B_{i-1} <= p1 implies B_i = rn(B_{i-1} + b_i) <= rn(p1 + c) = p2. With S
// finite the group is finite (the min/max keep NaN here, so a NaN reaches S). Invalid groups
// (< 2 nonzeros give c = 0 and p2 = B_3 = 0) take the full rule.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include "cuda/train/pattern24.cuh"  // sel4, popc4, SPARSENM_HD
#include "sparsenm/dtype.hpp"        // host fp16 / bf16 conversions (host emulation of the 16-bit helpers)

namespace sparsenm::train::detail {

#if defined(__CUDA_ARCH__)
SPARSENM_HD float rn_add(float a, float b) { return __fadd_rn(a, b); }
SPARSENM_HD float rn_mul(float a, float b) { return __fmul_rn(a, b); }
SPARSENM_HD bool finite_f(float x) { return isfinite(x); }
SPARSENM_HD bool nan_f(float x) { return isnan(x); }
SPARSENM_HD float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
SPARSENM_HD float min_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
/// The bits of 1.0f (0x3f800000) if a <= b, else 0 (false for NaN): one FSET.BF.
SPARSENM_HD std::uint32_t le_one(float a, float b) {
  float m;
  asm("set.le.f32.f32 %0, %1, %2;" : "=f"(m) : "f"(a), "f"(b));
  return __float_as_uint(m);
}

/// rn(u * c) for u = mvue_u23(v): (1 + u) is the float 0x3f800000 | (v >> 9), and one FMA rounds
/// (1 + u) c - c = u c exactly once.
SPARSENM_HD float mvue_point(std::uint32_t v, float c) {
  return __fmaf_rn(__uint_as_float((v >> 9) | 0x3f800000u), c, -c);
}
SPARSENM_HD float bits_f32(std::uint32_t u) { return __uint_as_float(u); }
SPARSENM_HD std::uint32_t f32_bits(float f) { return __float_as_uint(f); }
#else
SPARSENM_HD float rn_add(float a, float b) { return a + b; }
SPARSENM_HD float rn_mul(float a, float b) { return a * b; }
SPARSENM_HD bool finite_f(float x) { return std::isfinite(x); }
SPARSENM_HD bool nan_f(float x) { return std::isnan(x); }
SPARSENM_HD float max_nan(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b); }
SPARSENM_HD float min_nan(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b); }
SPARSENM_HD std::uint32_t le_one(float a, float b) { return a <= b ? 0x3f800000u : 0u; }

SPARSENM_HD float mvue_point(std::uint32_t v, float c) { return rn_mul(mvue_u23(v), c); }
SPARSENM_HD float bits_f32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
SPARSENM_HD std::uint32_t f32_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
#endif

/// The sum R of the three smaller magnitudes and S = R + max (see the top of the file).
SPARSENM_HD void mvue_sums(const float (&a)[4], float& R, float& S) {
  const float m01 = fmaxf(a[0], a[1]), n01 = fminf(a[0], a[1]), m23 = fmaxf(a[2], a[3]), n23 = fminf(a[2], a[3]);
  R = rn_add(rn_add(n01, n23), fminf(m01, m23));
  S = rn_add(R, fmaxf(m01, m23));
}

/// The dense MVUE output of group x (at most 2 nonzeros) for uniform u = mvue_u23(v) in [0, 1).
SPARSENM_HD void mvue_group_dense(const float (&x)[4], float u, float (&out)[4]) {
  float a[4];
  bool finite = true;
  int nonzero = 0;
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) {
    out[i] = 0.0f;
    a[i] = fabsf(x[i]);
    finite = finite && finite_f(x[i]);
    nonzero += a[i] > 0.0f;
  }
  if (!finite) {
    float k[4];
    SPARSENM_UNROLL
    for (int i = 0; i < 4; ++i) k[i] = nan_f(x[i]) ? INFINITY : a[i];
    int k1 = 0;
    float b1 = k[0];
    SPARSENM_UNROLL
    for (int i = 1; i < 4; ++i)
      if (k[i] > b1) b1 = k[i], k1 = i;
    int k2 = k1 == 0 ? 1 : 0;
    float b2 = sel4(k[0], k[1], k[2], k[3], k2);
    SPARSENM_UNROLL
    for (int i = 0; i < 4; ++i)
      if (i != k1 && k[i] > b2) b2 = k[i], k2 = i;
    SPARSENM_UNROLL
    for (int i = 0; i < 4; ++i) out[i] = (i == k1 || i == k2) ? x[i] : 0.0f;
    return;
  }
  if (nonzero <= 2) {
    SPARSENM_UNROLL
    for (int i = 0; i < 4; ++i) out[i] = x[i];
    return;
  }
  float R, S, scale = 1.0f;
  mvue_sums(a, R, S);
  if (!(S <= FLT_MAX)) {  // finite group whose sum overflows: the rule on a / 4
    scale = 4.0f;
    SPARSENM_UNROLL
    for (int i = 0; i < 4; ++i) a[i] = rn_mul(0.25f, a[i]);
    mvue_sums(a, R, S);
  }
  const float c = fminf(rn_mul(0.5f, S), R);  // > 0: at least 3 nonzeros
  float B[4];
  B[0] = fminf(a[0], c);
  SPARSENM_UNROLL
  for (int i = 1; i < 4; ++i) B[i] = rn_add(B[i - 1], fminf(a[i], c));
  const float p1 = rn_mul(u, c), p2 = rn_add(p1, c);
  int second = 3, first = 0;
  if (p2 < B[3]) {
    second = int(B[0] <= p2) + int(B[1] <= p2) + int(B[2] <= p2);
  } else {  // rounding only: the last nonzero element
    while (second > 0 && sel4(a[0], a[1], a[2], a[3], second) == 0.0f) --second;
  }
  first = int(B[0] <= p1) + int(B[1] <= p1) + int(B[2] <= p1);
  if (first >= second) {  // rounding only: the last nonzero element before the second
    first = second - 1;
    while (first > 0 && sel4(a[0], a[1], a[2], a[3], first) == 0.0f) --first;
  }
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i)
    if (i == first || i == second) out[i] = copysignf(rn_mul(fmaxf(a[i], c), scale), x[i]);
}

/// The inverse of 127 modulo 2^32 (Newton: each step doubles the correct low bits).
constexpr std::uint32_t kInv127 = [] {
  std::uint32_t x = 127u;  // correct to 7 bits: 127 * 127 = 1 mod 2^7
  for (int i = 0; i < 4; ++i) x *= 2u - 127u * x;
  return x;
}();
static_assert(127u * kInv127 == 1u);

/// The kernels' fast path for one group (x_i as float, Philox word v): the level c and the two
/// counts tf = #{B_0, B_1 <= p1} (the first kept index) and ts = #{B_1, B_2 <= p2} (the second
/// is 1 + ts), each as a sum of FSET.BF words (count * 0x3f800000 = 127 * 2^23). Returns
/// false where the full rule must run: S not finite (NaN reaches S: the min/max keep NaN) or
/// p2 >= B_3 (which covers p1 >= B_2: then p2 = rn(p1 + c) >= rn(B_2 + c) >= B_3).
/// SASS: 6 FMNMX + 3 FADD + FMUL + FMNMX (c), 4 FMNMX + 3 FADD (ends), FFMA + FADD (points),
/// 4 FSET + 2 IADD (counts), 2 FSETP (validity).
SPARSENM_HD bool mvue_pick(float x0, float x1, float x2, float x3, std::uint32_t v, float& c, std::uint32_t& tf,
                           std::uint32_t& ts) {
  const float a0 = fabsf(x0), a1 = fabsf(x1), a2 = fabsf(x2), a3 = fabsf(x3);
  const float m01 = max_nan(a0, a1), n01 = min_nan(a0, a1), m23 = max_nan(a2, a3), n23 = min_nan(a2, a3);
  const float R = rn_add(rn_add(n01, n23), min_nan(m01, m23)), S = rn_add(R, max_nan(m01, m23));
  c = fminf(rn_mul(0.5f, S), R);
  const float B0 = fminf(a0, c), B1 = rn_add(B0, fminf(a1, c)), B2 = rn_add(B1, fminf(a2, c)),
              B3 = rn_add(B2, fminf(a3, c));
  const float p1 = mvue_point(v, c), p2 = rn_add(p1, c);
  tf = le_one(B0, p1) + le_one(B1, p1);
  ts = le_one(B1, p2) + le_one(B2, p2);  // B_0 <= c <= p2 always
  return S < INFINITY && p2 < B3;
}

/// PRMT selector of the kept pair (first, second) = (f, 1 + s') from mvue_pick's counts
/// tf = 127 f 2^23, ts = 127 s' 2^23: bytes 2f, 2f+1, 2s, 2s+1 of (x0 | x1 << 16, x2 | x3 << 16),
/// i.e. 0x3210 + 0x22 (f + 256 s'). ts + tf / 256 = 127 (f + 256 s') 2^15 exactly (< 2^31), and
/// 127 * kInv127 = 1: one LEA.HI, one SHF, one IMAD.
SPARSENM_HD std::uint32_t mvue_selector(std::uint32_t tf, std::uint32_t ts) {
  return ((ts + (tf >> 8)) >> 15) * (0x22u * kInv127) + 0x3210u;
}
/// Adds the nibble f + 4 s' (the second's constant 1 is in the start value 0x4444) of group
/// pos (0..3) to a 16-bit nibble word: ts + tf / 4 = 127 (f + 4 s') 2^21 exactly (< 2^32).
SPARSENM_HD std::uint32_t mvue_nibble_add(std::uint32_t acc, std::uint32_t tf, std::uint32_t ts, int pos) {
  return ((ts + (tf >> 2)) >> 21) * (kInv127 << (4 * pos)) + acc;
}
/// f and 1 + s' as integers (the f32 path).
SPARSENM_HD int mvue_first(std::uint32_t tf) { return int((tf >> 23) * kInv127); }
SPARSENM_HD int mvue_second(std::uint32_t ts) { return 1 + int((ts >> 23) * kInv127); }

// ---- 16-bit element helpers (f16: kBf16 = false; bf16: true), device intrinsics or host emulation

template <bool kBf16>
SPARSENM_HD float lo16_f(std::uint32_t w) {
#if defined(__CUDA_ARCH__)
  if constexpr (kBf16) return __uint_as_float(w << 16);
  else return __low2float(*reinterpret_cast<const __half2*>(&w));
#else
  return kBf16 ? bf16_bits_to_float(std::uint16_t(w)) : fp16_bits_to_float(std::uint16_t(w));
#endif
}
template <bool kBf16>
SPARSENM_HD float hi16_f(std::uint32_t w) {
#if defined(__CUDA_ARCH__)
  if constexpr (kBf16) return __uint_as_float(w & 0xffff0000u);
  else return __high2float(*reinterpret_cast<const __half2*>(&w));
#else
  return lo16_f<kBf16>(w >> 16);
#endif
}
/// Both halves of w as f32 (lo16_f, hi16_f). kFma (bf16, docs/PERF-train.md "Session 8 (MVUE)"):
/// without the ALU pipe's LOP3 of hi16_f: one mul.wide.u32 w * 2^16 (IMAD.WIDE.U32, FMA pipe: its
/// low word is lo << 16, its high word w >> 16) and the high word * 2^16 (IMAD.U32 in the MVUE
/// kernels). Same values; measured slower than the LOP3 form in the token-major kernel (variant 21).
template <bool kBf16, bool kFma = false>
SPARSENM_HD void halves16_f(std::uint32_t w, float& lo, float& hi) {
#if defined(__CUDA_ARCH__)
  if constexpr (kBf16 && kFma) {
    std::uint32_t l, h;
    asm("{\n\t.reg .b64 t;\n\tmul.wide.u32 t, %2, 65536;\n\tmov.b64 {%0, %1}, t;\n\t}" : "=r"(l), "=r"(h) : "r"(w));
    lo = __uint_as_float(l), hi = __uint_as_float(h * 65536u);
    return;
  }
#endif
  lo = lo16_f<kBf16>(w), hi = hi16_f<kBf16>(w);
}
/// The word (r, r) with r = c rounded to nearest even in the 16-bit type.
template <bool kBf16>
SPARSENM_HD std::uint32_t pack16x2(float c) {
#if defined(__CUDA_ARCH__)
  if constexpr (kBf16) {
    const __nv_bfloat162 h = __float2bfloat162_rn(c);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  } else {
    const __half2 h = __float2half2_rn(c);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  }
#else
  const std::uint32_t r = kBf16 ? float_to_bf16_bits(c) : float_to_fp16_bits(c);
  return r | (r << 16);
#endif
}
/// The word (r0, r1) with r_i = c_i rounded to nearest even in the 16-bit type (one F2FP).
template <bool kBf16>
SPARSENM_HD std::uint32_t pack16_pair(float c0, float c1) {
#if defined(__CUDA_ARCH__)
  if constexpr (kBf16) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(c0, c1);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  } else {
    const __half2 h = __floats2half2_rn(c0, c1);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  }
#else
  return (pack16x2<kBf16>(c0) & 0xffffu) | (pack16x2<kBf16>(c1) << 16);
#endif
}
/// The 16-bit word of y rounded to nearest even, NaN as the host conversion writes it (dtype.hpp:
/// f16 sign | 0x7e00, bf16 the top half with the quiet bit), so the full path matches the CPU
/// reference bit for bit even for NaN outputs.
template <bool kBf16>
SPARSENM_HD std::uint16_t raw16_of(float y) {
#if defined(__CUDA_ARCH__)
  if (isnan(y)) {
    const std::uint32_t u = __float_as_uint(y);
    return std::uint16_t(kBf16 ? ((u >> 16) | 0x40u) : (((u >> 16) & 0x8000u) | 0x7e00u));
  }
  return std::uint16_t(pack16x2<kBf16>(y));
#else
  return kBf16 ? float_to_bf16_bits(y) : float_to_fp16_bits(y);
#endif
}
/// Per half: max(|v_h|, c_h) with the sign of v_h (v, c not NaN, c >= 0): the stored value
/// sign(x) * max(a, c) rounded, since rounding is monotone and a is representable.
template <bool kBf16>
SPARSENM_HD std::uint32_t max_abs_signed16(std::uint32_t v, std::uint32_t c2) {
#if defined(__CUDA_ARCH__)
  std::uint32_t m;
  if constexpr (kBf16) {
    const __nv_bfloat162 h =
        __hmax2(__habs2(*reinterpret_cast<const __nv_bfloat162*>(&v)), *reinterpret_cast<const __nv_bfloat162*>(&c2));
    m = *reinterpret_cast<const std::uint32_t*>(&h);
  } else {
    const __half2 h = __hmax2(__habs2(*reinterpret_cast<const __half2*>(&v)), *reinterpret_cast<const __half2*>(&c2));
    m = *reinterpret_cast<const std::uint32_t*>(&h);
  }
  return m | (v & 0x80008000u);
#else
  std::uint32_t out = 0;
  for (int s = 0; s < 32; s += 16) {
    const std::uint32_t a = (v >> s) & 0x7fffu, ch = (c2 >> s) & 0xffffu;
    const std::uint32_t m = lo16_f<kBf16>(a) < lo16_f<kBf16>(ch) ? ch : a;
    out |= (m | ((v >> s) & 0x8000u)) << s;
  }
  return out;
#endif
}
/// max_abs_signed16 with c = half kHi of the word cp broadcast (HMNMX2 operand swizzle).
template <bool kBf16, int kHi>
SPARSENM_HD std::uint32_t max_abs_signed16_h(std::uint32_t v, std::uint32_t cp) {
#if defined(__CUDA_ARCH__)
  std::uint32_t m;
  if constexpr (kBf16) {
    const __nv_bfloat162 c = *reinterpret_cast<const __nv_bfloat162*>(&cp);
    const __nv_bfloat162 h = __hmax2(__habs2(*reinterpret_cast<const __nv_bfloat162*>(&v)),
                                     kHi ? __high2bfloat162(c) : __low2bfloat162(c));
    m = *reinterpret_cast<const std::uint32_t*>(&h);
  } else {
    const __half2 c = *reinterpret_cast<const __half2*>(&cp);
    const __half2 h = __hmax2(__habs2(*reinterpret_cast<const __half2*>(&v)), kHi ? __high2half2(c) : __low2half2(c));
    m = *reinterpret_cast<const std::uint32_t*>(&h);
  }
  return m | (v & 0x80008000u);
#else
  const std::uint32_t h = kHi ? cp >> 16 : cp & 0xffffu;
  return max_abs_signed16<kBf16>(v, h | (h << 16));
#endif
}
/// The byte permute of (a, b) (bytes 0-3 of a, 4-7 of b) by the 4 selector nibbles (PRMT).
SPARSENM_HD std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t s) {
#if defined(__CUDA_ARCH__)
  std::uint32_t r;  // the selector nibbles are 0-7 here: no masking (__byte_perm would add a LOP3)
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(s));
  return r;
#else
  const std::uint64_t ab = std::uint64_t(a) | (std::uint64_t(b) << 32);
  std::uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= std::uint32_t((ab >> (8 * ((s >> (4 * k)) & 7u))) & 0xffu) << (8 * k);
  return r;
#endif
}

/// Positions of a group's stored values by the canonical condense rule (format.hpp): the
/// nonzero raw words (magnitude bits != 0) ascending, then the lowest free positions.
/// (v points to 4 words; a pointer, not a reference to an array: g++ 12 with
/// -fsanitize=undefined mis-instruments indexing through array references here.)
template <class Raw>
SPARSENM_HD void condense_positions(const Raw* v, int& lo, int& hi) {
  const unsigned mag = sizeof(Raw) == 2 ? 0x7fffu : 0x7fffffffu;
  unsigned nz = 0;
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) nz |= ((unsigned(v[i]) & mag) != 0u ? 1u : 0u) << i;
  unsigned keep = 0;
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i)
    if ((nz >> i) & 1u && popc4(keep) < 2) keep |= 1u << i;
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i)
    if (!((keep >> i) & 1u) && popc4(keep) < 2) keep |= 1u << i;
  lo = lowest_bit(keep);
  hi = highest_bit(keep);
}

/// One hw24 window of 16-bit elements by the full rule: x = the 4 raw halves of (w01, w23);
/// returns the stored pair (lo | hi << 16) and the nibble.
template <bool kBf16>
SPARSENM_HD void mvue_window16_full(std::uint32_t w01, std::uint32_t w23, std::uint32_t v, std::uint32_t& pair,
                                    std::uint32_t& nib) {
  const float x[4] = {lo16_f<kBf16>(w01), hi16_f<kBf16>(w01), lo16_f<kBf16>(w23), hi16_f<kBf16>(w23)};
  float y[4];
  mvue_group_dense(x, mvue_u23(v), y);
  std::uint16_t r[4];
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) r[i] = raw16_of<kBf16>(y[i]);
  int lo, hi;
  condense_positions<std::uint16_t>(r, lo, hi);
  pair = std::uint32_t(sel4(r[0], r[1], r[2], r[3], lo)) | (std::uint32_t(sel4(r[0], r[1], r[2], r[3], hi)) << 16);
  nib = unsigned(lo) | (unsigned(hi) << 2);
}

/// One hw24 window of 16-bit elements by the fast path: the stored pair and the nibble added
/// at position pos of nib_acc (mvue_nibble_add); false: use mvue_window16_full. The kept values
/// are nonzero words (an input value, or c >= the least positive value of the type since >= 2
/// nonzeros), so the condense positions are the kept pair (first < second).
template <bool kBf16>
SPARSENM_HD bool mvue_window16(std::uint32_t w01, std::uint32_t w23, std::uint32_t v, std::uint32_t& pair,
                               std::uint32_t& nib_acc, int pos) {
  float c;
  std::uint32_t tf, ts;
  const bool ok = mvue_pick(lo16_f<kBf16>(w01), hi16_f<kBf16>(w01), lo16_f<kBf16>(w23), hi16_f<kBf16>(w23), v, c, tf, ts);
  pair = max_abs_signed16<kBf16>(prmt(w01, w23, mvue_selector(tf, ts)), pack16x2<kBf16>(c));
  nib_acc = mvue_nibble_add(nib_acc, tf, ts, pos);
  return ok;
}

/// Two hw24 windows (a: words w01a, w23a, Philox word va, nibble position pa; b likewise) by the
/// fast path, the two levels converted by one F2FP; false if either needs the full rule.
template <bool kBf16>
SPARSENM_HD bool mvue_window16x2(std::uint32_t w01a, std::uint32_t w23a, std::uint32_t va, std::uint32_t w01b,
                                 std::uint32_t w23b, std::uint32_t vb, std::uint32_t& pair_a, std::uint32_t& pair_b,
                                 std::uint32_t& nib_acc, int pa, int pb) {
  float ca, cb;
  std::uint32_t tfa, tsa, tfb, tsb;
  const bool oka = mvue_pick(lo16_f<kBf16>(w01a), hi16_f<kBf16>(w01a), lo16_f<kBf16>(w23a), hi16_f<kBf16>(w23a), va, ca, tfa, tsa);
  const bool okb = mvue_pick(lo16_f<kBf16>(w01b), hi16_f<kBf16>(w01b), lo16_f<kBf16>(w23b), hi16_f<kBf16>(w23b), vb, cb, tfb, tsb);
  const std::uint32_t cp = pack16_pair<kBf16>(ca, cb);
  pair_a = max_abs_signed16_h<kBf16, 0>(prmt(w01a, w23a, mvue_selector(tfa, tsa)), cp);
  pair_b = max_abs_signed16_h<kBf16, 1>(prmt(w01b, w23b, mvue_selector(tfb, tsb)), cp);
  nib_acc = mvue_nibble_add(mvue_nibble_add(nib_acc, tfa, tsa, pa), tfb, tsb, pb);
  return oka && okb;
}

// ---- ALU-lean form of the 16-bit fast path (session 5, docs/PERF-train.md "Session 5") ----
// mvue_pick's counts feed mvue_selector / mvue_nibble_add through LEA.HI / SHF / IADD: integer
// work on the ALU pipe, which on Hopper issues at half rate and binds the 16-bit MVUE kernels
// (51-58 % of their instructions are ALU-pipe ops; bf16 adds the LOP3 of its conversions). The
// lean form keeps the four comparisons as FSET.BF floats (1.0f / 0.0f) and combines them with
// exact small-integer float arithmetic (FADD / FFMA: the FMA pipes) into
//   sel  = 2^23 + 0x3210 + 0x22 (f + 256 s')  whose bits' low 16 are mvue_selector's PRMT selector
//   nibf = 2^23 + the nibble word (4 groups: + 16^pos (f + 4 s') each; start 2^23 + 0x4444),
// every value an integer below 2^24, so each FADD / FFMA is exact and the bits of 2^23 + k are
// 0x4B000000 + k. Same c, points, comparisons and validity as mvue_pick: outputs bit-identical.

/// 1.0f if a <= b, else 0.0f (false for NaN): one FSET.BF.
SPARSENM_HD float le_f(float a, float b) {
#if defined(__CUDA_ARCH__)
  float m;
  asm("set.le.f32.f32 %0, %1, %2;" : "=f"(m) : "f"(a), "f"(b));
  return m;
#else
  return a <= b ? 1.0f : 0.0f;
#endif
}
/// a * b + c for exact small-integer operands (one FFMA; the host product and sum are exact too).
SPARSENM_HD float fma_exact(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return a * b + c;
#endif
}
constexpr float kMvueLeanBase = 8388608.0f;                  ///< 2^23
constexpr float kMvueLeanSel0 = 8388608.0f + float(0x3210);  ///< 2^23 + the selector of (f, s) = (0, 1)
constexpr float kMvueLeanNib0 = 8388608.0f + float(0x4444);  ///< 2^23 + the nibble word's start value

/// mvue_pick with the counts as floats: F = f (0..2), Sc = s' (0..2). (Session 8's one-FSETP
/// validity, variant 22, measured slower and was dropped in session 9.)
SPARSENM_HD bool mvue_pick_lean(float x0, float x1, float x2, float x3, std::uint32_t v, float& c, float& F, float& Sc) {
  const float a0 = fabsf(x0), a1 = fabsf(x1), a2 = fabsf(x2), a3 = fabsf(x3);
  const float m01 = max_nan(a0, a1), n01 = min_nan(a0, a1), m23 = max_nan(a2, a3), n23 = min_nan(a2, a3);
  const float R = rn_add(rn_add(n01, n23), min_nan(m01, m23)), S = rn_add(R, max_nan(m01, m23));
  c = fminf(rn_mul(0.5f, S), R);
  const float B0 = fminf(a0, c), B1 = rn_add(B0, fminf(a1, c)), B2 = rn_add(B1, fminf(a2, c)),
              B3 = rn_add(B2, fminf(a3, c));
  const float p1 = mvue_point(v, c), p2 = rn_add(p1, c);
  F = rn_add(le_f(B0, p1), le_f(B1, p1));
  Sc = rn_add(le_f(B1, p2), le_f(B2, p2));
  return S < INFINITY && p2 < B3;
}
/// The PRMT selector word of the kept pair from the float counts (low 16 bits = mvue_selector).
SPARSENM_HD std::uint32_t mvue_selector_lean(float F, float Sc) {
  return f32_bits(fma_exact(Sc, float(0x2200), fma_exact(F, float(0x22), kMvueLeanSel0)));
}
/// Adds the nibble f + 4 s' of group pos (0..3) to the float nibble accumulator.
SPARSENM_HD float mvue_nibble_add_lean(float nibf, float F, float Sc, int pos) {
  const float w = float(1u << (4 * pos));
  return fma_exact(Sc, 4.0f * w, fma_exact(F, w, nibf));
}

/// mvue_window16x2 in the lean form: nibf is the float nibble accumulator (kMvueLeanNib0 at the
/// start of each 4 groups; the nibble word is the low 16 bits of f32_bits(nibf)).
/// kFma (session 8, variant 23): the bf16 conversions of halves16_f<kBf16, true>.
template <bool kBf16, bool kFma = false>
SPARSENM_HD bool mvue_window16x2_lean(std::uint32_t w01a, std::uint32_t w23a, std::uint32_t va, std::uint32_t w01b,
                                      std::uint32_t w23b, std::uint32_t vb, std::uint32_t& pair_a, std::uint32_t& pair_b,
                                      float& nibf, int pa, int pb) {
  float ca, cb, Fa, Sa, Fb, Sb, x0, x1, x2, x3;
  halves16_f<kBf16, kFma>(w01a, x0, x1), halves16_f<kBf16, kFma>(w23a, x2, x3);
  const bool oka = mvue_pick_lean(x0, x1, x2, x3, va, ca, Fa, Sa);
  halves16_f<kBf16, kFma>(w01b, x0, x1), halves16_f<kBf16, kFma>(w23b, x2, x3);
  const bool okb = mvue_pick_lean(x0, x1, x2, x3, vb, cb, Fb, Sb);
  const std::uint32_t cp = pack16_pair<kBf16>(ca, cb);
  pair_a = max_abs_signed16_h<kBf16, 0>(prmt(w01a, w23a, mvue_selector_lean(Fa, Sa)), cp);
  pair_b = max_abs_signed16_h<kBf16, 1>(prmt(w01b, w23b, mvue_selector_lean(Fb, Sb)), cp);
  nibf = mvue_nibble_add_lean(mvue_nibble_add_lean(nibf, Fa, Sa, pa), Fb, Sb, pb);
  return oka && okb;
}

/// One hw24 window of f32 elements (raw words r[4]) by the full rule.
SPARSENM_HD void mvue_window32_full(const std::uint32_t (&r)[4], std::uint32_t v, std::uint32_t& vlo,
                                    std::uint32_t& vhi, std::uint32_t& nib) {
  float x[4], y[4];
  std::uint32_t o[4];
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) x[i] = bits_f32(r[i]);
  mvue_group_dense(x, mvue_u23(v), y);
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) o[i] = f32_bits(y[i]);
  int lo, hi;
  condense_positions<std::uint32_t>(o, lo, hi);
  vlo = sel4(o[0], o[1], o[2], o[3], lo);
  vhi = sel4(o[0], o[1], o[2], o[3], hi);
  nib = unsigned(lo) | (unsigned(hi) << 2);
}

/// One hw24 window of f32 elements by the fast path (nibble as in mvue_window16); false: use
/// mvue_window32_full.
SPARSENM_HD bool mvue_window32(const std::uint32_t (&r)[4], std::uint32_t v, std::uint32_t& vlo, std::uint32_t& vhi,
                               std::uint32_t& nib_acc, int pos) {
  float c;
  std::uint32_t tf, ts;
  const float x[4] = {bits_f32(r[0]), bits_f32(r[1]), bits_f32(r[2]), bits_f32(r[3])};
  const bool ok = mvue_pick(x[0], x[1], x[2], x[3], v, c, tf, ts);
  const int f = mvue_first(tf), s = mvue_second(ts);
  const float xf = sel4(x[0], x[1], x[2], x[3], f & 3), xs = sel4(x[0], x[1], x[2], x[3], s & 3);
  vlo = f32_bits(copysignf(fmaxf(fabsf(xf), c), xf));
  vhi = f32_bits(copysignf(fmaxf(fabsf(xs), c), xs));
  nib_acc = mvue_nibble_add(nib_acc, tf, ts, pos);
  return ok;
}

}  // namespace sparsenm::train::detail
