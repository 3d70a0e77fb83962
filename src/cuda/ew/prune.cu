// sparsenm — GPU magnitude pruning + condensing for element N:M / hw24 (prune_cuda).
//
// Semantics are those of the CPU prune (src/prune/element.cpp), bit for bit: per window of m
// columns the n largest magnitude keys win, the key being the sign-cleared bit pattern with NaN
// clamped to the infinity pattern (|NaN| = +inf); a composite (key << pbits | (m - 1 - i)) makes
// every candidate unique so ties go to the lower column; kept bits are copied unchanged, stored in
// ascending position; a tail window with fewer real columns than n keeps all of them, then the
// lowest padding positions with value 0.
//
// Work split: one thread per (row, group of G windows), G the smallest count whose index bits
// fill whole bytes (G * n * b % 8 == 0), times 4 when that stays small: a group owns whole bytes
// of the row's packed index stream (rows start at byte boundaries), so threads never share a
// byte: plain byte stores, no atomics, no pre-zeroing. Selection without arrays (any m <= 256):
// n passes find the n-th largest composite (each the max below the previous one), one pass emits
// the kept columns in order. Reads go through L1 (each window's m elements are read n + 1 times).
// Cost: O((n + 1) m) compares per window; 28672 x 8192 at 2:8 is ~3 x 8 compares per element.
#include <cuda_runtime.h>

#include <numeric>

#include "cuda/common.cuh"
#include "sparsenm/cuda.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm {
namespace {

template <class Bits>
struct KeyOf;
template <>
struct KeyOf<std::uint16_t> {  // f16 (inf pattern 0x7c00) or bf16 (0x7f80)
  std::uint32_t inf;
  __device__ std::uint32_t operator()(std::uint16_t b) const {
    const std::uint32_t k = b & 0x7fffu;
    return k > inf ? inf : k;
  }
};
template <>
struct KeyOf<std::uint32_t> {
  std::uint32_t inf;
  __device__ std::uint32_t operator()(std::uint32_t b) const {
    const std::uint32_t k = b & 0x7fffffffu;
    return k > inf ? inf : k;
  }
};

struct PruneArgs {
  const void* w;
  void* values;
  std::uint8_t* indices;
  long long rows, cols, ld, windows, value_cols, index_row_bytes;
  int n, m, bits, pbits, group;
  long long groups_per_row;
  std::uint32_t inf_key;
};

template <class Bits>
__global__ void prune_element_kernel(const PruneArgs a) {
  const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= a.rows * a.groups_per_row) return;
  const long long r = t / a.groups_per_row, g = t - r * a.groups_per_row;
  const Bits* row = static_cast<const Bits*>(a.w) + r * a.ld;
  Bits* vrow = static_cast<Bits*>(a.values) + r * a.value_cols;
  std::uint8_t* irow = a.indices + r * a.index_row_bytes;
  const KeyOf<Bits> key{a.inf_key};
  const long long w_begin = g * a.group;
  const long long w_end = w_begin + a.group < a.windows ? w_begin + a.group : a.windows;
  // This group's bits start at a byte boundary of the row's stream.
  long long out_byte = (w_begin * a.n * a.bits) >> 3;
  std::uint64_t acc = 0;
  int fill = 0;
  for (long long win = w_begin; win < w_end; ++win) {
    const long long c0 = win * a.m;
    const int real = a.cols - c0 < a.m ? int(a.cols - c0) : a.m;
    const Bits* x = row + c0;
    long long slot = win * a.n;
    if (real >= a.n) {
      // Threshold: the n-th largest composite among the real columns.
      std::uint64_t below = ~0ull, nth = 0;
      for (int s = 0; s < a.n; ++s) {
        std::uint64_t best = 0;
        for (int i = 0; i < real; ++i) {
          const std::uint64_t comp = ((std::uint64_t(key(x[i])) << a.pbits) | std::uint64_t(real - 1 - i)) + 1;
          if (comp < below && comp > best) best = comp;
        }
        below = best;
        nth = best;
      }
      for (int i = 0; i < real; ++i) {
        const std::uint64_t comp = ((std::uint64_t(key(x[i])) << a.pbits) | std::uint64_t(real - 1 - i)) + 1;
        if (comp >= nth) {
          vrow[slot++] = x[i];
          acc |= std::uint64_t(i) << fill;
          fill += a.bits;
          while (fill >= 8) {
            irow[out_byte++] = std::uint8_t(acc);
            acc >>= 8;
            fill -= 8;
          }
        }
      }
    } else {  // fewer real columns than slots: all of them, then padding positions (value 0)
      for (int i = 0; i < a.n; ++i) {
        vrow[slot++] = i < real ? x[i] : Bits(0);
        acc |= std::uint64_t(i) << fill;
        fill += a.bits;
        while (fill >= 8) {
          irow[out_byte++] = std::uint8_t(acc);
          acc >>= 8;
          fill -= 8;
        }
      }
    }
  }
  // A partial byte only at the row's end (groups end on byte boundaries otherwise): its unused
  // high bits are zero, as in the canonical format.
  if (fill > 0) irow[out_byte] = std::uint8_t(acc);
}

int pbits_for(int m) {  // bits to hold m - 1 - i, as the CPU prune's position_bits
  int b = 1;
  while ((1 << b) < m) ++b;
  return b;
}

}  // namespace

void prune_cuda_device(const void* w_dev, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                       const Pattern& p, void* values_dev, std::uint8_t* indices_dev, void* stream) {
  if (p.kind != Granularity::element && p.kind != Granularity::hw24)
    throw InvalidArgument("pattern", "prune_cuda serves element N:M and hw24 patterns (got " + p.str() + ")");
  if (!is_weight_dtype(dtype)) throw InvalidArgument("dtype", "must be f32, f16 or bf16");
  if (ld < cols) throw InvalidArgument("ld", "must be >= cols");
  const FormatLayout l = FormatLayout::of(p, rows, cols);
  if (!w_dev || !values_dev || !indices_dev) throw InvalidArgument("w_dev", "device pointers must not be null");
  PruneArgs a{};
  a.w = w_dev;
  a.values = values_dev;
  a.indices = indices_dev;
  a.rows = rows;
  a.cols = cols;
  a.ld = ld;
  a.windows = l.windows;
  a.value_cols = l.value_cols;
  a.index_row_bytes = l.index_row_bytes;
  a.n = p.n;
  a.m = p.m;
  a.bits = l.index_bits;
  a.pbits = pbits_for(p.m);
  const int per_window = p.n * l.index_bits;
  int g = 8 / std::gcd(per_window, 8);  // windows per whole byte run
  while (g * 2 <= 8 && g * 2 * per_window <= 256) g *= 2;
  a.group = g;
  a.groups_per_row = (l.windows + g - 1) / g;
  a.inf_key = dtype == DType::f16 ? 0x7c00u : dtype == DType::bf16 ? 0x7f80u : 0x7f800000u;
  const long long threads = rows * a.groups_per_row;
  if (threads == 0) return;
  const int block = 256;
  const unsigned grid = unsigned((threads + block - 1) / block);
  auto s = static_cast<cudaStream_t>(stream);
  if (dtype == DType::f32) prune_element_kernel<std::uint32_t><<<grid, block, 0, s>>>(a);
  else prune_element_kernel<std::uint16_t><<<grid, block, 0, s>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("prune_element_kernel");
}

CondensedMatrix prune_cuda(const MatrixView& w, const Pattern& p) {
  check_view(w, "w");
  if (p.kind != Granularity::element && p.kind != Granularity::hw24)
    throw InvalidArgument("pattern", "prune_cuda serves element N:M and hw24 patterns (got " + p.str() + ")");
  CondensedMatrix c = CondensedMatrix::allocate(FormatLayout::of(p, w.rows, w.cols), w.dtype);
  const std::size_t es = dtype_size(w.dtype);
  cuda::DeviceBuffer dw(std::size_t(w.rows * w.cols) * es), dv(c.values.size()), di(c.indices.size());
  SPARSENM_CUDA_CHECK(cudaMemcpy2D(dw.get(), std::size_t(w.cols) * es, w.data, std::size_t(w.ld) * es,
                                   std::size_t(w.cols) * es, std::size_t(w.rows), cudaMemcpyHostToDevice));
  prune_cuda_device(dw.get(), w.dtype, w.rows, w.cols, w.cols, p, dv.get(), di.as<std::uint8_t>(), nullptr);
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  dv.download(c.values.data(), c.values.size());
  di.download(c.indices.data(), c.indices.size());
  return c;
}

}  // namespace sparsenm
