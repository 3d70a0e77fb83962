// sparsenm — CPU reference kernels: Y = X * W^T straight from the condensed format.
//
// Data flow (one call):
//   for each tile of MT rows of X (MT in 1..32, the power of two >= the rows left, at most 32)
//     for each tile of windows along k (sized so the X tile below stays in L2)
//       Xt[kt][MT]      X tile transposed to the accumulator type (zero lanes past m), shared
//       parallel over the rows r of W:
//         decode row r's stored slots of this window range once: (column, value) pairs in
//         storage order (window, then ascending slot); a padding slot (column >= cols, value 0)
//         points at an all-zero row past the tile, so it adds +0 and never touches X
//         acc[0..MT) += value * Xt[column][0..MT)   for every slot, in that order
//
// Every output element is therefore the sum over stored slots with column < cols, in a fixed
// order (by window, then slot), whatever m, the tiling or the thread count: batch-invariant and
// bit-reproducible. The inner loop runs over MT contiguous lanes and vectorises. X is read only
// at stored columns inside the matrix (format.hpp: pruned positions contribute nothing).
// Slot -> column (format.hpp):
//   element / hw24 / vector: window * m + position
//   block:                   window * m * bk + block * bk + j   (j = 0..bk-1)
//   venom:                   window * m + columns[slab][window * 4 + position2]
#include "sparsenm/reference.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/reference_impl.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm {
namespace {

constexpr int kMaxTile = 32;                     // rows of X per tile (f32; f64: 16)
constexpr std::size_t kXtileBytes = 512u * 1024;  // budget of the transposed X tile (L2 is ~1 MB)

std::string dims(std::int64_t r, std::int64_t c) { return std::to_string(r) + "x" + std::to_string(c); }

// Cheap structural checks (O(1)): they make every access below in bounds. Index values that
// are out of range can only move a slot to another column, and every column is checked
// against cols, so a corrupt index never reads out of bounds (CondensedMatrix::validate finds it).
void check_condensed(const CondensedMatrix& w, const char* argument) {
  const std::string a(argument);
  if (!is_weight_dtype(w.dtype))
    throw InvalidArgument(a, "dtype must be f32, f16 or bf16 (got " + std::string(to_string(w.dtype)) + ")");
  const FormatLayout expect = FormatLayout::of(w.pattern(), w.rows(), w.cols());
  if (!(expect == w.layout))
    throw InvalidArgument(a, "layout must be FormatLayout::of(pattern, rows, cols) (got " + w.layout.str() + ")");
  if (w.values.size() != w.layout.value_bytes(w.dtype))
    throw InvalidArgument(a, "values must hold " + std::to_string(w.layout.value_bytes(w.dtype)) + " bytes (got " +
                                 std::to_string(w.values.size()) + ")");
  if (w.indices.size() != w.layout.index_bytes())
    throw InvalidArgument(a, "indices must hold " + std::to_string(w.layout.index_bytes()) + " bytes (got " +
                                 std::to_string(w.indices.size()) + ")");
  if (w.columns.size() != w.layout.colloc_bytes())
    throw InvalidArgument(a, "columns must hold " + std::to_string(w.layout.colloc_bytes()) + " bytes (got " +
                                 std::to_string(w.columns.size()) + ")");
}

void check_operands(const MatrixView& x, const CondensedMatrix& w, const MatrixView* y) {
  check_condensed(w, "w");
  check_view(x, "x");
  if (x.dtype != w.dtype)
    throw InvalidArgument("x", "dtype must equal the weight's dtype " + std::string(to_string(w.dtype)) + " (got " +
                                   std::string(to_string(x.dtype)) + ")");
  if (x.cols != w.cols())
    throw InvalidArgument("x", "cols must equal the weight's cols " + std::to_string(w.cols()) + " (got " +
                                   dims(x.rows, x.cols) + ")");
  if (y) {
    check_view(*y, "y");
    if (y->rows != x.rows || y->cols != w.rows())
      throw InvalidArgument("y", "shape must be x.rows x w.rows = " + dims(x.rows, w.rows()) + " (got " +
                                     dims(y->rows, y->cols) + ")");
  }
}

// fp16 -> f32 without branches (vectorisable): the 15 magnitude bits moved into f32 position
// give the value times 2^-112 for normals and subnormals alike; Inf/NaN get the f32 exponent.
inline float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t mag = std::uint32_t(h & 0x7fffu) << 13;
  const std::uint32_t scaled = std::bit_cast<std::uint32_t>(std::bit_cast<float>(mag) * 0x1p112f);
  const std::uint32_t special = 0u - std::uint32_t((h & 0x7c00u) == 0x7c00u);  // all ones for Inf/NaN
  const std::uint32_t u = (scaled & ~special) | ((mag | 0x7f800000u) & special);
  return std::bit_cast<float>(u | (std::uint32_t(h & 0x8000u) << 16));
}

// Converts `count` contiguous stored values to f32.
template <DType D>
void convert_values(const std::byte* src, std::int64_t count, float* dst) noexcept {
  if constexpr (D == DType::f32) {
    std::memcpy(dst, src, std::size_t(count) * 4);
  } else {
    for (std::int64_t i = 0; i < count; ++i) {
      std::uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      if constexpr (D == DType::f16)
        dst[i] = half_to_float(h);
      else
        dst[i] = std::bit_cast<float>(std::uint32_t(h) << 16);
    }
  }
}

// Field j of a packed index row (format.hpp's get_packed), with one unaligned 8-byte load and
// no data-dependent branch wherever 8 bytes remain in the buffer.
inline unsigned field(const std::uint8_t* row, std::int64_t j, int bits, const std::uint8_t* end) noexcept {
  const std::int64_t bit = j * bits;
  const std::uint8_t* p = row + (bit >> 3);
  if (end - p >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    return unsigned(word >> (bit & 7)) & ((1u << bits) - 1u);
  }
  return get_packed(row, j, bits);
}

// Shapes of the slot walk, taken once from the layout.
struct Walk {
  Granularity kind;
  int n, m, bk, vpw, bits, colloc_bits;
  std::int64_t cols, wcols, group, index_row_bytes, colloc_row_bytes, value_cols;
};

Walk make_walk(const CondensedMatrix& w) {
  const Pattern& p = w.pattern();
  const FormatLayout& l = w.layout;
  return Walk{p.kind, p.n, p.m, p.bk, p.values_per_window(), l.index_bits, l.colloc_bits, l.cols, p.window_cols(),
              p.row_group(), l.index_row_bytes, l.colloc_row_bytes, l.value_cols};
}

// Decodes row r's stored slots of windows [w0, w1) in storage order (window, then slot):
// cols[s] = column - c0 (c0 = w0 * window_cols), vals[s] = value as f32. A padding slot
// (column >= cols) gets `zero_row`, a row of the X tile that holds zeros and no X value.
// Returns the slot count, (w1 - w0) * values_per_window.
template <DType D>
std::int64_t decode_row(const CondensedMatrix& w, const Walk& k, std::int64_t r, std::int64_t w0, std::int64_t w1,
                        std::int32_t zero_row, std::int32_t* cols, float* vals) {
  const std::int64_t count = (w1 - w0) * k.vpw;
  const std::int64_t dsize = std::int64_t(dtype_size(D));
  convert_values<D>(w.values.data() + (r * k.value_cols + w0 * k.vpw) * dsize, count, vals);
  // Locals, not k's fields: the stores through `cols` could alias them otherwise.
  const std::int64_t c0 = w0 * k.wcols, ncols = k.cols, m = k.m, wcols = k.wcols;
  const int n = k.n, bits = k.bits, bk = k.bk;
  const std::uint8_t* const end = w.indices.data() + w.indices.size();
  std::int32_t* out = cols;
  auto put = [&](std::int64_t col) { *out++ = col < ncols ? std::int32_t(col - c0) : zero_row; };
  switch (k.kind) {
    case Granularity::element:
    case Granularity::hw24:
    case Granularity::vector: {
      const std::uint8_t* idx = w.indices.data() + (r / k.group) * k.index_row_bytes;
      for (std::int64_t win = w0; win < w1; ++win)
        for (int i = 0; i < n; ++i) put(win * m + field(idx, win * n + i, bits, end));
      break;
    }
    case Granularity::block: {
      const std::uint8_t* idx = w.indices.data() + (r / k.group) * k.index_row_bytes;
      for (std::int64_t win = w0; win < w1; ++win)
        for (int i = 0; i < n; ++i) {
          const std::int64_t base = win * wcols + std::int64_t(field(idx, win * n + i, bits, end)) * bk;
          for (int j = 0; j < bk; ++j) put(base + j);
        }
      break;
    }
    case Granularity::venom: {
      const std::uint8_t* idx = w.indices.data() + r * k.index_row_bytes;
      const std::uint8_t* loc = w.columns.data() + (r / k.group) * k.colloc_row_bytes;
      const std::uint8_t* const loc_end = w.columns.data() + w.columns.size();
      const int cbits = k.colloc_bits;
      for (std::int64_t win = w0; win < w1; ++win)
        for (int i = 0; i < 2; ++i) {
          const unsigned pos = field(idx, win * 2 + i, 2, end);
          put(win * m + field(loc, win * 4 + pos, cbits, loc_end));
        }
      break;
    }
  }
  return count;
}

using DecodeFn = std::int64_t (*)(const CondensedMatrix&, const Walk&, std::int64_t, std::int64_t, std::int64_t,
                                  std::int32_t, std::int32_t*, float*);

DecodeFn decoder(DType t) {
  switch (t) {
    case DType::f32: return &decode_row<DType::f32>;
    case DType::f16: return &decode_row<DType::f16>;
    default: return &decode_row<DType::bf16>;
  }
}

// acc[0..MT) += vals[s] * xt[cols[s]][0..MT), s ascending. The MT lanes live in registers as
// 16-byte vectors (GCC/Clang vector extensions; SSE2 at least), one broadcast per slot.
template <class T, int MT>
void accumulate(const std::int32_t* cols, const float* vals, std::int64_t count, const T* xt, T* acc) {
  constexpr int L = 16 / int(sizeof(T));  // lanes per vector
  if constexpr (MT < L) {
    T a[MT];
    for (int j = 0; j < MT; ++j) a[j] = acc[j];
    for (std::int64_t s = 0; s < count; ++s) {
      const T v = T(vals[s]);
      const T* xr = xt + std::size_t(cols[s]) * MT;
      for (int j = 0; j < MT; ++j) a[j] += v * xr[j];
    }
    for (int j = 0; j < MT; ++j) acc[j] = a[j];
  } else {
    typedef T V __attribute__((vector_size(16)));
    constexpr int NV = MT / L;
    V a[NV];
    std::memcpy(a, acc, sizeof a);
    for (std::int64_t s = 0; s < count; ++s) {
      const V v = V{} + T(vals[s]);
      const T* xr = xt + std::size_t(cols[s]) * MT;
      for (int q = 0; q < NV; ++q) {
        V x;
        std::memcpy(&x, xr + q * L, 16);
        a[q] += v * x;
      }
    }
    std::memcpy(acc, a, sizeof a);
  }
}

template <class T>
using AccumulateFn = void (*)(const std::int32_t*, const float*, std::int64_t, const T*, T*);

template <class T>
AccumulateFn<T> accumulator(int mt) {
  switch (mt) {
    case 1: return &accumulate<T, 1>;
    case 2: return &accumulate<T, 2>;
    case 4: return &accumulate<T, 4>;
    case 8: return &accumulate<T, 8>;
    case 16: return &accumulate<T, 16>;
    default: return &accumulate<T, 32>;
  }
}

template <class T>
int tile_width(std::int64_t left) {
  const int most = sizeof(T) == 4 ? kMaxTile : kMaxTile / 2;  // keeps the f64 lanes in registers
  int mt = 1;
  while (mt < left && mt < most) mt *= 2;
  return mt;
}

// The kernel. store(i, r, T value) receives every output element exactly once.
template <class T, class Store>
void run_reference(const MatrixView& x, const CondensedMatrix& w, Store&& store) {
  const std::int64_t m = x.rows, rows = w.rows(), cols = w.cols();
  if (m == 0 || rows == 0) return;
  const Walk walk = make_walk(w);
  const std::int64_t windows = w.layout.windows;
  const DecodeFn decode = decoder(w.dtype);

  // Windows per k tile: the transposed X tile (wcols * MT * sizeof(T) per window) fits the budget.
  const int mt_max = tile_width<T>(m);
  const std::int64_t per_window = walk.wcols * mt_max * std::int64_t(sizeof(T));
  const std::int64_t tile_windows = std::clamp<std::int64_t>(std::int64_t(kXtileBytes) / per_window, 1, windows);
  const std::int64_t k_tiles = (windows + tile_windows - 1) / tile_windows;
  const std::int64_t tile_cols = tile_windows * walk.wcols;
  const std::int64_t max_slots = tile_windows * walk.vpw;

  // Xt plus mt_max zeros at offset tile_cols * mt_max, which no X tile ever writes (a tile of
  // width mt fills [0, tile_cols * mt)): the row padding slots point at, whatever mt.
  std::vector<T> xt(std::size_t(tile_cols + 1) * mt_max);
  std::vector<T> acc(k_tiles > 1 ? std::size_t(rows) * mt_max : 0);

  // Threads only where there is work enough to pay for the barriers (two per tile).
  const double work = double(rows) * double(w.layout.value_cols) * double(m);
#pragma omp parallel if (work > 2e5)
  {
    std::vector<std::int32_t> slot_cols(static_cast<std::size_t>(max_slots));
    std::vector<float> slot_vals(static_cast<std::size_t>(max_slots));
    T local[kMaxTile];

    for (std::int64_t i0 = 0; i0 < m; i0 += mt_max) {
      const std::int64_t mc = std::min<std::int64_t>(mt_max, m - i0);
      const int mt = tile_width<T>(mc);
      const AccumulateFn<T> acc_fn = accumulator<T>(mt);
      const auto zero_row = std::int32_t(tile_cols * (mt_max / mt));
      for (std::int64_t t = 0; t < k_tiles; ++t) {
        const std::int64_t w0 = t * tile_windows, w1 = std::min(windows, w0 + tile_windows);
        const std::int64_t c0 = w0 * walk.wcols, c1 = std::min(cols, w1 * walk.wcols);
#pragma omp for schedule(static)
        for (std::int64_t c = c0; c < c1; ++c) {
          T* dst = xt.data() + std::size_t(c - c0) * mt;
          for (std::int64_t j = 0; j < mc; ++j) dst[j] = T(x.at(i0 + j, c));
          for (std::int64_t j = mc; j < mt; ++j) dst[j] = T(0);
        }
        // implicit barrier: the tile is complete
        const bool first = t == 0, last = t == k_tiles - 1;
#pragma omp for schedule(static)
        for (std::int64_t r = 0; r < rows; ++r) {
          T* a = last && first ? local : acc.data() + std::size_t(r) * mt;
          if (first) std::fill(a, a + mt, T(0));
          const std::int64_t count = decode(w, walk, r, w0, w1, zero_row, slot_cols.data(), slot_vals.data());
          acc_fn(slot_cols.data(), slot_vals.data(), count, xt.data(), a);
          if (last)
            for (std::int64_t j = 0; j < mc; ++j) store(i0 + j, r, a[j]);
        }
        // implicit barrier: xt may be overwritten
      }
    }
  }
}

}  // namespace

namespace detail {

void check_matmul_operands(const MatrixView& x, const CondensedMatrix& w, const MatrixView& y) {
  check_operands(x, w, &y);
}

void reference_matmul_trusted(const MatrixView& x, const CondensedMatrix& w, const MutableMatrixView& y,
                              Accumulate acc) {
  const MatrixView yv = y;
  check_operands(x, w, &yv);
  const DType yt = y.dtype;
  void* const yd = y.data;
  const std::int64_t ld = y.ld;
  switch (acc) {
    case Accumulate::f32:
      run_reference<float>(x, w, [&](std::int64_t i, std::int64_t r, float v) {
        store_from_float(yt, yd, std::size_t(i * ld + r), v);
      });
      return;
    case Accumulate::f64:
      run_reference<double>(x, w, [&](std::int64_t i, std::int64_t r, double v) {
        store_from_float(yt, yd, std::size_t(i * ld + r), float(v));
      });
      return;
  }
  throw InvalidArgument("acc", "must be Accumulate::f32 or Accumulate::f64 (got " + std::to_string(int(acc)) + ")");
}

}  // namespace detail

void reference_matmul(const MatrixView& x, const CondensedMatrix& w, const MutableMatrixView& y, Accumulate acc) {
  const MatrixView yv = y;
  check_operands(x, w, &yv);
  w.validate();
  detail::reference_matmul_trusted(x, w, y, acc);
}

std::vector<double> reference_matmul_f64(const MatrixView& x, const CondensedMatrix& w) {
  check_operands(x, w, nullptr);
  w.validate();
  std::vector<double> out(std::size_t(x.rows) * std::size_t(w.rows()));
  const std::int64_t n = w.rows();
  run_reference<double>(x, w, [&](std::int64_t i, std::int64_t r, double v) { out[std::size_t(i * n + r)] = v; });
  return out;
}

std::vector<double> dense_matmul_f64(const MatrixView& x, const MatrixView& w) {
  check_view(x, "x");
  check_view(w, "w");
  if (x.cols != w.cols)
    throw InvalidArgument("x", "cols must equal w.cols " + std::to_string(w.cols) + " (got " + dims(x.rows, x.cols) + ")");
  const std::int64_t m = x.rows, n = w.rows, k = x.cols;
  std::vector<double> xd(std::size_t(m) * std::size_t(k));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t c = 0; c < k; ++c) xd[std::size_t(i * k + c)] = x.at(i, c);
  std::vector<double> out(std::size_t(m) * std::size_t(n));
#pragma omp parallel if (double(m) * double(n) * double(k) > 2e5)
  {
    std::vector<double> wr(static_cast<std::size_t>(k));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < n; ++r) {
      for (std::int64_t c = 0; c < k; ++c) wr[std::size_t(c)] = w.at(r, c);
      for (std::int64_t i = 0; i < m; ++i) {
        const double* xr = xd.data() + std::size_t(i * k);
        double s = 0.0;
        for (std::int64_t c = 0; c < k; ++c) s += xr[c] * wr[std::size_t(c)];
        out[std::size_t(i * n + r)] = s;
      }
    }
  }
  return out;
}

double relative_error(const MatrixView& got, const std::vector<double>& ref) {
  check_view(got, "got");
  const std::size_t count = std::size_t(got.rows) * std::size_t(got.cols);
  if (ref.size() != count)
    throw InvalidArgument("ref", "must hold got.rows * got.cols = " + std::to_string(count) + " values (got " +
                                     std::to_string(ref.size()) + ")");
  double diff2 = 0.0, ref2 = 0.0;
  for (std::int64_t i = 0; i < got.rows; ++i) {
    for (std::int64_t j = 0; j < got.cols; ++j) {
      const double g = got.at(i, j), r = ref[std::size_t(i * got.cols + j)];
      const bool gn = std::isnan(g), rn = std::isnan(r);
      if (gn || rn) {
        if (gn && rn) continue;                       // both NaN: they agree
        return std::numeric_limits<double>::quiet_NaN();  // NaN on one side only
      }
      if (std::isinf(g) || std::isinf(r)) {
        if (g == r) continue;                        // same infinity: they agree
        return std::numeric_limits<double>::infinity();
      }
      const double d = g - r;
      diff2 += d * d;
      ref2 += r * r;
    }
  }
  if (diff2 == 0.0) return 0.0;  // covers 0/0
  return std::sqrt(diff2) / std::sqrt(ref2);  // inf when ref is all zero
}

}  // namespace sparsenm
