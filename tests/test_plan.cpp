// Tests of the plan API on the CPU backend (src/plan/): create/run for several patterns, forced
// and unknown kernels, every validation error, the cuda backend without a device, the one-call
// matmul, and the reason/kernel strings.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "plan/registry.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/plan.hpp"
#include "support/random_pattern.hpp"

namespace sparsenm {
namespace {

MatmulDesc cpu_desc(std::int64_t m, DType x, DType y) {
  MatmulDesc d;
  d.m = m;
  d.x_dtype = x;
  d.y_dtype = y;
  d.backend = Backend::cpu;
  return d;
}

CondensedMatrix weight(const char* text, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const Pattern p = Pattern::parse(text);
  return condense(random_pattern_matrix(p, t, rows, cols, seed, 0.1).view(), p);
}

template <class F>
void expect_invalid(F&& f, const std::string& argument, const std::string& mentions = "") {
  try {
    f();
    ADD_FAILURE() << "no exception; expected InvalidArgument naming " << argument;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    if (!mentions.empty()) EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

TEST(Plan, CpuCreateRunMatchesReferenceForSeveralPatterns) {
  struct Case {
    const char* pattern;
    DType x, y;
    std::int64_t m, rows, cols;
  };
  const Case cases[] = {
      {"2:4", DType::f16, DType::f16, 1, 24, 70},       {"2:8", DType::bf16, DType::f32, 5, 19, 67},
      {"2:8/vw4", DType::f32, DType::bf16, 3, 14, 45},  {"1:4/bw2x3", DType::f16, DType::f32, 8, 9, 31},
      {"32:2:8", DType::f16, DType::f16, 4, 40, 50},    {"2:4/hw", DType::bf16, DType::bf16, 2, 16, 36},
  };
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern);
    const CondensedMatrix w = weight(c.pattern, c.x, c.rows, c.cols, seed++);
    const Plan plan = Plan::create(w, cpu_desc(c.m, c.x, c.y));
    EXPECT_EQ(plan.backend(), Backend::cpu);
    EXPECT_EQ(plan.kernel(), "cpu:reference");
    EXPECT_EQ(plan.reason(), "cpu backend: cpu:reference (CPU kernels are not timed)");
    EXPECT_EQ(plan.layout(), w.layout);
    EXPECT_EQ(plan.desc().m, c.m);
    EXPECT_EQ(plan.workspace_bytes(), 0u);

    const DenseMatrix x = random_matrix(c.x, c.m, c.cols, seed++);
    DenseMatrix y(c.y, c.m, c.rows);
    std::memset(y.data(), 0xff, y.size_bytes());
    plan.run(x.data(), y.data());
    // Same bits as the reference kernel with the plan's accumulation (f32 by default).
    DenseMatrix want(c.y, c.m, c.rows);
    reference_matmul(x.view(), w, want.mutable_view(), Accumulate::f32);
    EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size_bytes()), 0);
    const double tol = c.y == DType::f32 ? 1e-6 : c.y == DType::f16 ? 2e-3 : 1.5e-2;
    EXPECT_LE(relative_error(y.view(), reference_matmul_f64(x.view(), w)), tol);
  }
}

TEST(Plan, OwnsItsWeight) {
  CondensedMatrix w = weight("2:8", DType::f32, 12, 40, 1);
  const CondensedMatrix keep = w;
  const Plan plan = Plan::create(w, cpu_desc(2, DType::f32, DType::f32));
  w = CondensedMatrix{};  // the caller's copy is gone
  const DenseMatrix x = random_matrix(DType::f32, 2, 40, 2);
  DenseMatrix y(DType::f32, 2, 12), want(DType::f32, 2, 12);
  plan.run(x.data(), y.data());
  reference_matmul(x.view(), keep, want.mutable_view(), Accumulate::f32);
  EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size_bytes()), 0);
}

TEST(Plan, F64AccumulationIsHonoured) {
  const CondensedMatrix w = weight("2:4", DType::f16, 10, 800, 3);
  MatmulDesc d = cpu_desc(3, DType::f16, DType::f32);
  d.accumulate = Accumulate::f64;
  const Plan plan = Plan::create(w, d);
  const DenseMatrix x = random_matrix(DType::f16, 3, 800, 4);
  DenseMatrix y(DType::f32, 3, 10), want(DType::f32, 3, 10);
  plan.run(x.data(), y.data());
  reference_matmul(x.view(), w, want.mutable_view(), Accumulate::f64);
  EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size_bytes()), 0);
}

TEST(Plan, ForcedKernelByName) {
  const CondensedMatrix w = weight("2:8", DType::f16, 8, 32, 5);
  MatmulDesc d = cpu_desc(1, DType::f16, DType::f16);
  d.kernel = "cpu:reference";
  const Plan plan = Plan::create(w, d);
  EXPECT_EQ(plan.kernel(), "cpu:reference");
  EXPECT_EQ(plan.reason(), "forced by desc.kernel");
  // Forcing a CPU kernel with automatic backend selects the CPU backend.
  d.backend = Backend::automatic;
  EXPECT_EQ(Plan::create(w, d).backend(), Backend::cpu);
}

TEST(Plan, UnknownKernelListsKnownOnes) {
  const CondensedMatrix w = weight("2:8", DType::f16, 8, 32, 5);
  MatmulDesc d = cpu_desc(1, DType::f16, DType::f16);
  d.kernel = "cuda:does_not_exist";
  expect_invalid([&] { Plan::create(w, d); }, "desc.kernel", "cpu:reference");
  // Every registered name is listed.
  try {
    Plan::create(w, d);
  } catch (const InvalidArgument& e) {
    for (const auto& c : detail::kernel_registry().candidates())
      EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << c.name;
  }
}

TEST(Plan, RegistryHasUniqueNamesAndTheCpuReference) {
  const auto& all = detail::kernel_registry().candidates();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(&detail::kernel_registry(), &detail::kernel_registry());  // built once
  int cpu = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(all[i].unsupported && all[i].create) << all[i].name;
    if (all[i].name == "cpu:reference") ++cpu;
    for (std::size_t j = i + 1; j < all.size(); ++j) EXPECT_NE(all[i].name, all[j].name);
  }
  EXPECT_EQ(cpu, 1);
}

TEST(Plan, InvalidDescriptions) {
  const CondensedMatrix w = weight("2:8", DType::f16, 8, 32, 6);
  expect_invalid([&] { Plan::create(w, cpu_desc(0, DType::f16, DType::f16)); }, "desc.m");
  expect_invalid([&] { Plan::create(w, cpu_desc(-3, DType::f16, DType::f16)); }, "desc.m");
  expect_invalid([&] { Plan::create(w, cpu_desc(1, DType::bf16, DType::f16)); }, "desc.x_dtype", "f16");
  expect_invalid([&] { Plan::create(w, cpu_desc(1, DType::f32, DType::f32)); }, "desc.x_dtype");
  expect_invalid([&] { Plan::create(w, cpu_desc(1, DType::f16, DType::f64)); }, "desc.y_dtype");
  expect_invalid([&] { Plan::create(w, cpu_desc(1, DType::f16, DType::u8)); }, "desc.y_dtype");
  MatmulDesc bad_acc = cpu_desc(1, DType::f16, DType::f16);
  bad_acc.accumulate = Accumulate(9);
  expect_invalid([&] { Plan::create(w, bad_acc); }, "desc.accumulate");
  MatmulDesc bad_backend = cpu_desc(1, DType::f16, DType::f16);
  bad_backend.backend = Backend(9);
  expect_invalid([&] { Plan::create(w, bad_backend); }, "desc.backend");
}

TEST(Plan, MalformedWeightIsRejectedAtCreate) {
  CondensedMatrix w = weight("2:8", DType::f16, 8, 32, 7);
  std::fill(w.indices.begin(), w.indices.end(), std::uint8_t(0));  // positions not ascending
  EXPECT_THROW(Plan::create(w, cpu_desc(1, DType::f16, DType::f16)), FormatError);
}

TEST(Plan, CudaBackendWithoutDevice) {
  const CondensedMatrix w = weight("2:8", DType::f16, 8, 32, 8);
  MatmulDesc d = cpu_desc(1, DType::f16, DType::f16);
  d.backend = Backend::cuda;
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present: the no-device path cannot be tested here";
  EXPECT_THROW(Plan::create(w, d), Unsupported);
  try {
    Plan::create(w, d);
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("desc.backend"), std::string::npos) << e.what();
  }
  // Automatic falls back to the CPU.
  d.backend = Backend::automatic;
  const Plan plan = Plan::create(w, d);
  EXPECT_EQ(plan.backend(), Backend::cpu);
  // A forced CPU kernel on an explicit cuda backend is a contradiction.
  d.backend = Backend::cuda;
  d.kernel = "cpu:reference";
  expect_invalid([&] { Plan::create(w, d); }, "desc.kernel", "cpu backend");
  const DenseMatrix x = random_matrix(DType::f16, 1, 32, 9);
  DenseMatrix y(DType::f16, 1, 8);
  EXPECT_THROW(matmul(x.view(), w, y.mutable_view(), Backend::cuda), Unsupported);
  // Forcing a CUDA kernel (present in CUDA builds) without a device.
  d.backend = Backend::automatic;
  for (const auto& c : detail::kernel_registry().candidates()) {
    if (c.backend != Backend::cuda) continue;
    d.kernel = c.name;
    EXPECT_THROW(Plan::create(w, d), Unsupported) << c.name;
  }
}

TEST(Plan, RunRejectsNullPointers) {
  const CondensedMatrix w = weight("2:4", DType::f32, 4, 8, 10);
  const Plan plan = Plan::create(w, cpu_desc(1, DType::f32, DType::f32));
  float x[8] = {}, y[4] = {};
  expect_invalid([&] { plan.run(nullptr, y); }, "x");
  expect_invalid([&] { plan.run(x, nullptr); }, "y");
}

TEST(Plan, PlansAreCopyableAndShareTheKernel) {
  const CondensedMatrix w = weight("2:4", DType::bf16, 6, 12, 11);
  const Plan a = Plan::create(w, cpu_desc(2, DType::bf16, DType::bf16));
  const Plan b = a;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(b.kernel(), a.kernel());
  const DenseMatrix x = random_matrix(DType::bf16, 2, 12, 12);
  DenseMatrix ya(DType::bf16, 2, 6), yb(DType::bf16, 2, 6);
  a.run(x.data(), ya.data());
  b.run(x.data(), yb.data());
  EXPECT_EQ(std::memcmp(ya.data(), yb.data(), ya.size_bytes()), 0);
}

TEST(Matmul, OneCallOnTheCpu) {
  const CondensedMatrix w = weight("2:8/bw4x2", DType::f16, 13, 50, 13);
  const DenseMatrix x = random_matrix(DType::f16, 6, 50, 14);
  DenseMatrix y(DType::f32, 6, 13);
  std::memset(y.data(), 0xff, y.size_bytes());
  matmul(x.view(), w, y.mutable_view(), Backend::cpu);
  EXPECT_LE(relative_error(y.view(), reference_matmul_f64(x.view(), w)), 1e-6);
  if (!cuda_available()) {  // automatic = cpu here
    DenseMatrix y2(DType::f32, 6, 13);
    matmul(x.view(), w, y2.mutable_view());
    EXPECT_EQ(std::memcmp(y.data(), y2.data(), y.size_bytes()), 0);
  }
}

TEST(Matmul, ErrorsNameTheArgument) {
  const CondensedMatrix w = weight("2:8", DType::f16, 8, 32, 15);
  const DenseMatrix x = random_matrix(DType::f16, 2, 32, 16);
  DenseMatrix y(DType::f16, 2, 8), y_bad(DType::f16, 2, 9);
  const DenseMatrix x_bad = random_matrix(DType::f32, 2, 32, 17);
  expect_invalid([&] { matmul(x.view(), w, y_bad.mutable_view(), Backend::cpu); }, "y");
  expect_invalid([&] { matmul(x_bad.view(), w, y.mutable_view(), Backend::cpu); }, "x");
  expect_invalid([&] { matmul(x.view(), w, y.mutable_view(), Backend(5)); }, "backend");
}

TEST(Plan, BackendNames) {
  EXPECT_EQ(to_string(Backend::automatic), "automatic");
  EXPECT_EQ(to_string(Backend::cpu), "cpu");
  EXPECT_EQ(to_string(Backend::cuda), "cuda");
}

}  // namespace
}  // namespace sparsenm
