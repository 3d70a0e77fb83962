// sparsenm — include/sparsenm/fst.hpp in a build without CUDA: constructing an FstLinear throws
// Unsupported (the layer lives in src/cuda/train/fst_linear.cu). FstSchedule is header-only and
// works everywhere.
#if !defined(SPARSENM_WITH_CUDA)
#include <limits>

#include "sparsenm/error.hpp"
#include "sparsenm/fst.hpp"

namespace sparsenm::train {

struct FstLinear::Impl {
  FstConfig cfg;
  FstBackendReport report;
};

FstLinear::FstLinear(const FstConfig& config) {
  config.schedule.validate();
  throw Unsupported("sparsenm::train::FstLinear: this build has no CUDA (configure with SPARSENM_CUDA=ON)");
}
FstLinear::~FstLinear() = default;
FstLinear::FstLinear(FstLinear&&) noexcept = default;
FstLinear& FstLinear::operator=(FstLinear&&) noexcept = default;
// Unreachable (no FstLinear can be constructed); defined so that callers link.
const FstConfig& FstLinear::config() const noexcept { return impl_->cfg; }
void* FstLinear::weight() noexcept { return nullptr; }
void* FstLinear::bias() noexcept { return nullptr; }
void* FstLinear::weight_grad() noexcept { return nullptr; }
void* FstLinear::bias_grad() noexcept { return nullptr; }
std::int64_t FstLinear::step() const noexcept { return 0; }
FstPhase FstLinear::phase() const noexcept { return FstPhase::sparse; }
void FstLinear::set_step(std::int64_t) {}
FstStepInfo FstLinear::begin_step(void*) { return {}; }
void FstLinear::forward(const void*, std::int64_t, void*, void*) {}
void FstLinear::backward(const void*, const void*, std::int64_t, void*, void*) {}
void FstLinear::end_step() {}
std::uint64_t FstLinear::mvue_seed() const noexcept { return 0; }
std::int64_t FstLinear::last_flip_count() { return -1; }
double FstLinear::last_flip_rate() { return std::numeric_limits<double>::quiet_NaN(); }
FstDebugView FstLinear::debug_view() const noexcept { return {}; }
const FstBackendReport& FstLinear::backends() const noexcept { return impl_->report; }

}  // namespace sparsenm::train
#endif
