// GPU tests: masked decay (bit-exact vs host fmaf), flip count (vs a host popcount with the
// padding bits ignored), GEGLU / SwiGLU forward and backward in both layouts (vs fp64).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "sparsenm/error.hpp"
#include "sparsenm/train.hpp"
#include "train_test_util.hpp"

namespace sparsenm::test {
namespace {

std::vector<std::uint16_t> random_mask(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::uint16_t> m(std::size_t(train::mask24_words(rows, cols)));
  for (auto& x : m) x = std::uint16_t(g());
  return m;
}
bool kept(const std::vector<std::uint16_t>& m, std::int64_t cols, std::int64_t r, std::int64_t c) {
  const std::int64_t bc = (cols + 3) / 4;
  return (m[std::size_t((r / 4) * bc + c / 4)] >> (4 * (r % 4) + c % 4)) & 1u;
}

using Case = std::tuple<DType, std::int64_t, std::int64_t>;
class MaskedDecay : public ::testing::TestWithParam<Case> {};

TEST_P(MaskedDecay, BitExactAgainstHostFma) {
  SPARSENM_REQUIRE_GPU();
  const auto [t, R, C] = GetParam();
  const HostMat g = random_mat(t, R, C, 71), w = random_mat(t, R, C, 72, -3.f, 3.f);
  const auto mask = random_mask(R, C, 73);
  const float lambda = 0.0375f;
  auto dg = upload(g.bytes.data(), g.bytes.size()), dw = upload(w.bytes.data(), w.bytes.size());
  auto dm = upload(mask.data(), mask.size() * 2);
  train::masked_decay(t, dg.get(), dw.get(), dm.as<std::uint16_t>(), R, C, lambda);
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  const auto out = download<std::byte>(dg, g.bytes.size());
  HostMat ref = g;
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c)
      if (!kept(mask, C, r, c)) ref.set(r, c, std::fmaf(lambda, w.at(r, c), g.at(r, c)));
  EXPECT_EQ(out, ref.bytes);
}
INSTANTIATE_TEST_SUITE_P(Shapes, MaskedDecay,
                         ::testing::Values(Case{DType::f16, 64, 128}, Case{DType::f16, 37, 45}, Case{DType::bf16, 96, 64},
                                           Case{DType::f32, 128, 96}, Case{DType::f32, 5, 3}));

TEST(FlipCount, MatchesHostCountIgnoringPadding) {
  SPARSENM_REQUIRE_GPU();
  for (auto [R, C] : {std::pair<std::int64_t, std::int64_t>{256, 512}, {37, 45}, {4, 4}, {1280, 1600}, {3, 1}}) {
    const auto a = random_mask(R, C, 5), b = random_mask(R, C, 6);
    auto da = upload(a.data(), a.size() * 2), db = upload(b.data(), b.size() * 2);
    auto dc = poisoned(8);
    train::flip_count(da.as<std::uint16_t>(), db.as<std::uint16_t>(), R, C, dc.as<unsigned long long>());
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    unsigned long long ref = 0;
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t c = 0; c < C; ++c) ref += kept(a, C, r, c) != kept(b, C, r, c);
    EXPECT_EQ(download<unsigned long long>(dc, 1)[0], ref) << R << "x" << C;
    train::flip_count(da.as<std::uint16_t>(), da.as<std::uint16_t>(), R, C, dc.as<unsigned long long>());
    EXPECT_EQ(download<unsigned long long>(dc, 1)[0], 0ull);
  }
}

double act(bool gelu, double x, double* d) {
  if (gelu) {
    const double k0 = std::sqrt(2.0 / M_PI), k1 = 0.044715;
    const double t = std::tanh(k0 * (x + k1 * x * x * x));
    *d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k0 * (1 + 3 * k1 * x * x);
    return 0.5 * x * (1 + t);
  }
  const double s = 1 / (1 + std::exp(-x));
  *d = s * (1 + x * (1 - s));
  return x * s;
}

using GluCase = std::tuple<train::Gate, DType, bool, std::int64_t, std::int64_t>;  // gate, dtype, col-major, T, h
class Glu : public ::testing::TestWithParam<GluCase> {};

TEST_P(Glu, ForwardBackwardAgainstFp64) {
  SPARSENM_REQUIRE_GPU();
  const auto [gate, t, colmajor, T, h] = GetParam();
  const bool gelu = gate == train::Gate::geglu;
  // geometry of the two layouts (train.hpp)
  const std::int64_t rows = colmajor ? h : T, cols = colmajor ? T : h;
  const std::int64_t ld_in = colmajor ? T : 2 * h, off = colmajor ? h * T : h, ld_out = cols;
  const HostMat in = random_mat(t, 1, 2 * T * h, 81, -4.f, 4.f), dout = random_mat(t, rows, cols, 82);
  auto din_ = upload(in.bytes.data(), in.bytes.size()), ddo = upload(dout.bytes.data(), dout.bytes.size());
  auto dout_fwd = poisoned(std::size_t(rows * cols) * in.esz()), dgrad = poisoned(in.bytes.size());
  train::glu_forward(gate, t, din_.get(), rows, cols, ld_in, off, dout_fwd.get(), ld_out);
  train::glu_backward(gate, t, din_.get(), rows, cols, ld_in, off, ddo.get(), cols, dgrad.get());
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  HostMat y(t, rows, cols), gr(t, 1, 2 * T * h);
  y.bytes = download<std::byte>(dout_fwd, y.bytes.size());
  gr.bytes = download<std::byte>(dgrad, gr.bytes.size());
  const double rtol = t == DType::f32 ? 2e-6 : (t == DType::f16 ? 2e-3 : 1.6e-2), atol = t == DType::f32 ? 1e-6 : 1e-3;
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t ia = i * ld_in + j, ib = ia + off;
      const double a = in.at(0, ia), b = in.at(0, ib), go = dout.at(i, j);
      double d;
      const double f = act(gelu, b, &d);
      const double ry = a * f, rda = go * f, rdb = go * a * d;
      bad += std::fabs(y.at(i, j) - ry) > atol + rtol * std::fabs(ry);
      bad += std::fabs(gr.at(0, ia) - rda) > atol + rtol * std::fabs(rda);
      bad += std::fabs(gr.at(0, ib) - rdb) > atol + rtol * std::fabs(rdb);
    }
  EXPECT_EQ(bad, 0);
}
INSTANTIATE_TEST_SUITE_P(
    Layouts, Glu,
    ::testing::Values(GluCase{train::Gate::geglu, DType::f16, false, 64, 128}, GluCase{train::Gate::geglu, DType::f16, true, 64, 128},
                      GluCase{train::Gate::swiglu, DType::f16, false, 33, 45}, GluCase{train::Gate::swiglu, DType::bf16, true, 17, 40},
                      GluCase{train::Gate::geglu, DType::bf16, false, 16, 24}, GluCase{train::Gate::geglu, DType::f32, true, 31, 9},
                      GluCase{train::Gate::swiglu, DType::f32, false, 64, 64}));

TEST(TrainArgs, ElementwiseErrorsNameTheArgument) {
  int dummy[4] = {};
  const auto* m = reinterpret_cast<const std::uint16_t*>(dummy);
  EXPECT_THROW(train::masked_decay(DType::f16, nullptr, dummy, m, 4, 4, 0.1f), InvalidArgument);
  EXPECT_THROW(train::masked_decay(DType::f16, dummy, dummy, nullptr, 4, 4, 0.1f), InvalidArgument);
  EXPECT_THROW(train::masked_decay(DType::f16, dummy, dummy, m, 4, 4, NAN), InvalidArgument);
  EXPECT_THROW(train::flip_count(m, m, 4, 4, nullptr), InvalidArgument);
  EXPECT_THROW(train::flip_count(m, m, 0, 4, reinterpret_cast<unsigned long long*>(dummy)), InvalidArgument);
  EXPECT_THROW(train::glu_forward(train::Gate::geglu, DType::f16, dummy, 4, 8, 4, 8, dummy, 8), InvalidArgument);  // ld_in
  EXPECT_THROW(train::glu_forward(train::Gate::geglu, DType::f16, dummy, 4, 8, 16, 4, dummy, 8), InvalidArgument);  // overlap
  EXPECT_THROW(train::glu_forward(train::Gate::geglu, DType::f16, dummy, 4, 8, 16, 8, dummy, 7), InvalidArgument);  // ld_out
  EXPECT_THROW(train::glu_backward(train::Gate::swiglu, DType::f16, dummy, 4, 8, 16, 8, nullptr, 8, dummy), InvalidArgument);
}

}  // namespace
}  // namespace sparsenm::test
