// sparsenm — describe -> plan -> run: validation, kernel choice, the one-call matmul.
//
// Choice (registry.hpp): a forced desc.kernel by name; else on the CPU backend the reference
// kernel; else on the CUDA backend every supported candidate is created (its weight packed) and
// timed on the real weight with random x, and the fastest is kept. The reason string records
// what happened, e.g. "fastest of 3 candidates: cuda:ew_spmv 0.120 ms, cuda:cublas_dense 0.200 ms,
// ...; not supported: cuda:vnm (needs a V:2:M weight)".
#include "sparsenm/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "cpu/reference_impl.hpp"
#include "plan/cuda_hooks.hpp"
#include "plan/registry.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm {

struct Plan::Impl {
  MatmulDesc desc;
  FormatLayout layout;
  Backend backend = Backend::cpu;
  std::string kernel;
  std::string reason;
  std::unique_ptr<detail::KernelInstance> instance;
};

std::string_view to_string(Backend b) noexcept {
  switch (b) {
    case Backend::automatic: return "automatic";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

bool cuda_available() noexcept {
#if defined(SPARSENM_WITH_CUDA)
  static const bool available = detail::cuda_device_count() > 0;
  return available;
#else
  return false;
#endif
}

namespace detail {

const KernelRegistry& kernel_registry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_cpu_kernels(r);
#if defined(SPARSENM_WITH_CUDA)
    register_cuda_kernels(r);
#endif
    return r;
  }();
  return registry;
}

}  // namespace detail

namespace {

using detail::KernelCandidate;
using detail::KernelInstance;

std::string known_kernels() {
  std::string out;
  for (const auto& c : detail::kernel_registry().candidates()) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

void validate_desc(const CondensedMatrix& w, const MatmulDesc& d) {
  if (d.m < 1) throw InvalidArgument("desc.m", "must be >= 1 (got " + std::to_string(d.m) + ")");
  if (!is_weight_dtype(w.dtype))
    throw InvalidArgument("weight", "dtype must be f32, f16 or bf16 (got " + std::string(to_string(w.dtype)) + ")");
  if (d.x_dtype != w.dtype)
    throw InvalidArgument("desc.x_dtype", "must equal the weight's dtype " + std::string(to_string(w.dtype)) +
                                              " (got " + std::string(to_string(d.x_dtype)) + ")");
  if (!is_weight_dtype(d.y_dtype))
    throw InvalidArgument("desc.y_dtype", "must be f32, f16 or bf16 (got " + std::string(to_string(d.y_dtype)) + ")");
  if (d.accumulate != Accumulate::f32 && d.accumulate != Accumulate::f64)
    throw InvalidArgument("desc.accumulate", "must be f32 or f64 (got " + std::to_string(int(d.accumulate)) + ")");
  if (d.backend != Backend::automatic && d.backend != Backend::cpu && d.backend != Backend::cuda)
    throw InvalidArgument("desc.backend", "must be automatic, cpu or cuda (got " + std::to_string(int(d.backend)) + ")");
}

Backend resolve_backend(Backend requested, const std::string& argument) {
  if (requested == Backend::automatic) return cuda_available() ? Backend::cuda : Backend::cpu;
  if (requested == Backend::cuda && !cuda_available())
    throw Unsupported(argument +
#if defined(SPARSENM_WITH_CUDA)
                      ": the cuda backend was requested but no CUDA device is usable"
#else
                      ": the cuda backend was requested but this build has no CUDA support (SPARSENM_CUDA=OFF)"
#endif
    );
  return requested;
}

[[maybe_unused]] std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

[[maybe_unused]] std::string format_us(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", ms * 1000.0);
  return buf;
}

// A CUDA instance's constructor may leave work queued on the legacy default stream (workspace
// memsets, uploads from pageable memory); runs go to non-blocking streams, so wait here once.
void settle(Backend backend) {
#if defined(SPARSENM_WITH_CUDA)
  if (backend == Backend::cuda) detail::cuda_device_synchronize();
#else
  (void)backend;
#endif
}

// Picks among the supported candidates of one backend; fills kernel, reason and instance.
void choose(const CondensedMatrix& w, const MatmulDesc& desc, Backend backend, Plan::Impl& impl) {
  std::vector<const KernelCandidate*> ok;
  std::string skipped;
  for (const auto& c : detail::kernel_registry().candidates()) {
    if (c.backend != backend) continue;
    std::string why;
    try {
      why = c.unsupported(w, desc);
    } catch (const Error& e) {  // a support check that throws rules its candidate out, visibly
      why = std::string("support check failed: ") + e.what();
    }
    if (why.empty())
      ok.push_back(&c);
    else
      skipped += (skipped.empty() ? "" : "; ") + c.name + " (" + why + ")";
  }
  const std::string tail = skipped.empty() ? "" : "; not supported: " + skipped;
  if (ok.empty())
    throw Unsupported("no " + std::string(to_string(backend)) + " kernel supports " + w.pattern().str() + " " +
                      std::string(to_string(w.dtype)) + " -> " + std::string(to_string(desc.y_dtype)) + " at m = " +
                      std::to_string(desc.m) + ": " + skipped);

  if (backend == Backend::cpu || ok.size() == 1) {
    auto it = std::find_if(ok.begin(), ok.end(), [](const KernelCandidate* c) { return c->name == "cpu:reference"; });
    const KernelCandidate* pick = it != ok.end() ? *it : ok.front();
    impl.kernel = pick->name;
    impl.instance = pick->create(w, desc);
    settle(backend);
    const std::string what = impl.instance->describe();
    impl.reason = (backend == Backend::cpu ? "cpu backend: " + pick->name + " (CPU kernels are not timed)"
                                           : "only supported candidate: " + pick->name) +
                  (what.empty() ? "" : " [" + what + "]") +
                  tail;
    return;
  }

#if defined(SPARSENM_WITH_CUDA)
  // Time every supported candidate on the real packed weight. A candidate that fails to build or
  // run is reported in the reason and left out of the race. The instances of the kFinalists
  // fastest stay alive; those within kFinalMargin of the fastest then run kFinalRounds more
  // timings, interleaved (a b c a b c ...), and the lowest median over all their timings wins:
  // near-tied candidates (e.g. the m = 1 stream-K forms, 0.5 % apart) are otherwise picked by one
  // 15-run median each, whose run-to-run spread (~0.5 us) is larger than their difference.
  constexpr std::size_t kFinalists = 3;
  constexpr double kFinalMargin = 1.04;
  constexpr int kFinalRounds = 4;
  const detail::KernelTimer timer = detail::make_cuda_timer(w, desc);
  struct Timed {
    const KernelCandidate* c;
    double ms;
    std::string what;  // the instance's describe()
  };
  struct Kept {
    const KernelCandidate* c;
    std::unique_ptr<KernelInstance> inst;
    std::vector<double> ms;  // first pass, then the finals
  };
  std::vector<Timed> timed;
  std::vector<Kept> kept;  // sorted by first-pass time, at most kFinalists
  std::string failed;
  for (const KernelCandidate* c : ok) {
    try {
      std::unique_ptr<KernelInstance> inst = c->create(w, desc);
      settle(backend);
      const double ms = timer(*inst);
      timed.push_back({c, ms, inst->describe()});
      kept.push_back({c, std::move(inst), {ms}});
      std::stable_sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) { return a.ms[0] < b.ms[0]; });
      if (kept.size() > kFinalists) kept.pop_back();  // frees that instance's device memory now
    } catch (const std::exception& e) {  // sparsenm::Error, or e.g. std::bad_alloc while packing
      failed += (failed.empty() ? "" : "; ") + c->name + " (" + e.what() + ")";
    }
  }
  if (timed.empty()) throw Unsupported("every supported cuda kernel failed: " + failed);
  std::stable_sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) { return a.ms < b.ms; });
  std::string list;
  for (const Timed& t : timed)
    list += (list.empty() ? "" : ", ") + t.c->name + (t.what.empty() ? "" : " [" + t.what + "]") + " " + format_ms(t.ms);

  while (kept.size() > 1 && kept.back().ms[0] > kept.front().ms[0] * kFinalMargin) kept.pop_back();
  std::string finals;
  std::size_t pick = 0;
  if (kept.size() > 1) {
    for (int r = 0; r < kFinalRounds; ++r)
      for (Kept& k : kept) k.ms.push_back(timer(*k.inst));
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      const std::size_t h = v.size() / 2;
      return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
    };
    double best_ms = 0.0;
    for (std::size_t i = 0; i < kept.size(); ++i) {
      const double ms = median(kept[i].ms);
      if (i == 0 || ms < best_ms) {
        best_ms = ms;
        pick = i;
      }
      finals += (finals.empty() ? "" : ", ") + kept[i].c->name + " " + format_us(ms);
    }
    finals = "; finals within " + std::to_string(int((kFinalMargin - 1.0) * 100 + 0.5)) + " % (median of " +
             std::to_string(kFinalRounds + 1) + " interleaved timings): " + finals;
  }
  impl.kernel = kept[pick].c->name;
  impl.instance = std::move(kept[pick].inst);
  impl.reason = "fastest of " + std::to_string(timed.size()) + " candidates: " + list + finals +
                (failed.empty() ? "" : "; failed: " + failed) + tail;
#else
  throw Unsupported("desc.backend: cuda kernels are not compiled into this build");
#endif
}

}  // namespace

Plan Plan::create(const CondensedMatrix& weight, const MatmulDesc& desc) {
  validate_desc(weight, desc);
  weight.validate();  // FormatError on a malformed weight; kernels may trust it from here on

  auto impl = std::make_shared<Impl>();
  impl->desc = desc;
  impl->layout = weight.layout;

  if (!desc.kernel.empty()) {
    const auto& all = detail::kernel_registry().candidates();
    auto it = std::find_if(all.begin(), all.end(), [&](const KernelCandidate& c) { return c.name == desc.kernel; });
    if (it == all.end())
      throw InvalidArgument("desc.kernel", "must name a known kernel (" + known_kernels() + "); got '" + desc.kernel + "'");
    if (desc.backend != Backend::automatic && desc.backend != it->backend)
      throw InvalidArgument("desc.kernel", "kernel '" + desc.kernel + "' runs on the " +
                                               std::string(to_string(it->backend)) + " backend but desc.backend is " +
                                               std::string(to_string(desc.backend)));
    impl->backend = resolve_backend(it->backend, "desc.kernel '" + desc.kernel + "'");
    std::string why = it->unsupported(weight, desc);
    if (!why.empty()) throw Unsupported("desc.kernel: kernel '" + desc.kernel + "' does not support this problem: " + why);
    impl->kernel = it->name;
    impl->instance = it->create(weight, desc);
    settle(impl->backend);
    const std::string what = impl->instance ? impl->instance->describe() : std::string();
    impl->reason = "forced by desc.kernel" + (what.empty() ? std::string() : " [" + what + "]");
  } else {
    impl->backend = resolve_backend(desc.backend, "desc.backend");
    choose(weight, desc, impl->backend, *impl);
  }
  if (!impl->instance) throw Error("Plan::create: kernel '" + impl->kernel + "' returned no instance");
  return Plan(std::move(impl));
}

void Plan::run(const void* x, void* y, void* stream) const {
  if (!impl_) throw InvalidArgument("plan", "must hold a plan (this one was moved from)");
  if (x == nullptr) throw InvalidArgument("x", "must not be null");
  if (y == nullptr) throw InvalidArgument("y", "must not be null");
  impl_->instance->run(x, y, stream);
}

// Accessors of a moved-from plan are undefined (like any moved-from object); run() checks.
Backend Plan::backend() const noexcept { return impl_->backend; }
const std::string& Plan::kernel() const noexcept { return impl_->kernel; }
const std::string& Plan::reason() const noexcept { return impl_->reason; }
const MatmulDesc& Plan::desc() const noexcept { return impl_->desc; }
const FormatLayout& Plan::layout() const noexcept { return impl_->layout; }
std::size_t Plan::workspace_bytes() const noexcept { return impl_->instance->workspace_bytes(); }

void matmul(const MatrixView& x, const CondensedMatrix& w, const MutableMatrixView& y, Backend backend) {
  if (backend != Backend::automatic && backend != Backend::cpu && backend != Backend::cuda)
    throw InvalidArgument("backend", "must be automatic, cpu or cuda (got " + std::to_string(int(backend)) + ")");
  const Backend b = resolve_backend(backend, "backend");
  if (b == Backend::cpu) {
    reference_matmul(x, w, y, Accumulate::f32);  // validates x, w, y
    return;
  }
#if defined(SPARSENM_WITH_CUDA)
  detail::cuda_matmul(x, w, y);
#endif
}

}  // namespace sparsenm
