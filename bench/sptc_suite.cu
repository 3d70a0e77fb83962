// sparsenm bench — suite "sptc": hardware 2:4 SpMM on the sparse tensor cores. For each
// (n, k, m): our wgmma kernel (every tile shape, plus the tile the plan would choose), our
// sm_80 mma.sp kernel, dense cuBLAS fp16 on the dense expansion, and cuSPARSELt (when built
// with it: plan once, MatmulSearch once, then timed Matmul), all in one process on the same
// operands. Y is f16. Correctness: 256 sampled entries of every timed implementation against
// fp64 sums on the host (rel_err = relative L2 error over the samples).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench.hpp"
#include "cuda/common.cuh"
#include "cuda/sptc/pack.hpp"
#include "cuda/sptc/sptc.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/plan.hpp"

#if defined(SPARSENM_WITH_CUSPARSELT)
#include <cusparseLt.h>
#endif

namespace sparsenm::bench {
namespace {

namespace cs = cuda::sptc;

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float value() { return (float(next() % 2001) - 1000.f) / 1000.f; }  // [-1, 1], never all zero
};

/// Times `fn` with CUDA events: warmup, then reps single-launch samples; returns {median, min} ms.
std::pair<double, double> time_ms(const std::function<void()>& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  cudaEvent_t a, b;
  SPARSENM_CUDA_CHECK(cudaEventCreate(&a));
  SPARSENM_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    SPARSENM_CUDA_CHECK(cudaEventRecord(a));
    fn();
    SPARSENM_CUDA_CHECK(cudaEventRecord(b));
    SPARSENM_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  SPARSENM_CUDA_CHECK(cudaEventDestroy(a));
  SPARSENM_CUDA_CHECK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

#define CUBLAS_OK(x)                                                                   \
  do {                                                                                 \
    cublasStatus_t st_ = (x);                                                          \
    if (st_ != CUBLAS_STATUS_SUCCESS) throw CudaError(std::string(#x) + " failed: " + std::to_string(int(st_))); \
  } while (0)

/// 256 random positions (row of Y, column of Y) that the check compares.
std::vector<std::pair<std::int64_t, std::int64_t>> sample_positions(Rng& rng, std::int64_t m, std::int64_t n) {
  std::vector<std::pair<std::int64_t, std::int64_t>> samples;
  for (int i = 0; i < 256; ++i) samples.emplace_back(std::int64_t(rng.next() % m), std::int64_t(rng.next() % n));
  return samples;
}

/// cuBLAS fp16 (tensor cores), fp32 accumulation, on the dense f16 weight W [n][k]:
/// Y^T (n x m, col-major) = W (k x n col-major)^T * X^T.
void cublas_f16(cublasHandle_t hb, std::int64_t n, std::int64_t m, std::int64_t k, const void* w, const void* x, void* y) {
  const float alpha = 1.f, beta = 0.f;
  CUBLAS_OK(cublasGemmEx(hb, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), int(k), &alpha, w, CUDA_R_16F, int(k), x,
                         CUDA_R_16F, int(k), &beta, y, CUDA_R_16F, int(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/// One (case, m): the f16 Y [m][n] in dY, its sampled fp64 values, and the method every
/// implementation goes through (poison Y, one run checked on the samples, then timed), plus the
/// row fields the case's rows share.
class Measure {
 public:
  Measure(Context& ctx, std::string format, std::string pattern, std::int64_t m, std::int64_t n, std::int64_t k,
          const cuda::DeviceBuffer& dY, std::vector<std::pair<std::int64_t, std::int64_t>> samples,
          std::vector<double> want)
      : ctx_(ctx), format_(std::move(format)), pattern_(std::move(pattern)), m_(m), n_(n), k_(k), dY_(dY),
        samples_(std::move(samples)), want_(std::move(want)), yh_(std::size_t(m * n)) {}

  void poison() const { SPARSENM_CUDA_CHECK(cudaMemset(dY_.get(), 0xFF, dY_.size())); }

  /// Relative L2 error over the samples of whatever sits in dY (inf when not finite).
  double check() {
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
    dY_.download(yh_.data(), dY_.size());
    double num = 0, den = 0;
    for (std::size_t s = 0; s < samples_.size(); ++s) {
      const double g = fp16_bits_to_float(yh_[std::size_t(samples_[s].first * n_ + samples_[s].second)]);
      num += (g - want_[s]) * (g - want_[s]);
      den += want_[s] * want_[s];
    }
    return std::isfinite(num) ? std::sqrt(num / den) : INFINITY;
  }

  void emit(const std::string& impl, std::pair<double, double> t, double err, double bytes, const std::string& note) const {
    Row r;
    r.suite = "sptc";
    r.op = "spmm";
    r.format = format_;
    r.pattern = pattern_;
    r.dtype = "fp16";
    r.m = m_;
    r.n = n_;
    r.k = k_;
    r.impl = impl;
    r.ms_median = t.first;
    r.ms_min = t.second;
    r.reps = ctx_.options.reps;
    r.rel_err = err;
    r.bytes = bytes;
    r.flops = 2.0 * double(m_) * double(n_) * double(k_);  // dense-equivalent
    r.note = note;
    ctx_.emit(r);
  }

  /// Poisons Y, runs fn once and checks it, then times it, checks the output of the last timed run
  /// too (a timing-dependent error shows under back-to-back launches) and emits the row with the
  /// larger of the two errors.
  void measure(const std::string& impl, const std::function<void()>& fn, double bytes, const std::string& note) {
    poison();
    fn();
    const double e = check();
    const auto t = time_ms(fn, ctx_.options.warmup, ctx_.options.reps);
    const double e2 = check();
    emit(impl, t, std::isnan(e) || std::isnan(e2) ? NAN : std::max(e, e2), bytes, note);
  }

 private:
  Context& ctx_;
  std::string format_, pattern_;
  std::int64_t m_, n_, k_;
  const cuda::DeviceBuffer& dY_;
  std::vector<std::pair<std::int64_t, std::int64_t>> samples_;
  std::vector<double> want_;
  std::vector<std::uint16_t> yh_;
};

void run_case(Context& ctx, std::int64_t n, std::int64_t k, std::int64_t m, std::uint64_t seed) {
  Rng rng{seed};
  // Dense 2:4 weight (2 random positions of every group of 4) and X, as f16 bits.
  DenseMatrix wd(DType::f16, n, k), xh(DType::f16, m, k);
  auto* wb = static_cast<std::uint16_t*>(wd.data());
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t g = 0; g < k / 4; ++g) {
      static const int pairs[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
      const int* pr = pairs[rng.next() % 6];
      for (int s = 0; s < 2; ++s) wb[r * k + g * 4 + pr[s]] = float_to_fp16_bits(rng.value());
    }
  auto* xb = static_cast<std::uint16_t*>(xh.data());
  for (std::int64_t i = 0; i < m * k; ++i) xb[i] = float_to_fp16_bits(rng.value());
  const CondensedMatrix w = condense(wd.view(), Pattern::hw24());
  const sptc::Packed24 p = sptc::pack_hw24(w, 128);

  cuda::DeviceBuffer dW(wd.size_bytes()), dX(xh.size_bytes()), dY(std::size_t(m * n) * 2);
  cuda::DeviceBuffer dV(p.values.size() * 2), dM(p.meta.size() * 4);
  dW.upload(wd.data(), wd.size_bytes());
  dX.upload(xh.data(), xh.size_bytes());
  dV.upload(p.values.data(), dV.size());
  dM.upload(p.meta.data(), dM.size());
  cs::DeviceA a{dV.get(), dM.as<std::uint32_t>(), n, p.rows_pad, p.k_pad};

  // Sampled fp64 check of whatever sits in dY.
  std::vector<std::pair<std::int64_t, std::int64_t>> samples = sample_positions(rng, m, n);
  std::vector<double> want;
  for (auto [i, j] : samples) {
    double s = 0;
    for (std::int64_t q = 0; q < k; ++q) s += double(xh.at(i, q)) * double(wd.at(j, q));
    want.push_back(s);
  }
  Measure me(ctx, "hw24", "2:4", m, n, k, dY, std::move(samples), std::move(want));
  const double sparse_bytes = double(n) * k * 2 * 0.5625 + double(m) * k * 2 + double(m) * n * 2;
  const double dense_bytes = double(n) * k * 2 + double(m) * k * 2 + double(m) * n * 2;
  const std::string l2 = dense_bytes > 120e6 ? "" : "working set < 2x L2, not rotated";

  cublasHandle_t hb;
  CUBLAS_OK(cublasCreate(&hb));
  me.measure("cublas", [&] { cublas_f16(hb, n, m, k, dW.get(), dX.get(), dY.get()); }, dense_bytes, l2);
  CUBLAS_OK(cublasDestroy(hb));

  cs::Problem pr{DType::f16, DType::f16, dX.get(), dY.get(), m, n, k, k};
  // SPTC_NCU: only cuBLAS, 128x256 (one tile per CTA and persistent) and 192x256, for a short profiler run
  const bool ncu = std::getenv("SPTC_NCU") != nullptr;
  if (cs::device_cc() == 90) {
    for (cs::WgTile tile : {cs::WgTile::m128n256, cs::WgTile::m128n128, cs::WgTile::m64n256, cs::WgTile::m64n128}) {
      if (m >= 2048 && cs::wg_tile_rows(tile) == 64) continue;  // 64-row tiles: never the fastest at m >= 2048
      if (ncu && tile != cs::WgTile::m128n256) continue;
      const CUtensorMap map = cs::make_values_map(a, DType::f16, tile);
      me.measure(std::string("sparsenm:sptc_24_wgmma_") + cs::to_string(tile),
                 [&] { cs::run_sptc24_wgmma(a, map, tile, pr, nullptr); }, sparse_bytes, l2);
    }
  }
  if (cs::device_cc() == 90) {
    // 192 x 256 on three warpgroups (W packed with 192-row alignment): cuda:sptc_24_wgmma_3
    {
      const sptc::Packed24 p3 = sptc::pack_hw24(w, 192);
      cuda::DeviceBuffer dV3(p3.values.size() * 2), dM3(p3.meta.size() * 4);
      dV3.upload(p3.values.data(), dV3.size());
      dM3.upload(p3.meta.data(), dM3.size());
      const cs::DeviceA a3{dV3.get(), dM3.as<std::uint32_t>(), n, p3.rows_pad, p3.k_pad};
      const CUtensorMap map3 = cs::make_values_map_rows(a3, 192);
      // variants: one tile per CTA / stream-k last wave (sk); the sk workspace is zeroed once (the
      // kernel leaves it reusable)
      cuda::DeviceBuffer dWs3(cs::sptc24_wgmma3_workspace_bytes());
      SPARSENM_CUDA_CHECK(cudaMemset(dWs3.get(), 0, dWs3.size()));
      for (const cs::W3Opts o : {cs::W3Opts{false}, cs::W3Opts{true}}) {
        me.measure(std::string("sparsenm:sptc_24_wgmma_192x256") + (o.stream_k ? "sk" : ""),
                   [&] { cs::run_sptc24_wgmma3(a3, map3, pr, nullptr, o, dWs3.get()); }, sparse_bytes, l2);
      }
    }
    // persistent kernel: tiles x tile orders (raster 8 = groups of 8 row tiles sweep the column
    // tiles, the default; -2 = groups of 2 column tiles sweep the row tiles)
    struct V {
      cs::PTile tile;
      int raster;
    };
    std::vector<V> vs{{cs::PTile::r128n256, 8}, {cs::PTile::r128n256, -2}};
    if (!ncu) vs.push_back({cs::PTile::r128n128, 8});
    if (ncu) vs = {{cs::PTile::r128n256, 8}};
    if (std::getenv("SPTC_CLUSTER")) vs.push_back({cs::PTile::r128n256x2, 8});  // experiment: 2x1 clusters, X multicast
    for (V v : vs) {
      const CUtensorMap map = cs::make_values_map_rows(a, cs::ptile_rows(v.tile));
      me.measure(std::string("sparsenm:sptc_24_wgmma_") + cs::to_string(v.tile) + (v.raster == 8 ? "" : "_mr" + std::to_string(-v.raster)),
                 [&] { cs::run_sptc24_wgmma_persistent(a, map, v.tile, pr, nullptr, {v.raster, true}); }, sparse_bytes, l2);
    }
  }
  if (ncu) return;
  if (!std::getenv("SPTC_SKIP_MMA")) {
    me.measure("sparsenm:sptc_24_mma", [&] { cs::run_sptc24_mma(a, pr, nullptr); }, sparse_bytes, l2);
  }

#if defined(SPARSENM_WITH_CUSPARSELT)
  {
#define LT_OK(x)                                                                               \
  do {                                                                                         \
    cusparseStatus_t st_ = (x);                                                                \
    if (st_ != CUSPARSE_STATUS_SUCCESS) throw CudaError(std::string(#x) + " failed: " + std::to_string(int(st_))); \
  } while (0)
    const float alpha = 1.f, beta = 0.f;
    cusparseLtHandle_t h;
    LT_OK(cusparseLtInit(&h));
    cusparseLtMatDescriptor_t mA, mB, mC;
    // Column-major: A = W^T stored k x n (ld k), used transposed; B = X^T k x m (ld k); C = Y^T n x m (ld n).
    LT_OK(cusparseLtStructuredDescriptorInit(&h, &mA, k, n, k, 16, CUDA_R_16F, CUSPARSE_ORDER_COL,
                                             CUSPARSELT_SPARSITY_50_PERCENT));
    LT_OK(cusparseLtDenseDescriptorInit(&h, &mB, k, m, k, 16, CUDA_R_16F, CUSPARSE_ORDER_COL));
    LT_OK(cusparseLtDenseDescriptorInit(&h, &mC, n, m, n, 16, CUDA_R_16F, CUSPARSE_ORDER_COL));
    cusparseLtMatmulDescriptor_t md;
    LT_OK(cusparseLtMatmulDescriptorInit(&h, &md, CUSPARSE_OPERATION_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &mA,
                                         &mB, &mC, &mC, CUSPARSE_COMPUTE_32F));
    cusparseLtMatmulAlgSelection_t alg;
    LT_OK(cusparseLtMatmulAlgSelectionInit(&h, &alg, &md, CUSPARSELT_MATMUL_ALG_DEFAULT));
    cusparseLtMatmulPlan_t plan;
    LT_OK(cusparseLtMatmulPlanInit(&h, &plan, &md, &alg));
    cuda::DeviceBuffer dP(wd.size_bytes());
    SPARSENM_CUDA_CHECK(cudaMemcpy(dP.get(), dW.get(), wd.size_bytes(), cudaMemcpyDeviceToDevice));
    LT_OK(cusparseLtSpMMAPrune(&h, &md, dP.get(), dP.get(), CUSPARSELT_PRUNE_SPMMA_STRIP, nullptr));
    std::size_t csize = 0, cbuf = 0, ws = 0;
    LT_OK(cusparseLtSpMMACompressedSize(&h, &plan, &csize, &cbuf));
    cuda::DeviceBuffer dC(csize), dCb(std::max<std::size_t>(cbuf, 16));
    LT_OK(cusparseLtSpMMACompress(&h, &plan, dP.get(), dC.get(), dCb.get(), nullptr));
    LT_OK(cusparseLtMatmulGetWorkspace(&h, &plan, &ws));
    cuda::DeviceBuffer dWs(std::max<std::size_t>(ws, 16));
    cudaStream_t s0 = nullptr;
    LT_OK(cusparseLtMatmulSearch(&h, &plan, &alpha, dC.get(), dX.get(), &beta, dY.get(), dY.get(), dWs.get(), &s0, 1));
    LT_OK(cusparseLtMatmulGetWorkspace(&h, &plan, &ws));
    if (ws > dWs.size()) dWs = cuda::DeviceBuffer(ws);
    auto lt = [&] {
      LT_OK(cusparseLtMatmul(&h, &plan, &alpha, dC.get(), dX.get(), &beta, dY.get(), dY.get(), dWs.get(), &s0, 1));
    };
    me.measure("cusparselt", lt, sparse_bytes, l2.empty() ? "MatmulSearch once" : l2 + "; MatmulSearch once");
    cusparseLtMatmulPlanDestroy(&plan);
    cusparseLtMatmulAlgSelectionDestroy(&alg);
    cusparseLtMatDescriptorDestroy(&mA);
    cusparseLtMatDescriptorDestroy(&mB);
    cusparseLtMatDescriptorDestroy(&mC);
    cusparseLtDestroy(&h);
  }
#else
  static bool said = false;
  if (!said) std::fprintf(stderr, "sptc suite: built without cuSPARSELt; the cusparselt peer is skipped\n");
  said = true;
#endif
}


/// V:2:M (venom) SpMM: W with V-row slabs, 4 random columns per slab-window, 2 random of those 4
/// per row; ours = transpose X + gathered wgmma.sp (plan's tile), plus the GEMM alone per tile and
/// the transpose alone; cuBLAS fp16 on the dense expansion in the same process. When every
/// aligned group of 4 holds <= 2 nonzeros (always for M % 4 == 0), also the same weight repacked
/// to hardware 2:4 on the 2:4 kernels (what the plan candidates cuda:sptc_24_wgmma / _p / _3 run,
/// plan's tile), and the plan's automatic choice (Plan::create races every supported candidate).
/// SPTC_VNM_LEAN: only cuBLAS, the plan candidates' rows and the automatic choice (no GEMM-only
/// or gather experiments).
void run_vnm_case(Context& ctx, std::int64_t n, std::int64_t k, int v, int mw, const std::vector<std::int64_t>& ms,
                  std::uint64_t seed) {
  const Options& o = ctx.options;
  Rng rng{seed};
  const Pattern pat = Pattern::venom(v, mw);
  DenseMatrix wd(DType::f16, n, k);
  auto* wb = static_cast<std::uint16_t*>(wd.data());
  std::vector<int> perm(static_cast<std::size_t>(mw), 0);
  for (std::int64_t r0 = 0; r0 < n; r0 += v)
    for (std::int64_t c0 = 0; c0 < k; c0 += mw) {
      const int real = int(std::min<std::int64_t>(mw, k - c0));
      for (int i = 0; i < real; ++i) perm[std::size_t(i)] = i;
      const int sel = std::min(real, 4);
      for (int i = 0; i < sel; ++i) std::swap(perm[std::size_t(i)], perm[std::size_t(i + int(rng.next() % std::uint64_t(real - i)))]);
      for (std::int64_t r = r0; r < std::min(n, r0 + v); ++r) {
        const int a = int(rng.next() % std::uint64_t(sel));
        int b = int(rng.next() % std::uint64_t(sel - 1));
        if (b >= a) ++b;
        for (int q : {a, b}) {
          float val = rng.value();
          if (val == 0.f) val = 0.5f;
          wb[r * k + c0 + perm[std::size_t(q)]] = float_to_fp16_bits(val);
        }
      }
    }
  const CondensedMatrix w = condense(wd.view(), pat);
  int sms = 132;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  struct Packed {
    int g, rows_per_tile;
    cuda::DeviceBuffer values, meta, gather;
    cs::DeviceA a;
  };
  std::vector<Packed> packs;
  for (int g : {128, 64}) {
    if (v < 128 && g == 128) continue;  // V = 64: 64-row tiles only (128 would double the work)
    if (v >= 128 && g == 64 && std::getenv("SPTC_VNM_LEAN")) continue;  // lean: the plan's 128-row tiles only
    sptc::PackedVnm p = sptc::pack_venom(w, g, 128);
    Packed pk{g, p.rows_per_group, cuda::DeviceBuffer(p.a.values.size() * 2), cuda::DeviceBuffer(p.a.meta.size() * 4),
              cuda::DeviceBuffer(p.gather.size() * 4), {}};
    pk.values.upload(p.a.values.data(), pk.values.size());
    pk.meta.upload(p.a.meta.data(), pk.meta.size());
    pk.gather.upload(p.gather.data(), pk.gather.size());
    pk.a = cs::DeviceA{pk.values.get(), pk.meta.as<std::uint32_t>(), p.a.rows, p.a.rows_pad, p.a.k_pad};
    packs.push_back(std::move(pk));
  }
  cuda::DeviceBuffer dW(wd.size_bytes());
  dW.upload(wd.data(), wd.size_bytes());
  // the same weight as hardware 2:4 (sptc_pack.cpp): 128-row alignment for the 128-row tiles, 192
  // for the three-warpgroup kernel
  const std::string why24 = sptc::hw24_unsupported(w);
  const bool lean = std::getenv("SPTC_VNM_LEAN") != nullptr;
  struct Packed24Dev {
    cuda::DeviceBuffer values, meta;
    cs::DeviceA a;
  };
  std::vector<Packed24Dev> p24;  // [0]: 128-row alignment, [1]: 192
  if (why24.empty() && k % 8 == 0 && cs::device_cc() == 90)
    for (int align : {128, 192}) {
      const sptc::Packed24 p = sptc::pack_hw24(w, align);
      Packed24Dev d{cuda::DeviceBuffer(p.values.size() * 2), cuda::DeviceBuffer(p.meta.size() * 4), {}};
      d.values.upload(p.values.data(), d.values.size());
      d.meta.upload(p.meta.data(), d.meta.size());
      d.a = cs::DeviceA{d.values.get(), d.meta.as<std::uint32_t>(), n, p.rows_pad, p.k_pad};
      p24.push_back(std::move(d));
    }
  else
    std::fprintf(stderr, "sptc suite: %s %lldx%lld: no 2:4 repack rows (%s)\n", pat.str().c_str(), (long long)n,
                 (long long)k, why24.empty() ? "k % 8 != 0 or not sm_90" : why24.c_str());
  cublasHandle_t hb;
  CUBLAS_OK(cublasCreate(&hb));
  for (std::int64_t m : ms) {
    DenseMatrix xh(DType::f16, m, k);
    auto* xb = static_cast<std::uint16_t*>(xh.data());
    for (std::int64_t i = 0; i < m * k; ++i) xb[i] = float_to_fp16_bits(rng.value());
    const std::int64_t ldt = (m + 7) / 8 * 8;
    cuda::DeviceBuffer dX(xh.size_bytes()), dY(std::size_t(m * n) * 2), dXt(std::size_t(k * ldt) * 2);
    dX.upload(xh.data(), xh.size_bytes());
    std::vector<std::pair<std::int64_t, std::int64_t>> samples = sample_positions(rng, m, n);
    std::vector<double> want;
    for (auto [i, j] : samples) {
      double acc = 0;
      for (std::int64_t q = 0; q < k; ++q)
        if (wb[j * k + q]) acc += double(xh.at(i, q)) * double(wd.at(j, q));
      want.push_back(acc);
    }
    Measure me(ctx, "venom", pat.str(), m, n, k, dY, std::move(samples), std::move(want));
    const double dense_bytes = double(n) * k * 2 + double(m) * k * 2 + double(m) * n * 2;
    const double sparse_bytes = double(n) * k * 2 * (2.0 / mw) * 1.125 + double(m) * k * 2 + double(m) * n * 2;
    const std::string l2 = dense_bytes > 120e6 ? "" : "working set < 2x L2, not rotated";
    const bool ncu = std::getenv("SPTC_NCU") != nullptr;  // only the gather variants of the 256-wide tile
    if (!ncu)
      me.measure("cublas", [&] { cublas_f16(hb, n, m, k, dW.get(), dX.get(), dY.get()); }, dense_bytes,
                 l2.empty() ? "dense expansion of the V:2:M weight" : l2 + "; dense expansion of the V:2:M weight");
    if (cs::device_cc() != 90) continue;
    // the plan's tile (register.cu VnmInstance::choose_tile)
    auto tiles = [&](std::int64_t bm, std::int64_t bn) { return double(((n + bm - 1) / bm) * ((m + bn - 1) / bn)); };
    const cs::PTile plan_tile = v >= 128 ? (tiles(128, 256) >= 1.4 * sms ? cs::PTile::r128n256 : cs::PTile::r128n128)
                                         : (tiles(64, 256) >= 1.4 * sms ? cs::PTile::c64n256 : cs::PTile::c64n128);
    // SPTC_VNM_PLANONLY: cuBLAS and the plan row only (the plan's race is the slow part)
    const bool planonly = std::getenv("SPTC_VNM_PLANONLY") != nullptr;
    if (!p24.empty() && !ncu && !planonly) {
      // the 2:4 plan candidates on the repacked weight, tiles as register.cu chooses them
      // (Sptc24Instance::choose_tile; persistent: 128x256 when that tile is chosen, else 128x128)
      const cs::WgTile t24 = tiles(128, 256) >= 1.4 * sms   ? cs::WgTile::m128n256
                             : tiles(128, 128) >= 0.75 * sms ? cs::WgTile::m128n128
                                                             : cs::WgTile::m64n128;
      const cs::PTile pt24 = t24 == cs::WgTile::m128n256 ? cs::PTile::r128n256 : cs::PTile::r128n128;
      const double b24 = double(n) * k * 2 * 0.5625 + double(m) * k * 2 + double(m) * n * 2;
      const std::string rep = (l2.empty() ? std::string() : l2 + "; ") + "V:2:M weight repacked to hardware 2:4, tile ";
      cs::Problem pr{DType::f16, DType::f16, dX.get(), dY.get(), m, n, k, k};
      const CUtensorMap map = cs::make_values_map(p24[0].a, DType::f16, t24);
      me.measure("sparsenm:sptc_24_wgmma", [&] { cs::run_sptc24_wgmma(p24[0].a, map, t24, pr, nullptr); }, b24,
                 rep + cs::to_string(t24));
      const CUtensorMap mapp = cs::make_values_map_rows(p24[0].a, 128);
      me.measure("sparsenm:sptc_24_wgmma_p", [&] { cs::run_sptc24_wgmma_persistent(p24[0].a, mapp, pt24, pr, nullptr); }, b24,
                 rep + cs::to_string(pt24));
      const CUtensorMap map3 = cs::make_values_map_rows(p24[1].a, 192);
      me.measure("sparsenm:sptc_24_wgmma_3", [&] { cs::run_sptc24_wgmma3(p24[1].a, map3, pr, nullptr); }, b24, rep + "192x256");
    }
    if (!std::getenv("SPTC_VNM_NOPLAN") && !ncu) {
      // the plan's automatic choice: Plan::create races every supported CUDA candidate once on this
      // weight (plan time, not timed here), then plan.run is measured like every other row
      MatmulDesc desc;
      desc.m = m;
      desc.backend = Backend::cuda;
      const Plan plan = Plan::create(w, desc);
      std::string race = plan.reason().substr(0, plan.reason().find("; not supported"));
      std::replace(race.begin(), race.end(), '"', '\'');
      std::fprintf(stderr, "sptc suite: %s %lldx%lld m=%lld plan -> %s (%s)\n", pat.str().c_str(), (long long)n,
                   (long long)k, (long long)m, plan.kernel().c_str(), plan.reason().c_str());
      me.measure("sparsenm:plan", [&] { plan.run(dX.get(), dY.get(), nullptr); }, sparse_bytes,
                 (l2.empty() ? std::string() : l2 + "; ") + "automatic choice: " + plan.kernel() + " (" + race + ")");
    }
    if (planonly) continue;
    auto tr = [&] { cs::transpose_x(dX.get(), m, k, dXt.get(), ldt, nullptr); };
    // SPTC_VNM_GATHER=4b (docs/PERF-sptc.md, session 4b): on the plan's tile, column-group order
    // (raster -2) everywhere: GEMM-only rows for the control (mode 6, what cuda:vnm_wgmma_mr ran at
    // 63f115e) and the candidates 9 (early release), 10 (9 + 5 stages at p128x256), 11 (6 + 5
    // stages), 6 / 10 + the shared-memory index ring; the two transposes alone; transpose + GEMM
    // rows (what a plan candidate runs): the control (variant-0 transpose + mode 6) and the
    // candidates with the register transpose. Under SPTC_NCU: one GEMM launch of mode 6 and of
    // mode 10, nothing timed.
    const char* gsel = std::getenv("SPTC_VNM_GATHER");
    if (((gsel && std::string(gsel) == "4b") || (ncu && std::getenv("SPTC_VNM_4B"))) && !packs.empty() && packs[0].g == 128) {
      const Packed& pk = packs[0];
      const CUtensorMap map = cs::make_values_map_rows(pk.a, pk.g);
      cs::Problem pr{DType::f16, DType::f16, dXt.get(), dY.get(), m, n, k, ldt};
      tr();
      struct GMode {
        int mode;
        bool sidx;
        const char* suffix;
      };
      const std::vector<GMode> gms{{6, false, "_s"}, {9, false, "_e"}, {10, false, "_e5"}, {11, false, "_s5"},
                                   {6, true, "_si"}, {10, true, "_e5i"}};
      for (const GMode& g : gms) {
        if (ncu && !(g.mode == 6 || g.mode == 10) ) continue;
        if (ncu && g.sidx) continue;
        auto gm = [&] {
          cs::run_vnm_wgmma(pk.a, map, pk.gather.as<std::int32_t>(), pk.rows_per_tile, plan_tile, pr, nullptr, g.mode,
                            {-2, true, g.sidx});
        };
        if (ncu) {
          gm();
          SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
          continue;
        }
        me.measure(std::string("sparsenm:vnm_gemm_") + cs::to_string(plan_tile) + g.suffix, gm, sparse_bytes,
                   "GEMM only (X^T given), gather mode " + std::to_string(g.mode) + (g.sidx ? " + smem index ring" : "") +
                       ", raster -2");
      }
      if (ncu) continue;
      for (int tv : {0, 1}) {
        auto t = [&] { cs::transpose_x(dX.get(), m, k, dXt.get(), ldt, nullptr, tv); };
        me.emit(tv ? "sparsenm:vnm_transpose_reg" : "sparsenm:vnm_transpose", time_ms(t, o.warmup, o.reps), -1,
                4.0 * double(m) * k, tv ? "X -> X^T workspace only, register transpose (variant 1)" : "X -> X^T workspace only, shared-memory tiles (variant 0)");
      }
      struct FMode {
        int mode;
        bool sidx;
        int tv;
        const char* suffix;
      };
      for (const FMode& f : {FMode{6, false, 0, "_s"}, FMode{6, false, 1, "_sT"}, FMode{9, false, 1, "_eT"},
                             FMode{10, false, 1, "_e5T"}, FMode{10, true, 1, "_e5iT"}}) {
        auto full = [&] {
          cs::transpose_x(dX.get(), m, k, dXt.get(), ldt, nullptr, f.tv);
          cs::run_vnm_wgmma(pk.a, map, pk.gather.as<std::int32_t>(), pk.rows_per_tile, plan_tile, pr, nullptr, f.mode,
                            {-2, true, f.sidx});
        };
        me.measure(std::string("sparsenm:vnm_wgmma") + f.suffix, full, sparse_bytes + 4.0 * double(m) * k,
                   "transpose variant " + std::to_string(f.tv) + " + GEMM (plan candidate), tile " +
                       std::string(cs::to_string(plan_tile)) + ", gather mode " + std::to_string(f.mode) +
                       (f.sidx ? " + smem index ring" : "") + ", raster -2");
      }
      continue;
    }
    // SPTC_VNM_GATHER (docs/PERF-sptc.md, session 4): on the plan's tile, the gather modes of
    // wgmma_persistent.cu, all with the column-group order of cuda:vnm_wgmma_mr: GEMM-only rows for
    // the control (mode 1), the two DIAGNOSTICS (4: B by TMA without the gather, 5: the gather
    // without the MMA; both give wrong products by design, their rel_err is flagged) and the
    // candidates 6 (streamlined cp.async), 8 (6 + wait_group, one arrival per warp), 7 (hybrid TMA
    // rows + cp.async); then transpose + GEMM rows for the candidates (what a plan candidate runs).
    // Under SPTC_NCU: one GEMM launch per mode, nothing timed (ncu --launch-count picks them up).
    if ((std::getenv("SPTC_VNM_GATHER") || ncu) && !packs.empty() && packs[0].g == 128) {
      const Packed& pk = packs[0];
      const CUtensorMap map = cs::make_values_map_rows(pk.a, pk.g);
      cs::Problem pr{DType::f16, DType::f16, dXt.get(), dY.get(), m, n, k, ldt};
      tr();
      struct GMode {
        int mode;
        const char* suffix;
        bool diag;
      };
      const std::vector<GMode> modes{{1, "_mr2", false}, {4, "_diag_tmaid", true}, {5, "_diag_nomma", true},
                                     {6, "_s", false},   {8, "_sw", false},        {7, "_h", false}};
      for (const GMode& gmode : modes) {
        if (gmode.diag && plan_tile != cs::PTile::r128n256) continue;
        auto gm = [&] {
          cs::run_vnm_wgmma(pk.a, map, pk.gather.as<std::int32_t>(), pk.rows_per_tile, plan_tile, pr, nullptr, gmode.mode,
                            {-2, true});
        };
        if (ncu) {
          gm();
          SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
          continue;
        }
        me.measure(std::string("sparsenm:vnm_gemm_") + cs::to_string(plan_tile) + gmode.suffix, gm, sparse_bytes,
                   gmode.diag ? "DIAGNOSTIC (wrong product by design), GEMM only, gather mode " + std::to_string(gmode.mode)
                              : "GEMM only (X^T given), gather mode " + std::to_string(gmode.mode) + ", raster -2");
      }
      if (!ncu)
        for (const GMode& gmode : modes) {
          if (gmode.diag || gmode.mode == 1) continue;  // mode 1 full = the vnm_wgmma_mr row below
          auto full = [&] {
            tr();
            cs::run_vnm_wgmma(pk.a, map, pk.gather.as<std::int32_t>(), pk.rows_per_tile, plan_tile, pr, nullptr, gmode.mode,
                              {-2, true});
          };
          me.measure(std::string("sparsenm:vnm_wgmma") + gmode.suffix, full, sparse_bytes + 4.0 * double(m) * k,
                     "transpose + GEMM (plan candidate), tile " + std::string(cs::to_string(plan_tile)) + ", gather mode " +
                         std::to_string(gmode.mode) + ", raster -2");
        }
      if (ncu) continue;
    }
    if (!lean)
      me.emit("sparsenm:vnm_transpose", time_ms(tr, o.warmup, o.reps), -1, 4.0 * double(m) * k, "X -> X^T workspace only");
    tr();
    for (const Packed& pk : packs) {
      const std::vector<cs::PTile> tiles_of_g = pk.g == 128 ? std::vector<cs::PTile>{cs::PTile::r128n256, cs::PTile::r128n128}
                                                             : std::vector<cs::PTile>{cs::PTile::c64n256, cs::PTile::c64n128};
      for (cs::PTile tile : tiles_of_g) {
        const CUtensorMap map = cs::make_values_map_rows(pk.a, pk.g);
        cs::Problem pr{DType::f16, DType::f16, dXt.get(), dY.get(), m, n, k, ldt};
        // schedules: "" = the control (groups of 8 row tiles, gather indices loaded on the
        // producer's critical path: the kernel before this change); _pf = index prefetch; _mrG =
        // prefetch + groups of G column tiles sweeping the row tiles
        struct S {
          const char* suffix;
          cs::PSched q;
        };
        std::vector<S> ss{{"", {8, false}}, {"_pf", {8, true}}, {"_mr2", {-2, true}}};
        const bool wide = tile == cs::PTile::r128n256 || tile == cs::PTile::c64n256;
        if (wide && !ncu) {
          ss.push_back({"_mr1", {-1, true}});
          ss.push_back({"_mr4", {-4, true}});
        }
        if (ncu && !wide) continue;
        for (const S& sv : ss) {
          if (lean) break;
          auto gemm = [&] {
            cs::run_vnm_wgmma(pk.a, map, pk.gather.as<std::int32_t>(), pk.rows_per_tile, tile, pr, nullptr, 0, sv.q);
          };
          me.measure(std::string("sparsenm:vnm_gemm_") + cs::to_string(tile) + sv.suffix, gemm, sparse_bytes,
                     l2.empty() ? "GEMM only (X^T given)" : l2 + "; GEMM only (X^T given)");
        }
        if (wide && !ncu && !lean)  // the earlier gather experiments (no proxy fence / TMA rows) with the column-group order
          for (int mode : {2, 3}) {
            auto gm = [&] {
              cs::run_vnm_wgmma(pk.a, map, pk.gather.as<std::int32_t>(), pk.rows_per_tile, tile, pr, nullptr, mode, {-2, true});
            };
            me.measure(std::string("sparsenm:vnm_gemm_") + cs::to_string(tile) + (mode == 2 ? "_nofence_mr2" : "_tmarows_mr2"), gm,
                       sparse_bytes, "GEMM only, gather experiment");
          }
        if (tile == plan_tile && !ncu) {
          // what the plan candidates run (transpose + GEMM): cuda:vnm_wgmma = _pf, cuda:vnm_wgmma_mr =
          // _mr2; _ctrl = the kernel before this change
          for (const S& sv : {S{"_ctrl", {8, false}}, S{"", {8, true}}, S{"_mr", {-2, true}}}) {
            if (lean && sv.q.prefetch == false) continue;  // the control: not a plan candidate
            auto full = [&] {
              tr();
              cs::run_vnm_wgmma(pk.a, map, pk.gather.as<std::int32_t>(), pk.rows_per_tile, tile, pr, nullptr, 0, sv.q);
            };
            me.measure(std::string("sparsenm:vnm_wgmma") + sv.suffix, full, sparse_bytes + 4.0 * double(m) * k,
                       (l2.empty() ? std::string() : l2 + "; ") + "transpose + GEMM (what the plan runs), tile " +
                           cs::to_string(tile) + ", raster " + std::to_string(sv.q.raster));
          }
        }
      }
    }
  }
  CUBLAS_OK(cublasDestroy(hb));
}
}  // namespace

Suite sptc_suite() {
  Suite s;
  s.name = "sptc";
  s.description = "hardware 2:4 SpMM on the sparse tensor cores (wgmma.sp / mma.sp) vs cuBLAS fp16 and cuSPARSELt";
  s.needs_gpu = true;
  s.run = [](Context& ctx) {
    const Options& o = ctx.options;
    std::vector<std::pair<std::int64_t, std::int64_t>> shapes = o.shapes;
    if (shapes.empty()) {
      shapes = {{4096, 4096}, {11008, 4096}, {4096, 11008}, {12288, 12288}};
      if (!o.quick) shapes.insert(shapes.end(), {{28672, 8192}, {4096, 1024}, {1024, 4096}});
    }
    std::vector<std::int64_t> ms = o.ms;
    if (ms.empty()) ms = o.quick ? std::vector<std::int64_t>{512, 2048, 8192} : std::vector<std::int64_t>{32, 128, 512, 2048, 8192};
    std::uint64_t seed = o.seed;
    // patterns: "2:4" (hardware 2:4 cases) and V:2:M venom patterns; default both families
    std::vector<std::string> pats = o.patterns;
    if (pats.empty()) pats = {"2:4", "64:2:8", "64:2:16", "64:2:32", "128:2:8", "128:2:16", "128:2:32"};
    for (auto [n, k] : shapes)
      for (const std::string& ps : pats) {
        if (ps == "2:4") {
          for (std::int64_t m : ms) run_case(ctx, n, k, m, seed++);
          continue;
        }
        Pattern p;
        try {
          p = Pattern::parse(ps, "--pattern");
        } catch (const InvalidArgument&) {
          p.kind = Granularity::element;
        }
        if (p.kind != Granularity::venom) {  // patterns of other suites: not this suite's business
          std::fprintf(stderr, "sptc suite: pattern %s skipped (takes 2:4 and V:2:M)\n", ps.c_str());
          continue;
        }
        run_vnm_case(ctx, n, k, p.v, p.m, ms, seed++);
      }
  };
  return s;
}

}  // namespace sparsenm::bench
