// sparsenm — the CPU backend's one candidate: the reference kernel (src/cpu/reference.cpp) on a
// copy of the condensed weight, which the plan validated at create time.
#include <memory>

#include "cpu/reference_impl.hpp"
#include "plan/registry.hpp"

namespace sparsenm::detail {
namespace {

class CpuReference final : public KernelInstance {
 public:
  CpuReference(const CondensedMatrix& w, const MatmulDesc& desc) : w_(w), desc_(desc) {}

  // Host x [m][k] and y [m][n], contiguous. Allocates small host scratch per call (the
  // transposed X tile), so concurrent runs are safe; workspace_bytes() stays 0.
  void run(const void* x, void* y, void*) const override {
    const MatrixView xv{desc_.x_dtype, x, desc_.m, w_.cols(), w_.cols()};
    const MutableMatrixView yv{desc_.y_dtype, y, desc_.m, w_.rows(), w_.rows()};
    reference_matmul_trusted(xv, w_, yv, desc_.accumulate);
  }

 private:
  CondensedMatrix w_;
  MatmulDesc desc_;
};

}  // namespace

void register_cpu_kernels(KernelRegistry& r) {
  r.add(KernelCandidate{
      .name = "cpu:reference",
      .backend = Backend::cpu,
      .unsupported = [](const CondensedMatrix&, const MatmulDesc&) { return std::string(); },  // every problem
      .create = [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
        return std::make_unique<CpuReference>(w, d);
      },
  });
}

}  // namespace sparsenm::detail
