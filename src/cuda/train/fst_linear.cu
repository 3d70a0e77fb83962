// sparsenm — the FST linear layer (include/sparsenm/fst.hpp, docs/FST.md): state machine, buffer
// ownership, and the per-step launch sequence over the training kernels (train.hpp), the repack
// kernels (fst_kernels.cu) and the sparse tensor-core GEMM (src/cuda/sptc, called through its
// internal launcher on device pointers, no Plan) or, per GEMM, cuSPARSELt (src/cuda/cusparselt/
// lt_gemm.hpp, the wrapper the plan backend uses too), chosen once at construction.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/cusparselt/lt_gemm.hpp"
#include "cuda/sptc/sptc.hpp"
#include "cuda/train/fst_kernels.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/fst.hpp"
#include "sparsenm/train.hpp"

namespace sparsenm::train {
namespace {

namespace cs = sparsenm::cuda::sptc;
using cuda::DeviceBuffer;
using detail::PackGeom;
using detail::pack_geom;

[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, int line) {
  throw CudaError(std::string(call) + " failed: " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) +
                  ") at fst_linear.cu:" + std::to_string(line));
}
#define FST_CUBLAS_CHECK(call)                                                    \
  do {                                                                            \
    cublasStatus_t fst_s_ = (call);                                               \
    if (fst_s_ != CUBLAS_STATUS_SUCCESS) throw_cublas(fst_s_, #call, __LINE__);   \
  } while (0)

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Backend decisions of automatic layers, per process: a model builds many layers of one shape
/// (48 identical c_fc layers in GPT-2 1.5B), and timing each costs seconds. Key: device, dtype,
/// in, out, max_tokens, bias, whether the schedule has a sparse step, and the three requests.
using BackendKey = std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, bool, bool, int, int, int>;
std::mutex& backend_cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<BackendKey, FstBackendReport>& backend_cache() {
  static std::map<BackendKey, FstBackendReport> c;
  return c;
}

void require(bool ok, const char* argument, const std::string& rule) {
  if (!ok) throw InvalidArgument(argument, rule);
}

DeviceBuffer zeroed(std::size_t bytes) {
  DeviceBuffer b(bytes ? bytes : 16);
  SPARSENM_CUDA_CHECK(cudaMemset(b.get(), 0, b.size()));
  return b;
}

/// Median time (ms) of `fn` enqueued on `s`: 3 warm-up calls, then 10 timed one by one with events.
double time_ms(const std::function<void()>& fn, cudaStream_t s) {
  for (int i = 0; i < 3; ++i) fn();
  cudaEvent_t a = nullptr, b = nullptr;
  SPARSENM_CUDA_CHECK(cudaEventCreate(&a));
  if (cudaEventCreate(&b) != cudaSuccess) {
    cudaEventDestroy(a);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
  }
  std::vector<float> ms;
  try {
    for (int i = 0; i < 10; ++i) {
      SPARSENM_CUDA_CHECK(cudaEventRecord(a, s));
      fn();
      SPARSENM_CUDA_CHECK(cudaEventRecord(b, s));
      SPARSENM_CUDA_CHECK(cudaEventSynchronize(b));
      float t = 0.f;
      SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
  } catch (...) {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    throw;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return 0.5 * (double(ms[ms.size() / 2 - 1]) + double(ms[ms.size() / 2]));
}

std::string fmt_ms(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", ms);
  return b;
}

/// A cuSPARSELt choice must be at least this much faster than ours (noise-level ties keep ours).
constexpr double kLtMargin = 0.01;

std::atomic<detail::FstPhaseSink*> g_phase_sink{nullptr};
std::atomic<int> g_tile_policy{int(detail::FstTilePolicy::heuristic)};
std::atomic<int> g_tile_force{-1};
std::atomic<bool> g_fork_backward{false};  // measured a wash at 5517176 (docs/PERF-train.md, session 8)

void mark(const char* phase, cudaStream_t s) {
  if (detail::FstPhaseSink* k = g_phase_sink.load(std::memory_order_relaxed)) k->mark(phase, s);
}

/// Timed tile choices per process (FstTilePolicy::timed): device, dtype, in, out, max_tokens.
using TileKey = std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t>;
std::mutex& tile_cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<TileKey, std::pair<std::array<int, 3>, std::string>>& tile_cache() {
  static std::map<TileKey, std::pair<std::array<int, 3>, std::string>> c;
  return c;
}

}  // namespace

namespace detail {
void set_fst_phase_sink(FstPhaseSink* sink) noexcept { g_phase_sink.store(sink); }
FstPhaseSink* fst_phase_sink() noexcept { return g_phase_sink.load(); }
void set_fst_tile_policy(FstTilePolicy p) noexcept { g_tile_policy.store(int(p)); }
FstTilePolicy fst_tile_policy() noexcept { return FstTilePolicy(g_tile_policy.load()); }
void set_fst_tile_force(int tile) noexcept { g_tile_force.store(tile); }
int fst_tile_force() noexcept { return g_tile_force.load(); }
void set_fst_fork_backward(bool on) noexcept { g_fork_backward.store(on); }
bool fst_fork_backward() noexcept { return g_fork_backward.load(); }
std::string fst_timed_tiles(DType dtype, std::int64_t in, std::int64_t out, std::int64_t max_tokens) {
  int dev = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(tile_cache_mutex());
  const auto it = tile_cache().find(TileKey{dev, int(dtype), in, out, max_tokens});
  return it == tile_cache().end() ? std::string() : it->second.second;
}
}  // namespace detail

struct FstLinear::Impl {
  FstConfig cfg;
  std::int64_t in = 0, out = 0, T = 0;
  std::size_t esz = 2;
  PackGeom gw, gwt, gg;  // S(W) [out][in], S(W)^T [in][out], MVUE(dZ^T) of the last backward
  int cc = 0, sms = 132;

  DeviceBuffer w, b, dw, db;
  DeviceBuffer mask[2];
  DeviceBuffer w_vals, w_meta, w_idx, w_hw;     // packed S(W), hw24 indices, hw24 values when !direct
  DeviceBuffer wt_vals, wt_meta, wt_idx, wt_hw;
  DeviceBuffer g_vals, g_meta, g_idx, g_hw;     // MVUE operand (sized for max_tokens; g_hw lazily)
  DeviceBuffer xt, dwt, x_pad, dz_pad, partial;  // xt, dwt: only for the transposing dW path
  DeviceBuffer flip;  // unsigned long long

  std::int64_t step = 0, prepared = -1, calls = 0;
  bool has_mask = false;
  int cur = 0;
  bool flip_pending = false, flip_valid = false;
  std::int64_t flip_value = -1;
  cudaEvent_t flip_event = nullptr;
  // backward fork (session 8): the weight-gradient chain on `aux`, joined back before backward returns
  cudaStream_t aux = nullptr;
  cudaEvent_t ev_fork = nullptr, ev_join = nullptr;
  cublasHandle_t cublas = nullptr;
  DeviceBuffer cublas_ws, cublas_ws_aux;  // the dense dW GEMM on `aux` has its own workspace

  // GEMM backends (choose_backends at construction). lt_f / lt_d / lt_w: forward, dX, dW on cuSPARSELt.
  FstBackendReport report;
  bool lt_f = false, lt_d = false, lt_w = false;
  std::unique_ptr<cuda::lt::SparseGemm> gem_f, gem_d, gem_w;
  DeviceBuffer sw_dense;  // S(W) [out][in] dense, compressed by gem_f / gem_d each step
  DeviceBuffer g_dense;   // MVUE(dZ^T) [out][T] dense, compressed by gem_w each backward
  bool packed_fresh = true;   // packed S(W), S(W)^T hold this step's W (false: both weight GEMMs on cuSPARSELt)
  bool grad_packed = true;    // packed MVUE operand is the last backward's
  bool sw_dense_ok = false, grad_dense_ok = false;
  // wgmma tile per GEMM (forward, dX, dW) for calls with tokens == max_tokens (-1: heuristic);
  // set at construction under FstTilePolicy::timed (tune_tiles)
  std::array<int, 3> tuned{-1, -1, -1};
  std::string tile_report;

  explicit Impl(const FstConfig& c) : cfg(c) {
    require(c.dtype == DType::f16 || c.dtype == DType::bf16, "dtype",
            "must be f16 or bf16 (the sparse tensor cores' input types) (got " + std::string(to_string(c.dtype)) + ")");
    require(c.in_features >= 1 && c.in_features < (std::int64_t(1) << 31), "in_features", "must be in [1, 2^31)");
    require(c.out_features >= 1 && c.out_features < (std::int64_t(1) << 31), "out_features", "must be in [1, 2^31)");
    require(c.max_tokens >= 1 && c.max_tokens <= 65535LL * 128, "max_tokens", "must be in [1, 65535 * 128]");
    require(std::isfinite(c.decay) && c.decay >= 0.f, "decay", "must be finite and >= 0");
    c.schedule.validate();
    in = c.in_features;
    out = c.out_features;
    T = c.max_tokens;
    esz = dtype_size(c.dtype);
    validate_backends();
    gw = pack_geom(out, in);
    gwt = pack_geom(in, out);
    gg = pack_geom(out, T);

    int dev = 0, major = 0, minor = 0;
    SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
    SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cc = major * 10 + minor;

    const std::size_t wbytes = std::size_t(out * in) * esz;
    w = DeviceBuffer(wbytes);
    dw = DeviceBuffer(wbytes);
    if (c.bias) {
      b = DeviceBuffer(std::size_t(out) * esz);
      db = DeviceBuffer(std::size_t(out) * esz);
      partial = DeviceBuffer(std::size_t((T + detail::kColsumChunk - 1) / detail::kColsumChunk * out) * 4);
    }
    const std::size_t mwords = std::size_t(mask24_words(out, in)) * 2;
    mask[0] = zeroed(mwords);
    mask[1] = zeroed(mwords);
    auto packed = [&](const PackGeom& g, DeviceBuffer& vals, DeviceBuffer& meta, DeviceBuffer& idx, DeviceBuffer* hw) {
      vals = zeroed(std::size_t(g.rows_pad * g.pack_cols) * esz);
      meta = zeroed(std::size_t(g.meta_words) * 4);
      idx = zeroed(std::size_t(g.rows * g.irb));
      if (hw && !g.direct()) *hw = zeroed(std::size_t(g.rows * g.hw_cols) * esz);
    };
    packed(gw, w_vals, w_meta, w_idx, &w_hw);
    packed(gwt, wt_vals, wt_meta, wt_idx, &wt_hw);
    packed(gg, g_vals, g_meta, g_idx, nullptr);
    if (!fused_dw_possible()) ensure_transpose_buffers();  // X^T and dW^T for the transposing dW path
    flip = zeroed(sizeof(unsigned long long));
    SPARSENM_CUDA_CHECK(cudaEventCreateWithFlags(&flip_event, cudaEventDisableTiming));
    try {
      SPARSENM_CUDA_CHECK(cudaStreamCreateWithFlags(&aux, cudaStreamNonBlocking));
      SPARSENM_CUDA_CHECK(cudaEventCreateWithFlags(&ev_fork, cudaEventDisableTiming));
      SPARSENM_CUDA_CHECK(cudaEventCreateWithFlags(&ev_join, cudaEventDisableTiming));
      choose_backends();
      tune_tiles();
    } catch (...) {
      release();  // the destructor does not run for a throwing constructor
      throw;
    }
  }
  ~Impl() { release(); }
  void release() noexcept {
    if (flip_event) cudaEventDestroy(flip_event);
    if (ev_fork) cudaEventDestroy(ev_fork);
    if (ev_join) cudaEventDestroy(ev_join);
    if (aux) cudaStreamDestroy(aux);
    if (cublas) cublasDestroy(cublas);
    flip_event = ev_fork = ev_join = nullptr;
    aux = nullptr;
    cublas = nullptr;
  }

  FstPhase phase() const { return cfg.schedule.phase(step); }
  std::uint64_t seed_for(std::int64_t call) const {
    return splitmix64(cfg.seed ^ splitmix64(std::uint64_t(call)));
  }

  void check_tokens(std::int64_t tokens) const {
    require(tokens >= 1 && tokens <= T, "tokens",
            "must be in [1, max_tokens = " + std::to_string(T) + "] (got " + std::to_string(tokens) + ")");
  }
  void check_prepared(const char* what) const {
    if (prepared != step)
      throw InvalidArgument(what, "begin_step() must run before forward/backward of optimizer step " + std::to_string(step));
  }

  // ---- sparse tensor-core GEMM: y [m][g.rows] = x [m][g.k] (ld ldx) . A^T ----
  cs::WgTile choose_tile(std::int64_t n, std::int64_t m) const {
    auto tiles = [&](std::int64_t bm, std::int64_t bn) { return double(((n + bm - 1) / bm) * ((m + bn - 1) / bn)); };
    if (tiles(128, 256) >= 1.4 * sms) return cs::WgTile::m128n256;
    if (tiles(128, 128) >= 0.75 * sms) return cs::WgTile::m128n128;
    return cs::WgTile::m64n128;
  }
  /// which: 0 forward, 1 dX, 2 dW; at_T: the call has tokens == max_tokens; tile >= 0: this tile.
  void sparse_gemm(const PackGeom& g, const DeviceBuffer& vals, const DeviceBuffer& meta, const void* x, std::int64_t m,
                   std::int64_t ldx, void* y, cudaStream_t s, int which, bool at_T, bool trans = false,
                   int tile_override = -1) const {
    cs::DeviceA a;
    a.values = vals.get();
    a.meta = meta.as<std::uint32_t>();
    a.rows = g.rows;
    a.rows_pad = g.rows_pad;
    a.k_pad = g.k_pad;
    cs::Problem p;
    p.in = cfg.dtype;
    p.out = cfg.dtype;
    p.x = x;
    p.y = y;
    p.m = m;
    p.n = g.rows;
    p.k = g.k;
    p.ldx = ldx;
    p.x_trans = trans;  // x is x^T [k][ldx] and y is written as y^T [n][m] (sm_90 only)
    p.y_trans = trans;
    if (cc == 90) {
      int t = tile_override;
      if (t < 0) t = detail::fst_tile_force();
      if (t < 0 && at_T) t = tuned[std::size_t(which)];
      const cs::WgTile tile = t >= 0 ? cs::WgTile(t) : choose_tile(g.rows, m);
      const CUtensorMap map = cs::make_values_map(a, cfg.dtype, tile);
      cs::run_sptc24_wgmma(a, map, tile, p, s);
    } else if (cc >= 80) {
      cs::run_sptc24_mma(a, p, s);
    } else {
      throw Unsupported("FstLinear: the sparse phase needs an sm_80+ device (compute capability " + std::to_string(cc) + ")");
    }
  }
  /// Weight gradient straight from X and into dW (no transposes): the sm_90 kernel reads X
  /// [tokens][in] as the transposed operand X'^T and writes Y^T = dW; needs 16-byte rows of X.
  bool fused_dw_possible() const { return cc == 90 && in % 8 == 0; }
  bool fused_dw(const void* x) const { return fused_dw_possible() && aligned16(x); }
  void ensure_transpose_buffers() {
    if (!xt.get()) xt = DeviceBuffer(std::size_t(in * detail::fst_round_up(T, 8)) * esz);
    if (!dwt.get()) dwt = DeviceBuffer(std::size_t(in * out) * esz);
  }
  /// x [m][k] as the GEMM's X operand: itself when k % 8 == 0 and 16-byte aligned, else a copy
  /// with rows padded to 8 (zeros) in `pad` (allocated on first use).
  const void* gemm_x(const void* x, std::int64_t m, std::int64_t k, DeviceBuffer& pad, std::int64_t& ldx, cudaStream_t s) {
    if (k % 8 == 0 && aligned16(x)) {
      ldx = k;
      return x;
    }
    ldx = detail::fst_round_up(k, 8);
    const std::size_t need = std::size_t(T * ldx) * esz;
    if (pad.size() < need) pad = DeviceBuffer(need);
    cs::pad_x(cfg.dtype, x, m, k, pad.get(), ldx, s);
    return pad.get();
  }

  // ---- dense (cuBLAS) GEMMs, column-major views of the row-major operands ----
  void ensure_cublas() {
    if (cublas) return;
    cublas_ws = DeviceBuffer(std::size_t(cc >= 90 ? 32 : 4) << 20);
    cublas_ws_aux = DeviceBuffer(std::size_t(cc >= 90 ? 32 : 4) << 20);
    FST_CUBLAS_CHECK(cublasCreate(&cublas));
  }
  /// on_aux: the call runs on the fork stream `aux` (its own workspace, so it may overlap a call on s)
  void dense_gemm(cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                  std::int64_t lda, const void* bm, std::int64_t ldb, void* c, std::int64_t ldc, cudaStream_t s,
                  bool on_aux = false) {
    ensure_cublas();
    require(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "tokens/features", "dense GEMM dimensions must fit in int");
    FST_CUBLAS_CHECK(cublasSetStream(cublas, s));
    const DeviceBuffer& ws = on_aux ? cublas_ws_aux : cublas_ws;
    FST_CUBLAS_CHECK(cublasSetWorkspace(cublas, ws.get(), ws.size()));
    const cudaDataType_t t = cfg.dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
    const float alpha = 1.f, beta = 0.f;
    FST_CUBLAS_CHECK(cublasGemmEx(cublas, ta, tb, int(m), int(n), int(k), &alpha, a, t, int(lda), bm, t, int(ldb), &beta, c, t,
                                  int(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // ---- the step ----
  Compressed24View view(DeviceBuffer& vals, DeviceBuffer& hw, DeviceBuffer& idx, const PackGeom& g) {
    return {g.direct() ? vals.get() : hw.get(), idx.as<std::uint8_t>()};
  }
  /// Value repacks of S(W), S(W)^T after the train kernels wrote hw24 (only when in / out have tails).
  void pack_w_values(cudaStream_t s) {
    if (!gw.direct()) detail::fst_repack_values(w_hw.get(), gw, w_vals.get(), s);
    if (!gwt.direct()) detail::fst_repack_values(wt_hw.get(), gwt, wt_vals.get(), s);
  }
  /// Our operands of this step's W under the current mask (the metadata depends on the mask only).
  void apply_packed(cudaStream_t s) {
    apply_mask24(cfg.dtype, w.get(), out, in, mask[cur].as<std::uint16_t>(), view(w_vals, w_hw, w_idx, gw),
                 view(wt_vals, wt_hw, wt_idx, gwt), nullptr, s);
    pack_w_values(s);
    packed_fresh = true;
  }
  /// cuSPARSELt operands of this step's W: dense S(W) = W . mask, compressed per weight GEMM.
  void prep_lt_w(bool f, bool d, cudaStream_t s) {
    if (!f && !d) return;
    detail::fst_mask_dense(w.get(), mask[cur].as<std::uint16_t>(), out, in, sw_dense.get(), s);
    if (f) gem_f->compress(sw_dense.get(), s);
    if (d) gem_d->compress(sw_dense.get(), s);
  }
  /// Whether a call runs on its cuSPARSELt GEMM: chosen, planned token count, 16-byte operands.
  bool lt_call(bool chosen, std::int64_t tokens, std::initializer_list<const void*> ptrs) const {
    if (!chosen || tokens != T) return false;
    for (const void* p : ptrs)
      if (!aligned16(p)) return false;
    return true;
  }

  FstStepInfo begin_step(cudaStream_t s) {
    FstStepInfo info;
    info.step = step;
    info.phase = phase();
    sw_dense_ok = false;
    if (info.phase == FstPhase::sparse) {
      if (cfg.schedule.refreshes_mask(step, has_mask)) {
        const int next = has_mask ? 1 - cur : cur;
        transposable_mask24(cfg.dtype, w.get(), out, in, mask[next].as<std::uint16_t>(), view(w_vals, w_hw, w_idx, gw),
                            view(wt_vals, wt_hw, wt_idx, gwt), s);
        if (has_mask) {
          flip_count(mask[next].as<std::uint16_t>(), mask[cur].as<std::uint16_t>(), out, in,
                     flip.as<unsigned long long>(), s);
          SPARSENM_CUDA_CHECK(cudaEventRecord(flip_event, s));
          flip_pending = true;
          info.flip_counted = true;
        }
        cur = next;
        has_mask = true;
        info.mask_refreshed = true;
        pack_w_values(s);
        // The hw24 positions (hence the metadata) are a function of the mask alone (apply_mask24
        // stores the kept positions of the mask), so the metadata only changes at a refresh.
        detail::fst_repack_meta(w_idx.as<std::uint8_t>(), gw, w_meta.as<std::uint32_t>(), s);
        detail::fst_repack_meta(wt_idx.as<std::uint8_t>(), gwt, wt_meta.as<std::uint32_t>(), s);
        packed_fresh = true;
      } else if (!(lt_f && lt_d)) {
        apply_packed(s);
      } else {
        packed_fresh = false;  // both weight GEMMs on cuSPARSELt: applied lazily if a call needs ours
      }
      prep_lt_w(lt_f, lt_d, s);
      sw_dense_ok = lt_f || lt_d;
      mark(info.mask_refreshed ? "refresh" : "apply", s);
    }
    prepared = step;
    return info;
  }

  // One GEMM each, on the given backend (the step and the construction-time timing run these).
  void gemm_forward(bool use_lt, const void* x, std::int64_t tokens, void* z, cudaStream_t s) {
    if (use_lt) {
      gem_f->run(x, z, s);
      return;
    }
    if (!packed_fresh) apply_packed(s);
    std::int64_t ldx = 0;
    const void* xx = gemm_x(x, tokens, in, x_pad, ldx, s);
    sparse_gemm(gw, w_vals, w_meta, xx, tokens, ldx, z, s, 0, tokens == T);
  }
  // dX [tokens][in] = dZ [tokens][out] . (S(W)^T [in][out])^T
  void gemm_dx(bool use_lt, const void* dz, std::int64_t tokens, void* dx, cudaStream_t s) {
    if (use_lt) {
      gem_d->run(dz, dx, s);
      return;
    }
    if (!packed_fresh) apply_packed(s);
    std::int64_t ldx = 0;
    const void* xx = gemm_x(dz, tokens, out, dz_pad, ldx, s);
    sparse_gemm(gwt, wt_vals, wt_meta, xx, tokens, ldx, dx, s, 1, tokens == T);
  }
  /// cuSPARSELt's MVUE operand: hw24 staged in the packed-values buffer (pitch tokens / 2, within
  /// its size; our path rewrites that buffer before its next use), expanded to the dense
  /// MVUE(dZ^T) [out][tokens], compressed.
  void lt_dw_operand(const void* dz, std::int64_t tokens, std::uint64_t seed, cudaStream_t s) {
    mvue24(cfg.dtype, dz, tokens, out, GradLayout::token_major, seed, {g_vals.get(), g_idx.as<std::uint8_t>()}, s);
    detail::fst_expand24(g_vals.get(), g_idx.as<std::uint8_t>(), out, tokens, g_dense.get(), s);
    gem_w->compress(g_dense.get(), s);
  }
  /// Our MVUE operand: MVUE(dZ^T) [out][tokens] as hw24, then the tensor-core repacks (gg set).
  void grad_operand(const void* dz, std::int64_t tokens, std::uint64_t seed, cudaStream_t s) {
    void* hv = g_vals.get();
    if (!gg.direct()) {
      const std::size_t need = std::size_t(gg.rows * gg.hw_cols) * esz;
      if (g_hw.size() < need) g_hw = DeviceBuffer(need);
      hv = g_hw.get();
    }
    mvue24(cfg.dtype, dz, tokens, out, GradLayout::token_major, seed, {hv, g_idx.as<std::uint8_t>()}, s);
    if (!gg.direct()) detail::fst_repack_values(g_hw.get(), gg, g_vals.get(), s);
    detail::fst_repack_meta(g_idx.as<std::uint8_t>(), gg, g_meta.as<std::uint32_t>(), s);
  }
  // MVUE(dZ^T) [out][tokens] (2:4 along tokens) and dW [out][in] = MVUE(dZ^T) . X
  void gemm_dw(bool use_lt, const void* x, const void* dz, std::int64_t tokens, std::uint64_t seed, cudaStream_t s) {
    gg = pack_geom(out, tokens);
    if (use_lt) {
      lt_dw_operand(dz, tokens, seed, s);
      mark("mvue", s);
      gem_w->run(x, dw.get(), s);
      grad_packed = false;
      grad_dense_ok = true;
      return;
    }
    grad_operand(dz, tokens, seed, s);
    mark("mvue", s);
    if (fused_dw(x)) {
      // dW [out][in] = (X^T . MVUE(dZ^T)^T)^T: X [tokens][in] is X'^T of the m = in GEMM
      sparse_gemm(gg, g_vals, g_meta, x, in, in, dw.get(), s, 2, tokens == T, true);
    } else {
      // X^T [in][ldt] (zero columns tokens..ldt-1), dW^T [in][out] = X^T . MVUE(dZ^T)^T, dW = (dW^T)^T
      const std::int64_t ldt = detail::fst_round_up(tokens, 8);
      ensure_transpose_buffers();  // allocated at construction unless only an unaligned X gets here
      detail::fst_transpose16(x, tokens, in, xt.get(), ldt, s);
      sparse_gemm(gg, g_vals, g_meta, xt.get(), in, ldt, dwt.get(), s, 2, tokens == T);
      detail::fst_transpose16(dwt.get(), in, out, dw.get(), in, s);
    }
    grad_packed = true;
    grad_dense_ok = false;
  }

  void forward(const void* x, std::int64_t tokens, void* z, cudaStream_t s) {
    check_tokens(tokens);
    require(x != nullptr, "x", "must be a device pointer (got null)");
    require(z != nullptr, "z", "must be a device pointer (got null)");
    check_prepared("forward");
    if (phase() == FstPhase::sparse) {
      gemm_forward(lt_call(lt_f, tokens, {x, z}), x, tokens, z, s);
    } else {
      // Z^T (out x tokens, col-major) = W (col-major in x out)^T . X^T (col-major in x tokens)
      dense_gemm(CUBLAS_OP_T, CUBLAS_OP_N, out, tokens, in, w.get(), in, x, in, z, out, s);
    }
    mark("fwd_gemm", s);
    if (cfg.bias) {
      detail::fst_add_bias(cfg.dtype, z, tokens, out, b.get(), s);
      mark("bias_add", s);
    }
  }

  void backward(const void* x, const void* dz, std::int64_t tokens, void* dx, cudaStream_t s) {
    check_tokens(tokens);
    require(x != nullptr, "x", "must be a device pointer (got null)");
    require(dz != nullptr, "dz", "must be a device pointer (got null)");
    check_prepared("backward");
    const bool sparse = phase() == FstPhase::sparse;
    const bool lt_dx = sparse && dx && lt_call(lt_d, tokens, {dz, dx}), lt_dw = sparse && lt_call(lt_w, tokens, {x, dz});
    // Fork (session 8): dX (+ the bias column sums) stay on s; the weight-gradient chain (MVUE,
    // operand repack, dW GEMM, masked decay; dense phase: the dW GEMM) runs on `aux` after an event
    // of s, and s waits for it before backward returns. The two chains share only reads (dZ, W, the
    // mask), so their kernels fill each other's tail waves. Not with a cuSPARSELt GEMM in the
    // backward, nor while a phase sink is set (the per-phase breakdown needs one ordered stream).
    const bool fork = dx && detail::fst_fork_backward() && !lt_dx && !lt_dw && !g_phase_sink.load(std::memory_order_relaxed);
    cudaStream_t sw = fork ? aux : s;
    if (fork) {
      SPARSENM_CUDA_CHECK(cudaEventRecord(ev_fork, s));
      SPARSENM_CUDA_CHECK(cudaStreamWaitEvent(aux, ev_fork, 0));
    }
    if (sparse) {
      if (dx) {
        gemm_dx(lt_dx, dz, tokens, dx, s);
        mark("dx_gemm", s);
      }
      gemm_dw(lt_dw, x, dz, tokens, seed_for(calls), sw);
      mark("dw_gemm", sw);
      if (cfg.decay != 0.f) {
        masked_decay(cfg.dtype, dw.get(), w.get(), mask[cur].as<std::uint16_t>(), out, in, cfg.decay, sw);
        mark("decay", sw);
      }
      ++calls;
    } else {
      // dX^T (in x tokens) = W (col-major in x out) . dZ^T (col-major out x tokens)
      if (dx) {
        dense_gemm(CUBLAS_OP_N, CUBLAS_OP_N, in, tokens, out, w.get(), in, dz, out, dx, in, s);
        mark("dx_gemm", s);
      }
      // dW^T (in x out) = X^T (col-major in x tokens) . dZ (col-major out x tokens, transposed)
      dense_gemm(CUBLAS_OP_N, CUBLAS_OP_T, in, out, tokens, x, in, dz, out, dw.get(), in, sw, fork);
      mark("dw_gemm", sw);
    }
    if (cfg.bias) {
      detail::fst_colsum(cfg.dtype, dz, tokens, out, partial.as<float>(), db.get(), s);
      mark("colsum", s);
    }
    if (fork) {
      SPARSENM_CUDA_CHECK(cudaEventRecord(ev_join, aux));
      SPARSENM_CUDA_CHECK(cudaStreamWaitEvent(s, ev_join, 0));
    }
  }

  // ---- GEMM backends: decided once, at construction ----
  /// Empty when the shapes allow cuSPARSELt GEMMs (its 16-element rules, no padding), else the rule.
  std::string lt_shape_rule() const {
    if (in % 16 == 0 && out % 16 == 0 && T % 16 == 0) return {};
    return "cusparselt needs in_features, out_features and max_tokens multiples of 16 (got " + std::to_string(in) + ", " +
           std::to_string(out) + ", " + std::to_string(T) + ")";
  }
  /// Checks the requests before anything is allocated: forced cuSPARSELt that cannot run throws.
  /// Construction-time timing inputs: random X, dZ and W (seeds seed, seed + 1, seed + 2), then a
  /// real transposable mask and our packed operands of W, as at a refresh step.
  void scratch_refresh(const DeviceBuffer& xs, const DeviceBuffer& dzs, std::uint32_t seed, cudaStream_t s) {
    detail::fst_fill_random(cfg.dtype, xs.get(), std::size_t(T * in), seed, 1.f, s);
    detail::fst_fill_random(cfg.dtype, dzs.get(), std::size_t(T * out), seed + 1, 1e-2f, s);
    detail::fst_fill_random(cfg.dtype, w.get(), std::size_t(out * in), seed + 2, 0.03f, s);
    cur = 0;
    transposable_mask24(cfg.dtype, w.get(), out, in, mask[0].as<std::uint16_t>(), view(w_vals, w_hw, w_idx, gw),
                        view(wt_vals, wt_hw, wt_idx, gwt), s);
    pack_w_values(s);
    detail::fst_repack_meta(w_idx.as<std::uint8_t>(), gw, w_meta.as<std::uint32_t>(), s);
    detail::fst_repack_meta(wt_idx.as<std::uint8_t>(), gwt, wt_meta.as<std::uint32_t>(), s);
  }
  /// Runs construction-time timing `f(stream)` on a private non-blocking stream and waits for it. The
  /// timed sequences leave a mask and operands of scratch data behind, so the layer's step state is
  /// reset after them: the first sparse step searches anew.
  template <class F>
  void on_timing_stream(F&& f) {
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());  // buffers zeroed on the legacy stream, which a
                                                   // non-blocking stream does not wait for
    cudaStream_t s = nullptr;
    SPARSENM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    try {
      f(s);
      SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s));
    } catch (...) {
      cudaStreamDestroy(s);
      throw;
    }
    SPARSENM_CUDA_CHECK(cudaStreamDestroy(s));
    has_mask = false;
    cur = 0;
    packed_fresh = true;
    grad_packed = true;
    gg = pack_geom(out, T);
  }
  void validate_backends() const {
    const FstBackend req[3] = {cfg.backends.forward, cfg.backends.grad_input, cfg.backends.grad_weight};
    const char* names[3] = {"backends.forward", "backends.grad_input", "backends.grad_weight"};
    for (int g = 0; g < 3; ++g) {
      require(req[g] == FstBackend::automatic || req[g] == FstBackend::sptc || req[g] == FstBackend::cusparselt, names[g],
              "must be automatic, sptc or cusparselt");
      if (req[g] != FstBackend::cusparselt) continue;
      if (const std::string rule = lt_shape_rule(); !rule.empty()) throw InvalidArgument(names[g], rule);
      if (const std::string why = cuda::lt::unavailable_reason(); !why.empty())
        throw Unsupported(std::string(names[g]) + " = cusparselt: cuSPARSELt unavailable: " + why);
    }
  }
  cuda::lt::GemmShape lt_shape(int g, bool sparse_b = false) const {
    cuda::lt::GemmShape sh;
    sh.dtype = cfg.dtype;
    sh.sparse_a = true;
    if (g == 0) {
      // Z [T][out] row-major = C col-major out x T (ld out) = op(A) . B: A = S(W) [out][in] row-major
      // stored in x out col-major (ld in), op(A) = T (2:4 along in); B = X [T][in] = in x T (ld in)
      sh.order = cuda::lt::Order::col;
      sh.trans_a = true;
      sh.m = out, sh.n = T, sh.k = in, sh.lda = in, sh.ldb = in, sh.ldc = out;
    } else if (g == 1) {
      // dX [T][in] row-major = C col-major in x T (ld in) = A . B: A = the same S(W) buffer as in x out
      // col-major, op(A) = N (2:4 along out: the transposable mask); B = dZ [T][out] = out x T (ld out)
      sh.order = cuda::lt::Order::col;
      sh.trans_a = false;
      sh.m = in, sh.n = T, sh.k = out, sh.lda = in, sh.ldb = out, sh.ldc = in;
    } else if (!sparse_b) {
      // dW [out][in] row-major = A . B, all row-major: A = MVUE(dZ^T) [out][T] (2:4 along T), B = X [T][in]
      sh.order = cuda::lt::Order::row;
      sh.trans_a = false;
      sh.m = out, sh.n = in, sh.k = T, sh.lda = T, sh.ldb = in, sh.ldc = in;
    } else {
      // the same with the structured operand as B, col-major: dW = C in x out (ld in) = X^T . MVUE^T,
      // A = X [T][in] = in x T (ld in), B = MVUE(dZ^T) [out][T] = T x out col-major (ld T)
      sh.order = cuda::lt::Order::col;
      sh.sparse_a = false;
      sh.m = in, sh.n = out, sh.k = T, sh.lda = in, sh.ldb = T, sh.ldc = in;
    }
    return sh;
  }
  std::unique_ptr<cuda::lt::SparseGemm> make_lt(int g) {
    if (g != 2) return std::make_unique<cuda::lt::SparseGemm>(lt_shape(g));
    try {
      return std::make_unique<cuda::lt::SparseGemm>(lt_shape(2));
    } catch (const CudaError&) {
      return std::make_unique<cuda::lt::SparseGemm>(lt_shape(2, true));  // row order refused: structured B
    }
  }

  /// The automatic choice is timed once per process and shape (backend_cache): a later layer of
  /// the same key takes the decision as if forced and reports the first layer's timings.
  void choose_backends() {
    const FstBackend req[3] = {cfg.backends.forward, cfg.backends.grad_input, cfg.backends.grad_weight};
    const bool any_auto = req[0] == FstBackend::automatic || req[1] == FstBackend::automatic ||
                          req[2] == FstBackend::automatic;
    int dev = 0;
    SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
    const BackendKey key{dev,  int(cfg.dtype), in, out, T, cfg.bias, cfg.schedule.dense_from() > 0,
                         int(req[0]), int(req[1]), int(req[2])};
    if (any_auto) {
      std::optional<FstBackendReport> hit;
      {
        std::lock_guard<std::mutex> lock(backend_cache_mutex());
        if (auto it = backend_cache().find(key); it != backend_cache().end()) hit = it->second;
      }
      if (hit) {
        const FstBackend chosen[3] = {hit->forward.backend, hit->grad_input.backend, hit->grad_weight.backend};
        choose_backends_for(chosen);
        report = *hit;
        for (FstGemmChoice* c : {&report.forward, &report.grad_input, &report.grad_weight})
          c->reason += " [decision reused from an identical layer timed earlier in this process]";
        return;
      }
    }
    choose_backends_for(req);
    if (any_auto) {
      std::lock_guard<std::mutex> lock(backend_cache_mutex());
      backend_cache().emplace(key, report);
    }
  }

  void choose_backends_for(const FstBackend (&req)[3]) {
    const char* names[3] = {"backends.forward", "backends.grad_input", "backends.grad_weight"};
    FstGemmChoice* ch[3] = {&report.forward, &report.grad_input, &report.grad_weight};
    std::string out_rule = cuda::lt::unavailable_reason();
    if (!out_rule.empty()) out_rule = "cuSPARSELt unavailable: " + out_rule;
    else if (const std::string rule = lt_shape_rule(); !rule.empty()) out_rule = "shape: " + rule;
    const bool sparse_steps = cfg.schedule.dense_from() > 0;
    bool cand[3];
    for (int g = 0; g < 3; ++g) {
      ch[g]->backend = FstBackend::sptc;
      if (req[g] == FstBackend::sptc) ch[g]->reason = "forced (FstConfig::backends)";
      else if (req[g] == FstBackend::automatic && !out_rule.empty()) ch[g]->reason = "automatic: " + out_rule;
      else if (req[g] == FstBackend::automatic && !sparse_steps) ch[g]->reason = "automatic: the schedule has no sparse step";
      cand[g] = req[g] == FstBackend::cusparselt || (req[g] == FstBackend::automatic && out_rule.empty() && sparse_steps);
    }
    if (!cand[0] && !cand[1] && !cand[2]) return;

    std::unique_ptr<cuda::lt::SparseGemm>* gem[3] = {&gem_f, &gem_d, &gem_w};
    for (int g = 0; g < 3; ++g) {
      if (!cand[g]) continue;
      try {
        *gem[g] = make_lt(g);
      } catch (const Error& e) {
        if (req[g] == FstBackend::cusparselt) throw Unsupported(std::string(names[g]) + " = cusparselt: " + e.what());
        cand[g] = false;
        ch[g]->reason = std::string("automatic: cuSPARSELt refused the shape (") + e.what() + ")";
      }
    }
    if (!cand[0] && !cand[1] && !cand[2]) return;

    on_timing_stream([&](cudaStream_t s) { time_and_choose(cand, req, ch, s); });
    sw_dense_ok = grad_dense_ok = false;
    if (!lt_f) gem_f.reset();
    if (!lt_d) gem_d.reset();
    if (!lt_w) gem_w.reset();
    if (!lt_f && !lt_d) sw_dense.reset();
    if (!lt_w) g_dense.reset();
  }

  /// Scratch operands at tokens = max_tokens, operands compressed and cuSPARSELt's MatmulSearch run
  /// for each candidate, then the per-step sequences timed and the backends set.
  void time_and_choose(const bool cand[3], const FstBackend req[3], FstGemmChoice* ch[3], cudaStream_t s) {
    DeviceBuffer xs(std::size_t(T * in) * esz), dzs(std::size_t(T * out) * esz), ys(std::size_t(T * std::max(in, out)) * esz);
    scratch_refresh(xs, dzs, 11, s);
    packed_fresh = true;
    const std::uint64_t seed = 0x5eedull;
    if (cand[0] || cand[1]) {
      sw_dense = DeviceBuffer(std::size_t(out * in) * esz);
      prep_lt_w(cand[0], cand[1], s);
      if (cand[0]) gem_f->search(xs.get(), ys.get(), s);
      if (cand[1]) gem_d->search(dzs.get(), ys.get(), s);
    }
    if (cand[2]) {
      g_dense = DeviceBuffer(std::size_t(out * T) * esz);
      lt_dw_operand(dzs.get(), T, seed, s);
      gem_w->search(xs.get(), dw.get(), s);
    }

    // weight GEMMs: the (forward, dX) pair shares S(W)'s preparation, so every allowed pair is timed
    auto options = [&](int g) {
      std::vector<bool> o;
      if (req[g] != FstBackend::cusparselt) o.push_back(false);
      if (cand[g]) o.push_back(true);
      return o;
    };
    double pair_ms[2][2] = {{-1, -1}, {-1, -1}};
    const std::vector<bool> of = options(0), od = options(1);
    const bool decide = of.size() * od.size() > 1;  // else forced or the only option: nothing timed
    for (bool f : of)
      for (bool d : od) {
        if (!decide) continue;
        pair_ms[f][d] = time_ms(
            [&] {
              if (!(f && d)) apply_packed(s);
              prep_lt_w(f, d, s);
              gemm_forward(f, xs.get(), T, ys.get(), s);
              gemm_dx(d, dzs.get(), T, ys.get(), s);
            },
            s);
      }
    bool bf = of.back(), bd = od.back();
    if (decide) {
      double best = std::numeric_limits<double>::infinity();
      for (bool f : of)
        for (bool d : od) {
          const double cost = pair_ms[f][d] * (1.0 + kLtMargin * (int(f) + int(d)));
          if (cost < best) best = cost, bf = f, bd = d;
        }
      auto name = [](bool lt) { return lt ? "cusparselt" : "sptc"; };
      std::string list;
      for (bool f : of)
        for (bool d : od)
          list += std::string(list.empty() ? "" : ", ") + name(f) + "/" + name(d) + " " + fmt_ms(pair_ms[f][d]);
      const std::string why = "timed at construction, S(W) preparation + forward + dX per step at tokens = " +
                              std::to_string(T) + " (forward/dX backends: " + list + " ms; cuSPARSELt incl. dense S(W) + compress" +
                              ", chosen only when >= 1 % faster); chosen " + name(bf) + "/" + name(bd);
      if (req[0] == FstBackend::automatic && cand[0]) {
        ch[0]->reason = why;
        ch[0]->sptc_ms = pair_ms[0][bd];
        ch[0]->cusparselt_ms = pair_ms[1][bd];
      }
      if (req[1] == FstBackend::automatic && cand[1]) {
        ch[1]->reason = why;
        ch[1]->sptc_ms = pair_ms[bf][0];
        ch[1]->cusparselt_ms = pair_ms[bf][1];
      }
    }
    lt_f = bf;
    lt_d = bd;
    if (req[0] == FstBackend::cusparselt) ch[0]->reason = "forced (FstConfig::backends)";
    if (req[1] == FstBackend::cusparselt) ch[1]->reason = "forced (FstConfig::backends)";

    lt_w = cand[2];
    if (cand[2] && req[2] == FstBackend::automatic) {
      const double ours = time_ms([&] { gemm_dw(false, xs.get(), dzs.get(), T, seed, s); }, s);
      const double lt = time_ms([&] { gemm_dw(true, xs.get(), dzs.get(), T, seed, s); }, s);
      lt_w = lt * (1.0 + kLtMargin) < ours;
      ch[2]->sptc_ms = ours;
      ch[2]->cusparselt_ms = lt;
      ch[2]->reason = "timed at construction, MVUE + operand + dW GEMM per backward at tokens = " + std::to_string(T) +
                      ": sptc " + fmt_ms(ours) + " ms, cusparselt " + fmt_ms(lt) +
                      " ms (incl. dense MVUE(dZ^T) + compress; chosen only when >= 1 % faster); chosen " +
                      (lt_w ? "cusparselt" : "sptc");
    } else if (req[2] == FstBackend::cusparselt) {
      ch[2]->reason = "forced (FstConfig::backends)";
    }
    ch[0]->backend = lt_f ? FstBackend::cusparselt : FstBackend::sptc;
    ch[1]->backend = lt_d ? FstBackend::cusparselt : FstBackend::sptc;
    ch[2]->backend = lt_w ? FstBackend::cusparselt : FstBackend::sptc;
  }

  // ---- wgmma tiles: timed once at construction under FstTilePolicy::timed ----
  void tune_tiles() {
    if (cc != 90 || detail::fst_tile_policy() != detail::FstTilePolicy::timed || cfg.schedule.dense_from() <= 0) return;
    int dev = 0;
    SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
    const TileKey key{dev, int(cfg.dtype), in, out, T};
    {
      std::lock_guard<std::mutex> lock(tile_cache_mutex());
      if (auto it = tile_cache().find(key); it != tile_cache().end()) {
        tuned = it->second.first;
        tile_report = it->second.second + " [reused from an identical layer timed earlier in this process]";
        return;
      }
    }
    on_timing_stream([&](cudaStream_t s) { time_tiles(s); });
    std::lock_guard<std::mutex> lock(tile_cache_mutex());
    tile_cache().emplace(key, std::make_pair(tuned, tile_report));
  }
  void time_tiles(cudaStream_t s) {
    DeviceBuffer xs(std::size_t(T * in) * esz), dzs(std::size_t(T * out) * esz), ys(std::size_t(T * std::max(in, out)) * esz);
    scratch_refresh(xs, dzs, 21, s);
    gg = pack_geom(out, T);
    grad_operand(dzs.get(), T, 0x711eull, s);
    std::int64_t ldx_f = 0, ldx_d = 0;
    const void* xf = gemm_x(xs.get(), T, in, x_pad, ldx_f, s);
    const void* xd = gemm_x(dzs.get(), T, out, dz_pad, ldx_d, s);
    const bool fused = fused_dw(xs.get());
    const std::int64_t ldt = detail::fst_round_up(T, 8);
    if (!fused) detail::fst_transpose16(xs.get(), T, in, xt.get(), ldt, s);
    const cs::WgTile cands[3] = {cs::WgTile::m128n256, cs::WgTile::m128n128, cs::WgTile::m64n128};
    const char* names[3] = {"fwd", "dX", "dW"};
    tile_report = "timed at construction (tokens = " + std::to_string(T) + "):";
    for (int which = 0; which < 3; ++which) {
      double best = std::numeric_limits<double>::infinity();
      int best_tile = -1;
      tile_report += std::string(" ") + names[which];
      for (const cs::WgTile t : cands) {
        const int ti = int(t);
        const double ms = time_ms(
            [&] {
              if (which == 0) sparse_gemm(gw, w_vals, w_meta, xf, T, ldx_f, ys.get(), s, 0, true, false, ti);
              else if (which == 1) sparse_gemm(gwt, wt_vals, wt_meta, xd, T, ldx_d, ys.get(), s, 1, true, false, ti);
              else if (fused) sparse_gemm(gg, g_vals, g_meta, xs.get(), in, in, dw.get(), s, 2, true, true, ti);
              else sparse_gemm(gg, g_vals, g_meta, xt.get(), in, ldt, dwt.get(), s, 2, true, false, ti);
            },
            s);
        tile_report += std::string(" ") + cs::to_string(t) + " " + fmt_ms(ms);
        if (ms < best) best = ms, best_tile = ti;
      }
      tuned[std::size_t(which)] = best_tile;
      tile_report += std::string(" -> ") + cs::to_string(cs::WgTile(best_tile)) + ";";
    }
  }

  void sync_flip() {
    if (!flip_pending) return;
    SPARSENM_CUDA_CHECK(cudaEventSynchronize(flip_event));
    unsigned long long v = 0;
    SPARSENM_CUDA_CHECK(cudaMemcpy(&v, flip.get(), sizeof v, cudaMemcpyDeviceToHost));
    flip_value = std::int64_t(v);
    flip_valid = true;
    flip_pending = false;
  }
};

FstLinear::FstLinear(const FstConfig& config) : impl_(std::make_unique<Impl>(config)) {}
FstLinear::~FstLinear() = default;
FstLinear::FstLinear(FstLinear&&) noexcept = default;
FstLinear& FstLinear::operator=(FstLinear&&) noexcept = default;

const FstConfig& FstLinear::config() const noexcept { return impl_->cfg; }
void* FstLinear::weight() noexcept { return impl_->w.get(); }
void* FstLinear::bias() noexcept { return impl_->cfg.bias ? impl_->b.get() : nullptr; }
void* FstLinear::weight_grad() noexcept { return impl_->dw.get(); }
void* FstLinear::bias_grad() noexcept { return impl_->cfg.bias ? impl_->db.get() : nullptr; }
std::int64_t FstLinear::step() const noexcept { return impl_->step; }
FstPhase FstLinear::phase() const noexcept { return impl_->phase(); }

void FstLinear::set_step(std::int64_t step) {
  require(step >= 0, "step", "must be >= 0 (got " + std::to_string(step) + ")");
  impl_->step = step;
  impl_->has_mask = false;
  impl_->prepared = -1;
}

FstStepInfo FstLinear::begin_step(void* stream) { return impl_->begin_step(as_stream(stream)); }
void FstLinear::forward(const void* x, std::int64_t tokens, void* z, void* stream) {
  impl_->forward(x, tokens, z, as_stream(stream));
}
void FstLinear::backward(const void* x, const void* dz, std::int64_t tokens, void* dx, void* stream) {
  impl_->backward(x, dz, tokens, dx, as_stream(stream));
}
void FstLinear::end_step() {
  if (impl_->prepared != impl_->step)
    throw InvalidArgument("end_step", "begin_step() was not called for optimizer step " + std::to_string(impl_->step));
  ++impl_->step;
}

std::uint64_t FstLinear::mvue_seed() const noexcept { return impl_->seed_for(impl_->calls); }

std::int64_t FstLinear::last_flip_count() {
  impl_->sync_flip();
  return impl_->flip_valid ? impl_->flip_value : -1;
}
double FstLinear::last_flip_rate() {
  const std::int64_t c = last_flip_count();
  if (c < 0) return std::numeric_limits<double>::quiet_NaN();
  return double(c) / (double(impl_->out) * double(impl_->in));
}

FstDebugView FstLinear::debug_view() const noexcept {
  const Impl& m = *impl_;
  auto pv = [&](const PackGeom& g, const DeviceBuffer& v, const DeviceBuffer& meta) {
    FstPackedView p;
    p.values = v.get();
    p.meta = meta.as<std::uint32_t>();
    p.rows = g.rows;
    p.rows_pad = g.rows_pad;
    p.k = g.k;
    p.k_pad = g.k_pad;
    return p;
  };
  FstDebugView d;
  d.mask = m.mask[m.cur].as<std::uint16_t>();
  d.w = pv(m.gw, m.w_vals, m.w_meta);
  d.wt = pv(m.gwt, m.wt_vals, m.wt_meta);
  d.grad = pv(m.gg, m.g_vals, m.g_meta);
  if (!m.packed_fresh) d.w.values = d.wt.values = nullptr;
  if (!m.grad_packed) d.grad.values = nullptr;
  if (m.sw_dense_ok) d.w_dense = {m.sw_dense.get(), m.out, m.in, m.in};
  if (m.grad_dense_ok) d.grad_dense = {m.g_dense.get(), m.out, m.T, m.T};
  return d;
}

const FstBackendReport& FstLinear::backends() const noexcept { return impl_->report; }

}  // namespace sparsenm::train
