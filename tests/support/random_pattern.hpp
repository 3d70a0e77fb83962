// sparsenm tests — random dense matrices that satisfy a pattern (header-only, deterministic).
//
//   DenseMatrix w = random_pattern_matrix(pattern, dtype, rows, cols, seed, zero_fraction_of_kept);
//
// For every group x window the helper keeps a random set of exactly the allowed size (n
// columns / n blocks per group-window; venom: 4 columns per slab-window and 2 of those per row),
// limited to the units that lie inside the matrix. Kept entries get values uniform in
// [-1, -1/64] U [1/64, 1] (never zero, exact in f16/bf16), except that each kept entry becomes
// 0 with probability zero_fraction_of_kept; everything else is +0. Same seed -> same matrix on
// every platform (SplitMix64, no std:: distributions).
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "sparsenm/error.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/pattern.hpp"

namespace sparsenm::test {

class SplitMix {
 public:
  explicit SplitMix(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n).
  std::uint64_t below(std::uint64_t n) noexcept { return n ? next() % n : 0; }
  /// Uniform in [0, 1).
  double uniform() noexcept { return double(next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  std::uint64_t state_;
};

/// `count` distinct values of [0, n), ascending (count <= n).
inline std::vector<int> random_subset(SplitMix& rng, int n, int count) {
  std::vector<int> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  for (int i = 0; i < count; ++i) std::swap(all[std::size_t(i)], all[std::size_t(i) + rng.below(std::uint64_t(n - i))]);
  all.resize(std::size_t(count));
  std::sort(all.begin(), all.end());
  return all;
}

/// A nonzero value with few mantissa bits (exact in every weight dtype), or 0 with
/// probability zero_fraction.
inline float random_kept_value(SplitMix& rng, double zero_fraction) {
  if (zero_fraction > 0 && rng.uniform() < zero_fraction) return 0.0f;
  float mag = float(1 + rng.below(64)) / 64.0f;  // 1/64 .. 1
  return (rng.next() & 1) ? -mag : mag;
}

}  // namespace sparsenm::test

namespace sparsenm {

inline DenseMatrix random_pattern_matrix(const Pattern& p, DType dtype, std::int64_t rows, std::int64_t cols,
                                         std::uint64_t seed, double zero_fraction_of_kept = 0.0) {
  p.validate("pattern");
  if (!is_weight_dtype(dtype)) throw InvalidArgument("dtype", "random_pattern_matrix needs f32, f16 or bf16");
  DenseMatrix out(dtype, rows, cols);
  test::SplitMix rng(seed * 0x2545f4914f6cdd1dull + 0x1234567);
  const int unit = p.kind == Granularity::block ? p.bk : 1;
  const std::int64_t wc = p.window_cols();
  const std::int64_t windows = (cols + wc - 1) / wc;
  const int group = p.row_group();
  for (std::int64_t r0 = 0; r0 < rows; r0 += group) {
    const std::int64_t r1 = std::min(rows, r0 + group);
    for (std::int64_t w = 0; w < windows; ++w) {
      const std::int64_t c0 = w * wc;
      const int real = int(std::min<std::int64_t>(p.m, (cols - c0 + unit - 1) / unit));
      if (p.kind == Granularity::venom) {
        auto sel = test::random_subset(rng, real, std::min(real, 4));
        for (std::int64_t r = r0; r < r1; ++r)
          for (int q : test::random_subset(rng, int(sel.size()), std::min<int>(2, int(sel.size()))))
            out.set(r, c0 + sel[std::size_t(q)], test::random_kept_value(rng, zero_fraction_of_kept));
        continue;
      }
      const bool per_row = group == 1;
      std::vector<int> keep;
      if (!per_row) keep = test::random_subset(rng, real, std::min(real, p.n));
      for (std::int64_t r = r0; r < r1; ++r) {
        if (per_row) keep = test::random_subset(rng, real, std::min(real, p.n));
        for (int u : keep)
          for (int e = 0; e < unit; ++e) {
            const std::int64_t c = c0 + std::int64_t(u) * unit + e;
            if (c < cols) out.set(r, c, test::random_kept_value(rng, zero_fraction_of_kept));
          }
      }
    }
  }
  return out;
}

}  // namespace sparsenm
