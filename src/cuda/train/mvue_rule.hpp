// sparsenm — the MVUE 2:4 rule for one group, host and device, bit for bit the CPU reference
// `sparsenm::mvue24` (src/prune/mvue.hpp, the prune helper's spec):
//   non-finite group: the two largest |x| (|NaN| = +inf, ties: lower index) kept unscaled;
//   <= 2 nonzeros: the group unchanged;
//   S = ((a0 + a1) + a2) + a3, t = first argmax, R = sum of the other a_i in index order from 0;
//   a_t > R: x_t kept, one other i (a_i > 0) chosen by the point u*R against running sums of a_i
//     in index order (first end > point; else the last candidate), value copysign(R, x_i);
//   else L = 0.5 * S, points u*L and u*L + L against running sums of the a_i > 0 (first end >
//     point, else the last candidate; a rounding collision takes the next candidate, else the
//     previous one), both values copysign(L, x_i).
// The kernels (mvue24.cuh) and the CPU tests compile this same code. Every float operation is a
// correctly rounded add / mul (device: _rn intrinsics, never contracted into FMAs).
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/train/pattern24.cuh"  // sel4, SPARSENM_HD

namespace sparsenm::train::detail {

#if defined(__CUDA_ARCH__)
SPARSENM_HD float rn_add(float a, float b) { return __fadd_rn(a, b); }
SPARSENM_HD float rn_mul(float a, float b) { return __fmul_rn(a, b); }
SPARSENM_HD bool finite_f(float x) { return isfinite(x); }
SPARSENM_HD bool nan_f(float x) { return isnan(x); }
#else
SPARSENM_HD float rn_add(float a, float b) { return a + b; }
SPARSENM_HD float rn_mul(float a, float b) { return a * b; }
SPARSENM_HD bool finite_f(float x) { return std::isfinite(x); }
SPARSENM_HD bool nan_f(float x) { return std::isnan(x); }
#endif

/// The dense MVUE output of group x (at most 2 nonzeros) for uniform u in [0, 1).
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
  int t = 0;
  float at = a[0];
  SPARSENM_UNROLL
  for (int i = 1; i < 4; ++i)
    if (a[i] > at) at = a[i], t = i;
  float R = 0.0f;
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i)
    if (i != t) R = rn_add(R, a[i]);
  if (at > R) {
    const float p = rn_mul(u, R);
    float end = 0.0f;
    int chosen = -1, last = -1;
    SPARSENM_UNROLL
    for (int i = 0; i < 4; ++i) {
      if (i == t || a[i] == 0.0f) continue;
      end = rn_add(end, a[i]);
      last = i;
      if (chosen < 0 && p < end) chosen = i;
    }
    if (chosen < 0) chosen = last;
    SPARSENM_UNROLL
    for (int i = 0; i < 4; ++i) out[i] = i == t ? x[i] : (i == chosen ? copysignf(R, x[i]) : 0.0f);
    return;
  }
  const float S = rn_add(rn_add(rn_add(a[0], a[1]), a[2]), a[3]);
  const float L = rn_mul(0.5f, S);
  const float p1 = rn_mul(u, L);
  const float p2 = rn_add(p1, L);
  float end = 0.0f;
  int first = -1, second = -1, last = -1;
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) {
    if (a[i] == 0.0f) continue;
    end = rn_add(end, a[i]);
    last = i;
    if (first < 0 && p1 < end) first = i;
    if (second < 0 && p2 < end) second = i;
  }
  if (first < 0) first = last;
  if (second < 0) second = last;
  if (second == first) {  // only by rounding: the next candidate, else the previous one
    int alt = -1;
    SPARSENM_UNROLL
    for (int i = 0; i < 4; ++i)
      if (i > first && alt < 0 && a[i] > 0.0f) alt = i;
    SPARSENM_UNROLL
    for (int i = 3; i >= 0; --i)
      if (i < first && alt < 0 && a[i] > 0.0f) alt = i;
    second = alt;
  }
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) out[i] = (i == first || i == second) ? copysignf(L, x[i]) : 0.0f;
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

}  // namespace sparsenm::train::detail
