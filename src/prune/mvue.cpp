// sparsenm prune — MVUE 2:4 on the CPU (the estimator and its arithmetic: mvue.hpp).
#include "prune/mvue.hpp"

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
  const float S = ((a[0] + a[1]) + a[2]) + a[3];
  int t = 0;
  for (int i = 1; i < 4; ++i)
    if (a[i] > a[t]) t = i;
  float R = 0.0f;
  for (int i = 0; i < 4; ++i)
    if (i != t) R += a[i];
  if (a[t] > R) {  // x_t kept with probability 1; one of the others with probability a_i / R
    const float p = u * R;
    float end = 0.0f;
    int chosen = -1, last = -1;
    for (int i = 0; i < 4; ++i) {
      if (i == t || a[i] == 0.0f) continue;
      end += a[i];
      last = i;
      if (chosen < 0 && p < end) chosen = i;
    }
    if (chosen < 0) chosen = last;
    out[t] = x[t];
    out[chosen] = std::copysign(R, x[chosen]);
    return;
  }
  const float L = 0.5f * S;
  const float p1 = u * L;
  const float p2 = p1 + L;
  float end = 0.0f;
  int first = -1, second = -1, last = -1;
  for (int i = 0; i < 4; ++i) {
    if (a[i] == 0.0f) continue;
    end += a[i];
    last = i;
    if (first < 0 && p1 < end) first = i;
    if (second < 0 && p2 < end) second = i;
  }
  if (first < 0) first = last;
  if (second < 0) second = last;
  if (second == first) {  // only by rounding: take the next candidate (or the previous one)
    int alt = -1;
    for (int i = first + 1; i < 4 && alt < 0; ++i)
      if (a[i] > 0.0f) alt = i;
    for (int i = first - 1; i >= 0 && alt < 0; --i)
      if (a[i] > 0.0f) alt = i;
    second = alt;
  }
  out[first] = std::copysign(L, x[first]);
  out[second] = std::copysign(L, x[second]);
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
