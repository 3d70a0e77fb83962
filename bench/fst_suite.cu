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
// Rows per FFN (session 8): "cublas" (one stream) and "cublas_fork" (the dW GEMM forked onto a
// second stream; FST speedups in the notes are against the faster of the two); "sparsenm:fst_sptc"
// = every GEMM on our sparse tensor-core kernel with the layer's defaults (heuristic tiles, one
// stream); "sparsenm:fst_sptc_fork" = the same with the backward fork (opt-in); "sparsenm:fst_sptc_tile<BMxBN>" = all six GEMMs forced
// on one tile (sweep); "sparsenm:fst_sptc_timed" = each layer times the tiles per GEMM at
// construction (FstTilePolicy::timed). For each of them (and cuBLAS) a per-phase breakdown:
// "ffn_<act>_phase:<L1|L2>.<phase>" rows (CUDA events between the phases of one step: apply, GEMMs,
// bias, activation, MVUE, decay, colsum) and "ffn_<act>_phase:step" (their sum); the log line "gap"
// compares the FST step with cuBLAS step / (in-situ GEMM speedup). SPARSENM_FST_BACKENDS=1 adds
// the session-3 rows "sparsenm:fst" (automatic per-GEMM backend) and "sparsenm:fst_lt".
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cuda/common.cuh"
#include "cuda/cusparselt/lt_gemm.hpp"
#include "cuda/sptc/sptc.hpp"
#include "cuda/train/fst_kernels.hpp"
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

/// Per-phase breakdown (session 8): a CUDA event after each phase of one FFN step. The layers
/// record theirs through the internal FstPhaseSink (fst_kernels.hpp); the FFN records "start" and
/// its activation kernels. A phase's time = the gap between its event and the previous one.
struct PhaseRecorder final : train::detail::FstPhaseSink {
  std::string prefix;
  std::vector<cudaEvent_t> ev;
  std::vector<std::string> names;
  std::size_t used = 0;
  PhaseRecorder() : ev(64, nullptr) {
    for (auto& e : ev) SPARSENM_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~PhaseRecorder() override {
    for (auto& e : ev) cudaEventDestroy(e);
  }
  PhaseRecorder(const PhaseRecorder&) = delete;
  PhaseRecorder& operator=(const PhaseRecorder&) = delete;
  void mark(const char* phase, cudaStream_t s) override {
    if (used == ev.size()) throw Error("PhaseRecorder: more than 64 phase marks in one step");
    SPARSENM_CUDA_CHECK(cudaEventRecord(ev[used], s));
    if (names.size() <= used) names.resize(used + 1);
    names[used] = prefix + phase;
    ++used;
  }
};

/// The FFN of one variant on one implementation (FST or dense), with its activations.
struct Ffn {
  bool geglu;
  std::int64_t d, T, h;  // h = 4d
  train::FstLinear l1, l2;
  DeviceBuffer x, hbuf, a, y, dy, da, dh, dx;
  PhaseRecorder* rec = nullptr;  // set while a breakdown runs
  void pre(const char* layer) {
    if (rec) rec->prefix = layer;
  }
  void mark(const char* phase) {
    if (rec) {
      rec->prefix.clear();
      rec->mark(phase, nullptr);
    }
  }

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
    pre("L1.");
    l1.begin_step();
    pre("L2.");
    l2.begin_step();
  }
  void fwd_bwd() {
    const std::int64_t h1 = geglu ? 2 * h : h;
    pre("L1.");
    l1.forward(x.get(), T, hbuf.get());
    if (geglu) {
      train::glu_forward(train::Gate::geglu, DType::f16, hbuf.get(), T, h, h1, h, a.get(), h);
    } else {
      gelu_fwd<<<ew_grid(std::size_t(T * h / 2)), 256>>>(static_cast<const __half2*>(hbuf.get()), static_cast<__half2*>(a.get()),
                                                         std::size_t(T * h / 2));
      SPARSENM_CUDA_CHECK(cudaPeekAtLastError());
    }
    mark("act_fwd");
    pre("L2.");
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
    mark("act_bwd");
    pre("L1.");
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

/// Median time per phase of one FFN step (PhaseRecorder), over `reps` steps after `warmup`:
/// each step is enqueued whole, then synchronised and its event gaps read.
struct Breakdown {
  std::vector<std::string> names;  ///< in step order
  std::vector<double> ms;          ///< median per phase
  double sum = 0;                  ///< median of the per-step sums
  double gemm = 0, shared = 0, fst_only = 0;  ///< sums of the medians: GEMMs; bias/act/colsum; apply/refresh/MVUE/decay
};
Breakdown breakdown(Ffn& f, int warmup, int reps) {
  PhaseRecorder rec;
  Breakdown b;
  std::vector<std::vector<double>> samples;
  std::vector<double> sums;
  train::detail::set_fst_phase_sink(&rec);
  f.rec = &rec;
  try {
    for (int i = 0; i < warmup + reps; ++i) {
      rec.used = 0;
      rec.prefix.clear();
      rec.mark("start", nullptr);
      f.step();
      SPARSENM_CUDA_CHECK(cudaEventSynchronize(rec.ev[rec.used - 1]));
      if (i < warmup) continue;
      if (b.names.empty()) {
        b.names.assign(rec.names.begin() + 1, rec.names.begin() + std::ptrdiff_t(rec.used));
        samples.resize(b.names.size());
      }
      if (rec.used - 1 != b.names.size()) throw Error("fst breakdown: the phase sequence changed between steps");
      double sum = 0;
      for (std::size_t j = 1; j < rec.used; ++j) {
        float ms = 0;
        SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms, rec.ev[j - 1], rec.ev[j]));
        samples[j - 1].push_back(ms);
        sum += ms;
      }
      sums.push_back(sum);
    }
  } catch (...) {
    train::detail::set_fst_phase_sink(nullptr);
    f.rec = nullptr;
    throw;
  }
  train::detail::set_fst_phase_sink(nullptr);
  f.rec = nullptr;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (std::size_t j = 0; j < b.names.size(); ++j) {
    const double m = median(samples[j]);
    b.ms.push_back(m);
    const std::string& n = b.names[j];
    if (n.find("gemm") != std::string::npos) b.gemm += m;
    else if (n.find("apply") != std::string::npos || n.find("refresh") != std::string::npos ||
             n.find("mvue") != std::string::npos || n.find("decay") != std::string::npos)
      b.fst_only += m;
    else b.shared += m;
  }
  b.sum = median(sums);
  return b;
}

std::string describe(const Breakdown& b) {
  std::string out;
  char buf[96];
  for (std::size_t j = 0; j < b.names.size(); ++j) {
    std::snprintf(buf, sizeof buf, "%s%s %.4f", j ? ", " : "", b.names[j].c_str(), b.ms[j]);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "; GEMMs %.4f, shared elementwise %.4f, FST-only %.4f, step %.4f ms", b.gemm, b.shared,
                b.fst_only, b.sum);
  return out + buf;
}

}  // namespace

Suite fst_suite() {
  Suite s;
  s.name = "fst";
  s.description =
      "FFN fwd+bwd with FST linear layers (2:4 GEMMs on our sptc kernels: heuristic and timed tiles, tile sweeps, "
      "per-phase breakdown; mask search amortised at l = 40) vs dense cuBLAS; SPARSENM_FST_BACKENDS=1 adds the "
      "automatic / cuSPARSELt backend rows";
  s.needs_gpu = true;
  s.run = [](Context& ctx) {
    const int warmup = std::min(ctx.options.warmup, 10), reps = std::max(5, std::min(ctx.options.reps, 50));
    const int bd_reps = std::max(5, std::min(ctx.options.reps, 30));
    std::vector<std::pair<std::int64_t, std::int64_t>> cases;  // (d, tokens)
    if (ctx.options.quick)
      cases = {{1280, 8192}};
    else
      cases = {{1280, 8192}, {1280, 16384}, {1600, 8192}, {1600, 16384}};
    const std::int64_t l = 40;
    const std::string lt_why = cuda::lt::unavailable_reason();
    const char* env_be = std::getenv("SPARSENM_FST_BACKENDS");
    const bool backend_rows = env_be && std::string(env_be) == "1";
    namespace dt = train::detail;
    for (auto [d, T] : cases) {
      for (bool geglu : {false, true}) {
        const std::string op = geglu ? "ffn_geglu_fwdbwd" : "ffn_gelu_fwdbwd";
        const std::string ph = geglu ? "ffn_geglu_phase:" : "ffn_gelu_phase:";
        const double flops = (geglu ? 72.0 : 48.0) * double(T) * double(d) * double(d);  // dense-equivalent
        auto row = [&](const std::string& opname, const std::string& impl, Timing t, double fl, const std::string& note) {
          Row r;
          r.suite = "fst";
          r.op = opname;
          const bool dense_impl = impl.rfind("cublas", 0) == 0;
          r.format = dense_impl ? "dense" : "hw24";
          r.pattern = dense_impl ? "dense" : "2:4";
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
        // one row per phase + a summary row ("<op>_phase:step"); printed as one line
        auto emit_breakdown = [&](const std::string& impl, const Breakdown& b, const std::string& what) {
          for (std::size_t j = 0; j < b.names.size(); ++j)
            row(ph + b.names[j], impl, {b.ms[j], b.ms[j]}, 0,
                "per-phase breakdown (" + what + "): CUDA events between the phases of one step, median of " +
                    std::to_string(bd_reps) + " synchronised steps");
          row(ph + "step", impl, {b.sum, b.sum}, 0, "sum of the phases (" + what + "): " + describe(b));
          std::printf("  breakdown %s d=%lld T=%lld %s: %s\n", op.c_str(), (long long)d, (long long)T, impl.c_str(),
                      describe(b).c_str());
        };
        // cuBLAS: plain (one stream, as in sessions 1-7) and with the backward fork (dW GEMM on a
        // second stream, its own workspace); FST speedups are against the faster of the two
        Timing dense_plain, dense_fork;
        Breakdown dense_b;
        {
          Ffn f(geglu, d, T, true);
          dt::set_fst_fork_backward(false);
          dense_plain = time_calls([&] { f.step(); }, warmup, reps);
          dt::set_fst_fork_backward(true);
          dense_fork = time_calls([&] { f.step(); }, warmup, reps);
          dense_b = breakdown(f, 3, bd_reps);
          dt::set_fst_fork_backward(false);
        }
        const Timing dense_t = dense_fork.median < dense_plain.median ? dense_fork : dense_plain;
        char note[2048];
        std::snprintf(note, sizeof note, "same FFN, dense cuBLAS GEMMs (FstLinear dense phase), one stream; TFLOPs %.0f",
                      flops / (dense_plain.median * 1e9));
        row(op, "cublas", dense_plain, flops, note);
        std::snprintf(note, sizeof note,
                      "same FFN, dense cuBLAS GEMMs, backward forked (dW GEMM on a second stream, own workspace); TFLOPs "
                      "%.0f; FST speedups below are against the faster cuBLAS row (%s, %.4f ms)",
                      flops / (dense_fork.median * 1e9), dense_fork.median < dense_plain.median ? "forked" : "one stream",
                      dense_t.median);
        row(op, "cublas_fork", dense_fork, flops, note);
        emit_breakdown("cublas", dense_b, "dense cuBLAS step, one stream");
        using train::FstBackend;
        const train::FstBackends sptc_only{FstBackend::sptc, FstBackend::sptc, FstBackend::sptc};

        // (1) every GEMM on our kernel, heuristic tiles (the layer before session 8) + tile sweeps
        double amort = 0;
        Breakdown heur_b;
        {
          dt::set_fst_tile_policy(dt::FstTilePolicy::heuristic);
          Ffn f(geglu, d, T, false, sptc_only);
          dt::set_fst_fork_backward(true);
          const Timing fork_t = time_calls([&] { f.step(); }, warmup, reps);
          dt::set_fst_fork_backward(false);  // the default (one stream) for every other FST row
          const Timing step_t = time_calls([&] { f.step(); }, warmup, reps);
          const Timing apply_t = time_calls([&] { f.begin(); }, warmup, reps);
          const Timing refresh_t = time_calls(
              [&] {
                f.force_refresh();
                f.begin();
              },
              warmup, reps);
          amort = std::max(0.0, refresh_t.median - apply_t.median) / double(l);
          const double fst_ms = step_t.median + amort;
          heur_b = breakdown(f, 3, bd_reps);
          std::snprintf(note, sizeof note,
                        "every GEMM on our sptc kernels, heuristic tiles, one stream (the defaults); FST step (mask apply+compress, fwd, bwd) %.4f ms + "
                        "mask search amortised over l=%lld %.4f ms; speedup vs cuBLAS %.3fx; TFLOPs dense-equivalent %.0f",
                        step_t.median, (long long)l, amort, dense_t.median / fst_ms, flops / (fst_ms * 1e9));
          row(op, "sparsenm:fst_sptc", {fst_ms, step_t.min + amort}, flops, note);
          std::snprintf(note, sizeof note,
                        "as sparsenm:fst_sptc with the backward fork (dW chain on a second stream, opt-in); step %.4f ms + "
                        "amortised search %.4f ms; speedup vs cuBLAS %.3fx (vs plain cuBLAS %.3fx)",
                        fork_t.median, amort, dense_t.median / (fork_t.median + amort),
                        dense_plain.median / (fork_t.median + amort));
          row(op, "sparsenm:fst_sptc_fork", {fork_t.median + amort, fork_t.min + amort}, flops, note);
          emit_breakdown("sparsenm:fst_sptc", heur_b, "sptc, heuristic tiles, one stream");
          std::snprintf(note, sizeof note,
                        "begin_step of both layers at a refresh step (transposable search + compress + repack); "
                        "apply-only begin_step %.4f ms; per step amortised at l=%lld: %.4f ms",
                        apply_t.median, (long long)l, amort);
          row(geglu ? "fst_mask_refresh_geglu" : "fst_mask_refresh_gelu", "sparsenm:fst_sptc", refresh_t, 0, note);
          // gap to "cuBLAS step / in-situ GEMM speedup" (the brief's yardstick)
          const double sg = heur_b.gemm > 0 ? dense_b.gemm / heur_b.gemm : 0;
          std::printf("  gap %s d=%lld T=%lld: GEMMs cuBLAS %.4f / FST %.4f ms = %.3fx; cuBLAS step / %.3f = %.4f ms; "
                      "FST step %.4f ms; gap %.4f ms = FST-only %.4f + shared elementwise %.4f - cuBLAS shared / %.3f %.4f\n",
                      op.c_str(), (long long)d, (long long)T, dense_b.gemm, heur_b.gemm, sg, sg, dense_b.sum / std::max(sg, 1e-9),
                      heur_b.sum,
                      heur_b.sum - dense_b.sum / std::max(sg, 1e-9), heur_b.fst_only, heur_b.shared, sg,
                      dense_b.shared / std::max(sg, 1e-9));
          const cuda::sptc::WgTile sweep[3] = {cuda::sptc::WgTile::m128n256, cuda::sptc::WgTile::m128n128,
                                               cuda::sptc::WgTile::m64n128};
          for (const auto t : sweep) {
            dt::set_fst_tile_force(int(t));
            try {
              const Timing st = time_calls([&] { f.step(); }, warmup, reps);
              const Breakdown b = breakdown(f, 3, bd_reps);
              const std::string impl = std::string("sparsenm:fst_sptc_tile") + cuda::sptc::to_string(t);
              std::snprintf(note, sizeof note,
                            "every GEMM on our sptc kernels, all six on the %s tile (sweep); step %.4f ms + amortised search "
                            "%.4f ms; speedup vs cuBLAS %.3fx",
                            cuda::sptc::to_string(t), st.median, amort, dense_t.median / (st.median + amort));
              row(op, impl, {st.median + amort, st.min + amort}, flops, note);
              emit_breakdown(impl, b, std::string("all GEMMs on tile ") + cuda::sptc::to_string(t));
            } catch (...) {
              dt::set_fst_tile_force(-1);
              throw;
            }
            dt::set_fst_tile_force(-1);
          }
        }
        // (2) timed tiles (FstTilePolicy::timed): each layer times 3 tiles per GEMM at construction
        {
          dt::set_fst_tile_policy(dt::FstTilePolicy::timed);
          const auto c0 = std::chrono::steady_clock::now();
          std::optional<Ffn> fo;
          try {
            fo.emplace(geglu, d, T, false, sptc_only);
          } catch (...) {
            dt::set_fst_tile_policy(dt::FstTilePolicy::heuristic);
            throw;
          }
          dt::set_fst_tile_policy(dt::FstTilePolicy::heuristic);
          Ffn& f = *fo;
          SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
          const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
          const Timing st = time_calls([&] { f.step(); }, warmup, reps);
          const Breakdown b = breakdown(f, 3, bd_reps);
          const std::string t1 = dt::fst_timed_tiles(DType::f16, d, geglu ? 8 * d : 4 * d, T),
                            t2 = dt::fst_timed_tiles(DType::f16, 4 * d, d, T);
          std::snprintf(note, sizeof note,
                        "every GEMM on our sptc kernels, tiles timed at construction; step %.4f ms + amortised search %.4f ms; "
                        "speedup vs cuBLAS %.3fx; L1 %s; L2 %s; construction %.0f ms",
                        st.median, amort, dense_t.median / (st.median + amort), t1.c_str(), t2.c_str(), build_ms);
          row(op, "sparsenm:fst_sptc_timed", {st.median + amort, st.min + amort}, flops, note);
          emit_breakdown("sparsenm:fst_sptc_timed", b, "sptc, timed tiles");
          std::printf("  timed tiles %s d=%lld T=%lld: L1 %s\n  L2 %s\n", op.c_str(), (long long)d, (long long)T, t1.c_str(),
                      t2.c_str());
        }
        // (3) the bias add of layer 1 (T x h1 outputs, the largest elementwise phase of the breakdown):
        // variant 0 (element-wise, the default) vs 1 (16-byte vectors), same buffer, same process
        {
          const std::int64_t n1 = geglu ? 8 * d : 4 * d;
          DeviceBuffer zb(std::size_t(T * n1) * 2), bb(std::size_t(n1) * 2);
          fill(zb.get(), std::size_t(T * n1), 31, 1.f);
          fill(bb.get(), std::size_t(n1), 32, 0.01f);
          SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
          const int bias_default = dt::fst_bias_variant();
          for (int v : {0, 1}) {
            dt::set_fst_bias_variant(v);
            const Timing bt = time_calls([&] { dt::fst_add_bias(DType::f16, zb.get(), T, n1, bb.get(), nullptr); }, warmup, reps);
            dt::set_fst_bias_variant(bias_default);
            Row r;
            r.suite = "fst";
            r.op = "fst_bias_add";
            r.format = "dense";
            r.pattern = "dense";
            r.dtype = "f16";
            r.m = T;
            r.n = n1;
            r.k = 0;
            r.impl = "sparsenm:bias_v" + std::to_string(v);
            r.ms_median = bt.median;
            r.ms_min = bt.min;
            r.reps = reps;
            r.bytes = 4.0 * double(T) * double(n1);
            std::snprintf(note, sizeof note, "z [T][n] += b (layer 1 of the %s FFN), variant %d; %.0f GB/s", geglu ? "GEGLU" : "GELU",
                          v, r.bytes / (bt.median * 1e6));
            r.note = note;
            ctx.emit(r);
          }
        }
        if (!backend_rows) continue;
        // (3) opt-in: the session-3 backend rows (automatic per-GEMM backend, cuSPARSELt only)
        struct Mode {
          const char* impl;
          train::FstBackends be;
          const char* what;
        };
        const Mode modes[2] = {
            {"sparsenm:fst", {}, "automatic per-GEMM backends (layer's construction-time timing)"},
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
          const double fst_ms = step_t.median + amort;
          std::snprintf(note, sizeof note,
                        "%s; FST step %.4f ms + mask search amortised over l=%lld %.4f ms (from the sptc row); speedup vs "
                        "cuBLAS %.3fx; L1: %s; L2: %s; construction %.0f ms",
                        mode.what, step_t.median, (long long)l, amort, dense_t.median / fst_ms, choices(f.l1).c_str(),
                        choices(f.l2).c_str(), build_ms);
          row(op, mode.impl, {fst_ms, step_t.min + amort}, flops, note);
        }
      }
    }
  };
  return s;
}

}  // namespace sparsenm::bench
