// sparsenm prune — MVUE 2:4 on the CPU (the estimator and its arithmetic: mvue.hpp).
#include "prune/mvue.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "prune/common.hpp"
#include "prune/philox.hpp"
#include "sparsenm/prune.hpp"

namespace sparsenm {

namespace prune_detail {

void mvue_group(const float x[4], float u, float out[4]) noexcept {
  float a[4];
  bool finite = true;
  int nonzero = 0;
  for (int i = 0; i < 4; ++i) {
    out[i] = 0.0f;
    a[i] = std::fabs(x[i]);
    finite = finite && std::isfinite(x[i]);
    nonzero += a[i] > 0.0f;
  }
  if (!finite) {  // keep the two largest |x| unscaled (|NaN| = +inf, ties: lower index)
    float k[4];
    for (int i = 0; i < 4; ++i) k[i] = std::isnan(x[i]) ? std::numeric_limits<float>::infinity() : a[i];
    int k1 = 0;
    for (int i = 1; i < 4; ++i)
      if (k[i] > k[k1]) k1 = i;
    int k2 = k1 == 0 ? 1 : 0;
    for (int i = 0; i < 4; ++i)
      if (i != k1 && k[i] > k[k2]) k2 = i;
    out[k1] = x[k1];
    out[k2] = x[k2];
    return;
  }
  if (nonzero <= 2) {
    for (int i = 0; i < 4; ++i) out[i] = x[i];
    return;
  }
  // The level c (sum_i min(a_i, c) = 2c) from the three smaller magnitudes R and the largest.
  float scale = 1.0f, R = 0.0f, S = 0.0f;
  auto sums = [&] {
    const float m01 = std::max(a[0], a[1]), n01 = std::min(a[0], a[1]);
    const float m23 = std::max(a[2], a[3]), n23 = std::min(a[2], a[3]);
    R = (n01 + n23) + std::min(m01, m23);
    S = R + std::max(m01, m23);
  };
  sums();
  if (std::isinf(S)) {  // finite values whose sum overflows: the rule on a / 4, values times 4
    scale = 4.0f;
    for (float& v : a) v *= 0.25f;
    sums();
  }
  const float c = std::min(0.5f * S, R);  // > 0: at least 3 nonzeros
  float end[4];
  end[0] = std::min(a[0], c);
  for (int i = 1; i < 4; ++i) end[i] = end[i - 1] + std::min(a[i], c);
  const float p1 = u * c, p2 = p1 + c;
  auto select = [&](float p) {  // the first of intervals 0..3 whose end (ends 0..2 checked) exceeds p
    int k = 0;
    while (k < 3 && end[k] <= p) ++k;
    return k;
  };
  int second = 3;
  if (p2 < end[3]) {
    second = select(p2);
  } else {  // only by rounding: the last nonzero element
    while (a[second] == 0.0f) --second;
  }
  int first = select(p1);
  if (first >= second) {  // only by rounding: the last nonzero element before the second
    first = second - 1;
    while (a[first] == 0.0f) --first;
  }
  out[first] = std::copysign(std::max(a[first], c) * scale, x[first]);
  out[second] = std::copysign(std::max(a[second], c) * scale, x[second]);
}

void mvue_probabilities(const double a[4], double p[4]) noexcept {
  int nonzero = 0;
  for (int i = 0; i < 4; ++i) nonzero += a[i] > 0.0;
  if (nonzero <= 2) {
    for (int i = 0; i < 4; ++i) p[i] = a[i] > 0.0 ? 1.0 : 0.0;
    return;
  }
  const double S = a[0] + a[1] + a[2] + a[3];
  int t = 0;
  for (int i = 1; i < 4; ++i)
    if (a[i] > a[t]) t = i;
  const double R = S - a[t];
  for (int i = 0; i < 4; ++i) p[i] = a[t] > R ? (i == t ? 1.0 : a[i] / R) : 2.0 * a[i] / S;
}

void mvue_approx_probabilities(const double a[4], double p[4]) noexcept {
  const double S = a[0] + a[1] + a[2] + a[3];
  for (int i = 0; i < 4; ++i) {
    double second = 0.0;
    for (int j = 0; j < 4; ++j)
      if (j != i && S - a[j] > 0.0) second += (a[j] / S) / (S - a[j]);
    p[i] = a[i] / S + a[i] * second;
  }
}

}  // namespace prune_detail

DenseMatrix mvue24(const MatrixView& g, std::uint64_t seed) {
  prune_detail::check_input(g, "g");
  DenseMatrix out(g.dtype, g.rows, g.cols);
  const std::int64_t rows = g.rows, cols = g.cols, groups = prune_detail::ceil_div(cols, 4);
  void* dst = out.data();
#pragma omp parallel for schedule(static) if (rows * cols >= prune_detail::kParallelMinElements)
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < groups; ++j) {
      float x[4], y[4];
      const std::int64_t c0 = j * 4;
      for (int i = 0; i < 4; ++i) x[i] = c0 + i < cols ? g.at(r, c0 + i) : 0.0f;
      prune_detail::mvue_group(x, prune_detail::mvue_uniform(seed, std::uint64_t(r), std::uint64_t(j)), y);
      for (int i = 0; i < 4 && c0 + i < cols; ++i) store_from_float(g.dtype, dst, std::size_t(r * cols + c0 + i), y[i]);
    }
  }
  return out;
}

}  // namespace sparsenm
