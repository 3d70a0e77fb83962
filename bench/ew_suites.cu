// sparsenm bench — suites "spmv" (m = 1, 2, 4, 8) and "spmm" (any m) for element N:M weights.
//
// Per case (pattern, dtype, n, k) one fresh random pruned weight (random positions and values in
// [-1, 1), never zeros) is built in the canonical condensed format; the peers run on the same
// matrix: cuBLAS on its dense expansion (fp16/bf16: tensor cores, fp32 accumulate; fp32: plain
// SGEMM, math mode without TF32) and cuSPARSE CSR (SpMV for m = 1, SpMM otherwise). Per m a fresh
// X. Every implementation first runs once on a poisoned Y (0xFF bytes) and is checked against an
// fp64 oracle on 64 sampled rows (all m): rel_err = relative Frobenius error over those rows;
// an unwritten (NaN) sample is reported as rel_err = NaN. Timing: CUDA events around each single
// run, warm-up runs first, then `reps` runs; median and min. L2: before every run (warm-up and
// timed) a read-only kernel streams a buffer of 2 x L2 bytes, so no operand is L2-resident
// when a run starts (as for a layer's weight in decode); this is outside the events.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>
#include <omp.h>

#include <chrono>

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
#include "cuda/l2_flush.cuh"
#include "sparsenm/cuda.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/prune.hpp"

namespace sparsenm::bench {
namespace {

using Shape = std::pair<std::int64_t, std::int64_t>;

const std::vector<Shape> kShapes = {{4096, 4096}, {11008, 4096}, {4096, 11008}, {28672, 8192},
                                    {12288, 12288}, {4096, 1024}, {1024, 4096}};
const std::vector<std::string> kEwPatterns = {"2:4", "4:8", "2:8", "1:8", "2:16", "1:16", "3:32", "8:32", "16:32"};

#define CUBLAS_OK(x)                                                                                      \
  do {                                                                                                    \
    cublasStatus_t st_ = (x);                                                                             \
    if (st_ != CUBLAS_STATUS_SUCCESS) throw CudaError(std::string(#x) + " failed: status " + std::to_string(int(st_))); \
  } while (0)
#define CUSPARSE_OK(x)                                                                                    \
  do {                                                                                                    \
    cusparseStatus_t st_ = (x);                                                                           \
    if (st_ != CUSPARSE_STATUS_SUCCESS) throw CudaError(std::string(#x) + " failed: " + cusparseGetErrorString(st_)); \
  } while (0)

inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Random element N:M weight, straight in the canonical format; OpenMP over rows.
CondensedMatrix random_weight(const Pattern& p, std::int64_t n, std::int64_t k, DType t, std::uint64_t seed) {
  CondensedMatrix c = CondensedMatrix::allocate(FormatLayout::of(p, n, k), t);
  const auto& l = c.layout;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < n; ++r) {
    std::uint64_t s = mix(seed ^ (std::uint64_t(r) * 0x2545f4914f6cdd1dull));
    int pos[256];
    for (std::int64_t w = 0; w < l.windows; ++w) {
      const int valid = int(std::min<std::int64_t>(p.m, k - w * p.m));
      for (int i = 0; i < p.m; ++i) pos[i] = i;
      const int take = std::min(valid, p.n);
      for (int i = 0; i < take; ++i) {  // partial Fisher-Yates among the valid columns
        s = mix(s);
        const int j = i + int(s % std::uint64_t(valid - i));
        std::swap(pos[i], pos[j]);
      }
      int chosen[256];
      for (int i = 0; i < take; ++i) chosen[i] = pos[i];
      for (int i = take; i < p.n; ++i) chosen[i] = valid + (i - take);  // padding slots
      std::sort(chosen, chosen + p.n);
      for (int j = 0; j < p.n; ++j) {
        const std::int64_t slot = w * p.n + j;
        set_packed(c.indices.data() + r * l.index_row_bytes, slot, l.index_bits, unsigned(chosen[j]));
        float v = 0.0f;
        if (chosen[j] < valid) {
          s = mix(s);
          v = float(int(s % 2001u) - 1000) / 1000.0f;
          if (v == 0.0f) v = 0.5f;
        }
        store_from_float(t, c.values.data(), std::size_t(r * l.value_cols + slot), v);
      }
    }
  }
  return c;
}

std::int64_t column(const CondensedMatrix& w, std::int64_t r, std::int64_t s) {
  const auto& l = w.layout;
  return (s / l.pattern.n) * l.pattern.m + get_packed(w.indices.data() + r * l.index_row_bytes, s, l.index_bits);
}

DenseMatrix dense_of(const CondensedMatrix& w) {
  DenseMatrix d(w.dtype, w.rows(), w.cols());
  const std::size_t es = dtype_size(w.dtype);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < w.rows(); ++r)
    for (std::int64_t s = 0; s < w.layout.value_cols; ++s) {
      const std::int64_t c = column(w, r, s);
      if (c < w.cols())
        std::memcpy(static_cast<std::byte*>(d.data()) + std::size_t(r * w.cols() + c) * es,
                    w.values.data() + std::size_t(r * w.layout.value_cols + s) * es, es);
    }
  return d;
}

struct Csr {
  std::vector<int> rowptr, col;
  std::vector<std::byte> val;
  std::int64_t nnz = 0;
};

Csr csr_of(const CondensedMatrix& w) {
  Csr c;
  const std::size_t es = dtype_size(w.dtype);
  c.rowptr.assign(std::size_t(w.rows() + 1), 0);
  for (std::int64_t r = 0; r < w.rows(); ++r) {
    int cnt = 0;
    for (std::int64_t s = 0; s < w.layout.value_cols; ++s) cnt += column(w, r, s) < w.cols();
    c.rowptr[std::size_t(r + 1)] = c.rowptr[std::size_t(r)] + cnt;
  }
  c.nnz = c.rowptr.back();
  c.col.resize(std::size_t(c.nnz));
  c.val.resize(std::size_t(c.nnz) * es);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < w.rows(); ++r) {
    std::int64_t o = c.rowptr[std::size_t(r)];
    for (std::int64_t s = 0; s < w.layout.value_cols; ++s) {
      const std::int64_t col = column(w, r, s);
      if (col >= w.cols()) continue;
      c.col[std::size_t(o)] = int(col);
      std::memcpy(c.val.data() + std::size_t(o) * es, w.values.data() + std::size_t(r * w.layout.value_cols + s) * es, es);
      ++o;
    }
  }
  return c;
}

/// fp64 Y for the sampled rows: ref[i * rows.size() + q] = sum_s w[rows[q]][s] * x[i][col].
std::vector<double> oracle(const CondensedMatrix& w, const DenseMatrix& x, const std::vector<std::int64_t>& rows) {
  std::vector<double> ref(std::size_t(x.rows()) * rows.size(), 0.0);
  for (std::size_t q = 0; q < rows.size(); ++q)
    for (std::int64_t s = 0; s < w.layout.value_cols; ++s) {
      const std::int64_t c = column(w, rows[q], s);
      if (c >= w.cols()) continue;
      const double v = w.value(rows[q], s);
      for (std::int64_t i = 0; i < x.rows(); ++i) ref[std::size_t(i) * rows.size() + q] += v * double(x.at(i, c));
    }
  return ref;
}

__global__ void empty_kernel() {}

class Timer {
 public:
  Timer() = default;
  /// The same read-flush as Plan::create's timer (src/cuda/l2_flush.cuh), on the legacy stream.
  void flush() { flush_(nullptr); }
  /// {median, min} ms of fn over reps single runs (events around each; L2 flushed before each).
  std::pair<double, double> time(const std::function<void()>& fn, int warmup, int reps) {
    for (int i = 0; i < warmup; ++i) {
      flush();
      fn();
    }
    std::vector<cudaEvent_t> ev(std::size_t(2 * reps));
    for (auto& e : ev) SPARSENM_CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < reps; ++i) {
      flush();
      SPARSENM_CUDA_CHECK(cudaEventRecord(ev[std::size_t(2 * i)]));
      fn();
      SPARSENM_CUDA_CHECK(cudaEventRecord(ev[std::size_t(2 * i + 1)]));
    }
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(static_cast<std::size_t>(reps));
    for (int i = 0; i < reps; ++i)
      SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms[std::size_t(i)], ev[std::size_t(2 * i)], ev[std::size_t(2 * i + 1)]));
    for (auto& e : ev) cudaEventDestroy(e);
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms.front()};
  }
  /// The same method around an empty kernel: what launch + events cost on their own.
  std::pair<double, double> empty(int warmup, int reps) {
    return time([] { empty_kernel<<<1, 32>>>(); }, warmup, reps);
  }
  std::string note() const { return "L2 flushed before each run (read of " + std::to_string(flush_.bytes() >> 20) + " MiB = 2x L2)"; }

 private:
  cuda::L2Flush flush_;
};

cudaDataType cuda_type(DType t) { return t == DType::f32 ? CUDA_R_32F : t == DType::f16 ? CUDA_R_16F : CUDA_R_16BF; }

struct Libs {
  cublasHandle_t blas = nullptr;
  cusparseHandle_t sparse = nullptr;
  Libs() {
    CUBLAS_OK(cublasCreate(&blas));
    CUBLAS_OK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));  // fp32: no TF32
    CUSPARSE_OK(cusparseCreate(&sparse));
  }
  ~Libs() {
    cublasDestroy(blas);
    cusparseDestroy(sparse);
  }
};

/// SPARSENM_BENCH_KERNELS="cuda:a,cuda:b": time only these forced kernels, in this order (the automatic
/// choice, cuBLAS and cuSPARSE always run); unset or empty: every forced kernel of the suite.
/// SPARSENM_BENCH_NO_CUSPARSE=1: leave out the cuSPARSE CSR peer (spmv / spmm suites).
/// SPARSENM_BENCH_NO_AUTO=1: leave out the automatic choice (its race builds every candidate: device
/// calls that only compare forced kernels with cuBLAS save that time).
bool bench_kernel_selected(const std::string& kernel) {
  if (kernel.empty()) {
    const char* no_auto = std::getenv("SPARSENM_BENCH_NO_AUTO");
    return no_auto == nullptr || std::string(no_auto) != "1";
  }
  const char* env = std::getenv("SPARSENM_BENCH_KERNELS");
  if (env == nullptr || *env == 0) return true;
  const std::string list = std::string(",") + env + ",";
  return list.find("," + kernel + ",") != std::string::npos;
}

/// The forced kernels in the order SPARSENM_BENCH_KERNELS names them (so that a run can interleave
/// controls and variants, or reverse them in a repeat), the suite's own order when it is unset; the
/// automatic choice ("") stays last.
std::vector<std::string> bench_kernel_order(const std::vector<std::string>& ours) {
  const char* env = std::getenv("SPARSENM_BENCH_KERNELS");
  if (env == nullptr || *env == 0) return ours;
  const std::string list = std::string(",") + env + ",";
  std::vector<std::string> v = ours;
  auto pos = [&](const std::string& k) {
    const auto at = k.empty() ? std::string::npos : list.find("," + k + ",");
    return at == std::string::npos ? list.size() : at;
  };
  std::stable_sort(v.begin(), v.end(), [&](const std::string& x, const std::string& y) { return pos(x) < pos(y); });
  return v;
}

struct CaseSpec {
  std::string suite;
  Pattern pattern;
  DType dtype;
  std::int64_t n, k;
  std::vector<std::int64_t> ms;
  std::vector<std::string> ours;  ///< forced kernels ("cuda:ew_spmv"), "" = the plan's automatic choice
};

void run_case(Context& ctx, Timer& timer, Libs& libs, const CaseSpec& cs, std::uint64_t seed) {
  const Options& o = ctx.options;
  const DType t = cs.dtype;
  const std::size_t es = dtype_size(t);
  const std::int64_t n = cs.n, k = cs.k;
  const CondensedMatrix w = random_weight(cs.pattern, n, k, t, seed);
  const DenseMatrix wd = dense_of(w);
  const Csr csr = csr_of(w);
  cuda::DeviceBuffer d_w(wd.size_bytes()), d_rowptr(csr.rowptr.size() * 4), d_col(csr.col.size() * 4 + 4),
      d_val(csr.val.size() + 4);
  d_w.upload(wd.data(), wd.size_bytes());
  d_rowptr.upload(csr.rowptr.data(), csr.rowptr.size() * 4);
  d_col.upload(csr.col.data(), csr.col.size() * 4);
  d_val.upload(csr.val.data(), csr.val.size());
  cusparseSpMatDescr_t A = nullptr;
  CUSPARSE_OK(cusparseCreateCsr(&A, n, k, csr.nnz, d_rowptr.get(), d_col.get(), d_val.get(), CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, cuda_type(t)));
  std::vector<std::int64_t> rows;
  const std::int64_t samples = std::min<std::int64_t>(n, 64);
  for (std::int64_t q = 0; q < samples; ++q) rows.push_back(q * n / samples + (q * 7919) % std::max<std::int64_t>(1, n / samples));
  const double wbytes = double(w.values.size() + w.indices.size());

  for (std::int64_t m : cs.ms) {
    const DenseMatrix x = random_matrix(t, m, k, seed * 31 + std::uint64_t(m));
    cuda::DeviceBuffer d_x(x.size_bytes()), d_y(std::size_t(m * n) * es);
    d_x.upload(x.data(), x.size_bytes());
    const std::vector<double> ref = oracle(w, x, rows);
    const double xy = double(x.size_bytes()) + double(m * n) * double(es);
    const std::string pat = cs.pattern.str();

    auto check = [&](const std::function<void()>& fn) -> double {
      SPARSENM_CUDA_CHECK(cudaMemset(d_y.get(), 0xFF, d_y.size()));
      fn();
      SPARSENM_CUDA_CHECK(cudaGetLastError());
      SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<std::byte> y(d_y.size());
      d_y.download(y.data(), y.size());
      double num = 0, den = 0;
      for (std::int64_t i = 0; i < m; ++i)
        for (std::size_t q = 0; q < rows.size(); ++q) {
          const double g = load_as_float(t, y.data(), std::size_t(i * n + rows[q]));
          const double e = ref[std::size_t(i) * rows.size() + q];
          if (std::isnan(g)) return NAN;
          num += (g - e) * (g - e);
          den += e * e;
        }
      return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    };
    auto emit = [&](const std::string& impl, const std::function<void()>& fn, double bytes, const std::string& note) {
      const double err = check(fn);
      const auto [med, mn] = timer.time(fn, o.warmup, o.reps);
      Row r;
      r.suite = cs.suite;
      r.op = cs.suite;
      r.format = "ew";
      r.pattern = pat;
      r.dtype = std::string(to_string(t));
      r.m = m, r.n = n, r.k = k;
      r.impl = impl;
      r.ms_median = med, r.ms_min = mn, r.reps = o.reps;
      r.rel_err = err;
      r.bytes = bytes;
      r.flops = 2.0 * double(m) * double(n) * double(k);
      r.note = note.empty() ? timer.note() : note + "; " + timer.note();
      ctx.emit(r);
    };

    // ours
    for (const std::string& kernel : bench_kernel_order(cs.ours)) {
      if (!bench_kernel_selected(kernel)) continue;
      MatmulDesc desc;
      desc.m = m;
      desc.x_dtype = t;
      desc.y_dtype = t;
      desc.backend = Backend::cuda;
      desc.kernel = kernel;
      try {
        const Plan plan = Plan::create(w, desc);
        const std::string name = plan.kernel().rfind("cuda:", 0) == 0 ? plan.kernel().substr(5) : plan.kernel();
        emit("sparsenm:" + name, [&] { plan.run(d_x.get(), d_y.get(), nullptr); }, wbytes + xy,
             kernel.empty() ? "automatic choice: " + plan.reason() : "");
      } catch (const Error& e) {
        std::printf("  %s %s m=%lld: %s skipped: %s\n", pat.c_str(), std::string(to_string(t)).c_str(), (long long)m,
                    kernel.empty() ? "automatic plan" : kernel.c_str(), e.what());
      }
    }
    // cuBLAS on the dense expansion: Y^T[n x m] = W (op T of a k x n column-major) * X^T.
    {
      const float one = 1.0f, zero = 0.0f;
      const cudaDataType ct = cuda_type(t);
      emit("cublas",
           [&] {
             CUBLAS_OK(cublasGemmEx(libs.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), int(k), &one, d_w.get(), ct,
                                    int(k), d_x.get(), ct, int(k), &zero, d_y.get(), ct, int(n), CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
           },
           double(wd.size_bytes()) + xy, t == DType::f32 ? "SGEMM without TF32" : "tensor cores, fp32 accumulate");
    }
    // cuSPARSE CSR on the same matrix (SPARSENM_BENCH_NO_CUSPARSE=1 leaves it out: at m = 8 it takes ~25 ms a
    // run on the bar shapes, ~2 s of a device call per case).
    const char* no_csr = std::getenv("SPARSENM_BENCH_NO_CUSPARSE");
    if (no_csr != nullptr && std::string(no_csr) == "1") continue;
    try {
      const float one = 1.0f, zero = 0.0f;
      const double cbytes = double(csr.nnz) * double(es + 4) + double(n + 1) * 4;
      cuda::DeviceBuffer work;
      if (m == 1) {
        cusparseDnVecDescr_t vx, vy;
        CUSPARSE_OK(cusparseCreateDnVec(&vx, k, d_x.get(), cuda_type(t)));
        CUSPARSE_OK(cusparseCreateDnVec(&vy, n, d_y.get(), cuda_type(t)));
        std::size_t wsz = 0;
        CUSPARSE_OK(cusparseSpMV_bufferSize(libs.sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy,
                                            CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &wsz));
        work = cuda::DeviceBuffer(wsz + 16);
        emit("cusparse_csr",
             [&] {
               CUSPARSE_OK(cusparseSpMV(libs.sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy,
                                        CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, work.get()));
             },
             cbytes + xy, "SpMV, 32-bit indices");
        cusparseDestroyDnVec(vx);
        cusparseDestroyDnVec(vy);
      } else {
        cusparseDnMatDescr_t B, C;
        CUSPARSE_OK(cusparseCreateDnMat(&B, k, m, k, d_x.get(), cuda_type(t), CUSPARSE_ORDER_COL));
        CUSPARSE_OK(cusparseCreateDnMat(&C, n, m, n, d_y.get(), cuda_type(t), CUSPARSE_ORDER_COL));
        std::size_t wsz = 0;
        CUSPARSE_OK(cusparseSpMM_bufferSize(libs.sparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                            CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, B, &zero, C, CUDA_R_32F,
                                            CUSPARSE_SPMM_ALG_DEFAULT, &wsz));
        work = cuda::DeviceBuffer(wsz + 16);
        emit("cusparse_csr",
             [&] {
               CUSPARSE_OK(cusparseSpMM(libs.sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                        &one, A, B, &zero, C, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, work.get()));
             },
             cbytes + xy, "SpMM, 32-bit indices");
        cusparseDestroyDnMat(B);
        cusparseDestroyDnMat(C);
      }
    } catch (const CudaError& e) {
      std::printf("  cusparse_csr %s %s m=%lld skipped: %s\n", pat.c_str(), std::string(to_string(t)).c_str(),
                  (long long)m, e.what());
    }
  }
  cusparseDestroySpMat(A);
}

template <class T>
std::vector<T> pick(const std::vector<T>& override_, const std::vector<T>& dflt) {
  return override_.empty() ? dflt : override_;
}

std::vector<DType> dtypes_of(const std::vector<std::string>& names) {
  std::vector<DType> v;
  for (const auto& s : names) v.push_back(parse_dtype(s, "--dtypes"));
  return v;
}

struct Grid {
  std::vector<Shape> shapes;
  std::vector<std::string> patterns;
  std::vector<DType> dtypes;
  std::vector<std::int64_t> ms;
};

void run_grids(Context& ctx, const std::string& suite, const std::vector<Grid>& grids,
               const std::vector<std::string>& ours) {
  Timer timer;
  Libs libs;
  {  // the launch floor under the same method (no implementation can be faster than this)
    const auto [med, mn] = timer.empty(ctx.options.warmup, ctx.options.reps);
    Row r;
    r.suite = suite;
    r.op = "launch";
    r.impl = "empty_kernel";
    r.ms_median = med, r.ms_min = mn, r.reps = ctx.options.reps;
    r.note = "empty kernel <<<1, 32>>> timed like every implementation; " + timer.note();
    ctx.emit(r);
    std::printf("  launch floor (empty kernel, same method): %.4f ms median, %.4f ms min\n", med, mn);
  }
  std::uint64_t seed = ctx.options.seed * 1000003ull;
  for (const Grid& g : grids)
    for (const Shape& s : g.shapes)
      for (const std::string& p : g.patterns)
        for (DType t : g.dtypes) {
          CaseSpec cs{suite, Pattern::parse(p, "--patterns"), t, s.first, s.second, g.ms, ours};
          if (cs.pattern.kind != Granularity::element && cs.pattern.kind != Granularity::hw24) continue;
          std::printf("  case %s %s n=%lld k=%lld\n", p.c_str(), std::string(to_string(t)).c_str(),
                      (long long)s.first, (long long)s.second);
          std::fflush(stdout);
          run_case(ctx, timer, libs, cs, ++seed);
        }
}

/// The spmv / spmm suites: `quick_grids` for --quick without overrides; otherwise one grid of
/// the default shapes, patterns, dtypes (f16, bf16, f32) and `default_ms`, each replaced by its
/// override when given.
void run_ew_suite(Context& ctx, const std::string& suite, std::vector<Grid> quick_grids,
                  const std::vector<std::int64_t>& default_ms, const std::vector<std::string>& ours) {
  const Options& o = ctx.options;
  std::vector<Grid> grids;
  if (o.quick && o.shapes.empty() && o.patterns.empty() && o.dtypes.empty() && o.ms.empty()) {
    grids = std::move(quick_grids);
  } else {
    grids.push_back({pick(o.shapes, kShapes), pick(o.patterns, kEwPatterns),
                     o.dtypes.empty() ? std::vector<DType>{DType::f16, DType::bf16, DType::f32} : dtypes_of(o.dtypes),
                     pick(o.ms, default_ms)});
  }
  run_grids(ctx, suite, grids, ours);
}

/// prune_cuda_device timed like the kernels (the dense weight on the device, L2 flushed before
/// each run); the result is compared byte for byte with the CPU prune() (rel_err 0 when equal,
/// 1 otherwise); the CPU prune's own time is reported beside it (one run, wall clock).
void run_prune_case(Context& ctx, Timer& timer, const Pattern& p, DType t, std::int64_t n, std::int64_t k,
                    std::uint64_t seed) {
  const DenseMatrix w = random_matrix(t, n, k, seed);
  const FormatLayout l = FormatLayout::of(p, n, k);
  cuda::DeviceBuffer dw(w.size_bytes()), dv(l.value_bytes(t)), di(l.index_bytes());
  dw.upload(w.data(), w.size_bytes());
  auto fn = [&] { prune_cuda_device(dw.get(), t, n, k, k, p, dv.get(), di.as<std::uint8_t>(), nullptr); };
  fn();
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  const CondensedMatrix cpu = prune(w.view(), p);
  const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::byte> v(l.value_bytes(t));
  std::vector<std::uint8_t> ix(l.index_bytes());
  dv.download(v.data(), v.size());
  di.download(ix.data(), ix.size());
  const bool same = ix == cpu.indices && std::memcmp(v.data(), cpu.values.data(), v.size()) == 0;
  const auto [med, mn] = timer.time(fn, ctx.options.warmup, ctx.options.reps);
  for (int which = 0; which < 2; ++which) {
    Row r;
    r.suite = "ew_prune";
    r.op = "prune";
    r.format = "ew";
    r.pattern = p.str();
    r.dtype = std::string(to_string(t));
    r.n = n, r.k = k;
    r.impl = which == 0 ? "sparsenm:prune_cuda" : "cpu_prune";  // the CPU prune as the peer row
    r.ms_median = which == 0 ? med : cpu_ms;
    r.ms_min = which == 0 ? mn : cpu_ms;
    r.reps = which == 0 ? ctx.options.reps : 1;
    r.rel_err = which == 0 ? (same ? 0.0 : 1.0) : 0.0;
    r.bytes = double(w.size_bytes() + l.value_bytes(t) + l.index_bytes());
    r.note = which == 0 ? (same ? "bit-exact with prune(); " : "DIFFERS from prune(); ") + timer.note()
                        : "CPU prune(), one run, wall clock, OpenMP";
    ctx.emit(r);
  }
}

}  // namespace

Suite ew_prune_suite() {
  Suite s;
  s.name = "ew_prune";
  s.description = "GPU magnitude pruning + condensing (prune_cuda, element N:M) vs the CPU prune()";
  s.needs_gpu = true;
  s.run = [](Context& ctx) {
    const Options& o = ctx.options;
    Timer timer;
    std::uint64_t seed = o.seed * 7919ull;
    const auto shapes = pick(o.shapes, o.quick ? std::vector<Shape>{{28672, 8192}} : kShapes);
    const auto pats = pick(o.patterns, std::vector<std::string>{"2:8", "2:4", "8:32", "1:16"});
    const auto dts = o.dtypes.empty() ? std::vector<DType>{DType::f16} : dtypes_of(o.dtypes);
    for (const auto& sh : shapes)
      for (const auto& ps : pats)
        for (DType t : dts) {
          const Pattern p = Pattern::parse(ps, "--patterns");
          if (p.kind != Granularity::element && p.kind != Granularity::hw24) continue;
          run_prune_case(ctx, timer, p, t, sh.first, sh.second, ++seed);
        }
  };
  return s;
}

Suite spmv_suite() {
  Suite s;
  s.name = "spmv";
  s.description =
      "EW N:M SpMV / small batch (m = 1, 2, 4, 8): cuda:ew_spmv (CUDA cores), cuda:ew_spmv_sk / _sk4 / _skr / _skv / _skw / _skg / _skrg / _skwg (m = 1), cuda:ew_spmv_sk_mb / _mb2 (m = 2..8), cuda:ew_spmv_tc / _bal / _prmt / _ring / _tc_sk / _tc_sp / _tc_sk24 / _tc_sk24r2 / _tc_sk16r4 / _tc_sks / _tc_sk16r4b / _tc_sk16r4s / _tc_sk24r2s / _tc_sk16r4c "
      "(tensor cores, f16/bf16) and the plan's automatic choice vs cuBLAS dense and cuSPARSE CSR";
  s.needs_gpu = true;
  s.run = [](Context& ctx) {
    // --quick: the issue-3 bar cases (fp16, m = 1, 2, 4, 8 at 2:8, 1:8, 2:16, 1:16 on the four
    // shapes), bf16 at m = 8, and the other tensor-core patterns (2:4, 4:8) at m = 8.
    run_ew_suite(ctx, "spmv",
                 {{{{28672, 8192}, {12288, 12288}, {11008, 4096}, {4096, 11008}},
                   {"2:8", "1:8", "2:16", "1:16"},
                   {DType::f16},
                   {8, 4, 2, 1}},
                  {{{28672, 8192}, {12288, 12288}}, {"2:8", "1:8", "2:16"}, {DType::bf16}, {8}},
                  {{{28672, 8192}}, {"2:4", "4:8"}, {DType::f16}, {8}}},
                 {1, 2, 4, 8},
                 {"cuda:ew_spmv", "cuda:ew_spmv_sk", "cuda:ew_spmv_sk4", "cuda:ew_spmv_skr", "cuda:ew_spmv_skv", "cuda:ew_spmv_skw", "cuda:ew_spmv_skg", "cuda:ew_spmv_skrg", "cuda:ew_spmv_skwg", "cuda:ew_spmv_sk_mb", "cuda:ew_spmv_sk_mb2", "cuda:ew_spmv_tc", "cuda:ew_spmv_tc_bal", "cuda:ew_spmv_tc_prmt",
                  "cuda:ew_spmv_tc_ring", "cuda:ew_spmv_tc_sk", "cuda:ew_spmv_tc_sp", "cuda:ew_spmv_tc_sk24",
                  "cuda:ew_spmv_tc_sk24r2", "cuda:ew_spmv_tc_sk16r4", "cuda:ew_spmv_tc_sks",
                  "cuda:ew_spmv_tc_sk16r4b", "cuda:ew_spmv_tc_sk16r4s", "cuda:ew_spmv_tc_sk24r2s",
                  "cuda:ew_spmv_tc_sk16r4c", ""});
  };
  return s;
}

Suite spmm_suite() {
  Suite s;
  s.name = "spmm";
  s.description =
      "EW N:M SpMM (any m): the plan's automatic choice, cuda:ew_spmm and (f32) cuda:ew_spmm_async / _async16 / _async_x4 vs cuBLAS "
      "and cuSPARSE";
  s.needs_gpu = true;
  s.run = [](Context& ctx) {
    run_ew_suite(ctx, "spmm",
                 {{{{4096, 4096}, {11008, 4096}}, {"2:8", "8:32", "3:32", "1:8", "4:32"}, {DType::f32}, {1024, 4096}},
                  {{{11008, 4096}}, {"2:8", "8:32", "3:32"}, {DType::f16}, {32, 1024}}},
                 {1, 8, 32, 128, 512, 2048, 8192}, {"cuda:ew_spmm", "cuda:ew_spmm_async", "cuda:ew_spmm_async16", "cuda:ew_spmm_async_x4", ""});
  };
  return s;
}

}  // namespace sparsenm::bench
