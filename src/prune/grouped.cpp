// sparsenm prune — vector (N:M/vwV) and block (N:M/bwRxC) magnitude pruning.
//
// vector: V adjacent rows share their N positions per window. Column score = sum over the
//   group's rows of w^2 (the squared L2 norm of the length-V column vector; a partial last group
//   just has fewer rows). The n best columns of every window are kept for all rows of the group.
// block:  blocks of R rows x C columns; window = M consecutive blocks along k. Block score = sum
//   of w^2 over the block (squared L2 norm: same order as the norm). N blocks of every window
//   are kept per row group; each kept block stores its C values per row.
// Scores are accumulated in double, row by row in row order then column order (deterministic);
// w^2 of NaN or +-inf counts as +inf. Ties: the lower column (block) wins.
#include <algorithm>
#include <vector>

#include "prune/common.hpp"
#include "prune/engine.hpp"
#include "prune/select.hpp"

namespace sparsenm::prune_detail {

namespace {

template <class E>
inline double square_score(typename E::bits b) noexcept {
  double x = double(E::to_float(b));
  double s = x * x;
  return s != s ? std::numeric_limits<double>::infinity() : s;  // NaN -> +inf (inf^2 is inf)
}

/// The n units kept in one window of `real` scored units: the n best (select_top), or the
/// first n positions when the window has fewer than n real units (the rest are padding).
inline void pick_window(const double* score, int real, int n, int* pos, int* scratch) {
  if (real >= n) {
    select_top(score, real, n, pos, scratch);
  } else {
    for (int i = 0; i < n; ++i) pos[i] = i;
  }
}

/// Stores group g's n positions of window `win` in its index row of the condensed output.
inline void store_positions(CondensedMatrix& cm, std::int64_t g, std::int64_t win, int n, const int* pos) {
  std::uint8_t* irow = cm.indices.data() + g * cm.layout.index_row_bytes;
  for (int s = 0; s < n; ++s) set_packed(irow, win * n + s, cm.layout.index_bits, unsigned(pos[s]));
}

template <class E, bool kDense>
void vector_groups(const MatrixView& w, int n, int m, int v, const Output& out) {
  using bits = typename E::bits;
  const std::int64_t rows = w.rows, cols = w.cols;
  const std::int64_t windows = ceil_div(cols, m), groups = ceil_div(rows, v);
  const auto* in = static_cast<const bits*>(w.data);
  bits* dense = static_cast<bits*>(out.dense);
  CondensedMatrix* cm = out.condensed;

#pragma omp parallel if (rows * cols >= kParallelMinElements)
  {
    std::vector<double> score(static_cast<std::size_t>(cols));
    int pos[256], scratch[256];
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t r0 = g * v, r1 = std::min(rows, r0 + v);
      std::fill(score.begin(), score.end(), 0.0);
      for (std::int64_t r = r0; r < r1; ++r) {
        const bits* row = in + r * w.ld;
        for (std::int64_t c = 0; c < cols; ++c) score[std::size_t(c)] += square_score<E>(row[c]);
      }
      for (std::int64_t win = 0; win < windows; ++win) {
        const std::int64_t c0 = win * m;
        const int real = int(std::min<std::int64_t>(m, cols - c0));
        pick_window(score.data() + c0, real, n, pos, scratch);
        if (!kDense) store_positions(*cm, g, win, n, pos);
        for (std::int64_t r = r0; r < r1; ++r) {
          const bits* row = in + r * w.ld + c0;
          if constexpr (kDense) {
            bits* drow = dense + r * cols + c0;
            for (int s = 0; s < n; ++s)
              if (pos[s] < real) drow[pos[s]] = row[pos[s]];
          } else {
            bits* vrow = reinterpret_cast<bits*>(cm->values.data()) + r * cm->layout.value_cols + win * n;
            for (int s = 0; s < n; ++s) vrow[s] = pos[s] < real ? row[pos[s]] : bits(0);
          }
        }
      }
    }
  }
}

template <class E, bool kDense>
void block_groups(const MatrixView& w, int n, int m, int bn, int bk, const Output& out) {
  using bits = typename E::bits;
  const std::int64_t rows = w.rows, cols = w.cols;
  const std::int64_t window_cols = std::int64_t(m) * bk;
  const std::int64_t windows = ceil_div(cols, window_cols), groups = ceil_div(rows, bn);
  const std::int64_t real_blocks = ceil_div(cols, bk);  // blocks with at least one real column
  const auto* in = static_cast<const bits*>(w.data);
  bits* dense = static_cast<bits*>(out.dense);
  CondensedMatrix* cm = out.condensed;

#pragma omp parallel if (rows * cols >= kParallelMinElements)
  {
    std::vector<double> score(static_cast<std::size_t>(real_blocks));
    int pos[256], scratch[256];
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t r0 = g * bn, r1 = std::min(rows, r0 + bn);
      std::fill(score.begin(), score.end(), 0.0);
      for (std::int64_t r = r0; r < r1; ++r) {
        const bits* row = in + r * w.ld;
        for (std::int64_t b = 0; b < real_blocks; ++b) {
          const std::int64_t cb = b * bk, ce = std::min(cols, cb + bk);
          double s = score[std::size_t(b)];
          for (std::int64_t c = cb; c < ce; ++c) s += square_score<E>(row[c]);
          score[std::size_t(b)] = s;
        }
      }
      for (std::int64_t win = 0; win < windows; ++win) {
        const std::int64_t b0 = win * m;
        const int real = int(std::min<std::int64_t>(m, real_blocks - b0));
        pick_window(score.data() + b0, real, n, pos, scratch);
        if (!kDense) store_positions(*cm, g, win, n, pos);
        for (std::int64_t r = r0; r < r1; ++r) {
          const bits* row = in + r * w.ld;
          bits* vrow = nullptr;
          if constexpr (!kDense)
            vrow = reinterpret_cast<bits*>(cm->values.data()) + r * cm->layout.value_cols + win * n * bk;
          for (int s = 0; s < n; ++s) {
            const std::int64_t cb = (b0 + pos[s]) * bk;
            for (int t = 0; t < bk; ++t) {
              const std::int64_t c = cb + t;
              if constexpr (kDense) {
                if (c < cols) dense[r * cols + c] = row[c];
              } else {
                vrow[s * bk + t] = c < cols ? row[c] : bits(0);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

void prune_vector(const MatrixView& w, int n, int m, int v, const Output& out) {
  dispatch(w.dtype, [&](auto traits) {
    using E = decltype(traits);
    if (out.dense)
      vector_groups<E, true>(w, n, m, v, out);
    else
      vector_groups<E, false>(w, n, m, v, out);
  });
}

void prune_block(const MatrixView& w, int n, int m, int bn, int bk, const Output& out) {
  dispatch(w.dtype, [&](auto traits) {
    using E = decltype(traits);
    if (out.dense)
      block_groups<E, true>(w, n, m, bn, bk, out);
    else
      block_groups<E, false>(w, n, m, bn, bk, out);
  });
}

}  // namespace sparsenm::prune_detail
