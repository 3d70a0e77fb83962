// sparsenm GPU tests — the EW kernels on venom V:2:M weights (src/cuda/ew/register.cu runs them
// on the element 2:M form with the same stored slots, format/as_element.hpp). Every EW candidate
// forced on fresh random V:2:M weights with tails in m, n, k, against the fp64 CPU reference of
// the venom weight itself; poisoned outputs; X with Inf at a column no row stores (the product
// must stay finite there, FORMAT.md section 8) for the kernels that skip pruned positions; the
// plan's description names the repack; the automatic choice is correct whatever it picks.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ew_support.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/reference.hpp"
#include "support/random_pattern.hpp"

namespace {

using namespace sparsenm;
using namespace ewtest;

CondensedMatrix random_venom(int V, int M, std::int64_t n, std::int64_t k, DType t, std::uint64_t seed) {
  const Pattern p = Pattern::venom(V, M);
  return condense(random_pattern_matrix(p, t, n, k, seed, 0.05).view(), p);
}

/// Runs a plan (forced kernel or automatic) three times on poisoned Y; checks against the fp64
/// reference of the venom weight. Returns the plan's kernel.
std::string run_and_check(const CondensedMatrix& w, std::int64_t m, DType t, const std::string& kernel, std::uint64_t seed,
                          bool inf_at_unstored = false, std::string* reason = nullptr) {
  const std::int64_t n = w.rows(), k = w.cols();
  DenseMatrix x = random_matrix(t, m, k, seed);
  if (inf_at_unstored) {
    std::vector<bool> stored(std::size_t(k), false);
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t j = 0; j < w.layout.value_cols; ++j)
        if (const auto c = w.column_of(r, j); c < k) stored[std::size_t(c)] = true;
    std::int64_t placed = 0;
    for (std::int64_t c = 0; c < k && placed == 0; ++c)
      if (!stored[std::size_t(c)]) {
        for (std::int64_t i = 0; i < m; ++i) store_from_float(t, x.data(), std::size_t(i * k + c), std::numeric_limits<float>::infinity());
        ++placed;
      }
    EXPECT_EQ(placed, 1) << "test setup: no unstored column";
  }
  MatmulDesc d;
  d.m = m;
  d.x_dtype = t;
  d.y_dtype = t;
  d.backend = Backend::cuda;
  d.kernel = kernel;
  const Plan plan = Plan::create(w, d);
  if (reason) *reason = plan.reason();
  if (!kernel.empty()) {
    EXPECT_EQ(plan.kernel(), kernel);
    EXPECT_NE(plan.reason().find("run as element 2:" + std::to_string(w.pattern().m)), std::string::npos) << plan.reason();
  }
  const std::size_t ybytes = std::size_t(m * n) * dtype_size(t);
  DeviceMem dx(x.size_bytes()), dy(ybytes);
  EXPECT_EQ(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  for (int rep = 0; rep < 3; ++rep) {
    EXPECT_EQ(cudaMemset(dy.p, 0xFF, ybytes), cudaSuccess);
    plan.run(dx.p, dy.p, nullptr);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::vector<std::byte> y(ybytes);
  EXPECT_EQ(cudaMemcpy(y.data(), dy.p, y.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<double> ref = reference_matmul_f64(x.view(), w);
  for (double v : ref) EXPECT_TRUE(std::isfinite(v));
  const Compare cmp = compare(y, t, ref);
  EXPECT_EQ(cmp.unwritten, 0) << plan.kernel();
  EXPECT_EQ(cmp.class_mismatch, 0) << plan.kernel();
  EXPECT_LT(cmp.rel_err, tolerance(t)) << plan.kernel();
  return plan.kernel();
}

TEST(EwVenom, ForcedEwKernelsMatchTheVenomReference) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 8100;
  struct Case {
    const char* kernel;
    std::int64_t m;
    bool skips_pruned;  ///< false: tensor-core fragments multiply X by explicit zeros (needs finite X)
  };
  const Case cases[] = {{"cuda:ew_spmv_sk", 1, true}, {"cuda:ew_spmv", 1, true},   {"cuda:ew_spmv", 5, true},
                        {"cuda:ew_spmv_sk_mb", 5, true}, {"cuda:ew_spmv_tc", 8, false}, {"cuda:ew_spmm", 37, true}};
  for (const Case& c : cases)
    for (int M : {8, 16})
      for (DType t : {DType::f16, DType::bf16}) {
        SCOPED_TRACE(std::string(c.kernel) + " m=" + std::to_string(c.m) + " 64:2:" + std::to_string(M) + " " +
                     std::string(to_string(t)));
        // tails: n not a multiple of 32 or V, k not a multiple of M or of the 32-slot tile
        const CondensedMatrix w = random_venom(64, M, 333, 8 * M * 5 + 3, t, ++seed);
        run_and_check(w, c.m, t, c.kernel, ++seed, c.skips_pruned);
      }
}

TEST(EwVenom, AutomaticChoiceIsCorrect) {
  EW_REQUIRE_DEVICE();
  std::uint64_t seed = 8200;
  for (std::int64_t m : {1, 8})
    for (int M : {8, 16}) {
      SCOPED_TRACE("m=" + std::to_string(m) + " 128:2:" + std::to_string(M));
      const CondensedMatrix w = random_venom(128, M, 1000, 1024 + 7, DType::f16, ++seed);
      std::string reason;
      run_and_check(w, m, DType::f16, "", ++seed, false, &reason);
      // the race timed the EW candidates on the element form (each lists its description)
      EXPECT_NE(reason.find("run as element 2:" + std::to_string(M)), std::string::npos) << reason;
    }
}

TEST(EwVenom, NonPowerOfTwoMRunsOrSaysWhy) {
  EW_REQUIRE_DEVICE();
  // V:2:10 has no compiled ew_spmv_sk instance: forcing it must say so; ew_spmv (generic) runs it.
  const CondensedMatrix w = random_venom(32, 10, 100, 203, DType::f16, 8300);
  MatmulDesc d;
  d.m = 1;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f16;
  d.backend = Backend::cuda;
  d.kernel = "cuda:ew_spmv_sk";
  try {
    (void)Plan::create(w, d);
    ADD_FAILURE() << "forcing ew_spmv_sk on V:2:10 did not throw";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("ew_spmv_sk: no compiled instance for 2:10"), std::string::npos) << e.what();
  }
  run_and_check(w, 3, DType::f16, "cuda:ew_spmv", 8301, true);
}

}  // namespace
