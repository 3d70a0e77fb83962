// GPU tests: transposable 2:4 mask search and apply-mask + compression (src/cuda/train/mask24.cuh)
// against a host brute force over all 90 patterns (fp32 score as specified in train.hpp, and
// optimality in fp64), host compression of the masked matrix, tails, ties, NaN, violations.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "sparsenm/error.hpp"
#include "sparsenm/train.hpp"
#include "cuda/train/train_common.cuh"
#include "train_test_util.hpp"

namespace sparsenm::test {
namespace {

constexpr int kPa[6] = {0, 0, 0, 1, 1, 2}, kPb[6] = {1, 2, 3, 2, 3, 3};

std::uint16_t mask_of(const std::array<int, 4>& p);
/// The 90 transposable patterns in ascending 16-bit mask value (the CPU reference's order).
const std::vector<std::array<int, 4>>& patterns90() {
  static const std::vector<std::array<int, 4>> all = [] {
    std::vector<std::array<int, 4>> v;
    for (int p0 = 0; p0 < 6; ++p0)
      for (int p1 = 0; p1 < 6; ++p1)
        for (int p2 = 0; p2 < 6; ++p2)
          for (int p3 = 0; p3 < 6; ++p3) {
            int cnt[4] = {0, 0, 0, 0};
            for (int p : {p0, p1, p2, p3}) ++cnt[kPa[p]], ++cnt[kPb[p]];
            if (cnt[0] == 2 && cnt[1] == 2 && cnt[2] == 2 && cnt[3] == 2) v.push_back({p0, p1, p2, p3});
          }
    std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return mask_of(x) < mask_of(y); });
    return v;
  }();
  return all;
}
std::uint16_t mask_of(const std::array<int, 4>& p) {
  unsigned m = 0;
  for (int r = 0; r < 4; ++r) m |= ((1u << kPa[p[r]]) | (1u << kPb[p[r]])) << (4 * r);
  return std::uint16_t(m);
}

double mag(const HostMat& w, std::int64_t r, std::int64_t c) {
  const double a = (r < w.rows && c < w.cols) ? std::fabs(double(w.at(r, c))) : 0.0;
  return std::isnan(a) ? INFINITY : a;
}

/// Host brute force, the CPU reference's rule (train.hpp, src/prune/transposable.hpp): fp32
/// magnitudes (NaN -> inf), pair sums s_r, B = s0 + s1, T = s2 + s3, V = T + B (fp32); the
/// largest V, then the smallest top half (bits 8..15), then the largest B, then the smallest
/// bottom half -- written order-free over the 90 patterns.
std::vector<std::uint16_t> brute_mask(const HostMat& w) {
  const std::int64_t br = (w.rows + 3) / 4, bc = (w.cols + 3) / 4;
  std::vector<std::uint16_t> out(std::size_t(br * bc));
  for (std::int64_t i = 0; i < br; ++i)
    for (std::int64_t j = 0; j < bc; ++j) {
      float a[4][4];
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) a[r][c] = float(mag(w, 4 * i + r, 4 * j + c));
      float best = -1.0f, best_b = -1.0f;
      unsigned bm = 0xffffu;
      for (const auto& p : patterns90()) {
        float s[4];
        for (int r = 0; r < 4; ++r) s[r] = a[r][kPa[p[r]]] + a[r][kPb[p[r]]];
        const float b = s[0] + s[1], v = (s[2] + s[3]) + b;
        const unsigned m = mask_of(p);
        const bool better = v > best || (v == best && (m >> 8) < (bm >> 8)) ||
                            (v == best && (m >> 8) == (bm >> 8) && (b > best_b || (b == best_b && m < bm)));
        if (better) best = v, best_b = b, bm = m;
      }
      out[std::size_t(i * bc + j)] = std::uint16_t(bm);
    }
  return out;
}

bool transposable(std::uint16_t m) {
  for (int r = 0; r < 4; ++r)
    if (__builtin_popcount((m >> (4 * r)) & 0xfu) != 2) return false;
  for (int c = 0; c < 4; ++c) {
    int n = 0;
    for (int r = 0; r < 4; ++r) n += (m >> (4 * r + c)) & 1u;
    if (n != 2) return false;
  }
  return true;
}

/// Positions of a quad per the train.hpp rule (two lowest kept, then lowest free); counts bad.
std::pair<int, int> quad(unsigned m4, std::int64_t* bad) {
  m4 &= 0xfu;
  if (__builtin_popcount(m4) != 2 && bad) ++*bad;
  unsigned keep = 0;
  for (int i = 0; i < 4 && __builtin_popcount(keep) < 2; ++i)
    if (m4 & (1u << i)) keep |= 1u << i;
  for (int i = 0; i < 4 && __builtin_popcount(keep) < 2; ++i)
    if (!(keep & (1u << i))) keep |= 1u << i;
  return {__builtin_ctz(keep), 31 - __builtin_clz(keep)};
}

/// Host compression of W under mask (rows) and of W^T (columns), with violations counted.
std::pair<Hw24, Hw24> host_compress(const HostMat& w, const std::vector<std::uint16_t>& mask, std::int64_t* bad) {
  const std::int64_t bc = (w.cols + 3) / 4;
  Hw24 a(w.rows, w.cols), t(w.cols, w.rows);
  auto raw = [&](std::int64_t r, std::int64_t c) { return (r < w.rows && c < w.cols) ? w.raw(r, c) : 0u; };
  for (std::int64_t r = 0; r < w.rows; ++r)
    for (std::int64_t j = 0; j < bc; ++j) {
      const auto [lo, hi] = quad(mask[std::size_t((r / 4) * bc + j)] >> (4 * (r % 4)), bad);
      a.put(r, j, lo, hi, raw(r, 4 * j + lo), raw(r, 4 * j + hi));
    }
  for (std::int64_t c = 0; c < w.cols; ++c)
    for (std::int64_t i = 0; i < (w.rows + 3) / 4; ++i) {
      const unsigned m = mask[std::size_t(i * bc + c / 4)];
      unsigned col = 0;
      for (int r = 0; r < 4; ++r) col |= ((m >> (4 * r + c % 4)) & 1u) << r;
      const auto [lo, hi] = quad(col, bad);
      t.put(c, i, lo, hi, raw(4 * i + lo, c), raw(4 * i + hi, c));
    }
  return {a, t};
}

struct GpuOut {
  std::vector<std::uint16_t> mask;
  std::vector<std::byte> wv, wtv;
  std::vector<std::uint8_t> wi, wti;
  std::uint32_t violations = 0;
};

GpuOut run_gpu(const HostMat& w, const std::vector<std::uint16_t>* given_mask) {
  const std::int64_t R = w.rows, C = w.cols;
  const std::size_t mw = std::size_t(train::mask24_words(R, C));
  const std::size_t wvb = std::size_t(R * train::hw24_value_cols(C)) * w.esz(),
                    wib = std::size_t(R * train::hw24_index_row_bytes(C));
  const std::size_t tvb = std::size_t(C * train::hw24_value_cols(R)) * w.esz(),
                    tib = std::size_t(C * train::hw24_index_row_bytes(R));
  auto dw = upload(w.bytes.data(), w.bytes.size());
  auto dmask = poisoned(mw * 2), dwv = poisoned(wvb), dwi = poisoned(wib), dtv = poisoned(tvb), dti = poisoned(tib);
  cuda::DeviceBuffer dviol(4);
  SPARSENM_CUDA_CHECK(cudaMemset(dviol.get(), 0, 4));
  const train::Compressed24View w24{dwv.get(), dwi.as<std::uint8_t>()}, wt24{dtv.get(), dti.as<std::uint8_t>()};
  if (given_mask) {
    dmask.upload(given_mask->data(), mw * 2);
    train::apply_mask24(w.dtype, dw.get(), R, C, dmask.as<std::uint16_t>(), w24, wt24, dviol.as<std::uint32_t>());
  } else {
    train::transposable_mask24(w.dtype, dw.get(), R, C, dmask.as<std::uint16_t>(), w24, wt24);
  }
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  GpuOut o;
  o.mask = download<std::uint16_t>(dmask, mw);
  o.wv = download<std::byte>(dwv, wvb);
  o.wi = download<std::uint8_t>(dwi, wib);
  o.wtv = download<std::byte>(dtv, tvb);
  o.wti = download<std::uint8_t>(dti, tib);
  o.violations = download<std::uint32_t>(dviol, 1)[0];
  return o;
}

using Case = std::tuple<DType, std::int64_t, std::int64_t>;
class Mask24 : public ::testing::TestWithParam<Case> {};

TEST_P(Mask24, SearchMatchesBruteForceAndCompresses) {
  SPARSENM_REQUIRE_GPU();
  const auto [t, R, C] = GetParam();
  const HostMat w = random_mat(t, R, C, 1000 + std::uint64_t(R * 7 + C));
  const GpuOut g = run_gpu(w, nullptr);
  const auto ref = brute_mask(w);
  std::int64_t diff = 0, nontrans = 0, subopt = 0;
  const std::int64_t bc = (C + 3) / 4;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    diff += g.mask[i] != ref[i];
    nontrans += !transposable(g.mask[i]);
    // optimal in fp64 up to the fp32 rounding of the score
    double best = 0, got = 0;
    const std::int64_t bi = std::int64_t(i) / bc, bj = std::int64_t(i) % bc;
    for (const auto& p : patterns90()) {
      double s = 0;
      const std::uint16_t m = mask_of(p);
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c)
          if ((m >> (4 * r + c)) & 1u) s += mag(w, 4 * bi + r, 4 * bj + c);
      best = std::max(best, s);
      if (m == g.mask[i]) got = s;
    }
    subopt += got < best * (1 - 1e-6);
  }
  EXPECT_EQ(diff, 0) << "masks differ from the brute force";
  EXPECT_EQ(nontrans, 0);
  EXPECT_EQ(subopt, 0);
  const auto [a, tt] = host_compress(w, ref, nullptr);
  expect_hw24_equal(a, g.wv, g.wi, w.esz(), "S(W)");
  expect_hw24_equal(tt, g.wtv, g.wti, w.esz(), "S(W)^T");
}

TEST_P(Mask24, ApplyRandomValidMaskAndSearchRoundTrip) {
  SPARSENM_REQUIRE_GPU();
  const auto [t, R, C] = GetParam();
  const HostMat w = random_mat(t, R, C, 2000 + std::uint64_t(R * 5 + C));
  std::mt19937 rng(7);
  std::vector<std::uint16_t> mask(std::size_t(train::mask24_words(R, C)));
  for (auto& m : mask) m = mask_of(patterns90()[rng() % 90]);
  const GpuOut g = run_gpu(w, &mask);
  std::int64_t bad = 0;
  const auto [a, tt] = host_compress(w, mask, &bad);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(g.violations, 0u);
  expect_hw24_equal(a, g.wv, g.wi, w.esz(), "apply S(W)");
  expect_hw24_equal(tt, g.wtv, g.wti, w.esz(), "apply S(W)^T");
  // apply(search mask) reproduces the search's compressed outputs
  const GpuOut s = run_gpu(w, nullptr);
  const GpuOut ap = run_gpu(w, &s.mask);
  EXPECT_EQ(ap.wv, s.wv);
  EXPECT_EQ(ap.wi, s.wi);
  EXPECT_EQ(ap.wtv, s.wtv);
  EXPECT_EQ(ap.wti, s.wti);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Mask24,
                         ::testing::Values(Case{DType::f16, 128, 64}, Case{DType::f16, 256, 192}, Case{DType::f16, 160, 96},
                                           Case{DType::f16, 37, 45}, Case{DType::f16, 130, 70}, Case{DType::f16, 3, 2},
                                           Case{DType::bf16, 256, 128}, Case{DType::bf16, 61, 77},
                                           Case{DType::f32, 128, 128}, Case{DType::f32, 99, 13}));

TEST(Mask24Ties, TiesFollowTheDocumentedRule) {
  SPARSENM_REQUIRE_GPU();
  // values from a tiny set: many exact ties; plus all-zero and all-equal blocks
  HostMat w(DType::f16, 128, 128);
  std::mt19937 rng(3);
  const float vals[5] = {0.f, 0.25f, -0.25f, 0.5f, -0.5f};
  for (std::int64_t r = 0; r < w.rows; ++r)
    for (std::int64_t c = 0; c < w.cols; ++c) w.set(r, c, r < 8 ? (r < 4 ? 0.f : 0.75f) : vals[rng() % 5]);
  const GpuOut g = run_gpu(w, nullptr);
  const auto ref = brute_mask(w);
  EXPECT_EQ(g.mask, ref);
  EXPECT_EQ(g.mask[0], mask_of(patterns90()[0]));  // all-zero block -> first pattern
  const auto [a, tt] = host_compress(w, ref, nullptr);
  expect_hw24_equal(a, g.wv, g.wi, w.esz(), "ties S(W)");
  expect_hw24_equal(tt, g.wtv, g.wti, w.esz(), "ties S(W)^T");
}

TEST(Mask24Nan, NanBlocksFollowTheRule) {
  SPARSENM_REQUIRE_GPU();
  HostMat w = random_mat(DType::f32, 64, 64, 11);
  for (int i = 0; i < 64; i += 5) w.set(i, (i * 7) % 64, NAN);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) w.set(16 + r, 16 + c, NAN);  // a whole NaN block
  const GpuOut g = run_gpu(w, nullptr);
  for (auto m : g.mask) EXPECT_TRUE(transposable(m)) << std::hex << m;
  EXPECT_EQ(g.mask, brute_mask(w));  // NaN ranks as +inf
}

TEST(Mask24Apply, InvalidMasksAreCountedAndStoredByTheRule) {
  SPARSENM_REQUIRE_GPU();
  const HostMat w = random_mat(DType::f16, 37, 45, 5);
  std::vector<std::uint16_t> mask(std::size_t(train::mask24_words(37, 45)), mask_of(patterns90()[17]));
  mask[0] = 0xFFFF;  // 4 bad rows, 4 bad columns
  mask[5] = 0x0001;
  mask[mask.size() - 1] = 0x0000;  // last block: only the real rows/columns count
  const GpuOut g = run_gpu(w, &mask);
  std::int64_t bad = 0;
  const auto [a, tt] = host_compress(w, mask, &bad);
  EXPECT_GT(bad, 0);
  EXPECT_EQ(std::int64_t(g.violations), bad);
  expect_hw24_equal(a, g.wv, g.wi, w.esz(), "invalid S(W)");
  expect_hw24_equal(tt, g.wtv, g.wti, w.esz(), "invalid S(W)^T");
}

TEST(Mask24Batched, EachMatrixEqualsTheSingleCall) {
  SPARSENM_REQUIRE_GPU();
  // tails, partial and full 128 x 64 tiles, and a large batch (2048 x 1024 x 3 = 768 tiles)
  for (const auto& [t, R, C] : {Case{DType::f16, 128, 96}, Case{DType::bf16, 64, 64}, Case{DType::f16, 37, 45},
                                Case{DType::f32, 36, 20}, Case{DType::f16, 256, 128}, Case{DType::f32, 128, 64},
                                Case{DType::f16, 2048, 1024}}) {
    const std::int64_t B = 3;
    const HostMat all = random_mat(t, B * R, C, 77 + std::uint64_t(R + C));  // B matrices back to back
    const std::size_t mw = std::size_t(train::mask24_words(R, C));
    const std::size_t wvb = std::size_t(R * train::hw24_value_cols(C)) * all.esz(),
                      wib = std::size_t(R * train::hw24_index_row_bytes(C));
    const std::size_t tvb = std::size_t(C * train::hw24_value_cols(R)) * all.esz(),
                      tib = std::size_t(C * train::hw24_index_row_bytes(R));
    auto dw = upload(all.bytes.data(), all.bytes.size());
    auto dmask = poisoned(B * mw * 2), dwv = poisoned(B * wvb), dwi = poisoned(B * wib), dtv = poisoned(B * tvb),
         dti = poisoned(B * tib);
    const train::Compressed24View w24{dwv.get(), dwi.as<std::uint8_t>()}, wt24{dtv.get(), dti.as<std::uint8_t>()};
    train::transposable_mask24_batched(t, dw.get(), B, R, C, dmask.as<std::uint16_t>(), w24, wt24);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    const auto mask = download<std::uint16_t>(dmask, B * mw);
    const auto wv = download<std::byte>(dwv, B * wvb), wtv = download<std::byte>(dtv, B * tvb);
    const auto wi = download<std::uint8_t>(dwi, B * wib), wti = download<std::uint8_t>(dti, B * tib);
    for (std::int64_t i = 0; i < B; ++i) {
      HostMat one(t, R, C);
      std::memcpy(one.bytes.data(), all.bytes.data() + std::size_t(i * R * C) * all.esz(), one.bytes.size());
      const GpuOut g = run_gpu(one, nullptr);
      EXPECT_TRUE(std::equal(g.mask.begin(), g.mask.end(), mask.begin() + std::ptrdiff_t(i * mw))) << R << "x" << C << " #" << i;
      EXPECT_TRUE(std::equal(g.wv.begin(), g.wv.end(), wv.begin() + std::ptrdiff_t(i * wvb))) << "S(W) #" << i;
      EXPECT_TRUE(std::equal(g.wi.begin(), g.wi.end(), wi.begin() + std::ptrdiff_t(i * wib))) << "S(W) idx #" << i;
      EXPECT_TRUE(std::equal(g.wtv.begin(), g.wtv.end(), wtv.begin() + std::ptrdiff_t(i * tvb))) << "S(W)^T #" << i;
      EXPECT_TRUE(std::equal(g.wti.begin(), g.wti.end(), wti.begin() + std::ptrdiff_t(i * tib))) << "S(W)^T idx #" << i;
      EXPECT_EQ(g.mask, brute_mask(one)) << "#" << i;
    }
    // apply, batched, with the searched masks: the same outputs, no violations
    auto dv2 = poisoned(B * wvb), di2 = poisoned(B * wib), dtv2 = poisoned(B * tvb), dti2 = poisoned(B * tib);
    cuda::DeviceBuffer dviol(4);
    SPARSENM_CUDA_CHECK(cudaMemset(dviol.get(), 0, 4));
    train::apply_mask24_batched(t, dw.get(), B, R, C, dmask.as<std::uint16_t>(), {dv2.get(), di2.as<std::uint8_t>()},
                                {dtv2.get(), dti2.as<std::uint8_t>()}, dviol.as<std::uint32_t>());
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    EXPECT_EQ(download<std::byte>(dv2, B * wvb), wv);
    EXPECT_EQ(download<std::uint8_t>(di2, B * wib), wi);
    EXPECT_EQ(download<std::byte>(dtv2, B * tvb), wtv);
    EXPECT_EQ(download<std::uint8_t>(dti2, B * tib), wti);
    EXPECT_EQ(download<std::uint32_t>(dviol, 1)[0], 0u);
  }
  int dummy = 0;
  std::uint16_t* m = reinterpret_cast<std::uint16_t*>(&dummy);
  EXPECT_THROW(train::transposable_mask24_batched(DType::f16, &dummy, 0, 4, 4, m, {}, {}), InvalidArgument);
  EXPECT_THROW(train::apply_mask24_batched(DType::f16, &dummy, 65536, 4, 4, m, {&dummy, nullptr}, {}), InvalidArgument);
}

TEST(Mask24Variants, AllKernelsWriteTheSameOutputs) {
  // The session-2 kernel (Mask24Args::variant = 1, mask24_s2.cuh), the session-3 kernel
  // (variant = 2, mask24.cuh), its persistent prefetching form (variant = 3), the session-2
  // code over 256 x 256 footprints with whole-sector stores (variant = 4, also under the
  // occupancy control) and the lean staged 16-bit searches (8, 9) must write exactly the same
  // outputs (the API picks one per dtype and mode, mask24_default_variant; the
  // others are the bench's same-run comparison): aligned shapes (vector paths) and tails (guarded
  // paths), search and apply (a valid mask from the search, and arbitrary mostly-invalid masks
  // with their violation counts), batched; the large cases have more tiles than resident CTAs,
  // so the persistent kernel walks several tiles per CTA, across matrices of the batch.
  SPARSENM_REQUIRE_GPU();
  for (const auto& [t, R, C] : {Case{DType::f16, 2048, 1024}, Case{DType::bf16, 160, 96}, Case{DType::f32, 256, 64},
                                Case{DType::f16, 37, 45}, Case{DType::f32, 130, 70}, Case{DType::f32, 1056, 2080},
                                Case{DType::bf16, 1000, 1000}, Case{DType::bf16, 1088, 320}, Case{DType::f16, 64, 64},
                                Case{DType::f16, 1088, 256}}) {
    const bool aligned = R % 32 == 0 && C % 32 == 0;
    for (int mode = 0; mode < 3; ++mode) {  // search, apply (valid mask), apply (random masks)
      const bool search = mode == 0;
      const std::int64_t B = 3;
      const HostMat all = random_mat(t, B * R, C, 5 + std::uint64_t(R));
      const std::size_t mw = std::size_t(B * train::mask24_words(R, C));
      const std::size_t vb = std::size_t(B * R * train::hw24_value_cols(C)) * all.esz(),
                        ib = std::size_t(B * R * train::hw24_index_row_bytes(C));
      const std::size_t tvb = std::size_t(B * C * train::hw24_value_cols(R)) * all.esz(),
                        tib = std::size_t(B * C * train::hw24_index_row_bytes(R));
      auto dw = upload(all.bytes.data(), all.bytes.size());
      auto dmask = poisoned(mw * 2);
      if (mode == 1) {  // a valid mask from the default search
        train::transposable_mask24_batched(t, dw.get(), B, R, C, dmask.as<std::uint16_t>(), {}, {});
        SPARSENM_CUDA_CHECK(cudaGetLastError());
      } else if (mode == 2) {  // every third block a valid pattern, the rest random bits
        std::vector<std::uint16_t> m(mw);
        std::mt19937 rng(91 + std::uint32_t(R));
        for (std::size_t i = 0; i < mw; ++i) m[i] = i % 3 == 0 ? mask_of(patterns90()[rng() % 90]) : std::uint16_t(rng() & 0xffffu);
        dmask.upload(m.data(), mw * 2);
      }
      // {variant, max_ctas_per_sm}: 1-4, variant 4 under the occupancy control (max_ctas_per_sm
      // = 2: the launch padded with dynamic shared memory), variant 8, the lean search with staged
      // whole-sector stores (mask24_lean.cuh; it runs on the 16-bit searches with rows, cols % 64
      // == 0: 2048 x 1024, 1088 x 320 (a CTA strip of 512 rows with a partial last strip;
      // S(W)^T index rows of 136 B, the 8-byte write-out path, a last strip of one pass), 64 x 64,
      // 1088 x 256; the default kernel elsewhere) and variant 9, variant 8 over 128-column strips
      // (2048 x 1024, 1088 x 256; the other shapes run variant 8). (Variants 5-7 and 10 were
      // dropped in session 9.)
      static constexpr int kEntries[][2] = {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {4, 2}, {8, 0}, {9, 0}};
      constexpr int kVariants = 7;
      std::vector<std::uint16_t> masks[kVariants];
      std::vector<std::byte> vals[kVariants], tvals[kVariants];
      std::vector<std::uint8_t> idx[kVariants], tidx[kVariants];
      std::uint32_t viol[kVariants] = {};
      for (int variant = 0; variant < kVariants; ++variant) {
        auto dv = poisoned(vb), di = poisoned(ib), dtv = poisoned(tvb), dti = poisoned(tib);
        cuda::DeviceBuffer dviol(4);
        SPARSENM_CUDA_CHECK(cudaMemset(dviol.get(), 0, 4));
        train::detail::Mask24Args a;
        a.w = dw.get();
        a.rows = R;
        a.cols = C;
        a.batch = B;
        if (search) a.mask_out = dmask.as<std::uint16_t>();
        else a.mask_in = dmask.as<std::uint16_t>();
        a.w_values = dv.get();
        a.w_indices = di.as<std::uint8_t>();
        a.wt_values = dtv.get();
        a.wt_indices = dti.as<std::uint8_t>();
        a.violations = search ? nullptr : dviol.as<std::uint32_t>();
        a.aligned = aligned;
        a.variant = kEntries[variant][0];
        a.max_ctas_per_sm = kEntries[variant][1];
        if (t == DType::f16) train::detail::launch_mask24<__half>(a, search, nullptr);
        else if (t == DType::bf16) train::detail::launch_mask24<__nv_bfloat16>(a, search, nullptr);
        else train::detail::launch_mask24<float>(a, search, nullptr);
        SPARSENM_CUDA_CHECK(cudaGetLastError());
        masks[variant] = download<std::uint16_t>(dmask, mw);
        vals[variant] = download<std::byte>(dv, vb);
        idx[variant] = download<std::uint8_t>(di, ib);
        tvals[variant] = download<std::byte>(dtv, tvb);
        tidx[variant] = download<std::uint8_t>(dti, tib);
        viol[variant] = download<std::uint32_t>(dviol, 1)[0];
      }
      if (mode == 2) EXPECT_GT(viol[0], 0u);
      if (mode == 1) EXPECT_EQ(viol[0], 0u);
      for (int v = 1; v < kVariants; ++v) {
        const std::string what = std::to_string(R) + "x" + std::to_string(C) + " mode " + std::to_string(mode) +
                                  " variant " + std::to_string(kEntries[v][0]) + (kEntries[v][1] ? " limited to 2 CTAs / SM" : "") + " vs 1";
        EXPECT_EQ(viol[0], viol[v]) << what;
        EXPECT_EQ(masks[0], masks[v]) << what;
        EXPECT_EQ(vals[0], vals[v]) << what;
        EXPECT_EQ(idx[0], idx[v]) << what;
        EXPECT_EQ(tvals[0], tvals[v]) << what;
        EXPECT_EQ(tidx[0], tidx[v]) << what;
      }
    }
  }
}

TEST(Mask24Variants, LeanSearchMatchesTheCpuReference) {
  // variants 8 and 9 (mask24_lean.cuh) on their own paths, against the CPU brute force and host
  // compression: random f16 / bf16 with a partial 512-row strip (576 rows) and the tie-heavy
  // matrix of Mask24Ties (exact ties, all-zero and all-equal blocks)
  SPARSENM_REQUIRE_GPU();
  std::vector<HostMat> cases;
  cases.push_back(random_mat(DType::f16, 576, 192, 4242));
  cases.push_back(random_mat(DType::bf16, 576, 192, 4343));
  // 128-column strips (variant 9): 1088 rows = a one-pass last strip and 136-byte S(W)^T index rows
  cases.push_back(random_mat(DType::f16, 1088, 256, 4444));
  cases.push_back(random_mat(DType::bf16, 640, 384, 4545));
  // a 3-pass last strip and two full strips
  cases.push_back(random_mat(DType::f16, 704, 128, 4646));
  cases.push_back(random_mat(DType::bf16, 1024, 256, 4747));
  for (DType t : {DType::f16, DType::bf16}) {
    HostMat w(t, 128, 128);
    std::mt19937 rng(3);
    const float vals[5] = {0.f, 0.25f, -0.25f, 0.5f, -0.5f};
    for (std::int64_t r = 0; r < w.rows; ++r)
      for (std::int64_t c = 0; c < w.cols; ++c) w.set(r, c, r < 8 ? (r < 4 ? 0.f : 0.75f) : vals[rng() % 5]);
    cases.push_back(std::move(w));
  }
  for (int variant : {8, 9})  // 8: the lean search with staged whole-sector stores; 9: over 128-column strips
  for (const HostMat& w : cases) {
    const std::int64_t R = w.rows, C = w.cols;
    const std::size_t mw = std::size_t(train::mask24_words(R, C));
    const std::size_t wvb = std::size_t(R * train::hw24_value_cols(C)) * w.esz(), wib = std::size_t(R * train::hw24_index_row_bytes(C));
    const std::size_t tvb = std::size_t(C * train::hw24_value_cols(R)) * w.esz(), tib = std::size_t(C * train::hw24_index_row_bytes(R));
    auto dw = upload(w.bytes.data(), w.bytes.size());
    auto dmask = poisoned(mw * 2), dwv = poisoned(wvb), dwi = poisoned(wib), dtv = poisoned(tvb), dti = poisoned(tib);
    train::detail::Mask24Args a;
    a.w = dw.get();
    a.rows = R;
    a.cols = C;
    a.mask_out = dmask.as<std::uint16_t>();
    a.w_values = dwv.get();
    a.w_indices = dwi.as<std::uint8_t>();
    a.wt_values = dtv.get();
    a.wt_indices = dti.as<std::uint8_t>();
    a.aligned = true;
    a.variant = variant;
    ASSERT_TRUE(train::detail::mask24_lean_staged_fits(a, w.esz(), true));
    if (variant == 9) ASSERT_EQ(train::detail::mask24_lean_wide_fits(a, w.esz(), true), C % 128 == 0) << R << "x" << C;
    if (w.dtype == DType::f16) train::detail::launch_mask24<__half>(a, true, nullptr);
    else train::detail::launch_mask24<__nv_bfloat16>(a, true, nullptr);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    const auto ref = brute_mask(w);
    EXPECT_EQ(download<std::uint16_t>(dmask, mw), ref) << R << "x" << C << " variant " << variant;
    const auto [hs, ht] = host_compress(w, ref, nullptr);
    expect_hw24_equal(hs, download<std::byte>(dwv, wvb), download<std::uint8_t>(dwi, wib), w.esz(), "lean S(W)");
    expect_hw24_equal(ht, download<std::byte>(dtv, tvb), download<std::uint8_t>(dti, tib), w.esz(), "lean S(W)^T");
  }
}

TEST(Mask24Variants, DroppedOrUnknownVariantsAreRefused) {
  // The launcher checks Mask24Args::variant before any CUDA call (variants.hpp): a dropped
  // (session 9) or unknown number throws InvalidArgument naming "variant", the value and the
  // valid set, for every dtype and both modes; no device needed.
  std::uint16_t dummy[64] = {};
  for (int v : {5, 6, 7, 10, 11, -1, 99}) {
    train::detail::Mask24Args a;
    a.w = dummy;
    a.rows = a.cols = 64;
    a.mask_out = dummy;
    a.mask_in = dummy;
    a.variant = v;
    for (int d = 0; d < 3; ++d)
      for (bool search : {true, false}) {
        try {
          if (d == 0) train::detail::launch_mask24<__half>(a, search, nullptr);
          else if (d == 1) train::detail::launch_mask24<__nv_bfloat16>(a, search, nullptr);
          else train::detail::launch_mask24<float>(a, search, nullptr);
          ADD_FAILURE() << "variant " << v << " (dtype " << d << ") was accepted";
        } catch (const InvalidArgument& e) {
          EXPECT_EQ(e.argument(), "variant");
          const std::string what = e.what();
          EXPECT_NE(what.find("got " + std::to_string(v)), std::string::npos) << what;
          EXPECT_NE(what.find("{0, 1, 2, 3, 4, 8, 9}"), std::string::npos) << what;
        }
      }
  }
}

TEST(Mask24Apply, RandomInvalidMasksOnTheVectorPath) {
  // Arbitrary 16-bit masks (mostly invalid) on aligned shapes: the table-driven path must store
  // what the host rule stores and count every bad quad (rows and columns).
  SPARSENM_REQUIRE_GPU();
  for (const auto& [t, R, C] : {Case{DType::f16, 128, 128}, Case{DType::bf16, 64, 96}, Case{DType::f32, 96, 64}}) {
    const HostMat w = random_mat(t, R, C, 21);
    std::vector<std::uint16_t> mask(std::size_t(train::mask24_words(R, C)));
    std::mt19937 rng(77);
    for (std::size_t i = 0; i < mask.size(); ++i)
      mask[i] = i % 3 == 0 ? mask_of(patterns90()[rng() % 90]) : std::uint16_t(rng() & 0xffffu);
    const GpuOut g = run_gpu(w, &mask);
    std::int64_t bad = 0;
    const auto [a, tt] = host_compress(w, mask, &bad);
    EXPECT_GT(bad, 0);
    EXPECT_EQ(std::int64_t(g.violations), bad) << R << "x" << C;
    expect_hw24_equal(a, g.wv, g.wi, w.esz(), "random-mask S(W)");
    expect_hw24_equal(tt, g.wtv, g.wti, w.esz(), "random-mask S(W)^T");
  }
}

TEST(Mask24Nan, SixteenBitNanInfAndSubnormalsOnTheVectorPath) {
  // f16 / bf16 magnitudes come from packed min(|x|, inf) (f16) or the bit patterns (bf16): NaN
  // (both signs) ranks as +inf, -0 as 0, subnormals keep their value; compared with the host
  // brute force on the fp32 rule.
  SPARSENM_REQUIRE_GPU();
  for (DType t : {DType::f16, DType::bf16}) {
    HostMat w = random_mat(t, 64, 64, 13);
    const float tiny = t == DType::f16 ? 3.0e-6f : 2.0e-39f;  // subnormal in the dtype
    for (int i = 0; i < 64; i += 3) w.set(i, (i * 7) % 64, i % 2 ? NAN : -NAN);
    for (int i = 1; i < 64; i += 4) w.set(i, (i * 5) % 64, i % 3 ? INFINITY : -INFINITY);
    for (int i = 2; i < 64; i += 2) w.set(i, (i * 11) % 64, i % 4 ? tiny : -tiny * 3.f);
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) w.set(32 + r, 8 + c, r == c ? -0.f : tiny * float(1 + r + c));  // a subnormal block
    const GpuOut g = run_gpu(w, nullptr);
    const auto ref = brute_mask(w);
    EXPECT_EQ(g.mask, ref) << to_string(t);
    const auto [a, tt] = host_compress(w, ref, nullptr);
    expect_hw24_equal(a, g.wv, g.wi, w.esz(), "nan S(W)");
    expect_hw24_equal(tt, g.wtv, g.wti, w.esz(), "nan S(W)^T");
  }
}

TEST(Mask24Args, ErrorsNameTheArgument) {
  int dummy = 0;
  const train::Compressed24View none{};
  std::uint16_t* m = reinterpret_cast<std::uint16_t*>(&dummy);
  EXPECT_THROW(train::transposable_mask24(DType::f16, nullptr, 4, 4, m, none, none), InvalidArgument);
  EXPECT_THROW(train::transposable_mask24(DType::u8, &dummy, 4, 4, m, none, none), InvalidArgument);
  EXPECT_THROW(train::transposable_mask24(DType::f16, &dummy, 0, 4, m, none, none), InvalidArgument);
  EXPECT_THROW(train::transposable_mask24(DType::f16, &dummy, 4, -1, m, none, none), InvalidArgument);
  EXPECT_THROW(train::transposable_mask24(DType::f16, &dummy, 4, 4, nullptr, none, none), InvalidArgument);
  EXPECT_THROW(train::apply_mask24(DType::f16, &dummy, 4, 4, nullptr, {&dummy, nullptr}, none), InvalidArgument);
  EXPECT_THROW(train::apply_mask24(DType::f16, &dummy, 4, 4, m, none, none), InvalidArgument);
  try {
    train::transposable_mask24(DType::f16, &dummy, 0, 4, m, none, none);
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "rows");
  }
}

}  // namespace
}  // namespace sparsenm::test
