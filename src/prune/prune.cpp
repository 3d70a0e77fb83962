// sparsenm prune — public entry points prune() / prune_dense() and the PruneReport.
//
// Report: sparsity = zeros / (rows * cols) of the pruned matrix; retained_l1 = sum |kept| /
// sum |w|, retained_l2 = sum kept^2 / sum w^2 (1 when the denominator is 0); nonzeros_kept =
// kept values != 0 (NaN and +-inf count as nonzero). Non-finite values are left out of the L1
// and L2 sums (they are always kept, and would turn both ratios into NaN). Sums run in double,
// per row then over rows in order, so the report is deterministic whatever the thread count.
#include "sparsenm/prune.hpp"

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "prune/common.hpp"
#include "prune/engine.hpp"

namespace sparsenm {

namespace prune_detail {

namespace {
struct Fp16Table {
  float v[65536];
  Fp16Table() noexcept {
    for (std::uint32_t i = 0; i < 65536; ++i) v[i] = fp16_bits_to_float(std::uint16_t(i));
  }
};
const Fp16Table fp16_table_storage;
}  // namespace

const float* const kFp16Table = fp16_table_storage.v;

void check_input(const MatrixView& w, const char* argument) {
  check_view(w, argument);
  if (w.rows < 1 || w.cols < 1)
    throw InvalidArgument(argument, "matrix must have at least one row and one column (got " + std::to_string(w.rows) +
                                        "x" + std::to_string(w.cols) + ")");
}

namespace {

struct Sums {
  double l1 = 0.0, l2 = 0.0;
  std::int64_t nonzeros = 0;
};

// Sums over a rows x cols matrix (row stride ld) of weight dtype.
Sums matrix_sums(DType dtype, const void* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  std::vector<Sums> per_row(static_cast<std::size_t>(rows));
  dispatch(dtype, [&](auto traits) {
    using E = decltype(traits);
    using bits = typename E::bits;
    const auto* p = static_cast<const bits*>(data);
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMinElements)
    for (std::int64_t r = 0; r < rows; ++r) {
      Sums s;
      const bits* row = p + r * ld;
      for (std::int64_t c = 0; c < cols; ++c) {
        if (E::key(row[c]) == 0) continue;  // +-0
        ++s.nonzeros;
        const double x = E::to_float(row[c]);
        if (!std::isfinite(x)) continue;
        s.l1 += std::fabs(x);
        s.l2 += x * x;
      }
      per_row[std::size_t(r)] = s;
    }
  });
  Sums total;
  for (const Sums& s : per_row) {
    total.l1 += s.l1;
    total.l2 += s.l2;
    total.nonzeros += s.nonzeros;
  }
  return total;
}

PruneReport make_report(const MatrixView& w, const Sums& kept) {
  const Sums before = matrix_sums(w.dtype, w.data, w.rows, w.cols, w.ld);
  PruneReport r;
  const double total = double(w.rows) * double(w.cols);
  r.nonzeros_kept = kept.nonzeros;
  r.sparsity = 1.0 - double(kept.nonzeros) / total;
  r.retained_l1 = before.l1 > 0 ? kept.l1 / before.l1 : 1.0;
  r.retained_l2 = before.l2 > 0 ? kept.l2 / before.l2 : 1.0;
  return r;
}

void run(const MatrixView& w, const Pattern& p, const Output& out) {
  switch (p.kind) {
    case Granularity::element:
    case Granularity::hw24: return prune_element(w, p.n, p.m, out);
    case Granularity::vector: return prune_vector(w, p.n, p.m, p.v, out);
    case Granularity::block: return prune_block(w, p.n, p.m, p.bn, p.bk, out);
    case Granularity::venom: return prune_venom(w, p.v, p.m, out);
  }
  throw InvalidArgument("p", "unknown granularity " + std::to_string(int(p.kind)));
}

}  // namespace

}  // namespace prune_detail

DenseMatrix prune_dense(const MatrixView& w, const Pattern& p, PruneReport* report) {
  prune_detail::check_input(w, "w");
  FormatLayout::of(p, w.rows, w.cols);  // validates the pattern and the dimensions
  DenseMatrix out(w.dtype, w.rows, w.cols);
  prune_detail::run(w, p, prune_detail::Output{out.data(), nullptr});
  if (report) {
    auto kept = prune_detail::matrix_sums(out.dtype(), out.data(), out.rows(), out.cols(), out.cols());
    *report = prune_detail::make_report(w, kept);
  }
  return out;
}

CondensedMatrix prune(const MatrixView& w, const Pattern& p, PruneReport* report) {
  prune_detail::check_input(w, "w");
  const FormatLayout layout = FormatLayout::of(p, w.rows, w.cols);
  CondensedMatrix out = CondensedMatrix::allocate(layout, w.dtype);
  prune_detail::run(w, p, prune_detail::Output{nullptr, &out});
  if (report) {
    // Padding slots hold 0, so the stored values are exactly the kept values.
    auto kept = prune_detail::matrix_sums(out.dtype, out.values.data(), layout.rows, layout.value_cols, layout.value_cols);
    *report = prune_detail::make_report(w, kept);
  }
  return out;
}

}  // namespace sparsenm
