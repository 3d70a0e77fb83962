// sparsenm tests — a host reference of the MVUE 2:4 rule for one group of four (the CPU
// reference's dense rule as docs/PRUNE.md and src/prune/mvue.hpp state it: water-filling level
// c, systematic sampling over min(a_i, c), corner rules; written out here independently of src/):
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
  // water-filling level c: sum min(a_i, c) = 2c, from the three smaller magnitudes R and the
  // largest; a sum that overflows runs on a / 4 (values times 4)
  float scale = 1.f;
  auto level = [&](float& R, float& S) {
    const float m01 = std::max(a[0], a[1]), n01 = std::min(a[0], a[1]);
    const float m23 = std::max(a[2], a[3]), n23 = std::min(a[2], a[3]);
    R = (n01 + n23) + std::min(m01, m23);
    S = R + std::max(m01, m23);
  };
  float R, S;
  level(R, S);
  if (std::isinf(S)) {
    scale = 4.f;
    for (float& v : a) v *= 0.25f;
    level(R, S);
  }
  const float c = std::min(0.5f * S, R);
  float end[4], run = 0.f;
  for (int i = 0; i < 4; ++i) end[i] = run = (i == 0 ? std::min(a[0], c) : run + std::min(a[i], c));
  const float p1 = u * c, p2 = p1 + c;
  std::vector<int> cand;  // elements with a non-empty interval
  for (int i = 0; i < 4; ++i)
    if (a[i] > 0.f) cand.push_back(i);
  auto pick = [&](float p) {  // the first interval whose end exceeds p, among ends 0..2
    int k = 0;
    while (k < 3 && end[k] <= p) ++k;
    return k;
  };
  const int second = p2 < end[3] ? pick(p2) : cand.back();
  int first = pick(p1);
  if (first >= second) {
    first = -1;
    for (int i : cand)
      if (i < second) first = i;
  }
  for (int i : {first, second}) out[i] = std::copysign(std::max(a[i], c) * scale, x[i]);
}

}  // namespace sparsenm::test
