// sparsenm — the FST linear layer (include/sparsenm/fst.hpp, docs/FST.md): state machine, buffer
// ownership, and the per-step launch sequence over the training kernels (train.hpp), the repack
// kernels (fst_kernels.cu) and the sparse tensor-core GEMM (src/cuda/sptc, called through its
// internal launcher on device pointers, no Plan).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "cuda/common.cuh"
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

void require(bool ok, const char* argument, const std::string& rule) {
  if (!ok) throw InvalidArgument(argument, rule);
}

DeviceBuffer zeroed(std::size_t bytes) {
  DeviceBuffer b(bytes ? bytes : 16);
  SPARSENM_CUDA_CHECK(cudaMemset(b.get(), 0, b.size()));
  return b;
}

}  // namespace

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
  cublasHandle_t cublas = nullptr;
  DeviceBuffer cublas_ws;

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
  }
  ~Impl() {
    if (flip_event) cudaEventDestroy(flip_event);
    if (cublas) cublasDestroy(cublas);
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
  void sparse_gemm(const PackGeom& g, const DeviceBuffer& vals, const DeviceBuffer& meta, const void* x, std::int64_t m,
                   std::int64_t ldx, void* y, cudaStream_t s, bool trans = false) const {
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
      const cs::WgTile tile = choose_tile(g.rows, m);
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
    FST_CUBLAS_CHECK(cublasCreate(&cublas));
  }
  void dense_gemm(cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                  std::int64_t lda, const void* bm, std::int64_t ldb, void* c, std::int64_t ldc, cudaStream_t s) {
    ensure_cublas();
    require(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "tokens/features", "dense GEMM dimensions must fit in int");
    FST_CUBLAS_CHECK(cublasSetStream(cublas, s));
    FST_CUBLAS_CHECK(cublasSetWorkspace(cublas, cublas_ws.get(), cublas_ws.size()));
    const cudaDataType_t t = cfg.dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
    const float alpha = 1.f, beta = 0.f;
    FST_CUBLAS_CHECK(cublasGemmEx(cublas, ta, tb, int(m), int(n), int(k), &alpha, a, t, int(lda), bm, t, int(ldb), &beta, c, t,
                                  int(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // ---- the step ----
  Compressed24View view(DeviceBuffer& vals, DeviceBuffer& hw, DeviceBuffer& idx, const PackGeom& g) {
    return {g.direct() ? vals.get() : hw.get(), idx.as<std::uint8_t>()};
  }
  FstStepInfo begin_step(cudaStream_t s) {
    FstStepInfo info;
    info.step = step;
    info.phase = phase();
    if (info.phase == FstPhase::sparse) {
      const Compressed24View v = view(w_vals, w_hw, w_idx, gw), vt = view(wt_vals, wt_hw, wt_idx, gwt);
      if (cfg.schedule.refreshes_mask(step, has_mask)) {
        const int next = has_mask ? 1 - cur : cur;
        transposable_mask24(cfg.dtype, w.get(), out, in, mask[next].as<std::uint16_t>(), v, vt, s);
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
      } else {
        apply_mask24(cfg.dtype, w.get(), out, in, mask[cur].as<std::uint16_t>(), v, vt, nullptr, s);
      }
      if (!gw.direct()) detail::fst_repack_values(w_hw.get(), gw, w_vals.get(), s);
      if (!gwt.direct()) detail::fst_repack_values(wt_hw.get(), gwt, wt_vals.get(), s);
      // The hw24 positions (hence the metadata) are a function of the mask alone (apply_mask24
      // stores the kept positions of the mask), so the metadata only changes at a refresh.
      if (info.mask_refreshed) {
        detail::fst_repack_meta(w_idx.as<std::uint8_t>(), gw, w_meta.as<std::uint32_t>(), s);
        detail::fst_repack_meta(wt_idx.as<std::uint8_t>(), gwt, wt_meta.as<std::uint32_t>(), s);
      }
    }
    prepared = step;
    return info;
  }

  void forward(const void* x, std::int64_t tokens, void* z, cudaStream_t s) {
    check_tokens(tokens);
    require(x != nullptr, "x", "must be a device pointer (got null)");
    require(z != nullptr, "z", "must be a device pointer (got null)");
    check_prepared("forward");
    if (phase() == FstPhase::sparse) {
      std::int64_t ldx = 0;
      const void* xx = gemm_x(x, tokens, in, x_pad, ldx, s);
      sparse_gemm(gw, w_vals, w_meta, xx, tokens, ldx, z, s);
    } else {
      // Z^T (out x tokens, col-major) = W (col-major in x out)^T . X^T (col-major in x tokens)
      dense_gemm(CUBLAS_OP_T, CUBLAS_OP_N, out, tokens, in, w.get(), in, x, in, z, out, s);
    }
    if (cfg.bias) detail::fst_add_bias(cfg.dtype, z, tokens, out, b.get(), s);
  }

  void backward(const void* x, const void* dz, std::int64_t tokens, void* dx, cudaStream_t s) {
    check_tokens(tokens);
    require(x != nullptr, "x", "must be a device pointer (got null)");
    require(dz != nullptr, "dz", "must be a device pointer (got null)");
    check_prepared("backward");
    if (phase() == FstPhase::sparse) {
      // dX [tokens][in] = dZ [tokens][out] . (S(W)^T [in][out])^T
      if (dx) {
        std::int64_t ldx = 0;
        const void* xx = gemm_x(dz, tokens, out, dz_pad, ldx, s);
        sparse_gemm(gwt, wt_vals, wt_meta, xx, tokens, ldx, dx, s);
      }
      // MVUE(dZ^T) [out][tokens], 2:4 along tokens, packed for the tensor cores
      gg = pack_geom(out, tokens);
      void* hv = g_vals.get();
      if (!gg.direct()) {
        const std::size_t need = std::size_t(gg.rows * gg.hw_cols) * esz;
        if (g_hw.size() < need) g_hw = DeviceBuffer(need);
        hv = g_hw.get();
      }
      mvue24(cfg.dtype, dz, tokens, out, GradLayout::token_major, seed_for(calls), {hv, g_idx.as<std::uint8_t>()}, s);
      if (!gg.direct()) detail::fst_repack_values(g_hw.get(), gg, g_vals.get(), s);
      detail::fst_repack_meta(g_idx.as<std::uint8_t>(), gg, g_meta.as<std::uint32_t>(), s);
      if (fused_dw(x)) {
        // dW [out][in] = (X^T . MVUE(dZ^T)^T)^T: X [tokens][in] is X'^T of the m = in GEMM
        sparse_gemm(gg, g_vals, g_meta, x, in, in, dw.get(), s, true);
      } else {
        // X^T [in][ldt] (zero columns tokens..ldt-1), dW^T [in][out] = X^T . MVUE(dZ^T)^T, dW = (dW^T)^T
        const std::int64_t ldt = detail::fst_round_up(tokens, 8);
        ensure_transpose_buffers();  // allocated at construction unless only an unaligned X gets here
        detail::fst_transpose16(x, tokens, in, xt.get(), ldt, s);
        sparse_gemm(gg, g_vals, g_meta, xt.get(), in, ldt, dwt.get(), s);
        detail::fst_transpose16(dwt.get(), in, out, dw.get(), in, s);
      }
      if (cfg.decay != 0.f)
        masked_decay(cfg.dtype, dw.get(), w.get(), mask[cur].as<std::uint16_t>(), out, in, cfg.decay, s);
      ++calls;
    } else {
      // dX^T (in x tokens) = W (col-major in x out) . dZ^T (col-major out x tokens)
      if (dx) dense_gemm(CUBLAS_OP_N, CUBLAS_OP_N, in, tokens, out, w.get(), in, dz, out, dx, in, s);
      // dW^T (in x out) = X^T (col-major in x tokens) . dZ (col-major out x tokens, transposed)
      dense_gemm(CUBLAS_OP_N, CUBLAS_OP_T, in, out, tokens, x, in, dz, out, dw.get(), in, s);
    }
    if (cfg.bias) detail::fst_colsum(cfg.dtype, dz, tokens, out, partial.as<float>(), db.get(), s);
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
  return d;
}

}  // namespace sparsenm::train
