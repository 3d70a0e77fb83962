// sparsenm prune — MVUE 2:4 (minimum-variance unbiased 2-sparse estimator of a group of 4),
// exposed for tests.
//
// The estimator (Chmiel et al., ICLR'23, used by seed 003 eq. 6 for neural gradients). For a
// group x0..x3 with a_i = |x_i|, any unbiased estimator that keeps at most 2 values keeps x_i
// with some probability p_i (sum p_i <= 2, p_i <= 1) and then has Var_i >= a_i^2 / p_i - a_i^2
// (Cauchy-Schwarz), with equality for the value x_i / p_i. Minimising sum_i a_i^2 / p_i under
// those constraints gives the water-filling solution
//   <= 2 nonzeros:             p_i = 1 for the nonzeros: the group is returned unchanged;
//   a_t <= R (t = argmax a, R = S - a_t, S = sum a):  p_i = 2 a_i / S, kept value sign(x_i) S/2;
//   a_t >  R:                  p_t = 1 (x_t kept exactly), p_i = a_i / R for the other three,
//                              the one kept gets sign(x_i) R.
// These are the values of the toolkit's exact `legacy.MVUE24` (±S/2 in the main regime); the
// toolkit's default `MVUE24_approx` (successive sampling proportional to |x| with Horvitz-
// Thompson values) is unbiased too but has a larger variance (tested).
//
// Water-filling form: the level c solves sum_i min(a_i, c) = 2c; element i is kept with
// probability p_i = min(a_i, c) / c and then has the value sign(x_i) * max(a_i, c) (= x_i / p_i).
// In the main regime c = S/2; in the a_t > R regime c = R, so x_t is kept exactly.
//
// The kept pair is drawn by systematic sampling, which realises these marginals exactly with
// one uniform u in [0, 1): lay the intervals b_i = min(a_i, c) end to end in index order (total
// 2c) and keep the elements whose intervals contain the points u*c and u*c + c. No interval is
// longer than c, so the two points never fall in the same one. The joint law of the pair does
// not change any element's distribution, so the estimator is unbiased with the minimum
// variance (up to the resolution of u: 23 bits per decision, |P(keep i) - p_i| < 2^-23).
//
// Arithmetic (reproducible bit for bit by a GPU version, session 3; no argmax needed): f32, in
// this order:
//   m01 = max(a0, a1), n01 = min(a0, a1), m23 = max(a2, a3), n23 = min(a2, a3);
//   R = (n01 + n23) + min(m01, m23); S = R + max(m01, m23); c = min(0.5f * S, R);
//   ends B_k = B_{k-1} + min(a_k, c) (B_0 = min(a_0, c)); points p1 = u * c, p2 = p1 + c;
//   a point p selects the first k with B_k > p among k = 0..2, else 3;
//   the second kept element is select(p2) if p2 < B_3, else (rounding only) the last nonzero;
//   the first is select(p1), unless that is not below the second (rounding only): then the last
//   nonzero element before the second. Kept values: copysign(max(a_i, c), x_i).
//   If S overflows (finite values): the same on a_i * 0.25, kept values times 4 (inf where the
//   estimate itself is not representable).
// The uniform comes from Philox-4x32-10 (philox.hpp, mvue_uniform): key = seed, counter =
// (column / 16, row), one call per 4 consecutive groups; group j uses output word j % 4. Groups past the last column are padded with zeros.
// Non-finite groups (any NaN or +-inf): not estimable; the two largest |x| are kept unscaled
// (|NaN| = +inf, ties: lower column), so the NaN/inf reaches the output instead of vanishing.
#pragma once
#include <cstdint>

namespace sparsenm::prune_detail {

/// One group: in x[4], uniform u in [0, 1); writes out[4] (at most 2 nonzeros).
void mvue_group(const float x[4], float u, float out[4]) noexcept;

/// The estimator's inclusion probabilities for magnitudes a[4] >= 0 (finite), in double.
void mvue_probabilities(const double a[4], double p[4]) noexcept;

/// Inclusion probabilities of the 2by4 toolkit's MVUE24_approx (first pick proportional to a,
/// second proportional to a among the remaining three), epsilon left out: p_i = t_i +
/// a_i * sum_{j != i} t_j / (S - a_j), t_i = a_i / S. Needs at least 2 nonzeros.
void mvue_approx_probabilities(const double a[4], double p[4]) noexcept;

}  // namespace sparsenm::prune_detail
