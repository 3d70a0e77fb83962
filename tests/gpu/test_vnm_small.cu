// GPU tests of cuda:vnm_gemv (small-m V:2:M and hardware 2:4) against an fp64 product of the
// condensed weight: V in {32, 64, 128, 256}, M in {4, 5, 7, 8, 10, 16, 32, 100}, f16/bf16,
// m = 1..32, tails in m, n, k, all y dtypes, forced k splits; outputs poisoned with 0xFF bytes
// (NaN in every dtype) so an unwritten element fails. Every kernel variant (layout.hpp
// kVariants) runs every case; each case runs twice on the same instance (the split arrival
// counters of variants 1/2 must reset themselves; variants 5/6 rewrite their transposed-X
// workspace on every run; variant 8 refills its record rings; variants 9 / 10 both).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/vnm_small/vnm_small.hpp"
#include "sparsenm/format.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

namespace vs = cuda::vnm_small;

bool have_device() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

#define REQUIRE_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device: GPU test skipped"

/// Attribute `a` of the current device (compute capability major, SM count).
int device_attr(cudaDeviceAttr a) {
  int dev = 0, v = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&v, a, dev));
  return v;
}

struct Problem {
  CondensedMatrix w;
  DenseMatrix x;
  std::vector<double> ref, scale;  // fp64 product and sum |w x| per element
};

/// The fp64 reference of pr (over the stored slots whose column is < k; a stored slot times NaN / Inf in X is
/// NaN / Inf even when the stored value is 0) and the per-element sum |w x| the tolerance scales with.
void set_reference(Problem& pr) {
  const std::int64_t m = pr.x.rows(), n = pr.w.rows(), k = pr.x.cols();
  pr.ref.assign(std::size_t(m * n), 0.0);
  pr.scale.assign(std::size_t(m * n), 0.0);
  for (std::int64_t r = 0; r < n; ++r) {
    std::vector<std::pair<std::int64_t, double>> slots;
    for (std::int64_t s = 0; s < pr.w.layout.value_cols; ++s) {
      const std::int64_t c = pr.w.column_of(r, s);
      if (c < k) slots.push_back({c, double(pr.w.value(r, s))});
    }
    for (std::int64_t i = 0; i < m; ++i) {
      double acc = 0, sc = 0;
      for (auto [c, v] : slots) {
        const double xv = pr.x.at(i, c);
        acc += v * xv;
        sc += std::fabs(v * xv);
      }
      pr.ref[std::size_t(i * n + r)] = acc;
      pr.scale[std::size_t(i * n + r)] = sc;
    }
  }
}

Problem make_problem(const Pattern& p, DType t, std::int64_t m, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  Problem pr;
  DenseMatrix d = random_pattern_matrix(p, t, n, k, seed, 0.05);
  pr.w = condense(d.view(), p);
  pr.x = random_matrix(t, m, k, seed * 31 + 5);
  set_reference(pr);
  return pr;
}

/// Runs the kernel (the given variant, or every variant when opt.variant < 0) twice on poisoned
/// y, checks every element.
void run_and_check_one(const Problem& pr, DType y_dtype, const vs::Options& opt, const std::string& what);
void run_and_check_at(const Problem& pr, DType y_dtype, const vs::Options& opt, const std::string& what, std::size_t x_offset);
void run_and_check(const Problem& pr, DType y_dtype, const vs::Options& opt = {}, const std::string& what = "") {
  if (opt.variant >= 0) return run_and_check_one(pr, y_dtype, opt, what);
  for (int v = 0; v < vnm_small::kVariants; ++v) {
    if (!vnm_small::variant_built(v)) continue;  // 17 / 18: removed (Rejects checks them)
    vs::Options o = opt;
    o.variant = v;
    run_and_check_one(pr, y_dtype, o, what + " variant=" + std::to_string(v));
  }
}
void run_and_check_one(const Problem& pr, DType y_dtype, const vs::Options& opt, const std::string& what) {
  run_and_check_at(pr, y_dtype, opt, what, 0);
}
/// x_offset: bytes between a 256-byte aligned allocation and X (2: X not 16-byte aligned, so
/// the streamed variant must take its scalar staging path even when k % 8 == 0).
void run_and_check_at(const Problem& pr, DType y_dtype, const vs::Options& opt, const std::string& what, std::size_t x_offset) {
  SCOPED_TRACE(what);
  const std::int64_t m = pr.x.rows(), n = pr.w.rows();
  MatmulDesc desc;
  desc.m = m;
  desc.x_dtype = pr.w.dtype;
  desc.y_dtype = y_dtype;
  auto inst = vs::create(pr.w, desc, opt);
  cuda::DeviceBuffer dxa(pr.x.size_bytes() + x_offset);
  SPARSENM_CUDA_CHECK(cudaMemcpy(static_cast<char*>(dxa.get()) + x_offset, pr.x.data(), pr.x.size_bytes(), cudaMemcpyHostToDevice));
  struct XView {
    const void* p;
    const void* get() const { return p; }
  } dx{static_cast<const char*>(dxa.get()) + x_offset};
  const std::size_t ybytes = std::size_t(m * n) * dtype_size(y_dtype);
  cuda::DeviceBuffer dy(ybytes);
  std::vector<std::byte> host(ybytes);
  for (int rep = 0; rep < 2; ++rep) {
    SPARSENM_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, ybytes));
    inst->run(dx.get(), dy.get(), nullptr);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
    dy.download(host.data(), ybytes);
    const double out_eps = y_dtype == DType::f32 ? 0.0 : y_dtype == DType::f16 ? 1.0 / 1024 : 1.0 / 128;
    int bad = 0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t r = 0; r < n; ++r) {
        const std::size_t o = std::size_t(i * n + r);
        const double got = load_as_float(y_dtype, host.data(), o);
        const double want = pr.ref[o];
        const double tol = 1e-5 * pr.scale[o] + out_eps * std::fabs(want) + 1e-30;
        // NaN / Inf in X reach y exactly through the stored slots (fp64 reference, same IEEE rules)
        const bool ok = std::isnan(want) ? std::isnan(got) : std::isinf(want) ? got == want : std::fabs(got - want) <= tol;
        if (!ok && bad++ < 5)
          ADD_FAILURE() << "y[" << i << "][" << r << "] = " << got << ", want " << want << " (tol " << tol << ")";
      }
    EXPECT_EQ(bad, 0) << "elements wrong of " << m * n << " (run " << rep + 1 << " of 2)";
  }
}

TEST(VnmSmallGpu, VenomAllVAndM) {
  REQUIRE_DEVICE();
  std::uint64_t seed = 100;
  int mi = 0;
  for (int v : {32, 64, 128, 256})
    for (int M : {4, 5, 7, 8, 10, 16, 32, 100})
      for (DType t : {DType::f16, DType::bf16}) {
        const std::int64_t m = 1 + (mi++ * 7) % 32;  // walks 1..32
        const std::int64_t n = 2 * v + 19;            // partial slab, not a multiple of 16
        const std::int64_t k = M * 23 + 3;            // partial last window
        Problem pr = make_problem(Pattern::venom(v, M), t, m, n, k, ++seed);
        run_and_check(pr, t, {}, Pattern::venom(v, M).str() + " " + std::string(to_string(t)) + " m=" + std::to_string(m));
      }
}

TEST(VnmSmallGpu, ThreeN8TilesAllV) {
  // m = 17..24 (three n8 tiles, 24 staged rows): the shapes on which run 1's gather rewrite
  // (1fb8207) wrote staged-X rows 24..31 past its shared memory. Several chunks and splits.
  REQUIRE_DEVICE();
  std::uint64_t seed = 1200;
  for (int v : {32, 64, 128, 256})
    for (std::int64_t m : {17, 20, 24}) {
      const Pattern p = Pattern::venom(v, 8);
      Problem pr = make_problem(p, DType::f16, m, v + 37, 8 * 333 + 5, ++seed);
      run_and_check(pr, DType::f16, {}, p.str() + " m=" + std::to_string(m));
      run_and_check(pr, DType::f32, {3, -1}, p.str() + " splits=3 m=" + std::to_string(m));
    }
  Problem ph = make_problem(Pattern::hw24(), DType::bf16, 21, 260, 2051, ++seed);
  run_and_check(ph, DType::bf16, {}, "hw24 m=21");
}

TEST(VnmSmallGpu, EveryMFrom1To32) {
  REQUIRE_DEVICE();
  for (std::int64_t m = 1; m <= 32; ++m) {
    Problem pv = make_problem(Pattern::venom(64, 8), DType::f16, m, 200, 517, 300 + std::uint64_t(m));
    run_and_check(pv, DType::f32, {}, "64:2:8 m=" + std::to_string(m));
    Problem ph = make_problem(Pattern::hw24(), DType::bf16, m, 300, 261, 400 + std::uint64_t(m));
    run_and_check(ph, DType::bf16, {}, "2:4/hw m=" + std::to_string(m));
  }
}

TEST(VnmSmallGpu, Hw24TailsAndYDtypes) {
  REQUIRE_DEVICE();
  std::uint64_t seed = 500;
  for (DType t : {DType::f16, DType::bf16})
    for (DType yt : {DType::f32, DType::f16, DType::bf16})
      for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {17, 5}, {129, 130}, {300, 1027}}) {
        Problem pr = make_problem(Pattern::hw24(), t, 9, n, k, ++seed);
        run_and_check(pr, yt, {}, "hw24 n=" + std::to_string(n) + " k=" + std::to_string(k));
      }
}

TEST(VnmSmallGpu, SplitsAndChunks) {
  REQUIRE_DEVICE();
  // k long enough for several chunks per split; splits forced to 1 (direct stores) and 5.
  std::uint64_t seed = 700;
  for (int splits : {1, 2, 5})
    for (std::int64_t m : {1, 8, 20, 32}) {
      Problem pv = make_problem(Pattern::venom(128, 7), DType::bf16, m, 300, 7 * 1100 + 2, ++seed);
      run_and_check(pv, DType::f32, {splits, -1}, "128:2:7 splits=" + std::to_string(splits) + " m=" + std::to_string(m));
      Problem ph = make_problem(Pattern::hw24(), DType::f16, m, 140, 9001, ++seed);
      run_and_check(ph, DType::f16, {splits, -1}, "hw24 splits=" + std::to_string(splits) + " m=" + std::to_string(m));
    }
}

TEST(VnmSmallGpu, TinyPipeline) {
  // Small enough for compute-sanitizer racecheck: 2 groups of 32 rows (2 warps), 11 pairs of
  // windows: 3 chunks per block without splits (the pipelined buffer swap), 2 splits (the
  // last-block reduction), 9 rows of X (two n8 tiles, rows 9..15 zero).
  REQUIRE_DEVICE();
  Problem pr = make_problem(Pattern::venom(32, 8), DType::f16, 9, 40, 8 * 16 * 10 + 3, 1300);
  for (int splits : {1, 2}) run_and_check(pr, DType::f32, {splits, -1}, "32:2:8 splits=" + std::to_string(splits));
  // hw24 with k % 8 == 0: variant 7's cp.async staging, 2 groups of 256 rows, 3 chunks of 4 pairs
  // per split at m = 25 (clusters of 2 at splits = 2)
  Problem ph = make_problem(Pattern::hw24(), DType::f16, 25, 300, 64 * 22 + 8, 1301);
  for (int splits : {1, 2}) run_and_check(ph, DType::f32, {splits, -1}, "hw24 splits=" + std::to_string(splits));
}

TEST(VnmSmallGpu, LeanDirectHw24) {
  // Variant 12 (kernel8.cuh) on its own path, small enough for memcheck: hw24 with k % 8 == 0 and
  // aligned X. n = 296 (the last group holds 3 of 8 row tiles: 5 warps stream tile 18's records
  // and store nothing), 37 pairs (compile-time chunks of 16 / 8 / 4 pairs: a partial last chunk),
  // k = 600 (the last pair half past k: zero-filled units), m across all four n8-tile counts and
  // odd m (rows m.. zeroed), splits 0 (plan) / 1 / 3, f16 / bf16, fp32 / 16-bit y.
  REQUIRE_DEVICE();
  std::uint64_t seed = 12000;
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t m : {1, 5, 8, 9, 16, 19, 24, 25, 32}) {
      const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m);
      Problem pa = make_problem(Pattern::hw24(), t, m, 296, 64 * 37, ++seed);
      for (int splits : {0, 1, 3})
        run_and_check_at(pa, DType::f32, {splits, vnm_small::kLeanVariant}, "lean n=296 splits=" + std::to_string(splits) + " " + tag, 0);
      Problem pk = make_problem(Pattern::hw24(), t, m, 130, 600, ++seed);
      run_and_check_at(pk, t, {0, vnm_small::kLeanVariant}, "lean k=600 " + tag, 0);
      run_and_check_at(pk, DType::f32, {2, vnm_small::kLeanVariant}, "lean k=600 splits=2 " + tag, 0);
    }
}

TEST(VnmSmallGpu, PrunedPositionsIgnoreInfInX) {
  REQUIRE_DEVICE();
  // Per FORMAT.md §8 only stored slots multiply X: put Inf in X where no stored slot of any row
  // reads (columns outside every slab's selection) and expect finite, exact results.
  Problem pr = make_problem(Pattern::venom(32, 16), DType::f16, 4, 32, 160, 900);
  std::vector<char> used(160, 0);
  for (std::int64_t r = 0; r < 32; ++r)
    for (std::int64_t s = 0; s < pr.w.layout.value_cols; ++s) used[std::size_t(pr.w.column_of(r, s))] = 1;
  for (std::int64_t c = 0; c < 160; ++c)
    if (!used[std::size_t(c)])
      for (std::int64_t i = 0; i < 4; ++i) pr.x.set(i, c, INFINITY);
  run_and_check(pr, DType::f32, {}, "Inf in unselected columns");
}

TEST(VnmSmallGpu, Hw24AlignedXEveryMBothDtypes) {
  // k % 8 == 0 with 16-byte aligned X: the streamed variant stages X with 16-byte cp.async (every
  // other test has odd k or k % 8 != 0: its scalar path). k = 8 * 397: the last pair of windows
  // is partial; n = 517: a partial 256-row group and a partial row tile; default and forced splits.
  REQUIRE_DEVICE();
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t m = 1; m <= 32; m += (m < 9 ? 1 : 5)) {
      Problem pr = make_problem(Pattern::hw24(), t, m, 517, 8 * 397, 2000 + std::uint64_t(m) + (t == DType::bf16 ? 100 : 0));
      const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m);
      run_and_check(pr, t, {}, "hw24 k%8==0 " + tag);
      run_and_check(pr, DType::f32, {3, vnm_small::kStreamVariant}, "hw24 k%8==0 splits=3 " + tag);
      run_and_check_at(pr, DType::f32, {0, vnm_small::kStreamVariant}, "hw24 k%8==0, X misaligned " + tag, 2);
    }
}

TEST(VnmSmallGpu, NanInfInXPropagateThroughStoredSlotsOnly) {
  // NaN, +Inf and -Inf in X: y is NaN / +-Inf exactly where the fp64 product over the stored
  // slots is (a stored slot times NaN is NaN even when the stored value is 0; 2:4 columns a row
  // did not keep must not leak, although the hardware kernel stages them in its B fragments).
  REQUIRE_DEVICE();
  std::uint64_t seed = 2500;
  for (Pattern pat : {Pattern::hw24(), Pattern::venom(64, 8)})
    for (DType t : {DType::f16, DType::bf16})
      for (std::int64_t m : {1, 13, 32}) {
        const std::int64_t n = 150, k = 8 * 70;
        Problem pr = make_problem(pat, t, m, n, k, ++seed);
        const float specials[3] = {NAN, INFINITY, -INFINITY};
        for (int q = 0; q < 6; ++q) pr.x.set((q * 7) % m, (q * 97 + 13) % k, specials[q % 3]);
        set_reference(pr);
        int specials_in_ref = 0;
        for (double v : pr.ref) specials_in_ref += !std::isfinite(v);
        ASSERT_GT(specials_in_ref, 0) << "the test must produce non-finite outputs";
        run_and_check(pr, DType::f32, {}, pat.str() + " " + std::string(to_string(t)) + " m=" + std::to_string(m));
      }
}

TEST(VnmSmallGpu, VenomLeanNanInfInXPastKAndInColumnZero) {
  // The V = 128 lean paired variants (20 / 21 / 23): the last pair's windows run past k (k % M != 0), and the
  // direct gather of 23 sends a column >= k to column 0 and zeroes it by a mask. With NaN / +-Inf in column 0
  // (and elsewhere) a lost mask would turn rows whose stored slots never read column 0 into NaN; the reference
  // is NaN / Inf exactly where a stored slot reads a special (review of session 10). f16 / bf16, m = 1 / 9 / 32,
  // splits 1 / 3 (cluster split reduce).
  REQUIRE_DEVICE();
  const int major = device_attr(cudaDevAttrComputeCapabilityMajor);
  std::uint64_t seed = 26000;
  const float specials[3] = {NAN, INFINITY, -INFINITY};
  for (int M : {8, 16})
    for (DType t : {DType::f16, DType::bf16})
      for (std::int64_t m : {1, 9, 32}) {
        const Pattern pat = Pattern::venom(128, M);
        const std::int64_t n = 128 + 40, k = std::int64_t(M) * (16 * 20 + 3) - 5;
        Problem pr = make_problem(pat, t, m, n, k, ++seed);
        for (std::int64_t i = 0; i < m; i += 4) pr.x.set(i, 0, specials[(i / 4) % 3]);
        for (int q = 0; q < 4; ++q) pr.x.set((q * 5) % m, (q * 131 + 29) % k, specials[q % 3]);
        set_reference(pr);
        int specials_in_ref = 0, finite_in_ref = 0;
        for (double v : pr.ref) (std::isfinite(v) ? finite_in_ref : specials_in_ref) += 1;
        ASSERT_GT(specials_in_ref, 0) << "the test must produce non-finite outputs";
        ASSERT_GT(finite_in_ref, 0) << "the test must keep finite outputs (rows that never read a special)";
        for (int v : {vnm_small::kVnmLeanVariant, vnm_small::kVnmLeanReduceVariant, vnm_small::kVnmDirectVariant})
          for (int splits : {1, 3})
            run_and_check(pr, DType::f32, {splits, v},
                          pat.str() + " " + std::string(to_string(t)) + " m=" + std::to_string(m) + " v" + std::to_string(v) +
                              " splits=" + std::to_string(splits) + (major >= 9 ? "" : " (sm < 90: variant 4)"));
      }
}

TEST(VnmSmallGpu, RingCrossesChunksTilesAndSplits) {
  // Variant 8's per-warp cp.async ring runs across chunk boundaries, row tiles (V = 256: two per
  // warp) and k splits: several chunks per split (k = 8 * 16 * 20 + 5 at M = 8: 21 pairs, chunks
  // of 32 / NT pairs), a partial last slab (warps without a row tile commit empty groups), fewer
  // records than ring slots (k = 20: one pair), 4-warp slabs (V = 64), odd m, f16 / bf16.
  REQUIRE_DEVICE();
  std::uint64_t seed = 3100;
  const int v8 = vnm_small::kRingVariant;
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t m : {1, 9, 17, 32}) {
      const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m);
      Problem p256 = make_problem(Pattern::venom(256, 8), t, m, 256 + 100, 8 * 16 * 20 + 5, ++seed);
      for (int splits : {0, 1, 3}) run_and_check(p256, DType::f32, {splits, v8}, "256:2:8 splits=" + std::to_string(splits) + " " + tag);
      Problem p64 = make_problem(Pattern::venom(64, 16), t, m, 64 * 3 + 7, 16 * 16 * 9 + 1, ++seed);
      run_and_check(p64, t, {0, v8}, "64:2:16 " + tag);
      Problem tiny = make_problem(Pattern::hw24(), t, m, 133, 20, ++seed);
      run_and_check(tiny, t, {0, v8}, "hw24 k=20 " + tag);
      Problem ph = make_problem(Pattern::hw24(), t, m, 300, 64 * 40 + 6, ++seed);
      for (int splits : {0, 2}) run_and_check(ph, DType::bf16, {splits, v8}, "hw24 splits=" + std::to_string(splits) + " " + tag);
    }
}

TEST(VnmSmallGpu, WsRingTiny) {
  // Variant 19 (kernel11.cuh) small enough for racecheck / memcheck: hw24 n = 296 (a last group of 3
  // tiles), k = 64 * 21 + 8 (22 pairs: the 8-stage ring wraps twice at 1 split, a partial last pair),
  // m = 1 / 9 / 32 (NT = 1 / 2 / 4: chunks of 16 / 8 / 4 pairs), f16, splits 1 (non-cluster kernel) and 2
  // (a cluster of 2: 11 pairs each), every case twice on one instance with poisoned y.
  REQUIRE_DEVICE();
  std::uint64_t seed = 19500;
  for (std::int64_t m : {1, 9, 32}) {
    Problem pr = make_problem(Pattern::hw24(), DType::f16, m, 296, 64 * 21 + 8, ++seed);
    for (int splits : {1, 2})
      run_and_check_at(pr, DType::f32, {splits, vnm_small::kLean2WsVariant},
                       "ws tiny m=" + std::to_string(m) + " splits=" + std::to_string(splits), 0);
  }
}

TEST(VnmSmallGpu, PlanRuleHw24TakesVariant19WhereFourteenSplits) {
  // The plan's choice for hw24 with k % 8 == 0 on sm_90+ (vnm_small.cu default_variant + geometry_for):
  // 14; at m > 24 where 14 runs a cluster of k splits, variant 19 (s9v24b: 12288^2 m = 32 49.95 us against
  // 16's 51.33) when it runs splits too; 14 with one split at m <= 16: 12. n = 1024, k = 64 * 40: 8 groups,
  // the partial-sum cap gives 14 two splits at m = 32 (19: two as well) and five at m = 16; n = 28672,
  // k = 128 (2 pairs): one split at every m (14 at m = 32, 12 at m = 8).
  REQUIRE_DEVICE();
  const int major = device_attr(cudaDevAttrComputeCapabilityMajor);
  if (major < 9) GTEST_SKIP() << "sm_90+ only: below, the plan maps the lean paired variants to 4";
  MatmulDesc d;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f16;
  Problem pr = make_problem(Pattern::hw24(), DType::f16, 32, 1024, 64 * 40, 19900);
  d.m = 32;
  sparsenm::vnm_small::Geometry g = vs::geometry_for(pr.w, d);
  EXPECT_EQ(g.variant, vnm_small::kLean2WsVariant);
  EXPECT_EQ(g.splits, 2);
  run_and_check_at(pr, DType::f16, {}, "plan rule n=1024 m=32 (the plan's choice)", 0);
  d.m = 25;
  EXPECT_EQ(vs::geometry_for(pr.w, d).variant, vnm_small::kLean2WsVariant);
  d.m = 16;
  g = vs::geometry_for(pr.w, d);
  EXPECT_EQ(g.variant, vnm_small::kLean2ClusterVariant);
  EXPECT_GT(g.splits, 1);
  EXPECT_EQ(vs::geometry_for(pr.w, d, {0, vnm_small::kLean2WsVariant}).variant, vnm_small::kLean2WsVariant) << "forced";
  Problem tall = make_problem(Pattern::hw24(), DType::f16, 1, 28672, 128, 19901);
  d.m = 32;
  g = vs::geometry_for(tall.w, d);
  EXPECT_EQ(g.variant, vnm_small::kLean2ClusterVariant);
  EXPECT_EQ(g.splits, 1);
  d.m = 8;
  EXPECT_EQ(vs::geometry_for(tall.w, d).variant, vnm_small::kLeanVariant);
}

TEST(VnmSmallGpu, LeanPairedDirectHw24) {
  // Variant 13 (kernel9.cuh) on its own path, small enough for memcheck: hw24 with k % 8 == 0 and
  // aligned X. n = 296 (last group: 3 of 8 row tiles, so warp 1 owns one tile and streams the last
  // tile's records for the other, warps 2 / 3 none), n = 130 (9 tiles: one in the last group), 37
  // pairs (compile-time chunks of 16 / 8 / 4 pairs: a partial last chunk), k = 600 (the last pair
  // half past k: zero-filled units), m over all four n8-tile counts and odd m, splits 0 (plan) / 1
  // / 3 / 2, f16 / bf16, fp32 / 16-bit y; X misaligned by 2 bytes (variant 9's transposed kernel,
  // two tiles per warp, in variant 13's geometry). Variant 14 takes every case: clusters of 2 / 3 /
  // 5 / 8 blocks (forced splits; 8 = the portable maximum, 37 pairs: 5 per split) reduced through
  // distributed shared memory, odd m (rows past m not stored), tail groups (rows past n not stored).
  // Variant 15 (8 warps, 256-row groups) takes every case: n = 296 is one full group and one of
  // 3 tiles (warp 1 owns one tile, warps 2..7 none), n = 130 one group of 9 tiles (warp 4 one tile,
  // 5..7 none), n = 1000 four groups (the last of 15 tiles, the last one half a tile), clusters of
  // 2 / 3 / 5 / 8 blocks of 8 warps, the partial sums of 256 rows over the X buffers and the rings.
  // Variant 16 (long chunks: 16 / 16 / 8 / 8 pairs) takes every case: 37 pairs = 2 / 4 full chunks
  // and a partial one at 1 split, one partial chunk per split at 5 / 8 splits, the k = 600 tail in
  // a partial chunk; 1 split (no cluster: its non-cluster instance), clusters of 2 / 3 / 5 / 8;
  // n = 1000 with 13.1 pairs' k: one long chunk, clusters of 2 / 3 over 8 groups.
  REQUIRE_DEVICE();
  std::uint64_t seed = 13000;
  // Variant 19 (producer warp, block ring of 8 stages with full / empty mbarriers; misaligned X: variant
  // 9's kernel in its geometry) takes every case too.
  for (const int v : {vnm_small::kLean2Variant, vnm_small::kLean2ClusterVariant, vnm_small::kLean2WideVariant,
                      vnm_small::kLean2LongVariant, vnm_small::kLean2WsVariant})
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t m : {1, 7, 9, 16, 19, 25, 32}) {
      const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m) + " v" + std::to_string(v);
      Problem pa = make_problem(Pattern::hw24(), t, m, 296, 64 * 37, ++seed);
      for (int splits : {0, 1, 3, 5, 8})
        run_and_check_at(pa, DType::f32, {splits, v}, "lean2 n=296 splits=" + std::to_string(splits) + " " + tag, 0);
      run_and_check_at(pa, t, {3, v}, "lean2 n=296 misaligned X splits=3 " + tag, 2);
      Problem pk = make_problem(Pattern::hw24(), t, m, 130, 600, ++seed);
      run_and_check_at(pk, t, {0, v}, "lean2 k=600 " + tag, 0);
      run_and_check_at(pk, t, {2, v}, "lean2 k=600 splits=2 " + tag, 0);
      if (v == vnm_small::kLean2WideVariant || v == vnm_small::kLean2LongVariant || v == vnm_small::kLean2WsVariant) {
        Problem pw = make_problem(Pattern::hw24(), t, m, 1000, 64 * 13 + 8, ++seed);
        for (int splits : {0, 2, 3})
          run_and_check_at(pw, splits == 3 ? DType::f32 : t, {splits, v}, "lean2 n=1000 splits=" + std::to_string(splits) + " " + tag, 0);
      }
    }
}

TEST(VnmSmallGpu, WsRingHw24EveryM) {
  // Variant 19 (kernel11.cuh: a producer warp fills a block ring of 8 stages of 8 records; full
  // mbarriers with expect_tx, empty mbarriers with 128 consumer arrivals; stage q % 8, parity
  // (q / 8) & 1) at every m = 1..32 (odd m: rows past m zero in the staged X, never stored), f16 and
  // bf16. n = 296: the last group has 3 of 8 row tiles (warp 1 streams the last tile's records for its
  // missing second tile, warps 2 / 3 stream it for both and store nothing; the producer lanes 3..7 copy
  // the last tile's records); k = 64 * 21 + 8: 22 pairs, the last one 8 columns wide (zero-filled X units
  // past k; the records are whole), i.e. 5 / 3 / 2 chunks (NT = 1 / 2 / 3-4: 16 / 8 / 4 pairs) with a
  // partial last one, so the stage phases wrap (stages reused at pairs 8 and 16); splits 0 (plan) / 1
  // (the non-cluster kernel) / 2 (19's rule at 12288^2) /
  // 3 (a cluster of 3: 8 / 8 / 6 pairs) / 8 (a cluster of 8: 3 pairs per split and 1 in the last, fewer
  // pairs than the ring's stages, the only chunk partial); y f32 / 16-bit. Each case runs twice on one
  // instance (the mbarriers are initialised per launch) with y poisoned before each run.
  REQUIRE_DEVICE();
  std::uint64_t seed = 17000;
  for (const int v : {vnm_small::kLean2WsVariant})
    for (DType t : {DType::f16, DType::bf16})
      for (std::int64_t m = 1; m <= 32; ++m) {
        const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m) + " v" + std::to_string(v);
        Problem pr = make_problem(Pattern::hw24(), t, m, 296, 64 * 21 + 8, ++seed);
        for (int splits : {0, 1, 2, 3, 8})
          run_and_check_at(pr, splits == 3 ? t : DType::f32, {splits, v}, "bulk n=296 splits=" + std::to_string(splits) + " " + tag, 0);
      }
}

TEST(VnmSmallGpu, WsRingLongSplitsAndTails) {
  // Variant 19 with many stage reuses per split: k = 64 * 75 (75 pairs: 1 split = 9 full rounds of the
  // 8-stage ring and a partial one; 2 splits = 38 / 37 pairs), n = 1000 (8 groups, the last one 7 tiles
  // of which the last is 8 rows: producer lane 7 streams the last tile's records, warp 3 stores one tile), m = 1 / 8 / 13 / 16 / 24 / 31 / 32, f16 /
  // bf16, splits 0 / 1 / 2, y f16 / bf16 / f32; X misaligned by 2 bytes (variant 9's transposed kernel in
  // 19's geometry, reduce kernel for the splits).
  REQUIRE_DEVICE();
  std::uint64_t seed = 19000;
  const int v = vnm_small::kLean2WsVariant;
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t m : {1, 8, 13, 16, 24, 31, 32}) {
      const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m);
      Problem pr = make_problem(Pattern::hw24(), t, m, 1000, 64 * 75, ++seed);
      for (int splits : {0, 1, 2})
        run_and_check_at(pr, splits == 2 ? DType::f32 : t, {splits, v}, "ws n=1000 splits=" + std::to_string(splits) + " " + tag, 0);
      run_and_check_at(pr, DType::f32, {2, v}, "ws n=1000 misaligned X splits=2 " + tag, 2);
    }
}

TEST(VnmSmallGpu, AsyncGatherChunksTailsAndBothStagings) {
  // Variant 9 (kernel6.cuh): the asynchronous, double-buffered X gather with the record ring.
  // Chunks of 16 / NT pairs, so several chunks per split with a partial last chunk; k tails
  // (k % 8 != 0 -> hw24 takes the transposed path; k % 8 == 0 with X 16-byte aligned -> direct
  // row staging; the same with X misaligned by 2 bytes -> transposed); odd m and m = 17..24
  // (three n8 tiles: rows m..23 zeroed in both direct buffers), V = 64 / 128 / 256 (two row
  // tiles per warp), 32:2:8 (2 warps, halved chunks), forced splits 1 / 3, f16 / bf16.
  // Variant 11 (the same kernel with the split reduction fused: last block per group, counters
  // reset by it; each case runs twice on one instance) takes every case too: partial last groups
  // (n = 296: 40 rows; the float4 path), n % 4 != 0 (130, odd venom n: the scalar path), 5 splits.
  // Variant 12 (kernel8.cuh, lean direct hw24 kernel) takes every case: direct cases with idle
  // warps in the last group (n = 296), several compile-time chunks with a partial last one (37
  // pairs over 1 / 3 / 5 splits), a k tail inside the last pair (zero-filled units); the others
  // run variant 9's kernel through it (misaligned X, k % 8 != 0, venom).
  REQUIRE_DEVICE();
  std::uint64_t seed = 9100;
  // Variant 13 (kernel9.cuh, two tiles per warp) likewise: its own kernel on the direct cases (a
  // last group of 5 tiles: warp 2 has one tile), variant 9's transposed kernel with two tiles per
  // warp in its geometry on misaligned X, variant 12 on k % 8 != 0 and venom.
  // Variant 14 (the same with the splits reduced in a cluster): non-power-of-two clusters (3, 5).
  // Variant 15 (8 warps, 256-row groups: n = 296 is one full group and one of 3 tiles) likewise.
  // Variant 16 (long chunks) likewise (its misaligned-X cases: variant 9's kernel with its chunk).
  // Variant 19 (producer warp, block ring) likewise (misaligned X: variant 9's kernel in 19's geometry;
  // k % 8 != 0 and venom: variant 12).
  for (const int v9 : {vnm_small::kAsyncVariant, vnm_small::kFusedVariant, vnm_small::kLeanVariant, vnm_small::kLean2Variant,
                       vnm_small::kLean2ClusterVariant, vnm_small::kLean2WideVariant, vnm_small::kLean2LongVariant,
                       vnm_small::kLean2WsVariant})
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t m : {1, 7, 9, 17, 21, 24, 32}) {
      const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m) + " v" + std::to_string(v9);
      Problem ph = make_problem(Pattern::hw24(), t, m, 128 * 2 + 40, 64 * 37, ++seed);  // k % 8 == 0, 37 pairs
      for (int splits : {0, 1, 3, 5}) {
        const vs::Options o{splits, v9};
        run_and_check_at(ph, DType::f32, o, "hw24 direct splits=" + std::to_string(splits) + " " + tag, 0);
        run_and_check_at(ph, DType::f32, o, "hw24 misaligned X splits=" + std::to_string(splits) + " " + tag, 2);
      }
      Problem ht = make_problem(Pattern::hw24(), t, m, 200, 64 * 21 + 6, ++seed);  // k % 8 != 0: transposed
      run_and_check(ht, t, {3, v9}, "hw24 k%8!=0 " + tag);
      Problem hk = make_problem(Pattern::hw24(), t, m, 130, 64 * 9 + 24, ++seed);  // k % 8 == 0, last pair partial
      run_and_check(hk, DType::bf16, {0, v9}, "hw24 k tail " + tag);
      run_and_check(hk, DType::f16, {3, v9}, "hw24 k tail n%4!=0 splits=3 " + tag);
      for (int v : {64, 128, 256}) {
        Problem pv = make_problem(Pattern::venom(v, 8), t, m, v * 2 + 21, 8 * 16 * 23 + 3, ++seed);
        for (int splits : {1, 3}) run_and_check(pv, DType::f32, {splits, v9}, Pattern::venom(v, 8).str() + " splits=" + std::to_string(splits) + " " + tag);
      }
      Problem p32 = make_problem(Pattern::venom(32, 16), t, m, 32 * 3 + 5, 16 * 16 * 7 + 9, ++seed);
      run_and_check(p32, t, {0, v9}, "32:2:16 " + tag);
    }
}

TEST(VnmSmallGpu, PairedTilesOddSlabsChunksAndSplits) {
  // Variant 10 (kernel7.cuh): two row tiles per warp (warp w: tiles w and w + V / 32) consuming
  // one pair of both together (one B fragment, two mma.sp), the ring in chunk -> pair -> tile
  // order with empty groups for a missing second tile. Partial last slabs (n = 2 V + 21 / 128 * 2
  // + 40: 3 tiles over 4 warps, one warp with none, two with one), several chunks per split
  // (>= 3 pairs each) with a partial last chunk, k tails, hw24 direct / misaligned / k % 8 != 0,
  // odd m and m = 17..24, V = 32 (one warp) / 64 / 128 / 256, forced splits 1 / 3 / 5, f16 / bf16.
  REQUIRE_DEVICE();
  std::uint64_t seed = 10100;
  const int v10 = vnm_small::kPairVariant;
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t m : {1, 7, 9, 17, 21, 24, 32}) {
      const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m);
      Problem ph = make_problem(Pattern::hw24(), t, m, 128 * 2 + 40, 64 * 37, ++seed);  // k % 8 == 0, 37 pairs
      for (int splits : {0, 1, 3}) {
        const vs::Options o{splits, v10};
        run_and_check_at(ph, DType::f32, o, "hw24 direct splits=" + std::to_string(splits) + " " + tag, 0);
        run_and_check_at(ph, DType::f32, o, "hw24 misaligned X splits=" + std::to_string(splits) + " " + tag, 2);
      }
      Problem ht = make_problem(Pattern::hw24(), t, m, 200, 64 * 21 + 6, ++seed);  // k % 8 != 0: transposed
      run_and_check(ht, t, {3, v10}, "hw24 k%8!=0 " + tag);
      Problem hk = make_problem(Pattern::hw24(), t, m, 130, 64 * 9 + 24, ++seed);  // k % 8 == 0, last pair partial
      run_and_check(hk, DType::bf16, {0, v10}, "hw24 k tail " + tag);
      for (int v : {64, 128, 256}) {
        Problem pv = make_problem(Pattern::venom(v, 8), t, m, v * 2 + 21, 8 * 16 * 23 + 3, ++seed);
        for (int splits : {1, 5}) run_and_check(pv, DType::f32, {splits, v10}, Pattern::venom(v, 8).str() + " splits=" + std::to_string(splits) + " " + tag);
      }
      Problem p32 = make_problem(Pattern::venom(32, 16), t, m, 32 * 3 + 5, 16 * 16 * 7 + 9, ++seed);
      run_and_check(p32, t, {0, v10}, "32:2:16 " + tag);
    }
}

TEST(VnmSmallGpu, Rejects) {
  REQUIRE_DEVICE();
  Problem pr = make_problem(Pattern::venom(32, 8), DType::f16, 1, 40, 40, 1);
  MatmulDesc d;
  d.m = 33;
  EXPECT_THROW(vs::create(pr.w, d), InvalidArgument);
  d.m = 0;
  EXPECT_THROW(vs::create(pr.w, d), InvalidArgument);
  d.m = 4;
  d.x_dtype = DType::bf16;
  EXPECT_THROW(vs::create(pr.w, d), InvalidArgument);
  d.x_dtype = DType::f16;
  d.accumulate = Accumulate::f64;
  EXPECT_THROW(vs::create(pr.w, d), InvalidArgument);
  d.accumulate = Accumulate::f32;
  d.y_dtype = DType::i32;
  EXPECT_THROW(vs::create(pr.w, d), InvalidArgument);
  d.y_dtype = DType::f16;
  EXPECT_THROW(vs::create(pr.w, d, {-1}), InvalidArgument);
  EXPECT_THROW(vs::create(pr.w, d, {0, vnm_small::kVariants}), InvalidArgument);
  EXPECT_THROW(vs::create(pr.w, d, {0, 17}), InvalidArgument) << "variant 17 was removed in session 9b";
  EXPECT_THROW(vs::create(pr.w, d, {0, 18}), InvalidArgument) << "variant 18 was removed in session 9b";
  EXPECT_FALSE(vnm_small::variant_built(17));
  EXPECT_FALSE(vnm_small::variant_built(18));
  EXPECT_TRUE(vnm_small::variant_built(19));
  EXPECT_THROW(vs::create(pr.w, d, {0, 22}), InvalidArgument) << "variant 22 was removed (sessions 9d and 10)";
  EXPECT_FALSE(vnm_small::variant_built(22));
  EXPECT_TRUE(vnm_small::variant_built(vnm_small::kVnmDirectVariant));
  try {
    vs::create(pr.w, d, {0, 18});
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("options.variant"), std::string::npos) << e.what();
  }
  EXPECT_THROW(vs::create(pr.w, d, {0, -2}), InvalidArgument);
  EXPECT_TRUE(vs::unsupported(pr.w, d).empty());
  // an uploaded weight serves only its own matrix
  Problem other = make_problem(Pattern::venom(32, 8), DType::f16, 1, 40, 48, 2);
  EXPECT_THROW(vs::create(vs::upload(other.w), pr.w, d), InvalidArgument);
  EXPECT_THROW(vs::create(nullptr, pr.w, d), InvalidArgument);
  EXPECT_NO_THROW(vs::create(vs::upload(pr.w), pr.w, d));
  DenseMatrix e = random_pattern_matrix(Pattern::element(2, 8), DType::f16, 16, 16, 3);
  EXPECT_THROW(vs::create(condense(e.view(), Pattern::element(2, 8)), d), InvalidArgument);
  DenseMatrix f = random_pattern_matrix(Pattern::hw24(), DType::f32, 16, 16, 3);
  d.x_dtype = DType::f32;
  EXPECT_THROW(vs::create(condense(f.view(), Pattern::hw24()), d), InvalidArgument);
}

TEST(VnmSmallGpu, VenomLeanPairedV128) {
  // Variants 20 / 21 (kernel10.cuh, V:2:M lean paired) on their own path: V = 128 with M = 8 / 16 and
  // the non-power-of-two M = 10 / 5 (column = window * M + selection: any M), m over all four n8-tile
  // counts incl. odd m; n = 128 * 2 + 40 (last slab 3 of 8 row tiles: warp 1 streams a copy of the
  // last tile's records for its missing tile, warps 2 / 3 no tile at all), n = 130 (9 tiles); k tails:
  // k % M != 0 (last window partial), pairs not a multiple of the chunk (16 / 8 / 4 / 4 pairs: a
  // partial last chunk), the last pair partly past the windows (selection bytes past windows_pad not
  // read, zero-filled copies). Splits 0 (rule) / 1 / 2 / 3 / 5 / 8: variant 20 as clusters of that
  // size reduced through distributed shared memory, 21 with the fp32 partials + reduce kernel.
  // f16 / bf16, fp32 / 16-bit y. Every case runs twice on poisoned y (run_and_check_at).
  REQUIRE_DEVICE();
  std::uint64_t seed = 20000;
  for (const int v : {vnm_small::kVnmLeanVariant, vnm_small::kVnmLeanReduceVariant, vnm_small::kVnmDirectVariant})
    for (DType t : {DType::f16, DType::bf16})
      for (std::int64_t m : {1, 3, 8, 9, 16, 17, 24, 25, 32}) {
        const std::string tag = std::string(to_string(t)) + " m=" + std::to_string(m) + " v" + std::to_string(v);
        for (int M : {8, 16, 10}) {
          const Pattern pat = Pattern::venom(128, M);
          // k: 37 pairs of 16 windows, the last window 3 columns short
          Problem pa = make_problem(pat, t, m, 128 * 2 + 40, std::int64_t(M) * (16 * 36 + 9) - 3, ++seed);
          MatmulDesc d;
          d.m = m;
          d.x_dtype = t;
          d.y_dtype = DType::f32;
          EXPECT_EQ(vs::geometry_for(pa.w, d, {0, v}).variant, v) << pat.str() << " " << tag;
          for (int splits : {0, 1, 3, 8})
            run_and_check_at(pa, splits == 3 ? t : DType::f32, {splits, v},
                             pat.str() + " n=296 splits=" + std::to_string(splits) + " " + tag, 0);
        }
        Problem pk = make_problem(Pattern::venom(128, 5), t, m, 130, 5 * 16 * 11 + 2, ++seed);
        for (int splits : {0, 2, 5})
          run_and_check_at(pk, t, {splits, v}, "128:2:5 n=130 splits=" + std::to_string(splits) + " " + tag, 0);
      }
}

TEST(VnmSmallGpu, VenomLeanPairedOtherVAndPatternsRunVariant9) {
  // Variants 20 / 21 exist for V = 128 only: V = 64 / 256 and hw24 run variant 9 in its geometry
  // (layout.hpp lean2_or_lean), and are still correct.
  REQUIRE_DEVICE();
  std::uint64_t seed = 21000;
  for (const int v : {vnm_small::kVnmLeanVariant, vnm_small::kVnmLeanReduceVariant, vnm_small::kVnmDirectVariant})
    for (const Pattern& pat : {Pattern::venom(64, 8), Pattern::venom(256, 16), Pattern::hw24()})
      for (std::int64_t m : {1, 12, 32}) {
        Problem pr = make_problem(pat, DType::f16, m, 300, 8 * 16 * 5 + 3, ++seed);
        MatmulDesc d;
        d.m = m;
        d.x_dtype = DType::f16;
        d.y_dtype = DType::f16;
        EXPECT_EQ(vs::geometry_for(pr.w, d, {0, v}).variant, vnm_small::kAsyncVariant) << pat.str();
        run_and_check_at(pr, DType::f16, {0, v}, pat.str() + " m=" + std::to_string(m) + " v" + std::to_string(v), 0);
      }
}

TEST(VnmSmallGpu, VenomLeanPairedIsThePlansChoiceForV128AtMFrom8) {
  // The default rule (vnm_small.cu default_variant + geometry_for, from the s9vnm and s10vnm H200 runs): for
  // V = 128 with M <= 16 (sm_90+) variant 23 (direct gather) at m <= 8, variant 20 at m > 8 where its grid is
  // padded to <= 2 blocks per SM (these small n), 23 where it is not (below: 2 sms + 1 slabs); other V / M
  // unchanged (variant 4 at m < 8 for them); and it runs right.
  REQUIRE_DEVICE();
  const int major = device_attr(cudaDevAttrComputeCapabilityMajor);
  std::uint64_t seed = 23000;
  for (const Pattern& pat : {Pattern::venom(128, 8), Pattern::venom(128, 16), Pattern::venom(128, 32), Pattern::venom(64, 8)})
    for (std::int64_t m : {1, 7, 8, 16, 32}) {
      Problem pr = make_problem(pat, DType::f16, m, 200, std::int64_t(pat.m) * 16 * 6 + 1, ++seed);
      MatmulDesc d;
      d.m = m;
      d.x_dtype = DType::f16;
      d.y_dtype = DType::f16;
      const int v = vs::geometry_for(pr.w, d).variant;
      const bool v128 = pat.v == 128 && pat.m <= 16 && major >= 9;
      EXPECT_EQ(v == vnm_small::kVnmLeanVariant, v128 && m > 8) << pat.str() << " m=" << m << " variant " << v;
      EXPECT_EQ(v == vnm_small::kVnmDirectVariant, v128 && m <= 8) << pat.str() << " m=" << m << " variant " << v;
      if (!v128) EXPECT_NE(v, vnm_small::kVnmDirectVariant);
      run_and_check_at(pr, DType::f16, {0, -1}, pat.str() + " plan's choice m=" + std::to_string(m), 0);
    }
  if (major < 9) return;
  const int sms = device_attr(cudaDevAttrMultiProcessorCount);
  for (std::int64_t m : {16, 32}) {  // 2 sms + 1 slabs at one split: 20 unpadded -> the plan takes 23
    Problem big = make_problem(Pattern::venom(128, 16), DType::f16, m, 128 * (2 * std::int64_t(sms) + 1), 16 * 16 * 2 + 3, ++seed);
    MatmulDesc d;
    d.m = m;
    d.x_dtype = DType::f16;
    d.y_dtype = DType::f16;
    const vnm_small::Geometry g = vs::geometry_for(big.w, d);
    EXPECT_EQ(g.variant, vnm_small::kVnmDirectVariant) << "m=" << m;
    EXPECT_LT(g.ring_bytes, vnm_small::kVleanSpreadRingBytes) << "unpadded";
    EXPECT_EQ(vs::geometry_for(big.w, d, {0, vnm_small::kVnmLeanVariant}).splits, g.splits) << "20's split count";
    run_and_check_at(big, DType::f16, {0, -1}, "128:2:16 n = 128 (2 sms + 1) plan's choice m=" + std::to_string(m), 0);
  }
}

TEST(VnmSmallGpu, VenomLeanPairedSpreadPaddingByGridSize) {
  // Session 9c (s9vnm2): variants 20 / 21 pad their shared memory to <= 2 blocks per SM where the grid
  // fits so (layout.hpp vlean_spread), and keep 3 per SM where it does not: n = 128 (2 SMs + 1) rows is
  // one block more than 2 per SM at one split (unpadded), n = 296 (3 slabs, any split count <= 8:
  // padded, clusters of 3 / 8 included). Both are run (poisoned y, twice) against the fp64 reference.
  REQUIRE_DEVICE();
  const int sms = device_attr(cudaDevAttrMultiProcessorCount);
  const int major = device_attr(cudaDevAttrComputeCapabilityMajor);
  if (major < 9) GTEST_SKIP() << "variants 20 / 21 need sm_90+ (they run variant 4 below)";
  std::uint64_t seed = 24000;
  for (const int v : {vnm_small::kVnmLeanVariant, vnm_small::kVnmLeanReduceVariant, vnm_small::kVnmDirectVariant})
    for (std::int64_t m : {8, 17, 32}) {
      const std::string tag = "m=" + std::to_string(m) + " v" + std::to_string(v);
      MatmulDesc d;
      d.m = m;
      d.x_dtype = DType::f16;
      d.y_dtype = DType::f32;
      // one split (3 blocks per SM: 396 slots >= 2 sms + 1 slabs), more blocks than 2 per SM: unpadded
      Problem big = make_problem(Pattern::venom(128, 8), DType::f16, m, 128 * (2 * std::int64_t(sms) + 1), 8 * 16 * 2 + 5, ++seed);
      const vnm_small::Geometry gb = vs::geometry_for(big.w, d, {1, v});
      EXPECT_EQ(gb.splits, 1);
      EXPECT_EQ(gb.groups, 2 * sms + 1);
      EXPECT_LT(gb.ring_bytes, vnm_small::kVleanSpreadRingBytes) << tag;
      run_and_check_at(big, DType::f32, {1, v}, "n = 128 (2 sms + 1) " + tag, 0);
      Problem small = make_problem(Pattern::venom(128, 10), DType::f16, m, 296, 10 * (16 * 20 + 3) - 7, ++seed);
      for (int splits : {0, 1, 3, 8}) {
        const vnm_small::Geometry gs = vs::geometry_for(small.w, d, {splits, v});
        EXPECT_EQ(gs.ring_bytes, vnm_small::kVleanSpreadRingBytes) << tag << " splits " << splits;
        EXPECT_NE(vs::create(small.w, d, {splits, v})->describe().find("padded"), std::string::npos) << tag;
        run_and_check_at(small, DType::f32, {splits, v}, "n = 296 splits=" + std::to_string(splits) + " " + tag, 0);
      }
    }
}

TEST(VnmSmallGpu, VenomLeanPairedSmall) {
  // Small enough for memcheck: variants 20 / 21 at 128:2:8 and 128:2:10, m = 5 / 17 / 32, a partial
  // last slab, a partial last chunk, splits 1 and 3 (cluster / reduce kernel).
  REQUIRE_DEVICE();
  std::uint64_t seed = 22000;
  for (const int v : {vnm_small::kVnmLeanVariant, vnm_small::kVnmLeanReduceVariant, vnm_small::kVnmDirectVariant})
    for (int M : {8, 10})
      for (std::int64_t m : {5, 17, 32}) {
        Problem pr = make_problem(Pattern::venom(128, M), DType::f16, m, 128 + 40, std::int64_t(M) * 16 * 13 - 1, ++seed);
        for (int splits : {1, 3})
          run_and_check_at(pr, DType::f16, {splits, v}, Pattern::venom(128, M).str() + " m=" + std::to_string(m) + " splits=" +
                           std::to_string(splits) + " v" + std::to_string(v), 0);
      }
}

TEST(VnmSmallGpu, VenomLeanDirectGather) {
  // Variant 23 (kernel10.cuh kDirect, session 10 s10vnm): variant 20 with the selected columns read from the
  // X rows in the kernel (2-byte loads, two rows packed per word, st.shared into the ldmatrix.trans layout; no
  // transpose, no Xt workspace). 128:2:8 / 128:2:16 and a tail case (k % M != 0, a partial last pair whose
  // windows run past the end: zeroed columns), m = 1 / 8 / 9 / 16 / 32 (9: the last n8 tile with one row, the
  // predicated rows; 1 / 9 also below 8 rows in a tile), f16 / bf16, X at a 2-byte offset (not 4- or 16-byte
  // aligned), splits 0 (rule) / 1 / 3 (cluster). Checked against the fp64 reference on poisoned y, twice each,
  // and bitwise against variant 20 on the same inputs (same staged values, same mma order).
  REQUIRE_DEVICE();
  const int major = device_attr(cudaDevAttrComputeCapabilityMajor);
  std::uint64_t seed = 25000;
  const int v = vnm_small::kVnmDirectVariant;
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t m : {1, 8, 9, 16, 32})
      for (int M : {8, 16}) {
        const Pattern pat = Pattern::venom(128, M);
        const std::string tag = pat.str() + " " + std::string(to_string(t)) + " m=" + std::to_string(m);
        // n = 3 slabs (last one 5 of 8 tiles); k = 21 pairs of 16 windows, the last window 5 columns short
        Problem pr = make_problem(pat, t, m, 128 * 2 + 80, std::int64_t(M) * (16 * 20 + 7) - 5, ++seed);
        MatmulDesc d;
        d.m = m;
        d.x_dtype = t;
        d.y_dtype = DType::f32;
        const vnm_small::Geometry g = vs::geometry_for(pr.w, d, {0, v});
        EXPECT_EQ(g.variant, major >= 9 ? v : 4) << tag;
        if (major >= 9) {
          auto inst = vs::create(pr.w, d, {1, v});
          EXPECT_NE(inst->describe().find("direct gather"), std::string::npos) << inst->describe();
          EXPECT_EQ(inst->workspace_bytes(), std::size_t(0)) << "variant 23 at one split: no Xt, no partials";
        }
        for (int splits : {0, 1, 3}) {
          run_and_check_at(pr, DType::f32, {splits, v}, tag + " splits=" + std::to_string(splits), 0);
          run_and_check_at(pr, t, {splits, v}, tag + " 16-bit y, X + 2 bytes, splits=" + std::to_string(splits), 2);
        }
        if (major < 9) continue;
        // bitwise against variant 20 (same splits, same geometry apart from the gather)
        const std::size_t ybytes = std::size_t(m) * std::size_t(pr.w.rows()) * 4;
        cuda::DeviceBuffer dx(pr.x.size_bytes()), y20(ybytes), y23(ybytes);
        dx.upload(pr.x.data(), pr.x.size_bytes());
        std::vector<std::byte> h20(ybytes), h23(ybytes);
        for (int splits : {1, 3}) {
          SPARSENM_CUDA_CHECK(cudaMemset(y20.get(), 0xFF, ybytes));
          SPARSENM_CUDA_CHECK(cudaMemset(y23.get(), 0xFF, ybytes));
          vs::create(pr.w, d, {splits, vnm_small::kVnmLeanVariant})->run(dx.get(), y20.get(), nullptr);
          vs::create(pr.w, d, {splits, v})->run(dx.get(), y23.get(), nullptr);
          SPARSENM_CUDA_CHECK(cudaGetLastError());
          SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
          y20.download(h20.data(), ybytes);
          y23.download(h23.data(), ybytes);
          EXPECT_EQ(std::memcmp(h20.data(), h23.data(), ybytes), 0) << tag << " splits=" << splits << ": 23 differs from 20";
        }
      }
}

}  // namespace
}  // namespace sparsenm
