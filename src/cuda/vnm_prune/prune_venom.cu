// sparsenm — GPU magnitude pruning to V:2:M (VENOM) and hardware 2:4 (rules and tie-breaking:
// include/sparsenm/cuda_prune_venom.hpp, identical to the CPU pruner's).
//
// venom: one block per (window, slab). The slab's |w| for the window (V x M floats, NaN -> +inf,
// exact for every weight dtype) is staged in shared memory when it fits (V * M <= 8192), else
// read from global memory. Exhaustive search (count <= 32): thread per subset, subsets in
// lexicographic order from a host table (the C(M,4) 4-tuples, skipping those that reach past a
// tail window's real columns); each thread scores its subset over the rows *in row order in
// double* — the CPU's canonical arithmetic — so scores agree bit for bit; a block reduction
// keeps (max score, then min rank). Warps of a block read the same row at once: shared-memory
// broadcasts. count > 32: L1 start + best-improvement swaps, each candidate scored the same way.
// Then thread per row: top 2 of the 4, values and nibble; nibbles go to a [rows][windows] byte
// array that a second kernel packs into canonical index bytes; `columns` are packed on the host.
// hw24: thread per (row, pair of windows) writes one canonical index byte and 4 values.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cuda/common.cuh"
#include "sparsenm/cuda_prune_venom.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm {

namespace {

using cuda::DeviceBuffer;

template <class B>
struct Elem;
template <>
struct Elem<std::uint16_t> {  // f16 or bf16, chosen at runtime by `bf`
  static __device__ __forceinline__ float mag(std::uint16_t b, bool bf) {
    float f = bf ? __uint_as_float(std::uint32_t(b) << 16) : __half2float(__ushort_as_half(b));
    f = fabsf(f);
    return isnan(f) ? INFINITY : f;
  }
  static __device__ __forceinline__ std::uint32_t key(std::uint16_t b, bool bf) {
    std::uint32_t k = b & 0x7fffu;
    const std::uint32_t inf = bf ? 0x7f80u : 0x7c00u;
    return k > inf ? inf : k;
  }
};
template <>
struct Elem<std::uint32_t> {  // f32
  static __device__ __forceinline__ float mag(std::uint32_t b, bool) {
    float f = fabsf(__uint_as_float(b));
    return isnan(f) ? INFINITY : f;
  }
  static __device__ __forceinline__ std::uint32_t key(std::uint32_t b, bool) {
    std::uint32_t k = b & 0x7fffffffu;
    return k > 0x7f800000u ? 0x7f800000u : k;
  }
};

constexpr int kThreads = 256;
constexpr int kSmemMags = 8192;  // floats of staged |w| (32 KB)

struct VenomArgs {
  const void* w;
  std::int64_t ld, rows, cols, windows;
  int V, M;
  bool bf;
  const uchar4* subsets;  // C(M,4) tuples, lexicographic (M <= 32), else null
  int nsub;
  std::uint8_t* sel;      // [slabs][windows][4]
  std::uint8_t* nib;      // [rows][windows]
  void* values;           // [rows][windows * 2]
};

template <class B>
__global__ void __launch_bounds__(kThreads) venom_kernel(const VenomArgs a) {
  __shared__ float smag[kSmemMags];
  __shared__ double red_s[kThreads];
  __shared__ long long red_r[kThreads];
  __shared__ int chosen[4];
  const std::int64_t win = blockIdx.x, slab = blockIdx.y;
  const std::int64_t r0 = slab * a.V, c0 = win * a.M;
  const int nrows = int(min(std::int64_t(a.V), a.rows - r0));
  const int real = int(min(std::int64_t(a.M), a.cols - c0));
  const B* w = static_cast<const B*>(a.w);
  const bool staged = nrows * a.M <= kSmemMags;
  if (staged)
    for (int idx = threadIdx.x; idx < nrows * a.M; idx += blockDim.x) {
      const int r = idx / a.M, c = idx - r * a.M;
      smag[idx] = c < real ? Elem<B>::mag(w[(r0 + r) * a.ld + c0 + c], a.bf) : 0.0f;
    }
  __syncthreads();
  auto mag = [&](int r, int c) -> float {
    if (staged) return smag[r * a.M + c];
    return c < real ? Elem<B>::mag(w[(r0 + r) * a.ld + c0 + c], a.bf) : 0.0f;
  };
  auto score = [&](int c0_, int c1_, int c2_, int c3_) -> double {
    double s = 0.0;
    for (int r = 0; r < nrows; ++r) {
      const float x0 = mag(r, c0_), x1 = mag(r, c1_), x2 = mag(r, c2_), x3 = mag(r, c3_);
      const float hi1 = fmaxf(x0, x1), lo1 = fminf(x0, x1), hi2 = fmaxf(x2, x3), lo2 = fminf(x2, x3);
      float t1, t2;
      if (hi1 >= hi2) {
        t1 = hi1;
        t2 = fmaxf(lo1, hi2);
      } else {
        t1 = hi2;
        t2 = fmaxf(hi1, lo2);
      }
      s += double(t1) + double(t2);
    }
    return s;
  };
  // Block argmax: larger score, then smaller rank. Returns the winner's rank (-1: none).
  auto block_best = [&](double s, long long rank) -> long long {
    red_s[threadIdx.x] = s;
    red_r[threadIdx.x] = rank;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        const double so = red_s[threadIdx.x + half];
        const long long ro = red_r[threadIdx.x + half];
        const double sm = red_s[threadIdx.x];
        const long long rm = red_r[threadIdx.x];
        if (ro >= 0 && (rm < 0 || so > sm || (so == sm && ro < rm))) {
          red_s[threadIdx.x] = so;
          red_r[threadIdx.x] = ro;
        }
      }
      __syncthreads();
    }
    const long long best = red_r[0];
    __syncthreads();
    return best;
  };

  if (real < 4) {
    if (threadIdx.x < 4) chosen[threadIdx.x] = threadIdx.x;
  } else if (real <= 32) {
    double bs = -1.0;
    int br = -1;
    for (int s = threadIdx.x; s < a.nsub; s += blockDim.x) {
      const uchar4 q = a.subsets[s];
      if (q.w >= real) continue;
      const double sc = score(q.x, q.y, q.z, q.w);
      if (br < 0 || sc > bs) {  // ranks ascend per thread: keep the first of equal scores
        bs = sc;
        br = s;
      }
    }
    const long long best = block_best(bs, br);
    if (threadIdx.x == 0) {
      const uchar4 q = a.subsets[best];
      chosen[0] = q.x, chosen[1] = q.y, chosen[2] = q.z, chosen[3] = q.w;
    }
  } else {
    // L1 start: column mass in row order (double), top 4 (ties: lower column).
    __shared__ double mass[256];
    for (int c = threadIdx.x; c < real; c += blockDim.x) {
      double m = 0.0;
      for (int r = 0; r < nrows; ++r) m += double(mag(r, c));
      mass[c] = m;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int pick[4];
      for (int s = 0; s < 4; ++s) {
        int best = -1;
        for (int c = 0; c < real; ++c) {
          bool taken = false;
          for (int u = 0; u < s; ++u) taken |= pick[u] == c;
          if (!taken && (best < 0 || mass[c] > mass[best])) best = c;
        }
        pick[s] = best;
      }
      for (int i = 1; i < 4; ++i)
        for (int j = i; j > 0 && pick[j - 1] > pick[j]; --j) {
          const int tmp = pick[j];
          pick[j] = pick[j - 1];
          pick[j - 1] = tmp;
        }
      for (int i = 0; i < 4; ++i) chosen[i] = pick[i];
    }
    __syncthreads();
    double cur = score(chosen[0], chosen[1], chosen[2], chosen[3]);
    // Best-improvement swaps. Candidate (i, j) -> sorted set; rank for ties = its lexicographic
    // key (4 columns of 8 bits packed big-endian), so "smaller rank" = lexicographically smaller.
    for (;;) {
      double bs = -1.0;
      long long bkey = -1;
      for (int cand = threadIdx.x; cand < 4 * real; cand += blockDim.x) {
        const int i = cand / real, j = cand - i * real;
        if (j == chosen[0] || j == chosen[1] || j == chosen[2] || j == chosen[3]) continue;
        int s[4] = {chosen[0], chosen[1], chosen[2], chosen[3]};
        s[i] = j;
        for (int u = 1; u < 4; ++u)
          for (int v = u; v > 0 && s[v - 1] > s[v]; --v) {
            const int tmp = s[v];
            s[v] = s[v - 1];
            s[v - 1] = tmp;
          }
        const double sc = score(s[0], s[1], s[2], s[3]);
        const long long key = (static_cast<long long>(s[0]) << 24) | (s[1] << 16) | (s[2] << 8) | s[3];
        if (sc > cur && (bkey < 0 || sc > bs || (sc == bs && key < bkey))) {
          bs = sc;
          bkey = key;
        }
      }
      // Reduce (score desc, key asc) with the same helper: the key plays the rank.
      const long long best = block_best(bs, bkey);
      if (best < 0) break;
      const double best_score = score((best >> 24) & 255, (best >> 16) & 255, (best >> 8) & 255, best & 255);
      __syncthreads();
      if (threadIdx.x == 0) {
        chosen[0] = (best >> 24) & 255, chosen[1] = (best >> 16) & 255, chosen[2] = (best >> 8) & 255,
        chosen[3] = best & 255;
      }
      cur = best_score;
      __syncthreads();
    }
  }
  __syncthreads();
  if (threadIdx.x < 4) a.sel[(slab * a.windows + win) * 4 + threadIdx.x] = std::uint8_t(chosen[threadIdx.x]);
  // Per row: the 2 largest of the 4 (first maximum wins), stored ascending.
  B* vals = static_cast<B*>(a.values);
  for (int r = threadIdx.x; r < nrows; r += blockDim.x) {
    float x[4];
    for (int i = 0; i < 4; ++i) x[i] = chosen[i] < real ? mag(r, chosen[i]) : 0.0f;
    int k1 = 0;
    for (int i = 1; i < 4; ++i)
      if (x[i] > x[k1]) k1 = i;
    int k2 = k1 == 0 ? 1 : 0;
    for (int i = 0; i < 4; ++i)
      if (i != k1 && x[i] > x[k2]) k2 = i;
    if (k2 < k1) {
      const int tmp = k1;
      k1 = k2;
      k2 = tmp;
    }
    const std::int64_t gr = r0 + r;
    const int ca = chosen[k1], cb = chosen[k2];
    vals[gr * a.windows * 2 + win * 2] = ca < real ? w[gr * a.ld + c0 + ca] : B(0);
    vals[gr * a.windows * 2 + win * 2 + 1] = cb < real ? w[gr * a.ld + c0 + cb] : B(0);
    a.nib[gr * a.windows + win] = std::uint8_t(k1 | (k2 << 2));
  }
}

/// nib [rows][windows] -> canonical indices [rows][ceil(windows / 2)] (window 2j low nibble).
__global__ void pack_nibbles(const std::uint8_t* nib, std::uint8_t* idx, std::int64_t rows, std::int64_t windows) {
  const std::int64_t bytes = (windows + 1) / 2, total = rows * bytes;
  for (std::int64_t o = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = o / bytes, b = o - r * bytes;
    const std::uint8_t lo = nib[r * windows + 2 * b];
    const std::uint8_t hi = 2 * b + 1 < windows ? nib[r * windows + 2 * b + 1] : 0;
    idx[o] = std::uint8_t(lo | (hi << 4));
  }
}

/// hw24: thread per (row, pair of windows): top 2 of 4 by integer magnitude key (ties: lower
/// column, via the composite key * 4 + (3 - position)).
template <class B>
__global__ void hw24_kernel(const B* w, std::int64_t ld, std::int64_t rows, std::int64_t cols, bool bf, B* vals,
                            std::uint8_t* idx) {
  const std::int64_t windows = (cols + 3) / 4, bytes = (windows + 1) / 2, total = rows * bytes;
  for (std::int64_t o = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = o / bytes, b = o - r * bytes;
    std::uint8_t out = 0;
    for (int h = 0; h < 2; ++h) {
      const std::int64_t win = 2 * b + h;
      if (win >= windows) break;
      const std::int64_t c0 = win * 4;
      const int real = int(min(std::int64_t(4), cols - c0));
      int p0 = 0, p1 = 1;
      if (real >= 2) {
        std::uint64_t comp[4];
        for (int i = 0; i < 4; ++i)
          comp[i] = i < real ? ((std::uint64_t(Elem<B>::key(w[r * ld + c0 + i], bf)) << 2) | std::uint64_t(3 - i)) + 1 : 0;
        int a0 = 0;
        for (int i = 1; i < 4; ++i)
          if (comp[i] > comp[a0]) a0 = i;
        int a1 = a0 == 0 ? 1 : 0;
        for (int i = 0; i < 4; ++i)
          if (i != a0 && comp[i] > comp[a1]) a1 = i;
        p0 = min(a0, a1);
        p1 = max(a0, a1);
      }
      vals[r * windows * 2 + win * 2] = p0 < real ? w[r * ld + c0 + p0] : B(0);
      vals[r * windows * 2 + win * 2 + 1] = p1 < real ? w[r * ld + c0 + p1] : B(0);
      out = std::uint8_t(out | ((p0 | (p1 << 2)) << (4 * h)));
    }
    idx[o] = out;
  }
}

int grid_for(std::int64_t total) { return int(std::max<std::int64_t>(1, std::min<std::int64_t>(65535, (total + 255) / 256))); }

struct DeviceInput {
  DeviceBuffer buf;
  std::int64_t ld = 0;
};

// Uploads w (row by row when ld > cols) as a dense [rows][cols] buffer.
DeviceInput upload(const MatrixView& w) {
  const std::size_t es = dtype_size(w.dtype);
  DeviceInput d;
  d.buf = DeviceBuffer(std::size_t(w.rows * w.cols) * es);
  d.ld = w.cols;
  SPARSENM_CUDA_CHECK(cudaMemcpy2D(d.buf.get(), std::size_t(w.cols) * es, w.data, std::size_t(w.ld) * es,
                                   std::size_t(w.cols) * es, std::size_t(w.rows), cudaMemcpyHostToDevice));
  return d;
}

void check_input(const MatrixView& w) {
  check_view(w, "w");
  if (w.rows < 1 || w.cols < 1) throw InvalidArgument("w", "needs at least one row and one column");
}

}  // namespace

CondensedMatrix prune_venom_cuda(const MatrixView& w, const Pattern& p) {
  p.validate("p");
  if (p.kind != Granularity::venom) throw InvalidArgument("p", "prune_venom_cuda needs a venom pattern V:2:M, got " + p.str());
  check_input(w);
  const FormatLayout layout = FormatLayout::of(p, w.rows, w.cols);
  CondensedMatrix c = CondensedMatrix::allocate(layout, w.dtype);
  const std::int64_t slabs = (w.rows + p.v - 1) / p.v, windows = layout.windows;

  std::vector<uchar4> subsets;  // all 4-subsets of 0..min(M,32)-1, lexicographic
  {
    const int n = std::min(p.m, 32);
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b)
        for (int cc = b + 1; cc < n; ++cc)
          for (int d = cc + 1; d < n; ++d) subsets.push_back(make_uchar4(std::uint8_t(a), std::uint8_t(b), std::uint8_t(cc), std::uint8_t(d)));
  }
  DeviceInput in = upload(w);
  DeviceBuffer dsub(subsets.size() * sizeof(uchar4)), dsel(std::size_t(slabs * windows * 4)),
      dnib(std::size_t(w.rows * windows)), didx(c.indices.size()), dval(c.values.size());
  dsub.upload(subsets.data(), subsets.size() * sizeof(uchar4));

  VenomArgs a{};
  a.w = in.buf.get();
  a.ld = in.ld;
  a.rows = w.rows;
  a.cols = w.cols;
  a.windows = windows;
  a.V = p.v;
  a.M = p.m;
  a.bf = w.dtype == DType::bf16;
  a.subsets = dsub.as<uchar4>();
  a.nsub = int(subsets.size());
  a.sel = dsel.as<std::uint8_t>();
  a.nib = dnib.as<std::uint8_t>();
  a.values = dval.get();
  if (windows > 2147483647 || slabs > 65535) throw InvalidArgument("w", "too many windows or slabs for prune_venom_cuda");
  const dim3 grid{unsigned(windows), unsigned(slabs), 1u};
  if (w.dtype == DType::f32)
    venom_kernel<std::uint32_t><<<grid, kThreads>>>(a);
  else
    venom_kernel<std::uint16_t><<<grid, kThreads>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("venom_kernel");
  pack_nibbles<<<grid_for(std::int64_t(c.indices.size())), 256>>>(dnib.as<std::uint8_t>(), didx.as<std::uint8_t>(), w.rows,
                                                                   windows);
  SPARSENM_CUDA_CHECK_LAUNCH("pack_nibbles");
  std::vector<std::uint8_t> sel(dsel.size());
  dval.download(c.values.data(), c.values.size());
  didx.download(c.indices.data(), c.indices.size());
  dsel.download(sel.data(), sel.size());
  for (std::int64_t s = 0; s < slabs; ++s) {
    std::uint8_t* row = c.columns.data() + s * layout.colloc_row_bytes;
    for (std::int64_t win = 0; win < windows; ++win)
      for (int q = 0; q < 4; ++q) set_packed(row, win * 4 + q, layout.colloc_bits, sel[std::size_t((s * windows + win) * 4 + q)]);
  }
  return c;
}

CondensedMatrix prune_hw24_cuda(const MatrixView& w) {
  check_input(w);
  const Pattern p = Pattern::hw24();
  const FormatLayout layout = FormatLayout::of(p, w.rows, w.cols);
  CondensedMatrix c = CondensedMatrix::allocate(layout, w.dtype);
  DeviceInput in = upload(w);
  DeviceBuffer didx(c.indices.size()), dval(c.values.size());
  const int grid = grid_for(std::int64_t(c.indices.size()));
  const bool bf = w.dtype == DType::bf16;
  if (w.dtype == DType::f32)
    hw24_kernel<std::uint32_t><<<grid, 256>>>(in.buf.as<std::uint32_t>(), in.ld, w.rows, w.cols, bf,
                                              dval.as<std::uint32_t>(), didx.as<std::uint8_t>());
  else
    hw24_kernel<std::uint16_t><<<grid, 256>>>(in.buf.as<std::uint16_t>(), in.ld, w.rows, w.cols, bf,
                                              dval.as<std::uint16_t>(), didx.as<std::uint8_t>());
  SPARSENM_CUDA_CHECK_LAUNCH("hw24_kernel");
  dval.download(c.values.data(), c.values.size());
  didx.download(c.indices.data(), c.indices.size());
  return c;
}

}  // namespace sparsenm
