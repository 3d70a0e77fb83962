// sparsenm — FormatLayout: every shape of the canonical condensed format, derived from
// (pattern, rows, cols). The byte-exact description is docs/FORMAT.md.
#include <cstdio>
#include <string>

#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"

namespace sparsenm {

namespace {

// Upper bounds keep every derived size (values, indices, dense bytes) far from int64 / size_t
// overflow: rows, cols < 2^31 and rows * cols <= 2^46 elements.
constexpr std::int64_t kMaxDim = (std::int64_t(1) << 31) - 1;
constexpr std::int64_t kMaxElements = std::int64_t(1) << 46;

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }

int bits_for(int m) noexcept {
  int b = 1;
  while ((1 << b) < m) ++b;
  return b;
}

std::string mib(std::size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

FormatLayout FormatLayout::of(const Pattern& p, std::int64_t rows, std::int64_t cols) {
  p.validate("pattern");
  if (rows < 1 || rows > kMaxDim)
    throw InvalidArgument("rows", "must be in 1..2^31-1 (got " + std::to_string(rows) + ")");
  if (cols < 1 || cols > kMaxDim)
    throw InvalidArgument("cols", "must be in 1..2^31-1 (got " + std::to_string(cols) + ")");
  if (rows > kMaxElements / cols)
    throw InvalidArgument("rows x cols", "must be at most 2^46 elements (got " + std::to_string(rows) + "x" +
                                             std::to_string(cols) + ")");
  FormatLayout l;
  l.pattern = p;
  l.rows = rows;
  l.cols = cols;
  l.windows = ceil_div(cols, p.window_cols());
  l.value_cols = l.windows * p.values_per_window();
  const bool venom = p.kind == Granularity::venom;
  l.index_bits = venom ? 2 : bits_for(p.m);
  l.index_rows = (p.kind == Granularity::vector || p.kind == Granularity::block) ? ceil_div(rows, p.row_group()) : rows;
  l.index_fields = l.windows * (venom ? 2 : p.n);
  l.index_row_bytes = ceil_div(l.index_fields * l.index_bits, 8);
  if (venom) {
    l.colloc_bits = bits_for(p.m);
    l.colloc_rows = ceil_div(rows, p.v);
    l.colloc_fields = l.windows * 4;
    l.colloc_row_bytes = ceil_div(l.colloc_fields * l.colloc_bits, 8);
  }
  return l;
}

std::string FormatLayout::str() const {
  std::string s = pattern.str() + " " + std::to_string(rows) + "x" + std::to_string(cols) + ": " +
                  std::to_string(windows) + " windows, values " + std::to_string(rows) + "x" +
                  std::to_string(value_cols) + ", indices " + std::to_string(index_rows) + "x" +
                  std::to_string(index_row_bytes) + " B (" + std::to_string(index_fields) + " x " +
                  std::to_string(index_bits) + " bit)";
  if (colloc_rows > 0)
    s += ", columns " + std::to_string(colloc_rows) + "x" + std::to_string(colloc_row_bytes) + " B (" +
         std::to_string(colloc_fields) + " x " + std::to_string(colloc_bits) + " bit)";
  return s;
}

Footprint footprint(const FormatLayout& layout, DType dtype) {
  Footprint f;
  f.value_bytes = layout.value_bytes(dtype);
  f.index_bytes = layout.index_bytes();
  f.colloc_bytes = layout.colloc_bytes();
  f.dense_bytes = std::size_t(layout.rows) * std::size_t(layout.cols) * dtype_size(dtype);
  return f;
}

std::string Footprint::str() const {
  char ratio_buf[32];
  std::snprintf(ratio_buf, sizeof ratio_buf, "%.4f", ratio());
  std::string s = "values " + mib(value_bytes) + " + indices " + mib(index_bytes);
  if (colloc_bytes) s += " + columns " + mib(colloc_bytes);
  s += " = " + mib(total()) + " (" + std::to_string(total()) + " B), " + ratio_buf + " of dense " + mib(dense_bytes);
  return s;
}

}  // namespace sparsenm
