// sparsenm bench — suite "fst": the transformer FFN forward + backward with FST linear layers
// (include/sparsenm/fst.hpp: all six GEMMs 2:4 sparse) against the same FFN with dense cuBLAS
// GEMMs (the same FstLinear in its dense phase: identical bias / GELU / GLU / bias-gradient
// kernels, so the difference is the GEMMs plus FST's per-step overheads: mask apply + compress,
// MVUE + compress, repacks, and for cuSPARSELt GEMMs the dense operands + cusparseLtSpMMACompress).
//   gelu:  Linear d -> 4d, GELU (tanh), Linear 4d -> d
//   geglu: Linear d -> 8d, GEGLU (train.hpp glu_forward, h = 4d), Linear 4d -> d
// d = 1280 (GPT-2 774M) and 1600 (1.5B), tokens 8192 and 16384, f16. One "step" = begin_step of
// both layers (mask apply + compress) + forward + backward (dX of the first layer included). The
// mask search (begin_step at a refresh step) is timed separately and amortised over l = 40
// steps: fst ms = step + (refresh - apply) / 40. Method: CUDA events around each call after
// warm-up, median (BENCH.md). --quick: d = 1280, 8192 tokens only.
// Three FST rows per FFN (FstConfig::backends): "sparsenm:fst" = the default, each GEMM's backend
// chosen at construction by the layer's own timing (its choices and timings in the note);
// "sparsenm:fst_sptc" = every GEMM on our sparse tensor-core kernels (the layer before session 3);
// "sparsenm:fst_lt" = every GEMM on cuSPARSELt (when available).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cuda/common.cuh"
#include "cuda/cusparselt/lt_gemm.hpp"
#include "event_timing.cuh"
#include "sparsenm/fst.hpp"
#include "sparsenm/train.hpp"

namespace sparsenm::bench {
namespace {

using cuda::DeviceBuffer;

__global__ void fill_half(__half* p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h = std::uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2half_rn((float(h & 0xFFFF) / 32768.f - 1.f) * scale);
  }
}
void fill(void* p, std::size_t elems, std::uint32_t seed, float scale) {
  fill_half<<<1024, 256>>>(static_cast<__half*>(p), elems, seed, scale);
  SPARSENM_CUDA_CHECK(cudaGetLastError());
}

__device__ __forceinline__ float gelu_tanh(float x, float& dgelu) {
  const float k0 = 0.7978845608f, k1 = 0.044715f;
  const float u = k0 * (x + k1 * x * x * x);
  const float th = tanhf(u);
  dgelu = 0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * k0 * (1.f + 3.f * k1 * x * x);
  return 0.5f * x * (1.f + th);
}
// a = GELU(h), n even (pairs)
__global__ void gelu_fwd(const __half2* __restrict__ h, __half2* __restrict__ a, std::size_t n2) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n2; i += std::size_t(gridDim.x) * blockDim.x) {
    const float2 x = __half22float2(h[i]);
    float d0, d1;
    a[i] = __floats2half2_rn(gelu_tanh(x.x, d0), gelu_tanh(x.y, d1));
  }
}
// dh = da * GELU'(h)
__global__ void gelu_bwd(const __half2* __restrict__ h, const __half2* __restrict__ da, __half2* __restrict__ dh, std::size_t n2) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n2; i += std::size_t(gridDim.x) * blockDim.x) {
    const float2 x = __half22float2(h[i]), g = __half22float2(da[i]);
    float d0, d1;
    gelu_tanh(x.x, d0);
    gelu_tanh(x.y, d1);
    dh[i] = __floats2half2_rn(g.x * d0, g.y * d1);
  }
}
unsigned ew_grid(std::size_t n) { return unsigned(std::min<std::size_t>((n + 255) / 256, 132 * 16)); }

/// The FFN of one variant on one implementation (FST or dense), with its activations.
struct Ffn {
  bool geglu;
  std::int64_t d, T, h;  // h = 4d
  train::FstLinear l1, l2;
  DeviceBuffer x, hbuf, a, y, dy, da, dh, dx;

  static train::FstConfig cfg(std::int64_t in, std::int64_t out, std::int64_t T, bool dense, train::FstBackends be) {
    train::FstConfig c;
    c.in_features = in;
    c.out_features = out;
    c.max_tokens = T;
    c.dtype = DType::f16;
    c.bias = true;
    c.decay = 6e-5f;
    c.seed = 7;
    c.schedule.mask_interval = std::int64_t(1) << 40;  // refreshes are timed separately
    c.schedule.total_steps = dense ? 1 : 0;
    c.schedule.dense_fraction = 1.0;  // dense: every step dense
    c.backends = be;
    return c;
  }
  Ffn(bool gg, std::int64_t d_, std::int64_t T_, bool dense, train::FstBackends be = {})
      : geglu(gg), d(d_), T(T_), h(4 * d_), l1(cfg(d_, gg ? 8 * d_ : 4 * d_, T_, dense, be)), l2(cfg(4 * d_, d_, T_, dense, be)) {
    const std::int64_t h1 = geglu ? 2 * h : h;
    x = DeviceBuffer(std::size_t(T * d) * 2);
    hbuf = DeviceBuffer(std::size_t(T * h1) * 2);
    a = DeviceBuffer(std::size_t(T * h) * 2);
    y = DeviceBuffer(std::size_t(T * d) * 2);
    dy = DeviceBuffer(std::size_t(T * d) * 2);
    da = DeviceBuffer(std::size_t(T * h) * 2);
    dh = DeviceBuffer(std::size_t(T * h1) * 2);
    dx = DeviceBuffer(std::size_t(T * d) * 2);
    fill(x.get(), std::size_t(T * d), 1, 1.f);
    fill(dy.get(), std::size_t(T * d), 2, 1e-2f);
    fill(l1.weight(), std::size_t(h1 * d), 3, 0.03f);
    fill(l2.weight(), std::size_t(h * d), 4, 0.015f);
    fill(l1.bias(), std::size_t(h1), 5, 0.01f);
    fill(l2.bias(), std::size_t(d), 6, 0.01f);
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  }
  void begin() {
    l1.begin_step();
    l2.begin_step();
  }
  void fwd_bwd() {
    const std::int64_t h1 = geglu ? 2 * h : h;
    l1.forward(x.get(), T, hbuf.get());
    if (geglu) {
      train::glu_forward(train::Gate::geglu, DType::f16, hbuf.get(), T, h, h1, h, a.get(), h);
    } else {
      gelu_fwd<<<ew_grid(std::size_t(T * h / 2)), 256>>>(static_cast<const __half2*>(hbuf.get()), static_cast<__half2*>(a.get()),
                                                         std::size_t(T * h / 2));
      SPARSENM_CUDA_CHECK(cudaPeekAtLastError());
    }
    l2.forward(a.get(), T, y.get());
    l2.backward(a.get(), dy.get(), T, da.get());
    if (geglu) {
      train::glu_backward(train::Gate::geglu, DType::f16, hbuf.get(), T, h, h1, h, da.get(), h, dh.get());
    } else {
      gelu_bwd<<<ew_grid(std::size_t(T * h / 2)), 256>>>(static_cast<const __half2*>(hbuf.get()),
                                                         static_cast<const __half2*>(da.get()), static_cast<__half2*>(dh.get()),
                                                         std::size_t(T * h / 2));
      SPARSENM_CUDA_CHECK(cudaPeekAtLastError());
    }
    l1.backward(x.get(), dh.get(), T, dx.get());
  }
  void step() {
    begin();
    fwd_bwd();
    l1.end_step();
    l2.end_step();
  }
  /// Forces the next begin_step to search masks (as at a refresh step).
  void force_refresh() {
    l1.set_step(l1.step());
    l2.set_step(l2.step());
  }
};

/// "fwd lt (sptc 0.2500 / lt 0.2200 ms) dX ... dW ..." for one layer's backend report.
std::string choices(const train::FstLinear& l) {
  const train::FstBackendReport& r = l.backends();
  std::string out;
  const char* names[3] = {"fwd", "dX", "dW"};
  const train::FstGemmChoice* g[3] = {&r.forward, &r.grad_input, &r.grad_weight};
  for (int i = 0; i < 3; ++i) {
    char b[160];
    if (std::isnan(g[i]->sptc_ms))
      std::snprintf(b, sizeof b, "%s%s %s", i ? " " : "", names[i], train::to_string(g[i]->backend));
    else
      std::snprintf(b, sizeof b, "%s%s %s (sptc %.4f / lt %.4f ms)", i ? " " : "", names[i], train::to_string(g[i]->backend),
                    g[i]->sptc_ms, g[i]->cusparselt_ms);
    out += b;
  }
  return out;
}

}  // namespace

Suite fst_suite() {
  Suite s;
  s.name = "fst";
  s.description = "FFN fwd+bwd with FST linear layers (2:4 GEMMs: automatic per-GEMM backend, sptc only, cuSPARSELt only; mask search amortised at l = 40) vs dense cuBLAS";
  s.needs_gpu = true;
  s.run = [](Context& ctx) {
    const int warmup = std::min(ctx.options.warmup, 10), reps = std::max(5, std::min(ctx.options.reps, 50));
    std::vector<std::pair<std::int64_t, std::int64_t>> cases;  // (d, tokens)
    if (ctx.options.quick)
      cases = {{1280, 8192}};
    else
      cases = {{1280, 8192}, {1280, 16384}, {1600, 8192}, {1600, 16384}};
    const std::int64_t l = 40;
    const std::string lt_why = cuda::lt::unavailable_reason();
    for (auto [d, T] : cases) {
      for (bool geglu : {false, true}) {
        const std::string op = geglu ? "ffn_geglu_fwdbwd" : "ffn_gelu_fwdbwd";
        const double flops = (geglu ? 72.0 : 48.0) * double(T) * double(d) * double(d);  // dense-equivalent
        auto row = [&](const std::string& opname, const std::string& impl, Timing t, double fl, const std::string& note) {
          Row r;
          r.suite = "fst";
          r.op = opname;
          r.format = impl == "cublas" ? "dense" : "hw24";
          r.pattern = impl == "cublas" ? "dense" : "2:4";
          r.dtype = "f16";
          r.m = T;
          r.n = geglu ? 8 * d : 4 * d;
          r.k = d;
          r.impl = impl;
          r.ms_median = t.median;
          r.ms_min = t.min;
          r.reps = reps;
          r.flops = fl;
          r.note = note;
          ctx.emit(r);
        };
        Timing dense_t;
        {
          Ffn f(geglu, d, T, true);
          dense_t = time_calls([&] { f.step(); }, warmup, reps);
        }
        char note[1024];
        std::snprintf(note, sizeof note, "same FFN, dense cuBLAS GEMMs (FstLinear dense phase); TFLOPs %.0f",
                      flops / (dense_t.median * 1e9));
        row(op, "cublas", dense_t, flops, note);
        using train::FstBackend;
        struct Mode {
          const char* impl;
          train::FstBackends be;
          const char* what;
        };
        const Mode modes[3] = {
            {"sparsenm:fst", {}, "automatic per-GEMM backends (layer's construction-time timing)"},
            {"sparsenm:fst_sptc", {FstBackend::sptc, FstBackend::sptc, FstBackend::sptc}, "every GEMM on our sptc kernels"},
            {"sparsenm:fst_lt", {FstBackend::cusparselt, FstBackend::cusparselt, FstBackend::cusparselt},
             "every GEMM on cuSPARSELt (dense operand + compress per step)"}};
        for (const Mode& mode : modes) {
          if (std::string(mode.impl) == "sparsenm:fst_lt" && !lt_why.empty()) {
            std::printf("  %s skipped: cuSPARSELt unavailable (%s)\n", mode.impl, lt_why.c_str());
            continue;
          }
          const auto c0 = std::chrono::steady_clock::now();
          Ffn f(geglu, d, T, false, mode.be);
          SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
          const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
          const Timing step_t = time_calls([&] { f.step(); }, warmup, reps);
          const Timing apply_t = time_calls([&] { f.begin(); }, warmup, reps);
          const Timing refresh_t = time_calls(
              [&] {
                f.force_refresh();
                f.begin();
              },
              warmup, reps);
          const double amort = std::max(0.0, refresh_t.median - apply_t.median) / double(l);
          const double fst_ms = step_t.median + amort;
          std::snprintf(note, sizeof note,
                        "%s; FST step (mask apply+compress, fwd, bwd) %.4f ms + mask search amortised over l=%lld %.4f ms; "
                        "speedup vs cuBLAS %.3fx; TFLOPs dense-equivalent %.0f; L1: %s; L2: %s; construction %.0f ms",
                        mode.what, step_t.median, (long long)l, amort, dense_t.median / fst_ms, flops / (fst_ms * 1e9),
                        choices(f.l1).c_str(), choices(f.l2).c_str(), build_ms);
          Timing fst_t{fst_ms, step_t.min + amort};
          row(op, mode.impl, fst_t, flops, note);
          if (std::string(mode.impl) == "sparsenm:fst") {
            std::printf("  %s %s d=%lld T=%lld backends:\n  L1 %s\n  L2 %s\n", op.c_str(), mode.impl, (long long)d, (long long)T,
                        f.l1.backends().to_string().c_str(), f.l2.backends().to_string().c_str());
            std::snprintf(note, sizeof note,
                          "begin_step of both layers at a refresh step (transposable search + compress + repack); "
                          "apply-only begin_step %.4f ms; per step amortised at l=%lld: %.4f ms",
                          apply_t.median, (long long)l, amort);
            row(geglu ? "fst_mask_refresh_geglu" : "fst_mask_refresh_gelu", mode.impl, refresh_t, 0, note);
          }
        }
      }
    }
  };
  return s;
}

}  // namespace sparsenm::bench
