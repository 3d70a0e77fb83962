// sparsenm — the MVUE 2:4 rule for one group (train.hpp), host and device. The kernels
// (mvue24.cuh) and the CPU tests (tests/test_train_rules.cpp) compile this same code. Every
// float operation is a correctly rounded add / sub / mul / div (device: the _rn intrinsics, which
// are never contracted into FMAs), so host and device give identical bits.
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/train/pattern24.cuh"  // sel4, SPARSENM_HD

namespace sparsenm::train::detail {

#if defined(__CUDA_ARCH__)
SPARSENM_HD float rn_add(float a, float b) { return __fadd_rn(a, b); }
SPARSENM_HD float rn_sub(float a, float b) { return __fsub_rn(a, b); }
SPARSENM_HD float rn_mul(float a, float b) { return __fmul_rn(a, b); }
SPARSENM_HD float rn_div(float a, float b) { return __fdiv_rn(a, b); }
#else
SPARSENM_HD float rn_add(float a, float b) { return a + b; }
SPARSENM_HD float rn_sub(float a, float b) { return a - b; }
SPARSENM_HD float rn_mul(float a, float b) { return a * b; }
SPARSENM_HD float rn_div(float a, float b) { return a / b; }
#endif

/// MVUE of one group; returns positions (lo < hi) and the float values to store.
/// Branch-free form of the rule in train.hpp (capped and uncapped groups share the systematic
/// sampling code, so a warp does not diverge on the group type; one division per group).
struct MvueOut {
  int lo, hi;
  float vlo, vhi;
};
SPARSENM_HD MvueOut mvue_group(float x0, float x1, float x2, float x3, float u) {
  const float a0 = fabsf(x0), a1 = fabsf(x1), a2 = fabsf(x2), a3 = fabsf(x3);
  const float S = rn_add(rn_add(rn_add(a0, a1), a2), a3);
  if (!(S <= 3.402823466e38f)) return {0, 1, NAN, NAN};
  if (S == 0.f) return {0, 1, 0.f, 0.f};
  int m = 0;
  float am = a0;
  if (a1 > am) am = a1, m = 1;
  if (a2 > am) am = a2, m = 2;
  if (a3 > am) am = a3, m = 3;
  const float R = rn_sub(S, am);
  const bool capped = rn_add(am, am) >= S;
  const float xm = sel4(x0, x1, x2, x3, m);
  if (capped && R == 0.f) {
    const int j = m == 0 ? 1 : 0;
    return m < j ? MvueOut{m, j, xm, 0.f} : MvueOut{j, m, 0.f, xm};
  }
  const float k = rn_div(capped ? 1.0f : 2.0f, capped ? R : S);
  const float p0 = (capped && m == 0) ? 1.0f : rn_mul(a0, k);
  const float p1 = (capped && m == 1) ? 1.0f : rn_mul(a1, k);
  const float p2 = (capped && m == 2) ? 1.0f : rn_mul(a2, k);
  const float c1 = p0, c2 = rn_add(c1, p1), c3 = rn_add(c2, p2);
  const float u2 = rn_add(u, 1.0f);
  int i1 = int(u >= c1) + int(u >= c2) + int(u >= c3);
  int i2 = int(u2 >= c1) + int(u2 >= c2) + int(u2 >= c3);
  if (i2 <= i1) i2 = i1 + 1;
  if (i2 > 3) {
    i1 = 2;
    i2 = 3;
  }
  const float scale = capped ? R : S * 0.5f;
  auto value = [&](int i) {
    const float ai = sel4(a0, a1, a2, a3, i);
    return (capped && i == m) ? xm : (ai == 0.f ? 0.f : copysignf(scale, sel4(x0, x1, x2, x3, i)));
  };
  return {i1, i2, value(i1), value(i2)};
}

}  // namespace sparsenm::train::detail
