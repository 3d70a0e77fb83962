// GPU tests of the FST linear layer (include/sparsenm/fst.hpp): forward / backward against fp64
// host references built from the layer's own downloaded masks and compressed operands (S(W),
// S(W)^T, MVUE(dZ^T) unpacked from the tensor-core layout, or the dense operands a cuSPARSELt
// GEMM compressed), tails in tokens / in / out, the step state machine (mask refresh every l
// steps, flip count, apply between refreshes, dense fine-tune switch), each GEMM forced on each
// backend (sptc, cuSPARSELt), the automatic choice's report, and the argument errors.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda/cusparselt/lt_gemm.hpp"
#include "cuda/sptc/layout.hpp"
#include "cuda/sptc/sptc.hpp"
#include "cuda/train/fst_kernels.hpp"
#include "gpu/train_test_util.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/fst.hpp"
#include "sparsenm/train.hpp"

namespace sparsenm::test {
namespace {

using train::FstBackend;
using train::FstConfig;
using train::FstLinear;
using train::FstPhase;

bool have_sm80() {
  if (!have_gpu()) return false;
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major >= 8;
}
#define FST_REQUIRE_SM80() \
  if (!have_sm80()) GTEST_SKIP() << "no sm_80+ CUDA device: FST GPU test skipped"

double unit_roundoff(DType t) { return t == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }

float bits_to_float(DType t, std::uint16_t b) { return t == DType::f16 ? fp16_bits_to_float(b) : bf16_bits_to_float(b); }

void to_device(void* dst, const HostMat& m) {
  SPARSENM_CUDA_CHECK(cudaMemcpy(dst, m.bytes.data(), m.bytes.size(), cudaMemcpyHostToDevice));
}
HostMat from_device(const void* src, DType t, std::int64_t r, std::int64_t c) {
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  HostMat m(t, r, c);
  SPARSENM_CUDA_CHECK(cudaMemcpy(m.bytes.data(), src, m.bytes.size(), cudaMemcpyDeviceToHost));
  return m;
}
void poison(void* p, std::size_t bytes) { SPARSENM_CUDA_CHECK(cudaMemset(p, 0xFF, bytes)); }

/// Dense rows x k matrix of a packed tensor-core operand (downloaded, positions from the
/// metadata through layout.hpp's meta_place). Fails the test on a malformed operand: positions
/// not ascending, a kept slot past k holding a nonzero value, nonzero padding.
std::vector<double> unpack(const train::FstPackedView& v, DType t) {
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  sptc::Packed24 p;
  p.rows = v.rows;
  p.k = (v.k + 3) / 4 * 4;
  p.rows_pad = v.rows_pad;
  p.k_pad = v.k_pad;
  p.values.resize(std::size_t(v.rows_pad * v.k_pad / 2));
  p.meta.resize(std::size_t(v.k_pad / 64 * (v.rows_pad / 64) * 128));
  SPARSENM_CUDA_CHECK(cudaMemcpy(p.values.data(), v.values, p.values.size() * 2, cudaMemcpyDeviceToHost));
  SPARSENM_CUDA_CHECK(cudaMemcpy(p.meta.data(), v.meta, p.meta.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<double> d(std::size_t(v.rows * v.k), 0.0);
  std::int64_t bad = 0;
  for (std::int64_t r = 0; r < v.rows; ++r)
    for (std::int64_t gi = 0; gi < v.k_pad / 4; ++gi) {
      const int p0 = p.position(r, gi, 0), p1 = p.position(r, gi, 1);
      if (p0 >= p1) ++bad;
      for (int s = 0; s < 2; ++s) {
        const std::int64_t col = 4 * gi + (s ? p1 : p0);
        const float val = bits_to_float(t, p.value(r, 2 * gi + s));
        if (col < v.k)
          d[std::size_t(r * v.k + col)] = val;
        else if (val != 0.f)
          ++bad;
      }
    }
  EXPECT_EQ(bad, 0) << "malformed packed operand (descending positions or nonzero padding)";
  return d;
}

/// A dense operand of a cuSPARSELt GEMM (debug view), as doubles [rows][cols].
std::vector<double> download_dense(const train::FstDenseView& v, DType t) {
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint16_t> raw(std::size_t(v.rows * v.ld));
  SPARSENM_CUDA_CHECK(cudaMemcpy(raw.data(), v.values, raw.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<double> d(std::size_t(v.rows * v.cols));
  for (std::int64_t r = 0; r < v.rows; ++r)
    for (std::int64_t c = 0; c < v.cols; ++c) d[std::size_t(r * v.cols + c)] = bits_to_float(t, raw[std::size_t(r * v.ld + c)]);
  return d;
}

/// Dense 0/1 mask [rows][cols] from the train.hpp mask words; checks 2 per row and column of
/// every padded 4x4 block.
std::vector<int> unpack_mask(const std::uint16_t* dmask, std::int64_t rows, std::int64_t cols) {
  const std::int64_t bc = (cols + 3) / 4, words = train::mask24_words(rows, cols);
  std::vector<std::uint16_t> m(static_cast<std::size_t>(words));
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  SPARSENM_CUDA_CHECK(cudaMemcpy(m.data(), dmask, m.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<int> d(std::size_t(rows * cols), 0);
  std::int64_t bad = 0;
  for (std::int64_t w = 0; w < words; ++w) {
    const std::uint16_t x = m[std::size_t(w)];
    for (int i = 0; i < 4; ++i) {
      int rc = 0, cc = 0;
      for (int j = 0; j < 4; ++j) {
        rc += (x >> (4 * i + j)) & 1;
        cc += (x >> (4 * j + i)) & 1;
      }
      bad += rc != 2 || cc != 2;
    }
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        const std::int64_t r = (w / bc) * 4 + i, c = (w % bc) * 4 + j;
        if (r < rows && c < cols) d[std::size_t(r * cols + c)] = (x >> (4 * i + j)) & 1;
      }
  }
  EXPECT_EQ(bad, 0) << "mask is not transposable 2:4";
  return d;
}

/// Compares got (dtype) against ref with |got - ref| <= tol[i]; prints the first failures.
void expect_close(const HostMat& got, const std::vector<double>& ref, const std::vector<double>& tol, const char* what) {
  std::int64_t bad = 0;
  for (std::int64_t r = 0; r < got.rows; ++r)
    for (std::int64_t c = 0; c < got.cols; ++c) {
      const std::size_t i = std::size_t(r * got.cols + c);
      const double g = got.at(r, c);
      if (!(std::fabs(g - ref[i]) <= tol[i])) {
        if (bad < 5) std::printf("%s (%lld, %lld): got %.6g want %.6g (tol %.3g)\n", what, (long long)r, (long long)c, g, ref[i], tol[i]);
        ++bad;
      }
    }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.rows * got.cols << " entries out of tolerance";
}

struct Shape {
  std::int64_t out, in, tokens;
};

/// One sparse step (begin_step, forward, backward) checked against fp64 references. x_offset: X is
/// placed that many bytes into its device buffer (2: a pointer that is not 16-byte aligned, which
/// takes the padded-X forward and the transposing weight-gradient path).
void check_sparse_step(FstLinear& layer, const HostMat& W, const HostMat& b, const HostMat& X, const HostMat& dZ,
                       std::int64_t tokens, bool expect_refresh, std::size_t x_offset = 0) {
  const FstConfig& c = layer.config();
  const DType t = c.dtype;
  const std::int64_t out = c.out_features, in = c.in_features;
  const double u = unit_roundoff(t);
  to_device(layer.weight(), W);
  if (c.bias) to_device(layer.bias(), b);
  auto x_store = poisoned(X.bytes.size() + x_offset);
  SPARSENM_CUDA_CHECK(cudaMemcpy(static_cast<std::uint8_t*>(x_store.get()) + x_offset, X.bytes.data(), X.bytes.size(),
                                 cudaMemcpyHostToDevice));
  const void* x_dev = static_cast<const std::uint8_t*>(x_store.get()) + x_offset;
  auto ddz = upload(dZ.bytes.data(), dZ.bytes.size());
  auto z = poisoned(std::size_t(tokens * out) * 2), dx = poisoned(std::size_t(tokens * in) * 2);
  poison(layer.weight_grad(), std::size_t(out * in) * 2);
  if (c.bias) poison(layer.bias_grad(), std::size_t(out) * 2);

  const train::FstStepInfo info = layer.begin_step();
  EXPECT_EQ(info.phase, FstPhase::sparse);
  EXPECT_EQ(info.mask_refreshed, expect_refresh);
  layer.forward(x_dev, tokens, z.get());
  const std::uint64_t seed = layer.mvue_seed();
  layer.backward(x_dev, ddz.get(), tokens, dx.get());
  EXPECT_NE(layer.mvue_seed(), seed) << "each backward draws a new MVUE seed";
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());

  const train::FstDebugView dv = layer.debug_view();
  const std::vector<int> M = unpack_mask(dv.mask, out, in);
  // which operands are current: the layer's backends, and whether this call could use cuSPARSELt
  // (planned for tokens == max_tokens and 16-byte aligned operands; else ours)
  const train::FstBackendReport& rep = layer.backends();
  const bool lt_f = rep.forward.backend == FstBackend::cusparselt, lt_d = rep.grad_input.backend == FstBackend::cusparselt,
             lt_w = rep.grad_weight.backend == FstBackend::cusparselt;
  const bool full = tokens == c.max_tokens && x_offset == 0;
  EXPECT_EQ(dv.w_dense.values != nullptr, lt_f || lt_d) << "dense S(W) exists iff a weight GEMM is on cuSPARSELt";
  if (lt_f && lt_d && full && !expect_refresh) EXPECT_EQ(dv.w.values, nullptr) << "both weight GEMMs on cuSPARSELt: no apply";
  if (!(lt_f && lt_d)) EXPECT_NE(dv.w.values, nullptr);
  EXPECT_EQ(dv.grad_dense.values != nullptr, lt_w && full) << "dW on cuSPARSELt for full, aligned calls only";
  EXPECT_EQ(dv.grad.values != nullptr, !(lt_w && full));
  std::vector<double> SW, SWt, G;
  if (dv.w.values) {
    ASSERT_EQ(dv.w.rows, out);
    ASSERT_EQ(dv.w.k, in);
    ASSERT_EQ(dv.wt.rows, in);
    ASSERT_EQ(dv.wt.k, out);
    SW = unpack(dv.w, t);
    SWt = unpack(dv.wt, t);
  }
  if (dv.w_dense.values) {
    ASSERT_EQ(dv.w_dense.rows, out);
    ASSERT_EQ(dv.w_dense.cols, in);
    const std::vector<double> D = download_dense(dv.w_dense, t);
    if (!SW.empty()) EXPECT_EQ(D, SW) << "dense and packed S(W) differ";
    SW = D;
    SWt.assign(SW.size(), 0.0);
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t i = 0; i < in; ++i) SWt[std::size_t(i * out + o)] = SW[std::size_t(o * in + i)];
  }
  ASSERT_FALSE(SW.empty()) << "neither the packed nor the dense S(W) is current";
  if (dv.grad.values) {
    ASSERT_EQ(dv.grad.rows, out);
    ASSERT_EQ(dv.grad.k, tokens);
    G = unpack(dv.grad, t);
  } else {
    ASSERT_NE(dv.grad_dense.values, nullptr) << "neither the packed nor the dense MVUE operand is current";
    ASSERT_EQ(dv.grad_dense.rows, out);
    ASSERT_EQ(dv.grad_dense.cols, tokens);
    G = download_dense(dv.grad_dense, t);
  }
  // S(W) = W . M exactly, S(W)^T its transpose
  std::int64_t bad = 0;
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i) {
      const double want = M[std::size_t(o * in + i)] ? double(W.at(o, i)) : 0.0;
      bad += SW[std::size_t(o * in + i)] != want;
      bad += SWt[std::size_t(i * out + o)] != want;
    }
  EXPECT_EQ(bad, 0) << "S(W) / S(W)^T differ from W . mask";
  // MVUE(dZ^T): <= 2 kept per group of 4 tokens, each kept value has dZ's sign and |value| >= |dZ|
  bad = 0;
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t t0 = 0; t0 < tokens; t0 += 4) {
      int kept = 0;
      for (std::int64_t tt = t0; tt < std::min(t0 + 4, tokens); ++tt) {
        const double gv = G[std::size_t(o * tokens + tt)], zv = dZ.at(tt, o);
        if (gv == 0.0) continue;
        ++kept;
        bad += !(gv * zv > 0 && std::fabs(gv) >= std::fabs(zv));
      }
      bad += kept > 2;
    }
  EXPECT_EQ(bad, 0) << "MVUE operand is not a 2:4 rescaled selection of dZ^T";

  // Z = X . S(W)^T + b
  std::vector<double> ref(std::size_t(tokens * out)), tol(ref.size());
  for (std::int64_t tk = 0; tk < tokens; ++tk)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = 0, a = 0;
      for (std::int64_t i = 0; i < in; ++i) {
        const double p = double(X.at(tk, i)) * SW[std::size_t(o * in + i)];
        s += p;
        a += std::fabs(p);
      }
      const double bb = c.bias ? double(b.at(0, o)) : 0.0;
      ref[std::size_t(tk * out + o)] = s + bb;
      tol[std::size_t(tk * out + o)] = 2.5 * u * (a + std::fabs(bb)) + 1e-6;
    }
  expect_close(from_device(z.get(), t, tokens, out), ref, tol, "Z");
  // dX = dZ . S(W)
  ref.assign(std::size_t(tokens * in), 0);
  tol.assign(ref.size(), 0);
  for (std::int64_t tk = 0; tk < tokens; ++tk)
    for (std::int64_t i = 0; i < in; ++i) {
      double s = 0, a = 0;
      for (std::int64_t o = 0; o < out; ++o) {
        const double p = double(dZ.at(tk, o)) * SWt[std::size_t(i * out + o)];
        s += p;
        a += std::fabs(p);
      }
      ref[std::size_t(tk * in + i)] = s;
      tol[std::size_t(tk * in + i)] = 1.5 * u * a + 1e-6;
    }
  expect_close(from_device(dx.get(), t, tokens, in), ref, tol, "dX");
  // dW = MVUE(dZ^T) . X (+ decay * !M . W)
  ref.assign(std::size_t(out * in), 0);
  tol.assign(ref.size(), 0);
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i) {
      double s = 0, a = 0;
      for (std::int64_t tk = 0; tk < tokens; ++tk) {
        const double p = G[std::size_t(o * tokens + tk)] * double(X.at(tk, i));
        s += p;
        a += std::fabs(p);
      }
      const double dec = M[std::size_t(o * in + i)] ? 0.0 : double(c.decay) * double(W.at(o, i));
      ref[std::size_t(o * in + i)] = s + dec;
      tol[std::size_t(o * in + i)] = 2.5 * u * (a + std::fabs(dec)) + 1e-6;
    }
  expect_close(from_device(layer.weight_grad(), t, out, in), ref, tol, "dW");
  if (c.bias) {
    ref.assign(std::size_t(out), 0);
    tol.assign(ref.size(), 0);
    for (std::int64_t o = 0; o < out; ++o) {
      double s = 0, a = 0;
      for (std::int64_t tk = 0; tk < tokens; ++tk) {
        s += dZ.at(tk, o);
        a += std::fabs(dZ.at(tk, o));
      }
      ref[std::size_t(o)] = s;
      tol[std::size_t(o)] = u * std::fabs(s) + 1e-5 * a + 1e-6;
    }
    expect_close(from_device(layer.bias_grad(), t, 1, out), ref, tol, "db");
  }
}

class FstShapes : public ::testing::TestWithParam<std::tuple<Shape, DType>> {};

TEST_P(FstShapes, ForwardBackwardEqualReference) {
  FST_REQUIRE_SM80();
  const auto [s, t] = GetParam();
  SCOPED_TRACE("out " + std::to_string(s.out) + " in " + std::to_string(s.in) + " tokens " + std::to_string(s.tokens) + " " +
               std::string(to_string(t)));
  FstConfig c;
  c.in_features = s.in;
  c.out_features = s.out;
  c.max_tokens = s.tokens + 5;  // buffers larger than the call
  c.dtype = t;
  c.bias = (s.out % 2) == 0;
  c.decay = 0.03f;
  c.seed = 1234;
  FstLinear layer(c);
  const std::uint64_t seed = std::uint64_t(s.out * 1000003 + s.in * 1009 + s.tokens);
  const HostMat W = random_mat(t, s.out, s.in, seed + 1), b = random_mat(t, 1, s.out, seed + 2),
                X = random_mat(t, s.tokens, s.in, seed + 3), dZ = random_mat(t, s.tokens, s.out, seed + 4, -2.f, 2.f);
  check_sparse_step(layer, W, b, X, dZ, s.tokens, true);
  // a second micro-batch of the same step with fewer tokens (other MVUE pitch, same S(W))
  layer.end_step();
  const std::int64_t t2 = std::max<std::int64_t>(1, s.tokens - 3);
  const HostMat X2 = random_mat(t, t2, s.in, seed + 5), dZ2 = random_mat(t, t2, s.out, seed + 6);
  check_sparse_step(layer, W, b, X2, dZ2, t2, false);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FstShapes,
    ::testing::Values(std::make_tuple(Shape{64, 64, 64}, DType::f16),     // everything direct, one tile
                      std::make_tuple(Shape{96, 80, 128}, DType::f16),    // in = 80: values repacked
                      std::make_tuple(Shape{70, 37, 45}, DType::f16),     // tails everywhere, X / dZ padded to 8
                      std::make_tuple(Shape{70, 37, 45}, DType::bf16),
                      std::make_tuple(Shape{256, 192, 320}, DType::bf16),  // several tiles
                      std::make_tuple(Shape{200, 130, 257}, DType::f16),
                      std::make_tuple(Shape{384, 256, 512}, DType::f16)));

// in % 8 == 0 takes the fused weight-gradient GEMM on sm_90 (X read in place, dW written
// directly); an X pointer that is not 16-byte aligned must fall back to the transposing path
// (and the padded-X forward), first with buffers allocated on demand. Same step, both pointers.
TEST(FstLinear, UnalignedInputTakesTheTransposingPath) {
  FST_REQUIRE_SM80();
  FstConfig c;
  c.in_features = 80;
  c.out_features = 96;
  c.max_tokens = 200;
  c.dtype = DType::f16;
  c.bias = true;
  c.decay = 0.02f;
  c.seed = 99;
  FstLinear layer(c);
  const HostMat W = random_mat(c.dtype, 96, 80, 501), b = random_mat(c.dtype, 1, 96, 502),
                X = random_mat(c.dtype, 133, 80, 503), dZ = random_mat(c.dtype, 133, 96, 504, -2.f, 2.f);
  check_sparse_step(layer, W, b, X, dZ, 133, true, 2);
  layer.end_step();
  check_sparse_step(layer, W, b, X, dZ, 133, false, 0);
  layer.end_step();
  check_sparse_step(layer, W, b, X, dZ, 133, false, 2);
}

// ---- session 8: wgmma tiles (forced per call, timed at construction) and the phase marks ----

/// Restores the process-wide tile / sink settings of fst_kernels.hpp when a test ends (also on failure).
struct FstGlobalsGuard {
  ~FstGlobalsGuard() {
    train::detail::set_fst_tile_force(-1);
    train::detail::set_fst_tile_policy(train::detail::FstTilePolicy::heuristic);
    train::detail::set_fst_phase_sink(nullptr);
    train::detail::set_fst_fork_backward(false);
    train::detail::set_fst_bias_variant(1);  // the default
  }
};

FstConfig tile_config(const Shape& s, DType t, std::int64_t max_tokens) {
  FstConfig c;
  c.in_features = s.in;
  c.out_features = s.out;
  c.max_tokens = max_tokens;
  c.dtype = t;
  c.bias = true;
  c.decay = 0.01f;
  c.seed = 77;
  return c;
}

// Every tile the FST GEMMs may take (forced on all three GEMMs), on the fused (in % 8 == 0) and the
// transposing / padded path (tails), against the fp64 reference of the layer's own mask and MVUE.
TEST(FstLinear, EveryWgmmaTileEqualsReference) {
  FST_REQUIRE_SM80();
  FstGlobalsGuard guard;
  const Shape shapes[2] = {{384, 256, 333}, {200, 130, 257}};
  const cuda::sptc::WgTile tiles[3] = {cuda::sptc::WgTile::m128n256, cuda::sptc::WgTile::m128n128,
                                       cuda::sptc::WgTile::m64n128};
  for (const Shape& s : shapes)
    for (const auto tile : tiles) {
      SCOPED_TRACE("out " + std::to_string(s.out) + " in " + std::to_string(s.in) + " tile " + cuda::sptc::to_string(tile));
      FstLinear layer(tile_config(s, DType::f16, s.tokens));
      train::detail::set_fst_tile_force(int(tile));
      const std::uint64_t seed = std::uint64_t(s.out * 31 + s.in * 7 + int(tile));
      const HostMat W = random_mat(DType::f16, s.out, s.in, seed + 1), b = random_mat(DType::f16, 1, s.out, seed + 2),
                    X = random_mat(DType::f16, s.tokens, s.in, seed + 3),
                    dZ = random_mat(DType::f16, s.tokens, s.out, seed + 4, -2.f, 2.f);
      check_sparse_step(layer, W, b, X, dZ, s.tokens, true);
      train::detail::set_fst_tile_force(-1);
    }
}

// FstTilePolicy::timed: the tiles are timed at construction on scratch data (which must not leak
// into the layer's state: the first step still searches a mask), reported once per shape, and the
// layer's steps at tokens = max_tokens (timed tiles) and fewer tokens (heuristic) equal the reference.
TEST(FstLinear, TimedTilesEqualReference) {
  FST_REQUIRE_SM80();
  FstGlobalsGuard guard;
  const Shape shapes[2] = {{512, 384, 640}, {200, 130, 257}};
  for (const Shape& s : shapes) {
    for (DType t : {DType::f16, DType::bf16}) {
      SCOPED_TRACE("out " + std::to_string(s.out) + " in " + std::to_string(s.in) + " " + std::string(to_string(t)));
      train::detail::set_fst_tile_policy(train::detail::FstTilePolicy::timed);
      FstLinear layer(tile_config(s, t, s.tokens));
      train::detail::set_fst_tile_policy(train::detail::FstTilePolicy::heuristic);
      const std::string report = train::detail::fst_timed_tiles(t, s.in, s.out, s.tokens);
      if (cuda::sptc::device_cc() == 90) {
        EXPECT_NE(report.find("fwd"), std::string::npos) << report;
        EXPECT_NE(report.find("dW"), std::string::npos) << report;
      } else {
        EXPECT_TRUE(report.empty()) << report;
      }
      const std::uint64_t seed = std::uint64_t(s.out * 13 + s.in + int(t));
      const HostMat W = random_mat(t, s.out, s.in, seed + 1), b = random_mat(t, 1, s.out, seed + 2),
                    X = random_mat(t, s.tokens, s.in, seed + 3), dZ = random_mat(t, s.tokens, s.out, seed + 4, -2.f, 2.f);
      check_sparse_step(layer, W, b, X, dZ, s.tokens, true);
      layer.end_step();
      const std::int64_t t2 = s.tokens - 61;
      const HostMat X2 = random_mat(t, t2, s.in, seed + 5), dZ2 = random_mat(t, t2, s.out, seed + 6);
      check_sparse_step(layer, W, b, X2, dZ2, t2, false);
    }
  }
}

// The phase marks the fst bench's breakdown reads: one per phase, in launch order, on the call's
// stream; nothing when no sink is set.
struct RecordingSink final : train::detail::FstPhaseSink {
  std::vector<std::string> names;
  void mark(const char* phase, cudaStream_t) override { names.emplace_back(phase); }
};
TEST(FstLinear, PhaseMarksFollowTheStep) {
  FST_REQUIRE_SM80();
  FstGlobalsGuard guard;
  FstConfig c = tile_config(Shape{96, 64, 80}, DType::f16, 80);
  c.schedule.total_steps = 3;
  c.schedule.dense_fraction = 1.0 / 3.0;  // steps 0, 1 sparse, step 2 dense
  FstLinear layer(c);
  const HostMat W = random_mat(DType::f16, 96, 64, 901), X = random_mat(DType::f16, 80, 64, 902),
                dZ = random_mat(DType::f16, 80, 96, 903);
  to_device(layer.weight(), W);
  auto dx = upload(X.bytes.data(), X.bytes.size()), dz = upload(dZ.bytes.data(), dZ.bytes.size());
  auto z = poisoned(std::size_t(80 * 96) * 2), gx = poisoned(std::size_t(80 * 64) * 2);
  RecordingSink sink;
  const std::vector<std::string> sparse_tail = {"fwd_gemm", "bias_add", "dx_gemm", "mvue", "dw_gemm", "decay", "colsum"};
  std::vector<std::vector<std::string>> expect = {{"refresh"}, {"apply"}, {}};
  for (int i = 0; i < 2; ++i) expect[std::size_t(i)].insert(expect[std::size_t(i)].end(), sparse_tail.begin(), sparse_tail.end());
  expect[2] = {"fwd_gemm", "bias_add", "dx_gemm", "dw_gemm", "colsum"};
  for (int step = 0; step < 3; ++step) {
    sink.names.clear();
    train::detail::set_fst_phase_sink(&sink);
    layer.begin_step();
    layer.forward(dx.get(), 80, z.get());
    layer.backward(dx.get(), dz.get(), 80, gx.get());
    train::detail::set_fst_phase_sink(nullptr);
    layer.end_step();
    EXPECT_EQ(sink.names, expect[std::size_t(step)]) << "step " << step;
  }
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  sink.names.clear();
  layer.set_step(0);
  layer.begin_step();  // no sink: nothing recorded
  EXPECT_TRUE(sink.names.empty());
}

// Backward fork (fst_kernels.hpp set_fst_fork_backward): the weight-gradient chain on the layer's
// second stream must give bit-identical dX, dW, db to the one-stream order (same kernels, same MVUE
// seeds), on the legacy stream and on a caller's stream, sparse and dense phase, and must be joined
// before backward returns (the caller's stream sees dW without any other synchronisation).
TEST(FstLinear, ForkedBackwardIsBitIdenticalToOneStream) {
  FST_REQUIRE_SM80();
  FstGlobalsGuard guard;
  cudaStream_t user = nullptr;
  SPARSENM_CUDA_CHECK(cudaStreamCreate(&user));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } sg{user};
  for (const Shape& s : {Shape{384, 256, 333}, Shape{200, 130, 257}}) {
    for (cudaStream_t st : {cudaStream_t(nullptr), user}) {
      SCOPED_TRACE("out " + std::to_string(s.out) + " in " + std::to_string(s.in) + (st ? " user stream" : " legacy stream"));
      FstConfig c = tile_config(s, DType::f16, s.tokens);
      c.schedule.total_steps = 2;
      c.schedule.dense_fraction = 0.5;  // step 0 sparse, step 1 dense
      FstLinear one(c), two(c);
      const std::uint64_t seed = std::uint64_t(s.out * 3 + s.in);
      const HostMat W = random_mat(DType::f16, s.out, s.in, seed + 1), b = random_mat(DType::f16, 1, s.out, seed + 2),
                    X = random_mat(DType::f16, s.tokens, s.in, seed + 3),
                    dZ = random_mat(DType::f16, s.tokens, s.out, seed + 4, -2.f, 2.f);
      auto dx_ = upload(X.bytes.data(), X.bytes.size()), dz_ = upload(dZ.bytes.data(), dZ.bytes.size());
      for (FstLinear* l : {&one, &two}) {
        to_device(l->weight(), W);
        to_device(l->bias(), b);
      }
      SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      for (int step = 0; step < 2; ++step) {
        std::vector<std::vector<std::uint8_t>> got[2];
        FstLinear* layers[2] = {&one, &two};
        for (int k = 0; k < 2; ++k) {
          train::detail::set_fst_fork_backward(k == 1);
          FstLinear& l = *layers[k];
          auto z = poisoned(std::size_t(s.tokens * s.out) * 2), gx = poisoned(std::size_t(s.tokens * s.in) * 2);
          poison(l.weight_grad(), std::size_t(s.out * s.in) * 2);
          poison(l.bias_grad(), std::size_t(s.out) * 2);
          SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
          l.begin_step(st);
          l.forward(dx_.get(), s.tokens, z.get(), st);
          l.backward(dx_.get(), dz_.get(), s.tokens, gx.get(), st);
          // read back through the caller's stream only: the join must order dW / db before these copies
          auto read = [&](const void* p, std::size_t bytes) {
            std::vector<std::uint8_t> h(bytes);
            SPARSENM_CUDA_CHECK(cudaMemcpyAsync(h.data(), p, bytes, cudaMemcpyDeviceToHost, st));
            return h;
          };
          got[k].push_back(read(gx.get(), std::size_t(s.tokens * s.in) * 2));
          got[k].push_back(read(l.weight_grad(), std::size_t(s.out * s.in) * 2));
          got[k].push_back(read(l.bias_grad(), std::size_t(s.out) * 2));
          SPARSENM_CUDA_CHECK(cudaStreamSynchronize(st));
          l.end_step();
        }
        const char* what[3] = {"dX", "dW", "db"};
        for (int i = 0; i < 3; ++i) {
          const auto& a = got[0][std::size_t(i)];
          const auto& bb = got[1][std::size_t(i)];
          if (step == 0) {  // sparse: our kernels, bit-identical
            EXPECT_TRUE(a == bb) << what[i] << " differs, step " << step;
            continue;
          }
          // dense: cuBLAS may pick another algorithm for another workspace / stream: f16 rounding apart
          ASSERT_EQ(a.size(), bb.size());
          double maxabs = 0;
          for (std::size_t e = 0; e < a.size() / 2; ++e)
            maxabs = std::max(maxabs, std::fabs(double(bits_to_float(DType::f16, std::uint16_t(a[2 * e] | a[2 * e + 1] << 8)))));
          int bad = 0;
          for (std::size_t e = 0; e < a.size() / 2; ++e) {
            const double va = bits_to_float(DType::f16, std::uint16_t(a[2 * e] | a[2 * e + 1] << 8));
            const double vb = bits_to_float(DType::f16, std::uint16_t(bb[2 * e] | bb[2 * e + 1] << 8));
            bad += !(std::fabs(va - vb) <= std::ldexp(1.0, -9) * std::fabs(va) + 1e-3 * maxabs);
          }
          EXPECT_EQ(bad, 0) << what[i] << " differs beyond f16 rounding, dense step";
        }
        // and not poison: the dW of the forked layer holds finite values
        const HostMat gw = from_device(two.weight_grad(), DType::f16, s.out, s.in);
        int nonfinite = 0;
        for (std::int64_t r = 0; r < s.out; ++r)
          for (std::int64_t q = 0; q < s.in; ++q) nonfinite += !std::isfinite(gw.at(r, q));
        EXPECT_EQ(nonfinite, 0) << "step " << step;
      }
    }
  }
}

// Bias-add variants (fst_kernels.hpp set_fst_bias_variant): the vectorised kernel (out % 8 == 0,
// 16-byte aligned z and b) and the element-wise fallback it takes otherwise must both equal the host
// rule (fp32 add, one rounding to the dtype) bit for bit; the columns past `out` of a row never exist
// (rows are contiguous), so a guard region after z must stay untouched.
TEST(FstKernels, BiasAddVariantsEqualTheHostRule) {
  FST_REQUIRE_SM80();
  FstGlobalsGuard guard;
  struct Case {
    std::int64_t tokens, out;
    std::size_t offset;  // bytes added to z's pointer (2: unaligned, the fallback)
  };
  const Case cases[] = {{37, 64, 0}, {300, 1280, 0}, {129, 8, 0}, {45, 70, 0}, {61, 264, 2}, {1, 2056, 0}, {200, 5120, 0}};
  for (DType t : {DType::f16, DType::bf16})
    for (const Case& c : cases)
      for (int variant : {0, 1}) {
        SCOPED_TRACE(std::string(to_string(t)) + " tokens " + std::to_string(c.tokens) + " out " + std::to_string(c.out) +
                     " offset " + std::to_string(c.offset) + " variant " + std::to_string(variant));
        const HostMat z = random_mat(t, c.tokens, c.out, 7000 + std::uint64_t(c.out + c.tokens), -3.f, 3.f);
        const HostMat b = random_mat(t, 1, c.out, 7100 + std::uint64_t(c.out));
        HostMat want = z;
        for (std::int64_t r = 0; r < c.tokens; ++r)
          for (std::int64_t o = 0; o < c.out; ++o) want.set(r, o, z.at(r, o) + b.at(0, o));
        const std::size_t guard_bytes = 256;
        auto store = poisoned(z.bytes.size() + c.offset + guard_bytes);
        std::uint8_t* zp = static_cast<std::uint8_t*>(store.get()) + c.offset;
        SPARSENM_CUDA_CHECK(cudaMemcpy(zp, z.bytes.data(), z.bytes.size(), cudaMemcpyHostToDevice));
        auto bd = upload(b.bytes.data(), b.bytes.size());
        train::detail::set_fst_bias_variant(variant);
        train::detail::fst_add_bias(t, zp, c.tokens, c.out, bd.get(), nullptr);
        SPARSENM_CUDA_CHECK(cudaGetLastError());
        std::vector<std::uint8_t> got(z.bytes.size() + guard_bytes);
        SPARSENM_CUDA_CHECK(cudaMemcpy(got.data(), zp, got.size(), cudaMemcpyDeviceToHost));
        EXPECT_EQ(0, std::memcmp(got.data(), want.bytes.data(), want.bytes.size())) << "z + b differs from the host rule";
        bool guard_ok = true;
        for (std::size_t i = z.bytes.size(); i < got.size(); ++i) guard_ok = guard_ok && got[i] == 0xFF;
        EXPECT_TRUE(guard_ok) << "bytes written past z";
      }
}

// ---- GEMM backends (FstConfig::backends, FstLinear::backends()) ----

std::string lt_missing() { return cuda::lt::unavailable_reason(); }
#define FST_REQUIRE_LT()                                                          \
  FST_REQUIRE_SM80();                                                             \
  if (const std::string why = lt_missing(); !why.empty())                         \
  GTEST_SKIP() << "cuSPARSELt unavailable (" << why << "): cuSPARSELt FST test skipped"

struct Forced {
  FstBackend f, d, w;
  const char* name;
};

class FstForcedBackends : public ::testing::TestWithParam<std::tuple<Forced, DType>> {};

// Each GEMM forced on each backend: gradients equal the fp64 reference computed with the layer's own
// mask and MVUE sample, over three steps (refresh, apply, refresh with l = 2), a full call
// (tokens == max_tokens: cuSPARSELt runs), a shorter micro-batch and an unaligned X (both fall back
// to ours, the packed S(W) applied on demand when both weight GEMMs are on cuSPARSELt).
TEST_P(FstForcedBackends, GradientsEqualReference) {
  const auto [fb, t] = GetParam();
  if (fb.f == FstBackend::cusparselt || fb.d == FstBackend::cusparselt || fb.w == FstBackend::cusparselt) {
    FST_REQUIRE_LT();
  } else {
    FST_REQUIRE_SM80();
  }
  SCOPED_TRACE(std::string(fb.name) + " " + std::string(to_string(t)));
  const std::int64_t out = 96, in = 80, T = 128;
  FstConfig c;
  c.in_features = in;
  c.out_features = out;
  c.max_tokens = T;
  c.dtype = t;
  c.bias = true;
  c.decay = 0.02f;
  c.seed = 4242;
  c.schedule.mask_interval = 2;
  c.backends = {fb.f, fb.d, fb.w};
  FstLinear layer(c);
  const train::FstBackendReport& rep = layer.backends();
  EXPECT_EQ(rep.forward.backend, fb.f);
  EXPECT_EQ(rep.grad_input.backend, fb.d);
  EXPECT_EQ(rep.grad_weight.backend, fb.w);
  for (const train::FstGemmChoice* g : {&rep.forward, &rep.grad_input, &rep.grad_weight}) {
    EXPECT_NE(g->reason.find("forced"), std::string::npos) << g->reason;
    EXPECT_TRUE(std::isnan(g->sptc_ms) && std::isnan(g->cusparselt_ms)) << "nothing is timed when forced";
  }
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::uint64_t sd = 9000 + 10 * std::uint64_t(step);
    const HostMat W = random_mat(t, out, in, sd + 1), b = random_mat(t, 1, out, sd + 2), X = random_mat(t, T, in, sd + 3),
                  dZ = random_mat(t, T, out, sd + 4, -2.f, 2.f);
    check_sparse_step(layer, W, b, X, dZ, T, step % 2 == 0);
    if (step == 1) {
      // same step, other micro-batches: fewer tokens, then an unaligned X (both run on ours)
      const HostMat X2 = random_mat(t, T - 24, in, sd + 5), dZ2 = random_mat(t, T - 24, out, sd + 6);
      check_sparse_step(layer, W, b, X2, dZ2, T - 24, false);
      check_sparse_step(layer, W, b, X, dZ, T, false, 2);
    }
    layer.end_step();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, FstForcedBackends,
    ::testing::Combine(::testing::Values(Forced{FstBackend::sptc, FstBackend::sptc, FstBackend::sptc, "sptc/sptc/sptc"},
                                         Forced{FstBackend::cusparselt, FstBackend::cusparselt, FstBackend::cusparselt,
                                                "lt/lt/lt"},
                                         Forced{FstBackend::cusparselt, FstBackend::sptc, FstBackend::sptc, "lt/sptc/sptc"},
                                         Forced{FstBackend::sptc, FstBackend::cusparselt, FstBackend::cusparselt,
                                                "sptc/lt/lt"}),
                       ::testing::Values(DType::f16, DType::bf16)));

// The automatic choice: a shape cuSPARSELt can take is timed (both times reported, the faster by
// >= 1 % chosen) and the layer's gradients still equal the reference; a shape it cannot take stays on
// ours with the rule as the reason; a schedule without sparse steps times nothing.
TEST(FstLinear, AutomaticChoiceIsReported) {
  FST_REQUIRE_SM80();
  const bool lt = lt_missing().empty();
  FstConfig c;
  c.in_features = 128;
  c.out_features = 192;
  c.max_tokens = 256;
  c.dtype = DType::f16;
  c.seed = 5;
  {
    FstLinear layer(c);
    const train::FstBackendReport& rep = layer.backends();
    std::printf("automatic choice, out 192 in 128 tokens 256:\n%s\n", rep.to_string().c_str());
    for (const train::FstGemmChoice* g : {&rep.forward, &rep.grad_input, &rep.grad_weight}) {
      EXPECT_NE(g->backend, FstBackend::automatic);
      if (!lt) {
        EXPECT_EQ(g->backend, FstBackend::sptc);
        EXPECT_NE(g->reason.find("unavailable"), std::string::npos) << g->reason;
        continue;
      }
      EXPECT_NE(g->reason.find("timed"), std::string::npos) << g->reason;
      ASSERT_TRUE(std::isfinite(g->sptc_ms) && std::isfinite(g->cusparselt_ms) && g->sptc_ms > 0 && g->cusparselt_ms > 0);
      const bool want_lt = g->cusparselt_ms * 1.01 < g->sptc_ms;
      if (g == &rep.grad_weight) EXPECT_EQ(g->backend == FstBackend::cusparselt, want_lt);
    }
    const HostMat W = random_mat(c.dtype, 192, 128, 71), b = random_mat(c.dtype, 1, 192, 72),
                  X = random_mat(c.dtype, 256, 128, 73), dZ = random_mat(c.dtype, 256, 192, 74, -2.f, 2.f);
    check_sparse_step(layer, W, b, X, dZ, 256, true);
  }
  {
    FstConfig d = c;
    d.in_features = 120;  // not a multiple of 16
    FstLinear layer(d);
    for (const train::FstGemmChoice* g : {&layer.backends().forward, &layer.backends().grad_input, &layer.backends().grad_weight}) {
      EXPECT_EQ(g->backend, FstBackend::sptc);
      EXPECT_NE(g->reason.find(lt ? "multiples of 16" : "unavailable"), std::string::npos) << g->reason;
      EXPECT_TRUE(std::isnan(g->sptc_ms));
    }
  }
  {
    FstConfig d = c;
    d.schedule.total_steps = 10;
    d.schedule.dense_fraction = 1.0;  // dense from step 0: no sparse GEMM ever runs
    FstLinear layer(d);
    EXPECT_EQ(layer.backends().forward.backend, FstBackend::sptc);
    if (lt) EXPECT_NE(layer.backends().forward.reason.find("no sparse step"), std::string::npos) << layer.backends().forward.reason;
  }
}

// A second automatic layer of the same shape takes the first one's decision without timing (a
// process-wide cache: GPT-2 has 36-48 identical layers) and says so; its gradients stay right.
TEST(FstLinear, AutomaticDecisionIsReusedForIdenticalLayers) {
  FST_REQUIRE_SM80();
  FstConfig c;
  c.in_features = 160;  // a shape no other test uses, so the first layer below is timed here
  c.out_features = 224;
  c.max_tokens = 272;
  c.dtype = DType::f16;
  c.seed = 9;
  FstLinear first(c);
  ASSERT_EQ(first.backends().forward.reason.find("reused"), std::string::npos) << first.backends().forward.reason;
  c.seed = 10;  // the seed is not part of the decision
  FstLinear second(c);
  const train::FstBackendReport &a = first.backends(), &b = second.backends();
  const train::FstGemmChoice* ga[3] = {&a.forward, &a.grad_input, &a.grad_weight};
  const train::FstGemmChoice* gb[3] = {&b.forward, &b.grad_input, &b.grad_weight};
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(ga[g]->backend, gb[g]->backend) << g;
    EXPECT_EQ(gb[g]->reason.rfind(ga[g]->reason, 0), 0u) << gb[g]->reason;  // the first reason, then the note
    EXPECT_NE(gb[g]->reason.find("reused from an identical layer"), std::string::npos) << gb[g]->reason;
  }
  // a different request is a different decision
  FstConfig d = c;
  d.backends.grad_weight = FstBackend::sptc;
  FstLinear third(d);
  EXPECT_EQ(third.backends().grad_weight.backend, FstBackend::sptc);
  EXPECT_EQ(third.backends().forward.reason.find("reused"), std::string::npos) << third.backends().forward.reason;
  const HostMat W = random_mat(c.dtype, 224, 160, 81), bias = random_mat(c.dtype, 1, 224, 82),
                X = random_mat(c.dtype, 272, 160, 83), dZ = random_mat(c.dtype, 272, 224, 84, -2.f, 2.f);
  check_sparse_step(second, W, bias, X, dZ, 272, true);
}

TEST(FstLinear, ImpossibleBackendRequests) {
  FST_REQUIRE_SM80();
  FstConfig c;
  c.in_features = 64;
  c.out_features = 64;
  c.max_tokens = 64;
  auto expect_arg = [&](FstConfig d, const char* arg) {
    try {
      FstLinear l(d);
      ADD_FAILURE() << "no exception for " << arg;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), arg) << e.what();
    }
  };
  FstConfig d = c;
  d.backends.forward = static_cast<FstBackend>(7);
  expect_arg(d, "backends.forward");
  if (!lt_missing().empty()) {
    d = c;
    d.backends.grad_weight = FstBackend::cusparselt;
    EXPECT_THROW(FstLinear l(d), Unsupported) << "cuSPARSELt forced without cuSPARSELt";
    GTEST_SKIP() << "cuSPARSELt unavailable (" << lt_missing() << "): shape-rule cases skipped";
  }
  d = c;
  d.in_features = 72;  // % 16 != 0
  d.backends.forward = FstBackend::cusparselt;
  expect_arg(d, "backends.forward");
  d = c;
  d.out_features = 40;
  d.backends.grad_input = FstBackend::cusparselt;
  expect_arg(d, "backends.grad_input");
  d = c;
  d.max_tokens = 100;
  d.backends.grad_weight = FstBackend::cusparselt;
  expect_arg(d, "backends.grad_weight");
  // the same shapes on ours or automatic are fine
  d.backends = {};
  EXPECT_NO_THROW(FstLinear l(d));
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(FstLinear, StateMachine) {
  FST_REQUIRE_SM80();
  const DType t = DType::f16;
  const std::int64_t out = 64, in = 48, T = 64;
  FstConfig c;
  c.in_features = in;
  c.out_features = out;
  c.max_tokens = T;
  c.dtype = t;
  c.bias = false;
  c.decay = 0.5f;  // visible in dW: must be absent in the dense phase
  c.schedule.mask_interval = 3;
  c.schedule.total_steps = 8;
  c.schedule.dense_fraction = 0.25;  // dense from step 6
  FstLinear layer(c);
  ASSERT_EQ(c.schedule.dense_from(), 6);
  auto x = upload(random_mat(t, T, in, 1).bytes.data(), std::size_t(T * in) * 2);
  auto dz = upload(random_mat(t, T, out, 2).bytes.data(), std::size_t(T * out) * 2);
  auto z = poisoned(std::size_t(T * out) * 2);
  EXPECT_THROW(layer.forward(x.get(), T, z.get()), InvalidArgument) << "forward before begin_step";
  EXPECT_TRUE(std::isnan(layer.last_flip_rate()));
  EXPECT_EQ(layer.last_flip_count(), -1);

  std::vector<int> mask_prev;
  for (std::int64_t step = 0; step < 8; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    // the "optimizer": a fresh W every step (so a refreshed mask differs from the old one)
    const HostMat W = random_mat(t, out, in, 100 + std::uint64_t(step));
    to_device(layer.weight(), W);
    ASSERT_EQ(layer.step(), step);
    const train::FstStepInfo info = layer.begin_step();
    const bool sparse = step < 6, refresh = sparse && step % 3 == 0;
    EXPECT_EQ(info.step, step);
    EXPECT_EQ(info.phase, sparse ? FstPhase::sparse : FstPhase::dense);
    EXPECT_EQ(layer.phase(), info.phase);
    EXPECT_EQ(info.mask_refreshed, refresh);
    EXPECT_EQ(info.flip_counted, refresh && step > 0);
    if (sparse) {
      const train::FstDebugView dv = layer.debug_view();
      const std::vector<int> M = unpack_mask(dv.mask, out, in);
      if (!refresh) EXPECT_EQ(M, mask_prev) << "the mask changes only at refresh steps";
      if (refresh && step > 0) {
        std::int64_t flips = 0;
        for (std::size_t i = 0; i < M.size(); ++i) flips += M[i] != mask_prev[i];
        EXPECT_GT(flips, 0);
        EXPECT_EQ(layer.last_flip_count(), flips);
        EXPECT_DOUBLE_EQ(layer.last_flip_rate(), double(flips) / double(out * in));
      }
      // S(W) is the CURRENT W under the current mask (apply path between refreshes; the dense
      // operand when the weight GEMMs run on cuSPARSELt)
      const std::vector<double> SW = dv.w_dense.values ? download_dense(dv.w_dense, t) : unpack(dv.w, t);
      std::int64_t bad = 0;
      for (std::int64_t o = 0; o < out; ++o)
        for (std::int64_t i = 0; i < in; ++i)
          bad += SW[std::size_t(o * in + i)] != (M[std::size_t(o * in + i)] ? double(W.at(o, i)) : 0.0);
      EXPECT_EQ(bad, 0);
      mask_prev = M;
    } else {
      // dense fine-tune: Z = X . W^T with the full W; dW = dZ^T . X without decay
      poison(z.get(), z.size());
      poison(layer.weight_grad(), std::size_t(out * in) * 2);
      layer.forward(x.get(), T, z.get());
      layer.backward(x.get(), dz.get(), T, nullptr);
      const HostMat X = from_device(x.get(), t, T, in), dZ = from_device(dz.get(), t, T, out);
      const double u = unit_roundoff(t);
      std::vector<double> ref(std::size_t(T * out)), tol(ref.size());
      for (std::int64_t tk = 0; tk < T; ++tk)
        for (std::int64_t o = 0; o < out; ++o) {
          double s = 0, a = 0;
          for (std::int64_t i = 0; i < in; ++i) {
            s += double(X.at(tk, i)) * W.at(o, i);
            a += std::fabs(double(X.at(tk, i)) * W.at(o, i));
          }
          ref[std::size_t(tk * out + o)] = s;
          tol[std::size_t(tk * out + o)] = 1.5 * u * a + 1e-6;
        }
      expect_close(from_device(z.get(), t, T, out), ref, tol, "dense Z");
      ref.assign(std::size_t(out * in), 0);
      tol.assign(ref.size(), 0);
      for (std::int64_t o = 0; o < out; ++o)
        for (std::int64_t i = 0; i < in; ++i) {
          double s = 0, a = 0;
          for (std::int64_t tk = 0; tk < T; ++tk) {
            s += double(dZ.at(tk, o)) * X.at(tk, i);
            a += std::fabs(double(dZ.at(tk, o)) * X.at(tk, i));
          }
          ref[std::size_t(o * in + i)] = s;
          tol[std::size_t(o * in + i)] = 1.5 * u * a + 1e-6;
        }
      expect_close(from_device(layer.weight_grad(), t, out, in), ref, tol, "dense dW");
    }
    layer.end_step();
  }
  EXPECT_THROW(layer.end_step(), InvalidArgument) << "end_step without begin_step";
  // resume in the sparse phase: the next begin_step searches a mask even off the interval
  layer.set_step(4);
  const train::FstStepInfo info = layer.begin_step();
  EXPECT_TRUE(info.mask_refreshed);
  EXPECT_FALSE(info.flip_counted);
}

TEST(FstLinear, Errors) {
  FST_REQUIRE_SM80();
  FstConfig c;
  c.in_features = 16;
  c.out_features = 16;
  c.max_tokens = 16;
  auto bad = [&](auto edit, const char* arg) {
    FstConfig d = c;
    edit(d);
    try {
      FstLinear l(d);
      ADD_FAILURE() << "no exception for " << arg;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), arg);
    }
  };
  bad([](FstConfig& d) { d.dtype = DType::f32; }, "dtype");
  bad([](FstConfig& d) { d.in_features = 0; }, "in_features");
  bad([](FstConfig& d) { d.out_features = -3; }, "out_features");
  bad([](FstConfig& d) { d.max_tokens = 0; }, "max_tokens");
  bad([](FstConfig& d) { d.decay = -1.f; }, "decay");
  bad([](FstConfig& d) { d.decay = std::numeric_limits<float>::infinity(); }, "decay");
  bad([](FstConfig& d) { d.schedule.mask_interval = 0; }, "mask_interval");
  bad([](FstConfig& d) { d.schedule.dense_fraction = -0.1; }, "dense_fraction");

  FstLinear layer(c);
  auto x = poisoned(16 * 16 * 2), z = poisoned(16 * 17 * 2);
  layer.begin_step();
  EXPECT_THROW(layer.forward(x.get(), 17, z.get()), InvalidArgument);
  EXPECT_THROW(layer.forward(x.get(), 0, z.get()), InvalidArgument);
  EXPECT_THROW(layer.forward(nullptr, 4, z.get()), InvalidArgument);
  EXPECT_THROW(layer.forward(x.get(), 4, nullptr), InvalidArgument);
  EXPECT_THROW(layer.backward(x.get(), nullptr, 4, nullptr), InvalidArgument);
  EXPECT_THROW(layer.set_step(-1), InvalidArgument);
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace sparsenm::test
