// sparsenm — venom_as_element (as_element.hpp).
#include "format/as_element.hpp"

#include <string>

#include "sparsenm/error.hpp"

namespace sparsenm::detail {

CondensedMatrix venom_as_element(const CondensedMatrix& w) {
  const Pattern& p = w.pattern();
  if (p.kind != Granularity::venom)
    throw InvalidArgument("w", "venom_as_element needs a venom V:2:M weight (got " + p.str() + ")");
  const FormatLayout l = FormatLayout::of(Pattern::element(2, p.m), w.rows(), w.cols());
  if (l.value_cols != w.layout.value_cols || l.windows != w.layout.windows)
    throw InvalidArgument("w", "venom layout " + w.layout.str() + " does not map onto element 2:" + std::to_string(p.m));
  CondensedMatrix e = CondensedMatrix::allocate(l, w.dtype);
  e.values = w.values;
  const std::int64_t rows = l.rows, slots = l.value_cols, m = p.m;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint8_t* row = e.indices.data() + r * l.index_row_bytes;
    for (std::int64_t j = 0; j < slots; ++j)
      set_packed(row, j, l.index_bits, unsigned(w.column_of(r, j) - (j / 2) * m));
  }
  return e;
}

}  // namespace sparsenm::detail
