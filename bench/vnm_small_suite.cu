// sparsenm bench — suite "vnm_small": small-m (decode) products with V:2:M and hardware 2:4
// weights. Ours: cuda:vnm_gemv. Peers on the same pruned weight: cuBLAS (dense expansion,
// fp16 tensor cores, fp32 compute) and, for 2:4, cuSPARSELt (plan once, MatmulSearch once,
// then Matmul; built only with SPARSENM_WITH_CUSPARSELT). Also times GPU pruning
// (prune_venom_cuda, host in / host out) on a 4096 x 11008 matrix to 128:2:16.
//
// Method (shared design BENCH.md): CUDA events around each run, >= 20 warm-up runs, median and
// minimum of >= 100 runs; every implementation's result is checked against the fp64 reference
// (relative Frobenius error). L2: each implementation rotates over enough copies of its weight
// representation that the copies together exceed 2.5x the L2 size (note field says how many).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#if defined(SPARSENM_WITH_CUSPARSELT)
#include <cusparseLt.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cuda/common.cuh"
#include "cuda/vnm_small/vnm_small.hpp"
#include "sparsenm/cuda_prune_venom.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/reference.hpp"

namespace sparsenm::bench {

namespace {

using cuda::DeviceBuffer;

#define VNM_CUBLAS_CHECK(call)                                                                      \
  do {                                                                                             \
    cublasStatus_t s_ = (call);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(#call) + " failed: " + std::to_string(int(s_))); \
  } while (0)

// SplitMix64 (deterministic across platforms).
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float value() {  // nonzero, uniform magnitude in [1/64, 1]
    const float mag = float(1 + next() % 64) / 64.0f;
    return (next() & 1) ? -mag : mag;
  }
};

/// A random V:2:M or hw24 weight built directly in the canonical format (fast for big shapes).
CondensedMatrix random_weight(const Pattern& p, DType t, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  const FormatLayout l = FormatLayout::of(p, n, k);
  CondensedMatrix c = CondensedMatrix::allocate(l, t);
  const bool venom = p.kind == Granularity::venom;
  const int M = p.m, G = venom ? p.v : 1;
  const std::int64_t groups = (n + G - 1) / G;
  static const int pairs[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t g = 0; g < groups; ++g) {
    Rng rng{seed * 0x2545f4914f6cdd1dull + std::uint64_t(g) * 0x9e3779b97f4a7c15ull};
    std::vector<int> sel(static_cast<std::size_t>(l.windows) * 4);
    for (std::int64_t w = 0; w < l.windows; ++w) {
      const int real = int(std::min<std::int64_t>(M, k - w * M));
      int s[4] = {0, 1, 2, 3};
      if (venom && real > 4) {
        std::vector<int> all(static_cast<std::size_t>(real));
        for (int i = 0; i < real; ++i) all[std::size_t(i)] = i;
        for (int i = 0; i < 4; ++i) std::swap(all[std::size_t(i)], all[std::size_t(i) + rng.next() % std::uint64_t(real - i)]);
        std::sort(all.begin(), all.begin() + 4);
        for (int i = 0; i < 4; ++i) s[i] = all[std::size_t(i)];
      }
      for (int q = 0; q < 4; ++q) {
        sel[std::size_t(w * 4 + q)] = s[q];
        if (venom) set_packed(c.columns.data() + g * l.colloc_row_bytes, w * 4 + q, l.colloc_bits, unsigned(s[q]));
      }
    }
    for (std::int64_t r = g * G; r < std::min(n, (g + 1) * G); ++r)
      for (std::int64_t w = 0; w < l.windows; ++w) {
        const int* pr = pairs[rng.next() % 6];
        for (int j = 0; j < 2; ++j) {
          set_packed(c.indices.data() + r * l.index_row_bytes, w * 2 + j, 2, unsigned(pr[j]));
          const std::int64_t col = w * M + sel[std::size_t(w * 4 + pr[j])];
          store_from_float(t, c.values.data(), std::size_t(r * l.value_cols + w * 2 + j), col < k ? rng.value() : 0.0f);
        }
      }
  }
  return c;
}

/// VNM_SMALL_VARIANTS="4,6,7": time only these variants (besides the plan's choice); unset: all.
bool variant_wanted(int v) {
  const char* e = std::getenv("VNM_SMALL_VARIANTS");
  if (e == nullptr || *e == 0) return true;
  const std::string list = std::string(",") + e + ",";
  return list.find("," + std::to_string(v) + ",") != std::string::npos;
}

/// VNM_SMALL_SPLITS="9:1,9:4,11:4": extra rows "sparsenm:vnm_gemv/v<V>s<S>" of variant V with
/// k splits forced to S (variants listed here run even when VNM_SMALL_VARIANTS leaves them out).
std::vector<std::pair<int, int>> forced_splits_any() {
  std::vector<std::pair<int, int>> out;
  const char* e = std::getenv("VNM_SMALL_SPLITS");
  if (e == nullptr) return out;
  std::string s = e;
  std::size_t a = 0;
  while (a < s.size()) {
    std::size_t b = s.find(',', a);
    if (b == std::string::npos) b = s.size();
    const std::string one = s.substr(a, b - a);
    const std::size_t c = one.find(':');
    if (c != std::string::npos) out.push_back({std::stoi(one.substr(0, c)), std::stoi(one.substr(c + 1))});
    a = b + 1;
  }
  return out;
}

/// VNM_SMALL_ONCE=1 (for ncu): every vnm_gemv row runs once (the correctness run) and is not
/// timed or emitted; cuBLAS / cuSPARSELt are skipped.
bool once_only() {
  const char* e = std::getenv("VNM_SMALL_ONCE");
  return e != nullptr && std::string(e) == "1";
}

std::vector<int> forced_splits_v7() {
  std::vector<int> out;
  const char* e = std::getenv("VNM_SMALL_V7_SPLITS");
  if (e == nullptr) return out;
  std::string s = e;
  std::size_t a = 0;
  while (a < s.size()) {
    std::size_t b = s.find(',', a);
    if (b == std::string::npos) b = s.size();
    if (b > a) out.push_back(std::stoi(s.substr(a, b - a)));
    a = b + 1;
  }
  return out;
}

double condensed_bytes(const CondensedMatrix& c) {
  return double(c.values.size() + c.indices.size() + c.columns.size());
}

struct Timing {
  double median = 0, min = 0;
};

/// Times run(rep) with CUDA events around each call: warm-up, then reps; median and min in ms.
template <class F>
Timing time_runs(F&& run, int warmup, int reps, cudaStream_t s) {
  for (int i = 0; i < warmup; ++i) run(i);
  std::vector<cudaEvent_t> ev(static_cast<std::size_t>(2 * reps));
  for (auto& e : ev) SPARSENM_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    SPARSENM_CUDA_CHECK(cudaEventRecord(ev[std::size_t(2 * i)], s));
    run(warmup + i);
    SPARSENM_CUDA_CHECK(cudaEventRecord(ev[std::size_t(2 * i + 1)], s));
  }
  SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> ms(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    float t = 0;
    SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&t, ev[std::size_t(2 * i)], ev[std::size_t(2 * i + 1)]));
    ms[std::size_t(i)] = t;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

int copies_for(double bytes, double l2) {
  return int(std::clamp(std::ceil(2.5 * l2 / std::max(1.0, bytes)), 1.0, 256.0));
}

double rel_err_of(const DeviceBuffer& y, std::int64_t m, std::int64_t n, const std::vector<double>& ref) {
  DenseMatrix host(DType::f16, m, n);
  y.download(host.data(), host.size_bytes());
  return relative_error(host.view(), ref);
}

#if defined(SPARSENM_WITH_CUSPARSELT)
#define VNM_LT_CHECK(call)                                                                                \
  do {                                                                                                   \
    cusparseStatus_t s_ = (call);                                                                        \
    if (s_ != CUSPARSE_STATUS_SUCCESS) throw std::runtime_error(std::string(#call) + " failed: " + std::to_string(int(s_))); \
  } while (0)

/// cuSPARSELt C[n x mp] = op(A) * B, A = W^T stored column-major k x n (= W row-major), opA = T.
struct LtPeer {
  cusparseLtHandle_t handle{};
  cusparseLtMatDescriptor_t a{}, b{}, c{};
  cusparseLtMatmulDescriptor_t mm{};
  cusparseLtMatmulAlgSelection_t alg{};
  cusparseLtMatmulPlan_t plan{};
  std::vector<DeviceBuffer> compressed;
  DeviceBuffer work;
  bool valid = false;

  LtPeer(const DeviceBuffer& dense_w, std::int64_t n, std::int64_t k, std::int64_t mp, int copies, const void* dx, void* dy,
         cudaStream_t s) {
    VNM_LT_CHECK(cusparseLtInit(&handle));
    VNM_LT_CHECK(cusparseLtStructuredDescriptorInit(&handle, &a, k, n, k, 16, CUDA_R_16F, CUSPARSE_ORDER_COL,
                                                    CUSPARSELT_SPARSITY_50_PERCENT));
    VNM_LT_CHECK(cusparseLtDenseDescriptorInit(&handle, &b, k, mp, k, 16, CUDA_R_16F, CUSPARSE_ORDER_COL));
    VNM_LT_CHECK(cusparseLtDenseDescriptorInit(&handle, &c, n, mp, n, 16, CUDA_R_16F, CUSPARSE_ORDER_COL));
    VNM_LT_CHECK(cusparseLtMatmulDescriptorInit(&handle, &mm, CUSPARSE_OPERATION_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                &a, &b, &c, &c, CUSPARSE_COMPUTE_32F));
    VNM_LT_CHECK(cusparseLtMatmulAlgSelectionInit(&handle, &alg, &mm, CUSPARSELT_MATMUL_ALG_DEFAULT));
    VNM_LT_CHECK(cusparseLtMatmulPlanInit(&handle, &plan, &mm, &alg));
    DeviceBuffer dvalid(sizeof(int));
    // Zeroed first: SpMMAPruneCheck writes the flag only when it finds a violation (as in
    // src/cuda/cusparselt/lt_gemm.cpp); an unzeroed buffer printed "PruneCheck failed!" at random.
    SPARSENM_CUDA_CHECK(cudaMemsetAsync(dvalid.get(), 0, sizeof(int), s));
    VNM_LT_CHECK(cusparseLtSpMMAPruneCheck(&handle, &mm, dense_w.get(), dvalid.as<int>(), s));
    int bad = 1;
    SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
    dvalid.download(&bad, sizeof(int));
    valid = bad == 0;
    std::size_t csize = 0, cbuf = 0;
    VNM_LT_CHECK(cusparseLtSpMMACompressedSize(&handle, &plan, &csize, &cbuf));
    DeviceBuffer tmp(std::max<std::size_t>(cbuf, 16));
    for (int i = 0; i < copies; ++i) {
      compressed.emplace_back(csize);
      VNM_LT_CHECK(cusparseLtSpMMACompress(&handle, &plan, dense_w.get(), compressed.back().get(), tmp.get(), s));
    }
    std::size_t ws = 0;
    VNM_LT_CHECK(cusparseLtMatmulGetWorkspace(&handle, &plan, &ws));
    work = DeviceBuffer(std::max<std::size_t>(ws, 16));
    const float alpha = 1.0f, beta = 0.0f;
    VNM_LT_CHECK(cusparseLtMatmulSearch(&handle, &plan, &alpha, compressed[0].get(), dx, &beta, dy, dy, work.get(), &s, 1));
    SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  void run(int copy, const void* dx, void* dy, cudaStream_t s) {
    const float alpha = 1.0f, beta = 0.0f;
    VNM_LT_CHECK(cusparseLtMatmul(&handle, &plan, &alpha, compressed[std::size_t(copy) % compressed.size()].get(), dx, &beta,
                                  dy, dy, work.get(), &s, 1));
  }
  std::size_t compressed_bytes() const { return compressed.empty() ? 0 : compressed[0].size(); }
  ~LtPeer() {
    cusparseLtMatmulPlanDestroy(&plan);
    cusparseLtMatmulAlgSelectionDestroy(&alg);
    cusparseLtMatDescriptorDestroy(&a);
    cusparseLtMatDescriptorDestroy(&b);
    cusparseLtMatDescriptorDestroy(&c);
    cusparseLtDestroy(&handle);
  }
};
#endif

void run_suite(Context& ctx) {
  const Options& o = ctx.options;
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = o.shapes;
  if (shapes.empty())
    shapes = o.quick ? std::vector<std::pair<std::int64_t, std::int64_t>>{{4096, 4096}, {11008, 4096}, {28672, 8192}, {12288, 12288}}
                     : std::vector<std::pair<std::int64_t, std::int64_t>>{{4096, 4096}, {11008, 4096}, {4096, 11008}, {28672, 8192},
                                                                         {12288, 12288}, {4096, 1024}, {1024, 4096}};
  std::vector<std::string> patterns = o.patterns;
  if (patterns.empty())
    patterns = o.quick ? std::vector<std::string>{"128:2:8", "128:2:16", "2:4/hw"}
                       : std::vector<std::string>{"64:2:8", "128:2:8", "128:2:16", "128:2:32", "2:4/hw"};
  std::vector<std::int64_t> ms = o.ms.empty() ? std::vector<std::int64_t>{1, 8, 32} : o.ms;
  std::vector<std::string> dtypes = o.dtypes.empty() ? std::vector<std::string>{"f16"} : o.dtypes;
  const int warmup = std::max(20, o.warmup), reps = std::max(100, o.reps);

  int dev = 0, l2 = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  cudaStream_t s;
  SPARSENM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t blas;
  VNM_CUBLAS_CHECK(cublasCreate(&blas));
  VNM_CUBLAS_CHECK(cublasSetStream(blas, s));

  std::uint64_t seed = o.seed * 1000 + 17;
  for (const std::string& dts : dtypes) {
    const DType dt = parse_dtype(dts, "dtypes");
    if (dt != DType::f16) continue;  // cuBLAS / cuSPARSELt peers here are fp16 only
    for (const std::string& ps : patterns) {
      const Pattern p = Pattern::parse(ps, "patterns");
      if (p.kind != Granularity::venom && p.kind != Granularity::hw24) continue;
      for (auto [n, k] : shapes) {
        CondensedMatrix w = random_weight(p, dt, n, k, ++seed);
        DenseMatrix dense = expand(w);
        const double dense_bytes = double(dense.size_bytes()), ours_bytes = condensed_bytes(w);
        const int dense_copies = copies_for(dense_bytes, l2);
        // ours: packed + uploaded once per matrix (copies for the L2 rotation), shared by every m and variant
        std::vector<std::shared_ptr<const cuda::vnm_small::DeviceWeight>> ours_w;
        ours_w.push_back(cuda::vnm_small::upload(w));
        for (int i = 1; i < copies_for(ours_bytes, l2); ++i) {
          auto cp = std::make_shared<cuda::vnm_small::DeviceWeight>();
          cp->layout = ours_w[0]->layout;
          cp->dtype = ours_w[0]->dtype;
          cp->records = DeviceBuffer(ours_w[0]->records.size());
          SPARSENM_CUDA_CHECK(cudaMemcpy(cp->records.get(), ours_w[0]->records.get(), cp->records.size(), cudaMemcpyDeviceToDevice));
          if (ours_w[0]->sel.size()) {
            cp->sel = DeviceBuffer(ours_w[0]->sel.size());
            SPARSENM_CUDA_CHECK(cudaMemcpy(cp->sel.get(), ours_w[0]->sel.get(), cp->sel.size(), cudaMemcpyDeviceToDevice));
          }
          ours_w.push_back(std::move(cp));
        }
        std::vector<DeviceBuffer> dw;
        for (int i = 0; i < dense_copies; ++i) {
          dw.emplace_back(dense.size_bytes());
          dw.back().upload(dense.data(), dense.size_bytes());
        }
        for (std::int64_t m : ms) {
          DenseMatrix x = random_matrix(dt, m, k, ++seed);
          const std::vector<double> ref = reference_matmul_f64(x.view(), w);
          DeviceBuffer dx(x.size_bytes()), dy(std::size_t(m * n) * 2);
          dx.upload(x.data(), x.size_bytes());
          const double io = double(x.size_bytes() + std::size_t(m * n) * 2);
          const double flops = 2.0 * double(m) * double(n) * double(k);
          auto row = [&](const std::string& impl, Timing t, double err, double bytes, const std::string& note) {
            Row r;
            r.suite = "vnm_small";
            r.op = m == 1 ? "spmv" : "spmm";
            r.format = std::string(to_string(p.kind));
            r.pattern = p.str();
            r.dtype = "fp16";
            r.m = m, r.n = n, r.k = k;
            r.impl = impl;
            r.ms_median = t.median, r.ms_min = t.min, r.reps = reps;
            r.rel_err = err, r.bytes = bytes, r.flops = flops;
            r.note = note;
            ctx.emit(r);
          };
          // ---- ours: the plan's choice, then every variant (layout.hpp kVariants), or only those
          // listed in VNM_SMALL_VARIANTS (comma separated; device time is scarce) ----
          // Variant 7 also runs once per forced split count in VNM_SMALL_V7_SPLITS ("2,4,8"; rows
          // "sparsenm:vnm_gemv/v7s<N>"): the split rule is the knob left to measure.
          std::vector<std::pair<int, int>> runs;  // (variant, forced splits)
          for (int variant = -1; variant < vnm_small::kVariants; ++variant) {
            if (variant >= 0 && (!variant_wanted(variant) || !vnm_small::variant_built(variant))) continue;  // 17 / 18: removed
            runs.push_back({variant, 0});
            if (variant == vnm_small::kStreamVariant)
              for (int fs : forced_splits_v7()) runs.push_back({variant, fs});
          }
          for (auto vs : forced_splits_any()) runs.push_back(vs);
          for (auto [variant, forced] : runs) {
            MatmulDesc desc;
            desc.m = m;
            desc.x_dtype = dt;
            desc.y_dtype = DType::f16;
            cuda::vnm_small::Options vo;
            vo.variant = variant;
            vo.force_splits = forced;
            const int copies = int(ours_w.size());
            std::vector<std::unique_ptr<detail::KernelInstance>> inst;
            for (int i = 0; i < copies; ++i) inst.push_back(cuda::vnm_small::create(ours_w[std::size_t(i)], w, desc, vo));
            const auto g = cuda::vnm_small::geometry_for(w, desc, vo);
            SPARSENM_CUDA_CHECK(cudaMemsetAsync(dy.get(), 0xFF, dy.size(), s));
            inst[0]->run(dx.get(), dy.get(), s);
            SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
            const double err = rel_err_of(dy, m, n, ref);
            if (once_only()) {
              std::fprintf(stderr, "once: variant %d forced splits %d: %s, rel err %.3g\n", variant, forced,
                           inst[0]->describe().c_str(), err);
              continue;
            }
            Timing t = time_runs([&](int i) { inst[std::size_t(i) % inst.size()]->run(dx.get(), dy.get(), s); }, warmup, reps, s);
            row(variant < 0 ? std::string("sparsenm:vnm_gemv")
                            : "sparsenm:vnm_gemv/v" + std::to_string(variant) + (forced ? "s" + std::to_string(forced) : ""),
                t, err,
                ours_bytes + io,
                "variant " + std::to_string(g.variant) + "; L2 rotated over " + std::to_string(copies) + " weight copies; splits " +
                    std::to_string(g.splits) + ", warps " + std::to_string(g.warps) + ", chunk " + std::to_string(g.chunk_pairs) +
                    " pairs x " + std::to_string(g.buffers) + "; " + inst[0]->describe());
          }
          // ---- the plan: its automatic choice over every candidate (cuda:vnm_gemv, the EW kernels
          // on the element 2:M form of a V:2:M weight, cuBLAS, ...; row "sparsenm:plan=<kernel>", the
          // reason in the note), then each kernel forced from VNM_SMALL_FORCE (comma list, e.g.
          // "cuda:ew_spmv_sk"; row "sparsenm:<kernel>"). VNM_SMALL_PLAN=0 skips the automatic row.
          // Bytes are the V:2:M condensed bytes either way (the bar is stated on them). L2: one plan
          // per weight copy, the copies after the first forced to the first one's kernel. ----
          {
            std::vector<std::string> kernels;
            const char* env_plan = std::getenv("VNM_SMALL_PLAN");
            if (!(env_plan && std::string(env_plan) == "0")) kernels.push_back("");
            if (const char* f = std::getenv("VNM_SMALL_FORCE"))
              for (std::string rest = f; !rest.empty();) {
                const auto comma = rest.find(',');
                if (std::string one = rest.substr(0, comma); !one.empty()) kernels.push_back(one);
                rest = comma == std::string::npos ? std::string() : rest.substr(comma + 1);
              }
            for (const std::string& kernel : kernels) {
              MatmulDesc desc;
              desc.m = m;
              desc.x_dtype = dt;
              desc.y_dtype = DType::f16;
              desc.backend = Backend::cuda;
              desc.kernel = kernel;
              try {
                std::vector<Plan> plans;
                plans.push_back(Plan::create(w, desc));
                desc.kernel = plans[0].kernel();
                const int copies = copies_for(ours_bytes, l2);
                for (int i = 1; i < copies; ++i) plans.push_back(Plan::create(w, desc));
                SPARSENM_CUDA_CHECK(cudaMemsetAsync(dy.get(), 0xFF, dy.size(), s));
                plans[0].run(dx.get(), dy.get(), s);
                SPARSENM_CUDA_CHECK(cudaGetLastError());
                SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
                const double err = rel_err_of(dy, m, n, ref);
                Timing t = time_runs([&](int i) { plans[std::size_t(i) % plans.size()].run(dx.get(), dy.get(), s); }, warmup, reps, s);
                const std::string name = plans[0].kernel().rfind("cuda:", 0) == 0 ? plans[0].kernel().substr(5) : plans[0].kernel();
                row(kernel.empty() ? "sparsenm:plan=" + name : "sparsenm:" + name, t, err, ours_bytes + io,
                    (kernel.empty() ? "automatic choice: " : "forced: ") + plans[0].reason() + "; L2 rotated over " +
                        std::to_string(plans.size()) + " plans");
              } catch (const Error& e) {
                std::fprintf(stderr, "vnm_small %s %lldx%lld m=%lld: plan %s skipped: %s\n", p.str().c_str(), (long long)n,
                             (long long)k, (long long)m, kernel.empty() ? "(automatic)" : kernel.c_str(), e.what());
              }
            }
          }
          if (once_only()) continue;  // ncu: our kernels only
          // ---- cuBLAS (dense expansion): C[n x m] = W * X^T, column-major views ----
          {
            const float alpha = 1.0f, beta = 0.0f;
            auto gemm = [&](int i) {
              VNM_CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), int(k), &alpha,
                                            dw[std::size_t(i) % dw.size()].get(), CUDA_R_16F, int(k), dx.get(), CUDA_R_16F,
                                            int(k), &beta, dy.get(), CUDA_R_16F, int(n), CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT));
            };
            SPARSENM_CUDA_CHECK(cudaMemsetAsync(dy.get(), 0xFF, dy.size(), s));
            gemm(0);
            SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
            const double err = rel_err_of(dy, m, n, ref);
            Timing t = time_runs(gemm, warmup, reps, s);
            row("cublas", t, err, dense_bytes + io, "dense expansion; L2 rotated over " + std::to_string(dw.size()) + " copies");
          }
#if defined(SPARSENM_WITH_CUSPARSELT)
          if (p.kind == Granularity::hw24) {
            try {
              const std::int64_t mp = (m + 7) / 8 * 8;  // cuSPARSELt wants 8-aligned dims for fp16
              DeviceBuffer dxp(std::size_t(mp * k) * 2), dyp(std::size_t(mp * n) * 2);
              SPARSENM_CUDA_CHECK(cudaMemset(dxp.get(), 0, dxp.size()));
              SPARSENM_CUDA_CHECK(cudaMemcpy(dxp.get(), dx.get(), dx.size(), cudaMemcpyDeviceToDevice));
              const int copies = copies_for(dense_bytes * 0.5625, l2);
              LtPeer lt(dw[0], n, k, mp, copies, dxp.get(), dyp.get(), s);
              SPARSENM_CUDA_CHECK(cudaMemsetAsync(dyp.get(), 0xFF, dyp.size(), s));
              lt.run(0, dxp.get(), dyp.get(), s);
              SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
              const double err = rel_err_of(dyp, m, n, ref);  // first m rows of [mp][n]
              Timing t = time_runs([&](int i) { lt.run(i, dxp.get(), dyp.get(), s); }, warmup, reps, s);
              row("cusparselt", t, err, double(lt.compressed_bytes()) + io,
                  std::string(lt.valid ? "" : "PruneCheck failed! ") + (mp != m ? "m padded to " + std::to_string(mp) + "; " : "") +
                      "L2 rotated over " + std::to_string(copies) + " copies");
            } catch (const std::exception& e) {
              std::fprintf(stderr, "cusparselt %s %lldx%lld m=%lld: %s\n", p.str().c_str(), (long long)n, (long long)k,
                           (long long)m, e.what());
            }
          }
#endif
        }
      }
    }
  }
  // ---- GPU pruning: 4096 x 11008 fp16 -> 128:2:16, host in / host out ----
  {
    DenseMatrix w = random_matrix(DType::f16, 4096, 11008, 4242);
    const Pattern p = Pattern::venom(128, 16);
    (void)prune_venom_cuda(w.view(), p);  // warm-up (context, allocator)
    std::vector<double> ms_v;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      CondensedMatrix c = prune_venom_cuda(w.view(), p);
      ms_v.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms_v.begin(), ms_v.end());
    Row r;
    r.suite = "vnm_small";
    r.op = "prune";
    r.format = "vnm";
    r.pattern = p.str();
    r.dtype = "fp16";
    r.m = 0, r.n = 4096, r.k = 11008;
    r.impl = "sparsenm:prune_venom_cuda";
    r.ms_median = ms_v[2], r.ms_min = ms_v[0], r.reps = 5;
    r.bytes = double(w.size_bytes());
    r.note = "host in / host out wall time incl. H2D + D2H (steady_clock), after one warm-up call";
    ctx.emit(r);
  }
  cublasDestroy(blas);
  cudaStreamDestroy(s);
}

}  // namespace

Suite vnm_small_suite() {
  return Suite{"vnm_small", "small-m (1..32) V:2:M and 2:4 products: cuda:vnm_gemv vs cuBLAS dense and cuSPARSELt; GPU pruning time",
               true, run_suite};
}

}  // namespace sparsenm::bench
