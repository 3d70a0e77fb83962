// sparsenm tests — a host reference of the MVUE 2:4 rule for one group of four (the CPU
// reference's dense rule, src/prune/mvue.hpp text, written out here independently of src/):
// shared by the CPU rule test (tests/test_train_rules.cpp) and the GPU MVUE test
// (tests/gpu/test_train_mvue.cu).
//
//   ref_mvue(x, u, out): out = MVUE(x) for the uniform draw u in [0, 1).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace sparsenm::test {

inline void ref_mvue(const float x[4], float u, float out[4]) {
  float a[4];
  bool finite = true;
  int nonzero = 0;
  for (int i = 0; i < 4; ++i) {
    out[i] = 0.f;
    a[i] = std::fabs(x[i]);
    finite = finite && std::isfinite(x[i]);
    nonzero += a[i] > 0.f;
  }
  if (!finite) {
    float k[4];
    for (int i = 0; i < 4; ++i) k[i] = std::isnan(x[i]) ? INFINITY : a[i];
    const int k1 = int(std::max_element(k, k + 4) - k);
    int k2 = -1;
    for (int i = 0; i < 4; ++i)
      if (i != k1 && (k2 < 0 || k[i] > k[k2])) k2 = i;
    out[k1] = x[k1];
    out[k2] = x[k2];
    return;
  }
  if (nonzero <= 2) {
    for (int i = 0; i < 4; ++i) out[i] = x[i];
    return;
  }
  const int t = int(std::max_element(a, a + 4) - a);
  float R = 0.f;
  for (int i = 0; i < 4; ++i)
    if (i != t) R += a[i];
  std::vector<int> cand;
  if (a[t] > R) {
    const float p = u * R;
    float end = 0.f;
    int chosen = -1;
    for (int i = 0; i < 4; ++i)
      if (i != t && a[i] > 0.f) {
        end += a[i];
        cand.push_back(i);
        if (chosen < 0 && p < end) chosen = i;
      }
    if (chosen < 0) chosen = cand.back();
    out[t] = x[t];
    out[chosen] = std::copysign(R, x[chosen]);
    return;
  }
  const float S = ((a[0] + a[1]) + a[2]) + a[3], L = 0.5f * S, p1 = u * L, p2 = p1 + L;
  float end = 0.f;
  int f = -1, s2 = -1;
  for (int i = 0; i < 4; ++i)
    if (a[i] > 0.f) {
      end += a[i];
      cand.push_back(i);
      if (f < 0 && p1 < end) f = i;
      if (s2 < 0 && p2 < end) s2 = i;
    }
  if (f < 0) f = cand.back();
  if (s2 < 0) s2 = cand.back();
  if (s2 == f) {
    s2 = -1;
    for (int i : cand)
      if (i > f && s2 < 0) s2 = i;
    for (auto it = cand.rbegin(); it != cand.rend(); ++it)
      if (*it < f && s2 < 0) s2 = *it;
  }
  out[f] = std::copysign(L, x[f]);
  out[s2] = std::copysign(L, x[s2]);
}

}  // namespace sparsenm::test
