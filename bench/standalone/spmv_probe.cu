// Diagnostic + candidate timing for EW-N:M SpMV at m = 1, fp16 (docs/PERF.md, ew_spmv session 5):
// where do ew_spmv's ~7.5 µs over the floor go, and do the stream-K candidates (ew_spmv_sk) cut them?
// Method (the bench's): CUDA events around one launch, L2 flushed before each launch by a
// read-only kernel streaming 256 MiB (> 2x L2, outside the events), 10 warm-up launches, median of
// 60; copy bandwidth (1 GiB D2D, bytes read + written) and the empty-kernel floor in the same
// process. Floor of a case = (packed values + index words + X + Y bytes) / copy bandwidth, the
// bench's definition but with the packed (tile-padded) bytes.
// Variants (one pruned weight and one X per case; "chk" = checked against an fp64 CPU sum over
// every row, Y poisoned with 0xFF first):
//   lib              cuda:ew_spmv as shipped (library instance, plan_spmv), chk
//   ship-noX         a copy of ew_spmv's m = 1 kernel, same grid / cluster / smem: no X staging and
//                    no CTA barrier (the products use 1.0)                     [diagnostic]
//   ship-nored       the same copy, with X, launched without cluster: each CTA stores its partial
//                    (no cluster barrier / DSMEM reduction)                    [diagnostic]
//   ship-stream      the same grid, no cluster: tiles loaded and XOR-folded, no X, no decode, no
//                    reduction: ew_spmv's weight stream alone                  [diagnostic]
//   read             a plain read-only kernel over the same bytes (16-byte loads, 4 in flight per
//                    thread, sms x 4 CTAs of 256): the achievable read ceiling [diagnostic]
//   sk, sk-w2, sk-w4 cuda:ew_spmv_sk with 1 / 2 / 4 waves (bulk-copied X, stream-K split), chk
//   sk-par           sk with the session-5b end (head RED in the loop, one fence, both counters in
//                    one ATOM, read-backs together; measured no faster, not shipped), chk
//   sk-loopX         sk with X copied by the threads + __syncthreads instead of cp.async.bulk, chk
//   sk-noX, sk-stream sk's grid without X / without decode                    [diagnostic]
//   sk-ring3/4       sk with the weight tiles through a per-warp shared-memory ring of 3 / 4 stages
//                    filled by cp.async (session 6; "cuda:ew_spmv_skr" = ring 3), chk
//   skr3/4-stream    the ring variants without X / without decode                [diagnostic]
//   sk-lean          the register kernel with the ring's lean products (X address once per tile), chk
//   sk-ring3-plain   ring 3 with the shipped products (the ring alone), chk
//   sk-vring3        ring 3 of value vectors only, index words through registers (session 7;
//                    "cuda:ew_spmv_skv"), chk; sk-vring3-2cta: the same on 2 CTAs per SM (isolates
//                    the third CTA), chk; skv3-stream: without X / without decode [diagnostic]
//   sk-v3w32         the value ring on one 32-warp CTA per SM ("cuda:ew_spmv_skw"), chk; skw-stream
//                    its stream alone [diagnostic]; sk-v6w16 / sk-v4w24: 6 / 4 value stages on one
//                    16- / 24-warp CTA per SM, chk
//   read-range /     session 7b: a pure read of the packed tiles on sk's grid (sms x 4 CTAs of 8 warps,
//   read-grid        W warps), two tiles in flight per warp, no X / decode / reduction: warp w walks
//                    its own range [w U / W, (w + 1) U / W) (read-range, the stream-K order) or reads
//                    at step q the tile q W + w (read-grid: neighbouring warps read adjacent tiles at
//                    the same step, the grid order's access pattern; same bytes)       [diagnostic]
//   sk-g, sk-ring3-g, sk-v3w32-g   sk / skr / skw on the weight reordered into the grid order of their
//                    grid ("cuda:ew_spmv_skg" / "_skrg" / "_skwg"), chk; sk-stream-g / skr3-stream-g /
//                    skw-stream-g their streams alone [diagnostic]
//   SPMV_PROBE_S7=1: read, read-range, read-grid, the -g forms and their streams, sk, sk-ring3, sk-vring3, sk-vring3-2cta, sk-v3w32, sk-v6w16, sk-v4w24, sk-lean,
//                    skv3-stream, skw-stream, skr3-stream, sk-again only
//   empty            an empty kernel
//   sparsenm_spmv_probe [N K [PATTERN ...]]   (default: 28672 8192 and 12288 12288; 2:8 1:8 2:16)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cooperative_groups.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/ew/spmv.hpp"
#include "cuda/ew/spmv_launch.cuh"
#include "cuda/ew/spmv_sk_launch.cuh"
#include "sparsenm/format.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/prune.hpp"

using namespace sparsenm;
namespace sew = sparsenm::cuda::ew;

namespace {

__global__ void empty_kernel() {}

__global__ void flush_kernel(const uint4* p, std::size_t n, unsigned* sink) {
  unsigned f = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 u = __ldcs(p + i);
    f ^= u.x ^ u.y ^ u.z ^ u.w;
  }
  if (f == 0x12345678u) *sink = f;
}

/// Read-only stream of two regions (values, indices): 4 x 16 B in flight per thread.
__global__ void __launch_bounds__(256) read_kernel(const uint4* a, std::size_t na, const uint4* b, std::size_t nb,
                                                   unsigned* sink) {
  unsigned f = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < na; i += 4 * stride) {
    const uint4 u0 = __ldcs(a + i), u1 = __ldcs(a + i + stride), u2 = __ldcs(a + i + 2 * stride),
                u3 = __ldcs(a + i + 3 * stride);
    f ^= u0.x ^ u1.y ^ u2.z ^ u3.w ^ u0.w ^ u1.x ^ u2.y ^ u3.z;
  }
  for (; i < na; i += stride) f ^= __ldcs(a + i).x;
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < nb; j += stride) f ^= __ldcs(b + j).y;
  if (f == 0x12345678u) *sink = f;
}

/// Session 7b control: the packed tiles read on sk's grid, two tiles in flight per warp, XOR-folded.
/// GRID false: warp w reads units [w U / W, (w + 1) U / W) in order (the stream-K order); true: at
/// step q it reads tile q W + w (then the long warps' last tiles densely), the grid order.
template <int VECS, int IDX_LOADS, int IDX_VEC, bool GRID>
__global__ void __launch_bounds__(256) tile_read_kernel(const void* values, const std::uint32_t* indices, long long units,
                                                        unsigned* sink) {
  const int lane = threadIdx.x & 31;
  const long long W = (long long)gridDim.x * 8, gw = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  const long long u0 = gw * units / W, u1 = (gw + 1) * units / W, lmin = units / W;
  const long long tail = lmin * W + (u0 - gw * lmin);
  auto at = [&](long long q) { return GRID ? (q < lmin ? q * W + gw : tail) : u0 + q; };
  const long long n = u1 - u0;
  std::uint32_t v0[4 * VECS], i0[IDX_LOADS * IDX_VEC], v1[4 * VECS], i1[IDX_LOADS * IDX_VEC];
  unsigned f = 0;
  for (long long q = 0; q < n; q += 2) {
    sew::load_stream_tile<VECS, IDX_LOADS, IDX_VEC>(v0, i0, values, indices, std::size_t(at(q)), lane);
    if (q + 1 < n) sew::load_stream_tile<VECS, IDX_LOADS, IDX_VEC>(v1, i1, values, indices, std::size_t(at(q + 1)), lane);
    else for (int j = 0; j < 4 * VECS; ++j) v1[j] = 0;
#pragma unroll
    for (int j = 0; j < 4 * VECS; ++j) f ^= v0[j] ^ v1[j];
#pragma unroll
    for (int j = 0; j < IDX_LOADS * IDX_VEC; ++j) f ^= i0[j] ^ (q + 1 < n ? i1[j] : 0u);
  }
  if (f == 0x12345678u) *sink = f;
}

// ---- a copy of ew_spmv's kernel at m = 1 (spmv_kernel.cuh) with the suspects switchable ----
template <class Tr, bool XSTAGE, bool COMPUTE, bool REDUCE>
__global__ void __launch_bounds__(Tr::kThreads) ship_diag_kernel(const __grid_constant__ sew::SpmvArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = blockIdx.x * Tr::kWarps + warp;
  const bool active = group < a.row_groups;
  const int t_begin = blockIdx.y * a.tiles_per_split;
  const int t_end = min(a.tiles, t_begin + a.tiles_per_split);
  float acc[1] = {0.0f};
  const __half* x = static_cast<const __half*>(a.x);
  for (int ph = t_begin; ph < t_end; ph += a.tiles_per_phase) {
    const int pe = min(ph + a.tiles_per_phase, t_end);
    const int w0 = ph * Tr::kSlots / Tr::NN;
    const int w1 = (pe * Tr::kSlots - 1) / Tr::NN + 1;
    const int c0 = w0 * Tr::MM, ncols = (w1 - w0) * Tr::MM;
    sew::detail::Tile<Tr> ta, tb;
    if (active) {
      sew::detail::load_tile<Tr>(ta, a, group, lane, ph);
      if (ph + 1 < pe) sew::detail::load_tile<Tr>(tb, a, group, lane, ph + 1);
    }
    if constexpr (XSTAGE) {
      if (ph != t_begin) __syncthreads();
      float* xs = reinterpret_cast<float*>(smem);
      for (int c = threadIdx.x; c < ncols; c += Tr::kThreads) {
        const int col = c0 + c;
        xs[c] = col < a.k ? __half2float(x[col]) : 0.0f;
      }
      __syncthreads();
    } else if (threadIdx.x < 64) {
      reinterpret_cast<float*>(smem)[threadIdx.x] = 1.0f;  // the "no X" products read column 0..63
      __syncwarp();
    }
    auto comp = [&](const sew::detail::Tile<Tr>& tile, int t) {
      if constexpr (!COMPUTE) {
        std::uint32_t f = 0;
#pragma unroll
        for (int q = 0; q < Tr::kVecs * 4; ++q) f ^= tile.v[q];
#pragma unroll
        for (int q = 0; q < Tr::kIdxWords; ++q) f ^= tile.i[q];
        acc[0] += float(f & 1u);
      } else if constexpr (XSTAGE) {
        sew::detail::compute_tile<Tr>(tile, acc, smem, t, w0, Tr::NN, Tr::MM);
      } else {
        sew::detail::compute_tile<Tr>(tile, acc, smem, 0, 0, Tr::NN, Tr::MM);  // column 0's window
      }
    };
    if (active) {
      for (int t = ph; t < pe; t += 2) {
        comp(ta, t);
        if (t + 2 < pe) sew::detail::load_tile<Tr>(ta, a, group, lane, t + 2);
        if (t + 1 < pe) {
          comp(tb, t + 1);
          if (t + 3 < pe) sew::detail::load_tile<Tr>(tb, a, group, lane, t + 3);
        }
      }
    }
  }
  const int row = group * 32 + lane;
  if (!REDUCE || a.ksplit == 1) {
    if (active && row < a.n) static_cast<__half*>(a.y)[row] = __float2half_rn(acc[0]);
    return;
  }
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem);
  red[threadIdx.x] = acc[0];
  cluster.sync();
  const int rank = int(cluster.block_rank()), ks = a.ksplit;
  for (int o = rank + ks * int(threadIdx.x); o < Tr::kRowsPerCta; o += ks * Tr::kThreads) {
    const int grow = blockIdx.x * Tr::kRowsPerCta + o;
    float s = 0.0f;
    for (int p = 0; p < ks; ++p) s += cluster.map_shared_rank(red, p)[o];
    if (grow < a.n) static_cast<__half*>(a.y)[grow] = __float2half_rn(s);
  }
  cluster.sync();
}

template <class Tr, bool XSTAGE, bool COMPUTE, bool REDUCE>
void launch_ship_diag(const sew::SpmvArgs& a, const sew::SpmvConfig& cfg, bool cluster) {
  auto kernel = ship_diag_kernel<Tr, XSTAGE, COMPUTE, REDUCE>;
  if (cfg.smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg.smem_bytes));
  cudaLaunchConfig_t lc{};
  lc.gridDim = dim3(unsigned((a.row_groups + Tr::kWarps - 1) / Tr::kWarps), unsigned(a.ksplit), 1);
  lc.blockDim = dim3(Tr::kThreads, 1, 1);
  lc.dynamicSmemBytes = std::size_t(cfg.smem_bytes);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = unsigned(a.ksplit);
  attr[0].val.clusterDim.z = 1;
  lc.attrs = attr;
  lc.numAttrs = (cluster && a.ksplit > 1) ? 1 : 0;
  SPARSENM_CUDA_CHECK(cudaLaunchKernelEx(&lc, kernel, a));
}

struct Timer {
  cudaEvent_t a = nullptr, b = nullptr;
  uint4* flush = nullptr;
  unsigned* sink = nullptr;
  std::size_t flush_vecs = (std::size_t(256) << 20) / 16;
  Timer() {
    SPARSENM_CUDA_CHECK(cudaEventCreate(&a));
    SPARSENM_CUDA_CHECK(cudaEventCreate(&b));
    SPARSENM_CUDA_CHECK(cudaMalloc(&flush, flush_vecs * 16));
    SPARSENM_CUDA_CHECK(cudaMemset(flush, 1, flush_vecs * 16));
    SPARSENM_CUDA_CHECK(cudaMalloc(&sink, 16));
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(flush);
    cudaFree(sink);
  }
  double time(const std::function<void()>& fn, int reps = 60) {
    for (int i = 0; i < 10; ++i) fn();
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      flush_kernel<<<132 * 8, 256>>>(flush, flush_vecs, sink);
      SPARSENM_CUDA_CHECK(cudaEventRecord(a));
      fn();
      SPARSENM_CUDA_CHECK(cudaEventRecord(b));
      SPARSENM_CUDA_CHECK(cudaEventSynchronize(b));
      SPARSENM_CUDA_CHECK(cudaGetLastError());
      float ms = 0;
      SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      t.push_back(1000.0 * ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

double copy_gbs() {
  const std::size_t bytes = std::size_t(1) << 30;
  void *s = nullptr, *d = nullptr;
  SPARSENM_CUDA_CHECK(cudaMalloc(&s, bytes));
  SPARSENM_CUDA_CHECK(cudaMalloc(&d, bytes));
  SPARSENM_CUDA_CHECK(cudaMemset(s, 3, bytes));
  cudaEvent_t a, b;
  SPARSENM_CUDA_CHECK(cudaEventCreate(&a));
  SPARSENM_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < 7; ++i) {
    SPARSENM_CUDA_CHECK(cudaEventRecord(a));
    SPARSENM_CUDA_CHECK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice));
    SPARSENM_CUDA_CHECK(cudaEventRecord(b));
    SPARSENM_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i > 0) t.push_back(2.0 * double(bytes) / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaFree(s);
  cudaFree(d);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

DenseMatrix random_f16(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  DenseMatrix d(DType::f16, rows, cols);
  auto* p = static_cast<__half*>(d.data());
  std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float u = float((s >> 40) & 0xffffff) / float(1 << 24);
    p[i] = __float2half(2.0f * u - 1.0f + (u < 0.5f ? -1e-3f : 1e-3f));
  }
  return d;
}

/// fp64 reference y[r] = sum over stored slots of value * x[column] (canonical format).
std::vector<double> reference(const CondensedMatrix& w, const DenseMatrix& x) {
  const auto& l = w.layout;
  const auto* v = reinterpret_cast<const __half*>(w.values.data());
  const auto* xv = static_cast<const __half*>(x.data());
  std::vector<double> y(std::size_t(l.rows), 0.0);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < l.rows; ++r) {
    double s = 0;
    const std::uint8_t* irow = w.indices.data() + r * l.index_row_bytes;
    for (std::int64_t j = 0; j < l.value_cols; ++j) {
      const std::int64_t col = (j / l.pattern.n) * l.pattern.m + get_packed(irow, j, l.index_bits);
      if (col < l.cols) s += double(__half2float(v[r * l.value_cols + j])) * double(__half2float(xv[col]));
    }
    y[std::size_t(r)] = s;
  }
  return y;
}

std::string check(const void* dy, const std::vector<double>& ref) {
  std::vector<__half> y(ref.size());
  SPARSENM_CUDA_CHECK(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
  double err = 0, mx = 0;
  long long bad = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double g = __half2float(y[i]);
    if (!std::isfinite(g)) ++bad;
    else err = std::max(err, std::fabs(g - ref[i]) / (1.0 + std::fabs(ref[i])));
    mx = std::max(mx, std::fabs(ref[i]));
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s (max err %.1e, %lld non-finite)", (bad == 0 && err < 2e-3) ? "ok" : "FAIL", err, bad);
  return buf;
}

template <int N, int M>
void probe(std::int64_t n, std::int64_t k, Timer& timer, double empty_us, double copy, int sms) {
  const Pattern pat = Pattern::element(N, M);
  const CondensedMatrix w = prune(random_f16(n, k, 17).view(), pat);
  const sew::SpmvPacked p = sew::pack_spmv(w);
  const auto& l = p.layout;
  const DenseMatrix x = random_f16(1, k, 29);
  const std::vector<double> ref = reference(w, x);
  sparsenm::cuda::DeviceBuffer dv(p.values.size()), di(p.indices.size() * 4), dx(std::size_t(k) * 2 + 64),
      dy(std::size_t(n) * 2), ws(sew::spmv_sk_ws_bytes(l)), cnt(sew::spmv_sk_cnt_bytes(l));
  dv.upload(p.values.data(), p.values.size());
  di.upload(p.indices.data(), p.indices.size() * 4);
  dx.upload(x.data(), x.size_bytes());
  SPARSENM_CUDA_CHECK(cudaMemset(ws.get(), 0, ws.size()));
  SPARSENM_CUDA_CHECK(cudaMemset(cnt.get(), 0, cnt.size()));
  const double wbytes = double(p.values.size() + p.indices.size() * 4);
  const double bytes = wbytes + 2.0 * double(k) + 2.0 * double(n);
  const double floor_us = bytes / copy * 1e-3;
  std::printf("\n%s f16 %lld x %lld, m = 1: %.1f MB (packed weight + x + y), floor %.2f us at %.0f GB/s; empty %.2f us\n",
              pat.str().c_str(), (long long)n, (long long)k, bytes / 1e6, floor_us, copy, empty_us);
  std::printf("  %-14s %-40s %8s %8s %9s  %s\n", "variant", "grid", "us", "%copy", "GB/s-lf", "check");
  auto report = [&](const char* name, const std::string& grid, double us, const std::string& chk) {
    std::printf("  %-14s %-40s %8.2f %7.1f%% %9.0f  %s\n", name, grid.c_str(), us, 100.0 * floor_us / us,
                bytes / std::max(0.1, us - empty_us) / 1e3, chk.c_str());
    std::printf("PROBE %s %lldx%lld %s %.3f %.3f %.1f\n", pat.str().c_str(), (long long)n, (long long)k, name, us, floor_us,
                100.0 * floor_us / us);
  };
  auto poison = [&] { SPARSENM_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.size())); };

  // lib: the shipped ew_spmv.
  using Tr = sew::SpmvTraits<__half, 1, sew::spmv_bits(M), N, M>;
  sew::SpmvArgs a;
  const sew::SpmvConfig cfg = sew::plan_spmv(l, DType::f16, 1, sms, a, 0, 0);
  a.values = dv.get();
  a.indices = static_cast<const std::uint32_t*>(di.get());
  a.x = dx.get();
  a.y = dy.get();
  a.y_dtype = 1;
  const auto lib = sew::find_spmv(DType::f16, 1, l.bits, N, M);
  char g[96];
  std::snprintf(g, sizeof g, "%d CTAs x split %d, %d B", (a.row_groups + 7) / 8, a.ksplit, cfg.smem_bytes);
  poison();
  lib(a, cfg, nullptr);
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  std::string chk = check(dy.get(), ref);
  report("lib", g, timer.time([&] { lib(a, cfg, nullptr); }), chk);
  // SPMV_PROBE_FAST=1: lib, read, sk, sk-ring3/4, sk-lean, sk-ring3-plain, sk-again and the three
  // stream diagnostics only
  // (the others were measured at 20d8a0f / 47b292d).
  // SPMV_PROBE_S7B=1 (session 7b): the S7 set without the session-7 one-offs (sk-vring3*, sk-v6w16,
  // sk-v4w24, sk-lean, skv3-stream): read, read-range, read-grid, sk / skr / skw and their grid-ordered
  // forms, their streams, sk-again.
  const bool s7b = std::getenv("SPMV_PROBE_S7B") != nullptr;
  const bool s7 = s7b || std::getenv("SPMV_PROBE_S7") != nullptr;
  const bool fast = s7 || std::getenv("SPMV_PROBE_FAST") != nullptr;
  // The copy with everything on (control of the copy), then the suspects removed one at a time.
  if (!fast) {
  poison();
  launch_ship_diag<Tr, true, true, true>(a, cfg, true);
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  chk = check(dy.get(), ref);
  report("ship-copy", g, timer.time([&] { launch_ship_diag<Tr, true, true, true>(a, cfg, true); }), chk);
  report("ship-noX", g, timer.time([&] { launch_ship_diag<Tr, false, true, true>(a, cfg, true); }), "diag");
  report("ship-nored", g, timer.time([&] { launch_ship_diag<Tr, true, true, false>(a, cfg, false); }), "diag");
  report("ship-stream", g, timer.time([&] { launch_ship_diag<Tr, false, false, false>(a, cfg, false); }), "diag");
  }
  {
    const std::size_t na = p.values.size() / 16, nb = p.indices.size() * 4 / 16;
    std::snprintf(g, sizeof g, "%d CTAs x 256 (grid-stride)", sms * 4);
    report("read", g, timer.time([&] {
             read_kernel<<<sms * 4, 256>>>(static_cast<const uint4*>(dv.get()), na,
                                           static_cast<const uint4*>(di.get()), nb, static_cast<unsigned*>(ws.get()));
           }),
           "diag");
    SPARSENM_CUDA_CHECK(cudaMemset(ws.get(), 0, ws.size()));
  }
  {
    // Session 7b: the stream-K order against the grid order, pure reads on sk's grid.
    const long long units = (long long)l.row_groups * l.tiles;
    using TrR = sew::SkTraits<__half, sew::spmv_bits(M), N, M>;
    std::snprintf(g, sizeof g, "%d CTAs x 8 warps, 2 tiles in flight", sms * 4);
    report("read-range", g, timer.time([&] {
             tile_read_kernel<TrR::kVecs, TrR::kIdxLoads, TrR::kIdxVec, false><<<sms * 4, 256>>>(
                 dv.get(), static_cast<const std::uint32_t*>(di.get()), units, static_cast<unsigned*>(ws.get()));
           }),
           "diag");
    report("read-grid", g, timer.time([&] {
             tile_read_kernel<TrR::kVecs, TrR::kIdxLoads, TrR::kIdxVec, true><<<sms * 4, 256>>>(
                 dv.get(), static_cast<const std::uint32_t*>(di.get()), units, static_cast<unsigned*>(ws.get()));
           }),
           "diag");
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    SPARSENM_CUDA_CHECK(cudaMemset(ws.get(), 0, ws.size()));
  }
  // Grid-ordered copies of the weight, one per grid size W (made once, on first use).
  std::vector<std::pair<int, std::pair<sparsenm::cuda::DeviceBuffer, sparsenm::cuda::DeviceBuffer>>> gridded;
  auto gridded_for = [&](sew::SkArgs& s) -> std::pair<const void*, const std::uint32_t*> {
    for (auto& [w, b] : gridded)
      if (w == s.warps_total) {
        s.grid_lmin = s.units / s.warps_total;
        return {b.first.get(), static_cast<const std::uint32_t*>(b.second.get())};
      }
    sew::SpmvPacked q = p;
    sew::spmv_sk_grid_order(q, s);
    sparsenm::cuda::DeviceBuffer bv(q.values.size()), bi(q.indices.size() * 4);
    bv.upload(q.values.data(), q.values.size());
    bi.upload(q.indices.data(), q.indices.size() * 4);
    gridded.emplace_back(s.warps_total, std::make_pair(std::move(bv), std::move(bi)));
    auto& b = gridded.back().second;
    return {b.first.get(), static_cast<const std::uint32_t*>(b.second.get())};
  };
  // stream-K candidates.
  auto run_sk = [&](const char* name, auto launch, int waves, bool checked, int ring = 0, bool vals = false,
                    int grid = 0, int warps = 8, bool in_grid_order = false) {
    sew::SkArgs s;
    const sew::SkConfig sc = sew::plan_spmv_sk(l, DType::f16, sms, waves, s, grid, ring, vals, warps);
    s.values = dv.get();
    s.indices = static_cast<const std::uint32_t*>(di.get());
    if (in_grid_order) std::tie(s.values, s.indices) = gridded_for(s);
    s.x = dx.get();
    s.y = dy.get();
    s.ws = ws.as<float>();
    s.cnt = cnt.as<unsigned>();
    s.y_dtype = 1;
    std::snprintf(g, sizeof g, "%d CTAs x %d warps (%d waves), %d B %s", sc.grid, warps, waves, sc.smem_bytes,
                  ring ? "X+ring" : "X");
    std::string c = "diag";
    if (checked) {
      for (int rep = 0; rep < 2; ++rep) {  // twice: the workspace must come back to zero
        poison();
        launch(s, sc, nullptr);
        SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
        c = check(dy.get(), ref);
      }
    }
    report(name, g, timer.time([&] { launch(s, sc, nullptr); }), c);
  };
  using Sk = sew::SkTraits<__half, sew::spmv_bits(M), N, M>;
  using SkLoop = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXLoop>;
  using SkNoX = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXNone>;
  using SkStream = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXNone, false>;
  run_sk("sk", &sew::launch_spmv_sk<Sk>, 1, true);
  if (s7) {
    // Session 7b: the grid-ordered forms and their streams, next to their packed-order twins.
    constexpr int b = sew::spmv_bits(M);
    using SkG = sew::SkTraits<__half, b, N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 0, -1, 0, false, 8, true>;
    using SkGS = sew::SkTraits<__half, b, N, M, sew::kSkXNone, false, sew::kSkEndSerial, 0, -1, 0, false, 8, true>;
    using SkR3G = sew::SkTraits<__half, b, N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 3, -1, 0, false, 8, true>;
    using SkR3GS = sew::SkTraits<__half, b, N, M, sew::kSkXNone, false, sew::kSkEndSerial, 3, -1, 0, false, 8, true>;
    using SkWG = sew::SkTraits<__half, b, N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 3, -1, 0, true, 32, true>;
    using SkWGS = sew::SkTraits<__half, b, N, M, sew::kSkXNone, false, sew::kSkEndSerial, 3, -1, 0, true, 32, true>;
    run_sk("sk-g", &sew::launch_spmv_sk<SkG>, 1, true, 0, false, 0, 8, true);
    run_sk("sk-ring3-g", &sew::launch_spmv_sk<SkR3G>, 1, true, 3, false, 0, 8, true);
    if (sew::spmv_sk_smem_bytes(l, 3, true, 32) <= 227 * 1024)
      run_sk("sk-v3w32-g", &sew::launch_spmv_sk<SkWG>, 1, true, 3, true, 0, 32, true);
    run_sk("sk-stream-g", &sew::launch_spmv_sk<SkGS>, 1, false, 0, false, 0, 8, true);
    run_sk("skr3-stream-g", &sew::launch_spmv_sk<SkR3GS>, 1, false, 3, false, 0, 8, true);
    if (sew::spmv_sk_smem_bytes(l, 3, true, 32) <= 227 * 1024)
      run_sk("skw-stream-g", &sew::launch_spmv_sk<SkWGS>, 1, false, 3, true, 0, 32, true);
  }
  using SkR3 = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 3>;
  using SkR4 = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 4>;
  using SkR3S = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXNone, false, sew::kSkEndSerial, 3>;
  using SkR4S = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXNone, false, sew::kSkEndSerial, 4>;
  run_sk("sk-ring3", &sew::launch_spmv_sk<SkR3>, 1, true, 3);
  using SkV3 = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 3, -1, 0, true>;
  using SkV3S = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXNone, false, sew::kSkEndSerial, 3, -1, 0, true>;
  if (!s7b) run_sk("sk-vring3", &sew::launch_spmv_sk<SkV3>, 1, true, 3, true);
  if (s7 && !s7b) run_sk("sk-vring3-2cta", &sew::launch_spmv_sk<SkV3>, 1, true, 3, true, 2 * sms);
  using SkV3W32 = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 3, -1, 0, true, 32>;
  using SkV6W16 = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 6, -1, 0, true, 16>;
  using SkV3W32S = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXNone, false, sew::kSkEndSerial, 3, -1, 0, true, 32>;
  const bool wide_fits = sew::spmv_sk_smem_bytes(l, 3, true, 32) <= 227 * 1024;
  if (wide_fits) run_sk("sk-v3w32", &sew::launch_spmv_sk<SkV3W32>, 1, true, 3, true, 0, 32);
  if (s7 && !s7b && sew::spmv_sk_smem_bytes(l, 6, true, 16) <= 227 * 1024)
    run_sk("sk-v6w16", &sew::launch_spmv_sk<SkV6W16>, 1, true, 6, true, 0, 16);
  using SkV4W24 = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 4, -1, 0, true, 24>;
  if (s7 && !s7b && sew::spmv_sk_smem_bytes(l, 4, true, 24) <= 227 * 1024)
    run_sk("sk-v4w24", &sew::launch_spmv_sk<SkV4W24>, 1, true, 4, true, 0, 24);
  if (!s7) run_sk("sk-ring4", &sew::launch_spmv_sk<SkR4>, 1, true, 4);
  using SkLean = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 0, 1>;
  using SkR3Plain = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndSerial, 3, 0>;
  if (!s7b) run_sk("sk-lean", &sew::launch_spmv_sk<SkLean>, 1, true);
  if (!s7) run_sk("sk-ring3-plain", &sew::launch_spmv_sk<SkR3Plain>, 1, true, 3);
  // The register kernel again after the rings: a same-process control of drift.
  run_sk("sk-again", &sew::launch_spmv_sk<Sk>, 1, true);
  if (!fast) {
    using SkPar = sew::SkTraits<__half, sew::spmv_bits(M), N, M, sew::kSkXBulk, true, sew::kSkEndPar>;
    run_sk("sk-par", &sew::launch_spmv_sk<SkPar>, 1, true);
    run_sk("sk-w2", &sew::launch_spmv_sk<Sk>, 2, true);
    run_sk("sk-w4", &sew::launch_spmv_sk<Sk>, 4, true);
    run_sk("sk-loopX", &sew::launch_spmv_sk<SkLoop>, 1, true);
    run_sk("sk-noX", &sew::launch_spmv_sk<SkNoX>, 1, false);
  }
  run_sk("sk-stream", &sew::launch_spmv_sk<SkStream>, 1, false);
  run_sk("skr3-stream", &sew::launch_spmv_sk<SkR3S>, 1, false, 3);
  if (!s7) run_sk("skr4-stream", &sew::launch_spmv_sk<SkR4S>, 1, false, 4);
  if (!s7b) run_sk("skv3-stream", &sew::launch_spmv_sk<SkV3S>, 1, false, 3, true);
  if (wide_fits) run_sk("skw-stream", &sew::launch_spmv_sk<SkV3W32S>, 1, false, 3, true, 0, 32);
  // The workspace after the diagnostics (whose flush counts are real but products are not) is
  // reset so a later checked run starts clean.
  SPARSENM_CUDA_CHECK(cudaMemset(ws.get(), 0, ws.size()));
  SPARSENM_CUDA_CHECK(cudaMemset(cnt.get(), 0, cnt.size()));
}

void probe_pattern(const std::string& pat, std::int64_t n, std::int64_t k, Timer& t, double e, double c, int sms) {
  if (pat == "2:8") probe<2, 8>(n, k, t, e, c, sms);
  else if (pat == "1:8") probe<1, 8>(n, k, t, e, c, sms);
  else if (pat == "2:16") probe<2, 16>(n, k, t, e, c, sms);
  else std::printf("pattern %s: not probed (2:8, 1:8, 2:16 are)\n", pat.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("spmv probe: no CUDA device\n");
    return 2;
  }
  try {
    cudaDeviceProp prop{};
    SPARSENM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    Timer timer;
    const double empty_us = timer.time([] { empty_kernel<<<1, 32>>>(); });
    const double copy = copy_gbs();
    std::printf("spmv probe on %s (%d SMs): empty kernel %.2f us, copy %.0f GB/s (same method)\n", prop.name,
                prop.multiProcessorCount, empty_us, copy);
    std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{28672, 8192}, {12288, 12288}};
    std::vector<std::string> pats = {"2:8", "1:8", "2:16"};
    if (argc >= 3) shapes = {{std::atoll(argv[1]), std::atoll(argv[2])}};
    if (argc >= 4) pats.assign(argv + 3, argv + argc);
    for (const auto& [n, k] : shapes)
      for (const auto& pat : pats) probe_pattern(pat, n, k, timer, empty_us, copy, prop.multiProcessorCount);
  } catch (const std::exception& e) {
    std::printf("spmv probe failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
