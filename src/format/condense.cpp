// sparsenm — dense <-> canonical condensed format (spec: include/sparsenm/format.hpp and
// docs/FORMAT.md): check_pattern, condense, expand, CondensedMatrix::validate.
//
// Vocabulary used below. A *window* is window_cols consecutive columns. It holds m *units*:
// a unit is one column (element, vector, venom, hw24) or one block of bk columns (block).
// A *group* is the set of rows that share one index set: 1 row (element, hw24), v rows
// (vector), bn rows (block), or a slab of V rows (venom; there the slab shares the 4 selected
// columns, and each row has its own 2-of-4 positions). The bottom group may be partial and so
// may the last window: its units past `cols` are padding and always count as zero.
//
// A value is nonzero unless its bits are +0 or -0 (so NaN is nonzero). Values are copied as
// raw bits: condense and expand never round or canonicalise a value.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"

namespace sparsenm {

namespace {

constexpr int kVenomSelect = 4;  // columns kept per V x M block
constexpr int kVenomKeep = 2;    // values kept per row among those 4

std::string s(std::int64_t x) { return std::to_string(x); }

template <class T>
constexpr T magnitude_mask() noexcept {
  return T(T(~T(0)) >> 1);  // every bit but the sign (cast before the shift: no int promotion)
}

template <class T>
inline bool nonzero(T bits) noexcept {
  return (bits & magnitude_mask<T>()) != 0;
}

/// Geometry shared by the scans.
struct Geometry {
  const FormatLayout& l;
  const Pattern& p;
  int m, unit, wc, group, select;  // select: units kept per group-window (n, or 4 for venom)
  explicit Geometry(const FormatLayout& layout)
      : l(layout),
        p(layout.pattern),
        m(p.m),
        unit(p.kind == Granularity::block ? p.bk : 1),
        wc(p.window_cols()),
        group(p.row_group()),
        select(p.kind == Granularity::venom ? kVenomSelect : p.n) {}
  std::int64_t groups() const noexcept { return (l.rows + group - 1) / group; }
  std::int64_t row_end(std::int64_t g) const noexcept { return std::min<std::int64_t>(l.rows, (g + 1) * group); }
  /// Units of window w that hold at least one column inside the matrix.
  int real_units(std::int64_t w) const noexcept {
    const std::int64_t left = l.cols - w * wc;
    if (left >= wc) return m;  // every window but possibly the last
    return int(unit == 1 ? left : (left + unit - 1) / unit);
  }
};

/// Marks the units of window w that hold a nonzero in rows [r0, r1); returns how many.
template <class T>
int nonzero_units(const MatrixView& d, const Geometry& g, std::int64_t r0, std::int64_t r1, std::int64_t w,
                  bool* nz) {
  const int real = g.real_units(w);
  const std::int64_t c0 = w * g.wc;
  int count = 0;
  if (g.unit == 1) {  // columns: a branch-free OR over the group's rows
    const T* row = static_cast<const T*>(d.data) + r0 * d.ld + c0;
    for (int u = 0; u < real; ++u) nz[u] = nonzero(row[u]);
    for (std::int64_t r = r0 + 1; r < r1; ++r) {
      row += d.ld;
      for (int u = 0; u < real; ++u) nz[u] = nz[u] | nonzero(row[u]);
    }
    for (int u = real; u < g.m; ++u) nz[u] = false;
    for (int u = 0; u < real; ++u) count += nz[u];
    return count;
  }
  std::fill(nz, nz + g.m, false);
  for (std::int64_t r = r0; r < r1 && count < real; ++r) {
    const T* row = static_cast<const T*>(d.data) + r * d.ld;
    for (int u = 0; u < real; ++u) {
      if (nz[u]) continue;
      const std::int64_t cb = c0 + std::int64_t(u) * g.unit;
      const std::int64_t ce = std::min<std::int64_t>(d.cols, cb + g.unit);
      for (std::int64_t c = cb; c < ce; ++c)
        if (nonzero(row[c])) {
          nz[u] = true;
          ++count;
          break;
        }
    }
  }
  return count;
}

/// The canonical choice: every marked unit plus the lowest unmarked ones, `want` in all,
/// ascending. Needs count(nz) <= want <= units.
inline void choose(const bool* nz, int units, int count, int want, int* out) {
  int free_left = want - count, k = 0;
  for (int u = 0; u < units && k < want; ++u) {
    if (nz[u]) {
      out[k++] = u;
    } else if (free_left > 0) {
      out[k++] = u;
      --free_left;
    }
  }
}

/// Scans group gi: counts the windows (V x M blocks) that break the pattern, records the first
/// in *first_window, and when `out` is non-null and the group is clean, writes its part of the
/// condensed matrix.
template <class T>
std::int64_t scan_group(const MatrixView& d, const Geometry& g, std::int64_t gi, CondensedMatrix* out,
                        std::int64_t* first_window) {
  const FormatLayout& l = g.l;
  const std::int64_t r0 = gi * g.group, r1 = g.row_end(gi);
  bool nz[256];
  int pick[256];
  std::int64_t violations = 0;
  *first_window = -1;
  auto flag = [&](std::int64_t w) {
    if (violations++ == 0) *first_window = w;
  };
  T* values = out ? reinterpret_cast<T*>(out->values.data()) : nullptr;
  const int vpw = g.p.values_per_window();

  if (g.p.kind != Granularity::venom) {
    for (std::int64_t w = 0; w < l.windows; ++w) {
      const int count = nonzero_units<T>(d, g, r0, r1, w, nz);
      if (count > g.p.n) {
        flag(w);
        continue;
      }
      if (!out || violations) continue;
      choose(nz, g.m, count, g.p.n, pick);
      std::uint8_t* irow = out->indices.data() + gi * l.index_row_bytes;
      for (int j = 0; j < g.p.n; ++j) set_packed(irow, w * g.p.n + j, l.index_bits, unsigned(pick[j]));
      const std::int64_t c0 = w * g.wc;
      const bool tail = c0 + g.wc > l.cols;
      for (std::int64_t r = r0; r < r1; ++r) {
        const T* src = static_cast<const T*>(d.data) + r * d.ld;
        T* dst = values + r * l.value_cols + w * vpw;
        if (g.unit == 1 && !tail) {
          for (int j = 0; j < g.p.n; ++j) dst[j] = src[c0 + pick[j]];
          continue;
        }
        for (int j = 0; j < g.p.n; ++j)
          for (int e = 0; e < g.unit; ++e) {
            const std::int64_t c = c0 + std::int64_t(pick[j]) * g.unit + e;
            if (c < l.cols) dst[j * g.unit + e] = src[c];  // padding slots stay 0
          }
      }
    }
    return violations;
  }

  // venom: per V x M block, 4 columns shared by the slab, then 2 of those 4 per row.
  for (std::int64_t w = 0; w < l.windows; ++w) {
    const int count = nonzero_units<T>(d, g, r0, r1, w, nz);
    if (count > kVenomSelect) {
      flag(w);
      continue;
    }
    int sel[kVenomSelect];
    choose(nz, g.m, count, kVenomSelect, sel);
    const std::int64_t c0 = w * g.wc;
    bool row_bad = false;
    for (std::int64_t r = r0; r < r1 && !row_bad; ++r) {
      const T* src = static_cast<const T*>(d.data) + r * d.ld;
      int k = 0;
      for (int q = 0; q < kVenomSelect; ++q) {
        const std::int64_t c = c0 + sel[q];
        k += (c < l.cols && nonzero(src[c])) ? 1 : 0;
      }
      row_bad = k > kVenomKeep;
    }
    if (row_bad) {
      flag(w);
      continue;
    }
    if (!out || violations) continue;
    std::uint8_t* crow = out->columns.data() + gi * l.colloc_row_bytes;
    for (int q = 0; q < kVenomSelect; ++q) set_packed(crow, w * kVenomSelect + q, l.colloc_bits, unsigned(sel[q]));
    for (std::int64_t r = r0; r < r1; ++r) {
      const T* src = static_cast<const T*>(d.data) + r * d.ld;
      bool rnz[kVenomSelect];
      int k = 0;
      for (int q = 0; q < kVenomSelect; ++q) {
        const std::int64_t c = c0 + sel[q];
        rnz[q] = c < l.cols && nonzero(src[c]);
        k += rnz[q];
      }
      int pos[kVenomKeep];
      choose(rnz, kVenomSelect, k, kVenomKeep, pos);
      std::uint8_t* irow = out->indices.data() + r * l.index_row_bytes;
      T* dst = values + r * l.value_cols + w * kVenomKeep;
      for (int j = 0; j < kVenomKeep; ++j) {
        set_packed(irow, w * kVenomKeep + j, l.index_bits, unsigned(pos[j]));
        const std::int64_t c = c0 + sel[pos[j]];
        if (c < l.cols) dst[j] = src[c];
      }
    }
  }
  return violations;
}

/// Explains why window w of group gi breaks the pattern (called once, for the first one).
template <class T>
std::string describe(const MatrixView& d, const Geometry& g, std::int64_t gi, std::int64_t w) {
  const std::int64_t r0 = gi * g.group, r1 = g.row_end(gi);
  const std::int64_t c0 = w * g.wc, c1 = std::min<std::int64_t>(d.cols, c0 + g.wc) - 1;
  bool nz[256];
  const int count = nonzero_units<T>(d, g, r0, r1, w, nz);
  std::string where = (r1 - r0 == 1 ? "row " + s(r0) : "rows " + s(r0) + ".." + s(r1 - 1)) + ", columns " + s(c0) +
                      ".." + s(c1);
  const std::string pat = g.p.str();
  switch (g.p.kind) {
    case Granularity::element:
    case Granularity::hw24:
      return where + ": " + s(count) + " nonzeros in a window of " + s(g.m) + ", pattern " + pat + " allows " +
             s(g.p.n);
    case Granularity::vector:
      return where + ": " + s(count) + " columns hold a nonzero in this vector group, pattern " + pat +
             " allows " + s(g.p.n);
    case Granularity::block:
      return where + ": " + s(count) + " blocks of " + s(g.p.bn) + "x" + s(g.p.bk) + " hold a nonzero, pattern " +
             pat + " allows " + s(g.p.n);
    case Granularity::venom: {
      if (count > kVenomSelect)
        return where + ": " + s(count) + " columns hold a nonzero in this " + s(g.p.v) + "x" + s(g.m) +
               " block, pattern " + pat + " allows 4";
      for (std::int64_t r = r0; r < r1; ++r) {
        const T* src = static_cast<const T*>(d.data) + r * d.ld;
        int k = 0;
        for (std::int64_t c = c0; c <= c1; ++c) k += nonzero(src[c]);
        if (k > kVenomKeep)
          return where + ": row " + s(r) + " has " + s(k) + " nonzeros among the block's selected columns, pattern " +
                 pat + " allows 2 (2:4 inside the 4 kept columns)";
      }
      break;
    }
  }
  return where + ": breaks pattern " + pat;
}

template <class T>
PatternCheck check_impl(const MatrixView& d, const Geometry& g, CondensedMatrix* out) {
  const std::int64_t groups = g.groups();
  std::vector<std::int64_t> first(std::size_t(groups), -1);
  std::int64_t total = 0;
  const bool parallel = d.rows * d.cols > (1 << 15);
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : total) if (parallel)
  for (std::int64_t gi = 0; gi < groups; ++gi) total += scan_group<T>(d, g, gi, out, &first[std::size_t(gi)]);
  PatternCheck res;
  res.violations = total;
  if (total == 0) return res;
  res.ok = false;
  for (std::int64_t gi = 0; gi < groups; ++gi)
    if (first[std::size_t(gi)] >= 0) {
      res.first_row = gi * g.group;
      res.first_col = first[std::size_t(gi)] * g.wc;
      res.message = describe<T>(d, g, gi, first[std::size_t(gi)]) + " (" + s(total) + " violating " +
                    (g.p.kind == Granularity::venom ? "blocks" : "windows") + " in all)";
      break;
    }
  return res;
}

PatternCheck dispatch(const MatrixView& d, const Geometry& g, CondensedMatrix* out) {
  switch (d.dtype) {
    case DType::f32: return check_impl<std::uint32_t>(d, g, out);
    case DType::f16:
    case DType::bf16: return check_impl<std::uint16_t>(d, g, out);
    default: break;
  }
  throw InvalidArgument("dense", "dtype must be f32, f16 or bf16 (got " + std::string(to_string(d.dtype)) + ")");
}

// ---- validation of a condensed matrix ----

/// Bits [from, bytes*8) of a packed row must be zero.
bool tail_bits_zero(const std::uint8_t* row, std::int64_t bytes, std::int64_t from_bit) {
  for (std::int64_t bit = from_bit; bit < bytes * 8;) {
    if ((bit & 7) == 0) {
      if (row[bit >> 3]) return false;
      bit += 8;
    } else {
      if ((row[bit >> 3] >> (bit & 7)) & 1u) return false;
      ++bit;
    }
  }
  return true;
}

/// Checks one packed row of `fields` fields split into runs of `per` strictly ascending
/// values below `limit`. On failure (and if msg) explains.
bool check_packed_row(const std::uint8_t* row, std::int64_t fields, int bits, std::int64_t bytes, int per,
                      unsigned limit, std::string* msg) {
  for (std::int64_t w = 0, f = 0; f < fields; ++w) {
    unsigned prev = 0;
    for (int j = 0; j < per; ++j, ++f) {
      const unsigned x = get_packed(row, f, bits);
      if (x >= limit) {
        if (msg) *msg = "field " + s(f) + " (window " + s(w) + ") holds " + s(x) + ", must be < " + s(limit);
        return false;
      }
      if (j > 0 && x <= prev) {
        if (msg)
          *msg = "fields " + s(f - 1) + ".." + s(f) + " (window " + s(w) + ") are not strictly ascending (" + s(prev) +
                 ", " + s(x) + ")";
        return false;
      }
      prev = x;
    }
  }
  if (!tail_bits_zero(row, bytes, fields * bits)) {
    if (msg) *msg = "unused bits after the last field are not zero";
    return false;
  }
  return true;
}

/// Finds the first failing row of check(i, nullptr) in [0, count); throws FormatError with
/// check(i, &msg)'s explanation.
template <class Check>
void first_failure(std::int64_t count, const char* what, Check check) {
  std::int64_t bad = count;
#pragma omp parallel for schedule(static) reduction(min : bad) if (count > 256)
  for (std::int64_t i = 0; i < count; ++i)
    if (!check(i, nullptr)) bad = std::min(bad, i);
  if (bad == count) return;
  std::string msg;
  check(bad, &msg);
  throw FormatError(std::string("condensed matrix: ") + what + " row " + s(bad) + ": " + msg);
}

template <class T>
DenseMatrix expand_impl(const CondensedMatrix& c) {
  const FormatLayout& l = c.layout;
  DenseMatrix out(c.dtype, l.rows, l.cols);
  const T* values = reinterpret_cast<const T*>(c.values.data());
  T* dst = static_cast<T*>(out.data());
  const Pattern& p = l.pattern;
  const bool venom = p.kind == Granularity::venom;
  const int per = venom ? kVenomKeep : p.n;        // index fields per window
  const int unit = p.kind == Granularity::block ? p.bk : 1;
  const int group = (p.kind == Granularity::vector || p.kind == Granularity::block) ? p.row_group() : 1;
  const std::int64_t wc = p.window_cols();
#pragma omp parallel for schedule(static) if (l.rows * l.value_cols > (1 << 15))
  for (std::int64_t r = 0; r < l.rows; ++r) {
    const std::uint8_t* irow = c.indices.data() + (r / group) * l.index_row_bytes;
    const std::uint8_t* crow = venom ? c.columns.data() + (r / p.v) * l.colloc_row_bytes : nullptr;
    const T* src = values + r * l.value_cols;
    T* row = dst + r * l.cols;
    std::int64_t f = 0;
    for (std::int64_t w = 0; w < l.windows; ++w) {
      const std::int64_t c0 = w * wc;
      for (int j = 0; j < per; ++j, ++f) {
        unsigned u = get_packed(irow, f, l.index_bits);
        if (venom) u = get_packed(crow, w * kVenomSelect + u, l.colloc_bits);
        const std::int64_t cb = c0 + std::int64_t(u) * unit;
        for (int e = 0; e < unit; ++e, ++src)
          if (cb + e < l.cols) row[cb + e] = *src;
      }
    }
  }
  return out;
}

}  // namespace

CondensedMatrix CondensedMatrix::allocate(const FormatLayout& layout, DType dtype) {
  if (!is_weight_dtype(dtype))
    throw InvalidArgument("dtype", "condensed values must be f32, f16 or bf16 (got " + std::string(to_string(dtype)) + ")");
  const FormatLayout check = FormatLayout::of(layout.pattern, layout.rows, layout.cols);
  if (!(check == layout))
    throw InvalidArgument("layout", "must equal FormatLayout::of(pattern, rows, cols) (got " + layout.str() + ")");
  CondensedMatrix c;
  c.layout = layout;
  c.dtype = dtype;
  c.values.assign(layout.value_bytes(dtype), std::byte{0});
  c.indices.assign(layout.index_bytes(), 0);
  c.columns.assign(layout.colloc_bytes(), 0);
  return c;
}

std::int64_t CondensedMatrix::column_of(std::int64_t r, std::int64_t slot) const noexcept {
  const FormatLayout& l = layout;
  const Pattern& p = l.pattern;
  switch (p.kind) {
    case Granularity::element:
    case Granularity::hw24:
    case Granularity::vector: {
      const std::int64_t irow = p.kind == Granularity::vector ? r / p.v : r;
      const unsigned u = get_packed(indices.data() + irow * l.index_row_bytes, slot, l.index_bits);
      return (slot / p.n) * p.m + u;
    }
    case Granularity::block: {
      const std::int64_t vpw = std::int64_t(p.n) * p.bk;
      const std::int64_t w = slot / vpw, within = slot % vpw;
      const unsigned u = get_packed(indices.data() + (r / p.bn) * l.index_row_bytes, w * p.n + within / p.bk,
                                    l.index_bits);
      return w * p.m * p.bk + std::int64_t(u) * p.bk + within % p.bk;
    }
    case Granularity::venom: {
      const std::int64_t w = slot / kVenomKeep;
      const unsigned pos = get_packed(indices.data() + r * l.index_row_bytes, slot, l.index_bits);
      const unsigned col = get_packed(columns.data() + (r / p.v) * l.colloc_row_bytes, w * kVenomSelect + pos,
                                      l.colloc_bits);
      return w * p.m + col;
    }
  }
  return l.cols;
}

void CondensedMatrix::validate() const {
  auto fail = [](const std::string& why) { throw FormatError("condensed matrix: " + why); };
  if (!is_weight_dtype(dtype)) fail("dtype must be f32, f16 or bf16 (got " + std::string(to_string(dtype)) + ")");
  FormatLayout expect;
  try {
    expect = FormatLayout::of(layout.pattern, layout.rows, layout.cols);
  } catch (const InvalidArgument& e) {
    fail(std::string("bad layout: ") + e.what());
  }
  if (!(expect == layout)) fail("layout disagrees with its pattern and shape: " + layout.str());
  if (values.size() != layout.value_bytes(dtype))
    fail("values hold " + s(std::int64_t(values.size())) + " bytes, layout needs " + s(std::int64_t(layout.value_bytes(dtype))));
  if (indices.size() != layout.index_bytes())
    fail("indices hold " + s(std::int64_t(indices.size())) + " bytes, layout needs " + s(std::int64_t(layout.index_bytes())));
  if (columns.size() != layout.colloc_bytes())
    fail("columns hold " + s(std::int64_t(columns.size())) + " bytes, layout needs " + s(std::int64_t(layout.colloc_bytes())));

  const FormatLayout& l = layout;
  const Pattern& p = l.pattern;
  const bool venom = p.kind == Granularity::venom;
  const int per = venom ? kVenomKeep : p.n;
  const unsigned limit = venom ? unsigned(kVenomSelect) : unsigned(p.m);
  first_failure(l.index_rows, "indices", [&](std::int64_t i, std::string* msg) {
    return check_packed_row(indices.data() + i * l.index_row_bytes, l.index_fields, l.index_bits, l.index_row_bytes,
                            per, limit, msg);
  });
  if (venom)
    first_failure(l.colloc_rows, "columns", [&](std::int64_t i, std::string* msg) {
      return check_packed_row(columns.data() + i * l.colloc_row_bytes, l.colloc_fields, l.colloc_bits,
                              l.colloc_row_bytes, kVenomSelect, unsigned(p.m), msg);
    });

  // Padding slots (column >= cols) exist only in the last window and must hold +-0.
  const std::int64_t vpw = p.values_per_window();
  const std::int64_t last = (l.windows - 1) * vpw;
  const std::size_t es = dtype_size(dtype);
  first_failure(l.rows, "values", [&](std::int64_t r, std::string* msg) {
    for (std::int64_t slot = last; slot < l.value_cols; ++slot) {
      if (column_of(r, slot) < l.cols) continue;
      const std::byte* v = values.data() + std::size_t(r * l.value_cols + slot) * es;
      bool zero = true;
      if (es == 4) {
        std::uint32_t b;
        std::memcpy(&b, v, 4);
        zero = !nonzero(b);
      } else {
        std::uint16_t b;
        std::memcpy(&b, v, 2);
        zero = !nonzero(b);
      }
      if (!zero) {
        if (msg)
          *msg = "slot " + s(slot) + " lies past the last column (column " + s(column_of(r, slot)) + " >= cols " +
                 s(l.cols) + ") but holds a nonzero value";
        return false;
      }
    }
    return true;
  });
}

PatternCheck check_pattern(const MatrixView& dense, const Pattern& p) {
  check_view(dense, "dense");
  p.validate("pattern");
  if (dense.rows == 0 || dense.cols == 0) return {};
  const FormatLayout l = FormatLayout::of(p, dense.rows, dense.cols);
  return dispatch(dense, Geometry(l), nullptr);
}

CondensedMatrix condense(const MatrixView& dense, const Pattern& p) {
  check_view(dense, "dense");
  const FormatLayout l = FormatLayout::of(p, dense.rows, dense.cols);
  CondensedMatrix c = CondensedMatrix::allocate(l, dense.dtype);
  const PatternCheck res = dispatch(dense, Geometry(c.layout), &c);
  if (!res.ok)
    throw PatternViolation("dense", "does not satisfy " + p.str() + ": " + res.message, res.first_row, res.first_col);
  return c;
}

DenseMatrix expand(const CondensedMatrix& c) {
  c.validate();
  if (dtype_size(c.dtype) == 4) return expand_impl<std::uint32_t>(c);
  return expand_impl<std::uint16_t>(c);
}

}  // namespace sparsenm
