// sparsenm prune — element N:M (and hardware 2:4): the n largest |w| of every window of m
// consecutive columns, per row. Ties: the lower column wins; |NaN| counts as +inf.
//
// Speed (28672 x 8192 fp16 to 2:8 is the yardstick): rows are split over OpenMP threads; per
// window the magnitude keys are integers taken straight from the bits (common.hpp), packed with
// the position into unique composites; the top n come from a one-pass register list (n <= 4),
// rank counting (m <= 64) or nth_element (larger windows). Full windows and the tail window
// are separate loops (no padding checks in the hot one); kept bits are copied unchanged, index
// fields go through a 64-bit bit writer; there is no allocation per row.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "prune/common.hpp"
#include "prune/engine.hpp"
#include "prune/select.hpp"

namespace sparsenm::prune_detail {

namespace {

// Appends fields to a packed index row (LSB first, like set_packed) through a 64-bit buffer.
struct BitWriter {
  std::uint8_t* out;
  std::uint64_t acc = 0;
  int fill = 0;
  explicit BitWriter(std::uint8_t* row) noexcept : out(row) {}
  void put(std::uint64_t value, int bits) noexcept {  // bits <= 56
    acc |= value << fill;
    fill += bits;
    while (fill >= 8) {
      *out++ = std::uint8_t(acc);
      acc >>= 8;
      fill -= 8;
    }
  }
  void flush() noexcept {
    if (fill > 0) *out = std::uint8_t(acc);
  }
};

// Top kN of a window in one pass: a sorted register list t[0] >= ... >= t[kN-1], each
// composite sinks through it with max/min (branch-free). Composites are unique and >= 1.
template <int kN, class C>
inline void top_small(const C* c, int count, int pbits, int* out) noexcept {
  C t[kN] = {};
  for (int i = 0; i < count; ++i) {
    C x = c[i];
    for (int s = 0; s < kN; ++s) {
      C hi = t[s] > x ? t[s] : x;
      x = t[s] > x ? x : t[s];
      t[s] = hi;
    }
  }
  const C pmask = (C(1) << pbits) - 1;
  for (int s = 0; s < kN; ++s) out[s] = count - 1 - int((t[s] - 1) & pmask);
  // Ascending positions by a branch-free compare-exchange network (random order otherwise
  // costs a mispredicted branch per window).
  auto cx = [out](int i, int j) {
    const int lo = std::min(out[i], out[j]), hi = std::max(out[i], out[j]);
    out[i] = lo;
    out[j] = hi;
  };
  if constexpr (kN == 2) {
    cx(0, 1);
  } else if constexpr (kN == 3) {
    cx(0, 1), cx(1, 2), cx(0, 1);
  } else if constexpr (kN == 4) {
    cx(0, 1), cx(2, 3), cx(0, 2), cx(1, 3), cx(1, 2);
  }
}

// Larger n, windows up to 64: rank counting. rank_i = number of composites above c_i; the kept
// positions (rank < n) come out already ascending. m compares per element, branch-free and
// vectorisable, where nth_element would branch on the data.
template <class C>
inline void rank_select(const C* c, int count, int n, int* out) noexcept {
  int k = 0;
  for (int i = 0; i < count; ++i) {
    const C ci = c[i];
    int rank = 0;
    for (int j = 0; j < count; ++j) rank += c[j] > ci;
    out[k] = i;
    k += rank < n;
  }
}

template <class E, bool kDense, int kM, int kN>
void element_rows(const MatrixView& w, int n_runtime, int m_runtime, const Output& out) {
  using bits = typename E::bits;
  using comp_t = std::conditional_t<sizeof(bits) == 2, std::uint32_t, std::uint64_t>;
  const int m = kM > 0 ? kM : m_runtime;
  const int n = kN > 0 ? kN : n_runtime;
  const int pbits = position_bits(m);
  const std::int64_t rows = w.rows, cols = w.cols;
  const std::int64_t windows = ceil_div(cols, m);
  const auto* in = static_cast<const bits*>(w.data);

  bits* dense = static_cast<bits*>(out.dense);
  bits* values = nullptr;
  std::uint8_t* indices = nullptr;
  std::int64_t value_cols = 0, index_row_bytes = 0;
  int ibits = 0;
  if constexpr (!kDense) {
    CondensedMatrix& c = *out.condensed;
    values = reinterpret_cast<bits*>(c.values.data());
    indices = c.indices.data();
    value_cols = c.layout.value_cols;
    index_row_bytes = c.layout.index_row_bytes;
    ibits = c.layout.index_bits;
  }

#pragma omp parallel for schedule(dynamic, 16) if (rows * cols >= kParallelMinElements)
  for (std::int64_t r = 0; r < rows; ++r) {
    const bits* row = in + r * w.ld;
    comp_t comp[256];
    int pos[256];
    BitWriter iw(kDense ? nullptr : indices + r * index_row_bytes);
    // Full windows: no padding checks (kM/kN known at compile time for the common shapes).
    const std::int64_t full = cols / m;
    for (std::int64_t win = 0; win < full; ++win) {
      const bits* x = row + win * m;
      for (int i = 0; i < m; ++i) comp[i] = ((comp_t(E::key(x[i])) << pbits) | comp_t(m - 1 - i)) + 1;
      if constexpr (kN > 0)
        top_small<kN>(comp, m, pbits, pos);
      else if (m <= 64)
        rank_select(comp, m, n, pos);
      else
        select_top_composite(comp, m, n, pbits, pos);
      if constexpr (kDense) {
        bits* drow = dense + r * cols + win * m;
        for (int s = 0; s < n; ++s) drow[pos[s]] = x[pos[s]];
      } else {
        bits* vrow = values + r * value_cols + win * n;
        if constexpr (kN > 0) {  // kN * ibits <= 32: one put per window
          std::uint64_t fields = 0;
          for (int s = 0; s < kN; ++s) {
            vrow[s] = x[pos[s]];
            fields |= std::uint64_t(pos[s]) << (s * ibits);
          }
          iw.put(fields, kN * ibits);
        } else {
          for (int s = 0; s < n; ++s) {
            vrow[s] = x[pos[s]];
            iw.put(std::uint64_t(pos[s]), ibits);
          }
        }
      }
    }
    // Tail window (cols % m columns), padded logically with zero columns.
    for (std::int64_t win = full; win < windows; ++win) {
      const std::int64_t c0 = win * m;
      const int real = int(cols - c0);
      if (real >= n) {
        for (int i = 0; i < real; ++i)
          comp[i] = ((comp_t(E::key(row[c0 + i])) << pbits) | comp_t(real - 1 - i)) + 1;
        select_top_composite(comp, real, n, pbits, pos);
      } else {  // fewer real columns than slots: all of them, then padding past the end
        for (int i = 0; i < n; ++i) pos[i] = i;
      }
      if constexpr (kDense) {
        bits* drow = dense + r * cols + c0;
        for (int s = 0; s < n; ++s)
          if (pos[s] < real) drow[pos[s]] = row[c0 + pos[s]];
      } else {
        bits* vrow = values + r * value_cols + win * n;
        for (int s = 0; s < n; ++s) {
          vrow[s] = pos[s] < real ? row[c0 + pos[s]] : bits(0);
          iw.put(std::uint64_t(pos[s]), ibits);
        }
      }
    }
    if constexpr (!kDense) iw.flush();
  }
}

template <class E, bool kDense, int kM>
void element_dispatch_n(const MatrixView& w, int n, int m, const Output& out) {
  switch (n) {  // small n: one-pass register selection
    case 1: return element_rows<E, kDense, kM, 1>(w, n, m, out);
    case 2: return element_rows<E, kDense, kM, 2>(w, n, m, out);
    case 3: return element_rows<E, kDense, kM, 3>(w, n, m, out);
    case 4: return element_rows<E, kDense, kM, 4>(w, n, m, out);
    default: return element_rows<E, kDense, kM, 0>(w, n, m, out);
  }
}

template <class E, bool kDense>
void element_dispatch_m(const MatrixView& w, int n, int m, const Output& out) {
  switch (m) {  // common window lengths get a compile-time m (unrolled loops)
    case 4: return element_dispatch_n<E, kDense, 4>(w, n, m, out);
    case 8: return element_dispatch_n<E, kDense, 8>(w, n, m, out);
    case 16: return element_dispatch_n<E, kDense, 16>(w, n, m, out);
    case 32: return element_dispatch_n<E, kDense, 32>(w, n, m, out);
    default: return element_dispatch_n<E, kDense, 0>(w, n, m, out);
  }
}

}  // namespace

void prune_element(const MatrixView& w, int n, int m, const Output& out) {
  dispatch(w.dtype, [&](auto traits) {
    using E = decltype(traits);
    if (out.dense)
      element_dispatch_m<E, true>(w, n, m, out);
    else
      element_dispatch_m<E, false>(w, n, m, out);
  });
}

}  // namespace sparsenm::prune_detail
