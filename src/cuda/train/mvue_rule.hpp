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

/// Number of the 4 values v[i] <= p (false for NaN). Device: set.le gives an all-ones word per
/// true comparison, summed by two 3-input adds (6 instructions, no predicates).
SPARSENM_HD int count_le4(const float (&v)[4], float p) {
#if defined(__CUDA_ARCH__)
  unsigned m[4];
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) asm("set.le.u32.f32 %0, %1, %2;" : "=r"(m[i]) : "f"(v[i]), "f"(p));
  return -int(m[0] + m[1] + m[2] + m[3]);
#else
  return int(v[0] <= p) + int(v[1] <= p) + int(v[2] <= p) + int(v[3] <= p);
#endif
}

/// The common case of mvue_group_dense in fewer operations (the GPU kernels' fast path). For a
/// finite group with at least 2 nonzeros it returns true (except in the rare cases below) with
/// the two kept positions lo < hi and their float values (vlo, vhi): exactly the nonzero outputs
/// of mvue_group_dense(x, u). It returns false (outputs unspecified; use mvue_group_dense) for
/// any other group, and when a point lands at or past the last interval end or both points
/// land in one interval (both only by rounding). With exactly 2 nonzeros a >= b the estimator's
/// arithmetic reproduces the group: a > b is the capped regime (x_a kept, R = b exactly); a == b
/// the other (L = a exactly, one point in each interval); fewer than 2 nonzeros leave every end
/// <= the point (count 4: false). Why it is the same arithmetic:
///  - E_i = running sums a_0 + ... + a_i (E_3 = S, the reference's order); F_i the same with
///    a_t replaced by +0 (x + 0 == x exactly, so F_3 == R, the reference's order);
///  - the reference picks the first candidate (a_i > 0, and i != t in the a_t > R regime) whose
///    running end exceeds the point; ends of non-candidates repeat the previous end, so this is
///    the count of ends <= point (the ends are non-decreasing), unless that count is 4.
///  - S finite <=> every a_i finite (a sum of non-negative terms; an overflow of S only sends a
///    finite group to the full rule).
SPARSENM_HD bool mvue_group_pair(const float (&x)[4], float u, int& lo, int& hi, float& vlo, float& vhi) {
  float a[4];
  SPARSENM_UNROLL
  for (int i = 0; i < 4; ++i) a[i] = fabsf(x[i]);
  int t = 0;
  float at = a[0];
  SPARSENM_UNROLL
  for (int i = 1; i < 4; ++i)
    if (a[i] > at) at = a[i], t = i;
  float E[4], F[4];
  E[0] = a[0];
  F[0] = t == 0 ? 0.0f : a[0];
  SPARSENM_UNROLL
  for (int i = 1; i < 4; ++i) {
    E[i] = rn_add(E[i - 1], a[i]);
    F[i] = rn_add(F[i - 1], t == i ? 0.0f : a[i]);
  }
  const float R = F[3], L = rn_mul(0.5f, E[3]);
  const bool capped = at > R;  // x_t kept exactly, one other drawn with p_i = a_i / R
  const float scale = capped ? R : L;
  const float p1 = rn_mul(u, scale), p2 = rn_add(p1, L);
  const float G[4] = {capped ? F[0] : E[0], capped ? F[1] : E[1], capped ? F[2] : E[2], capped ? F[3] : E[3]};
  const int first = count_le4(G, p1), second = count_le4(E, p2);
  const int other = capped ? t : second;
  const float v_first = copysignf(scale, sel4(x[0], x[1], x[2], x[3], first & 3));
  const float v_other = copysignf(capped ? at : L, sel4(x[0], x[1], x[2], x[3], other & 3));
  const bool first_lo = first < other;
  lo = first_lo ? first : other;
  hi = first_lo ? other : first;
  vlo = first_lo ? v_first : v_other;
  vhi = first_lo ? v_other : v_first;
  return E[3] <= 3.40282347e38f && first < 4 && (capped || (second < 4 && second != first));
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
