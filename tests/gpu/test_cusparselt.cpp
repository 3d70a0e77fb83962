// sparsenm GPU tests — cuSPARSELt as a plan backend ("cuda:cusparselt_24", src/cuda/cusparselt):
// forced by name through Plan::create on hw24 and 2:4-repackable element weights, f16 and bf16,
// against the fp64 CPU reference with poisoned outputs; the plan reports the kernel by name; the
// rules it rejects are reported, not run. Skips visibly when the build has no cuSPARSELt (the
// candidate is then not registered) or when no CUDA device is present.
#include <cstdlib>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "cuda/common.cuh"
#include "cuda/cusparselt/lt_gemm.hpp"
#include "plan/registry.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/reference.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

constexpr const char* kName = "cuda:cusparselt_24";

const detail::KernelCandidate* lt_candidate() {
  for (const auto& c : detail::kernel_registry().candidates())
    if (c.name == kName) return &c;
  return nullptr;
}

#define REQUIRE_LT()                                                                                  \
  if (!lt_candidate()) GTEST_SKIP() << "built without cuSPARSELt: cuda:cusparselt_24 tests skipped"; \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: cuSPARSELt backend tests skipped";        \
  if (const char* off = std::getenv("SPARSENM_DISABLE_CUSPARSELT"); off && *off && std::string(off) != "0") \
  GTEST_SKIP() << "SPARSENM_DISABLE_CUSPARSELT is set: cuSPARSELt backend tests skipped"

CondensedMatrix weight(const char* text, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const Pattern p = Pattern::parse(text);
  return condense(random_pattern_matrix(p, t, rows, cols, seed, 0.1).view(), p);
}

TEST(CusparseLtPlan, ForcedMatchesReference) {
  REQUIRE_LT();
  struct Case {
    const char* pattern;
    DType t;
    std::int64_t m, rows, cols;
  };
  const Case cases[] = {{"2:4", DType::f16, 64, 128, 256},   {"2:4", DType::bf16, 200, 96, 512},
                        {"2:4", DType::f16, 8, 1024, 64},    {"2:8", DType::f16, 136, 160, 320},
                        {"1:4", DType::bf16, 16, 64, 1024},  {"2:4", DType::f16, 1024, 512, 1280}};
  std::uint64_t seed = 50;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.pattern) + " " + std::string(to_string(c.t)) + " m=" + std::to_string(c.m) + " " +
                 std::to_string(c.rows) + "x" + std::to_string(c.cols));
    const CondensedMatrix w = weight(c.pattern, c.t, c.rows, c.cols, seed++);
    MatmulDesc d;
    d.m = c.m;
    d.x_dtype = c.t;
    d.y_dtype = c.t;
    d.kernel = kName;
    const Plan plan = Plan::create(w, d);
    EXPECT_EQ(plan.backend(), Backend::cuda);
    EXPECT_EQ(plan.kernel(), kName);
    const DenseMatrix x = random_matrix(c.t, c.m, c.cols, seed++);
    cuda::DeviceBuffer xd(x.size_bytes()), yd(std::size_t(c.m * c.rows) * dtype_size(c.t));
    xd.upload(x.data(), x.size_bytes());
    for (int rep = 0; rep < 2; ++rep) {  // the plan runs repeatedly (nothing consumed by run)
      SPARSENM_CUDA_CHECK(cudaMemset(yd.get(), 0xff, yd.size()));  // poison: NaN
      plan.run(xd.get(), yd.get(), nullptr);
      SPARSENM_CUDA_CHECK(cudaGetLastError());
      SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
      DenseMatrix y(c.t, c.m, c.rows);
      yd.download(y.data(), y.size_bytes());
      EXPECT_LE(relative_error(y.view(), reference_matmul_f64(x.view(), w)), c.t == DType::f16 ? 2e-3 : 1.5e-2);
    }
  }
}

TEST(CusparseLtPlan, AutomaticChoiceListsIt) {
  REQUIRE_LT();
  const CondensedMatrix w = weight("2:4", DType::f16, 1024, 1024, 7);
  MatmulDesc d;
  d.m = 1024;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f16;
  const Plan plan = Plan::create(w, d);
  // the race timed it (its name and time are in the reason) whichever kernel won
  EXPECT_NE(plan.reason().find(kName), std::string::npos) << plan.reason();
}

TEST(CusparseLtPlan, RejectsWhatItCannotDo) {
  const detail::KernelCandidate* c = lt_candidate();
  if (!c) GTEST_SKIP() << "built without cuSPARSELt: cuda:cusparselt_24 tests skipped";
  // structural rules are checked before any device or library call
  const CondensedMatrix w = weight("2:4", DType::f16, 64, 128, 3);
  MatmulDesc d;
  d.m = 64;
  d.x_dtype = DType::f16;
  d.y_dtype = DType::f32;  // C/D type must equal A/B here
  EXPECT_FALSE(c->unsupported(w, d).empty());
  d.y_dtype = DType::f16;
  d.m = 60;  // not a multiple of 8
  EXPECT_FALSE(c->unsupported(w, d).empty());
  d.m = 64;
  d.accumulate = Accumulate::f64;
  EXPECT_FALSE(c->unsupported(w, d).empty());
  d.accumulate = Accumulate::f32;
  d.x_dtype = DType::bf16;  // differs from the weight
  EXPECT_FALSE(c->unsupported(w, d).empty());
  const CondensedMatrix w3 = weight("3:4", DType::f16, 64, 128, 4);  // not repackable to 2:4
  d.x_dtype = DType::f16;
  EXPECT_FALSE(c->unsupported(w3, d).empty());
  const CondensedMatrix w_odd = weight("2:4", DType::f16, 72, 120, 5);  // rows, cols not multiples of 16
  EXPECT_FALSE(c->unsupported(w_odd, d).empty());
  const CondensedMatrix wf = weight("2:4", DType::f32, 64, 128, 6);
  d.x_dtype = DType::f32;
  d.y_dtype = DType::f32;
  EXPECT_FALSE(c->unsupported(wf, d).empty());
}

// The off switch works without a device (it is checked first) and is what the sanitizer runs rely
// on: the plan's cuSPARSELt candidate and the FST layer then report it as the reason.
TEST(CusparseLtSwitch, EnvironmentVariableDisablesIt) {
  const char* before = std::getenv("SPARSENM_DISABLE_CUSPARSELT");
  const std::string saved = before ? before : "";
  ASSERT_EQ(setenv("SPARSENM_DISABLE_CUSPARSELT", "1", 1), 0);
  EXPECT_EQ(cuda::lt::unavailable_reason(), "disabled by SPARSENM_DISABLE_CUSPARSELT");
  if (const detail::KernelCandidate* c = lt_candidate()) {
    const CondensedMatrix w = weight("2:4", DType::f16, 64, 128, 3);
    MatmulDesc d;
    d.m = 64;
    d.x_dtype = DType::f16;
    d.y_dtype = DType::f16;
    EXPECT_NE(c->unsupported(w, d).find("SPARSENM_DISABLE_CUSPARSELT"), std::string::npos) << c->unsupported(w, d);
  }
  ASSERT_EQ(setenv("SPARSENM_DISABLE_CUSPARSELT", "0", 1), 0);  // "0" means not disabled
  EXPECT_EQ(cuda::lt::unavailable_reason().find("SPARSENM_DISABLE_CUSPARSELT"), std::string::npos);
  if (before) setenv("SPARSENM_DISABLE_CUSPARSELT", saved.c_str(), 1);
  else unsetenv("SPARSENM_DISABLE_CUSPARSELT");
}

}  // namespace
}  // namespace sparsenm
