// sparsenm — the plan layer's CUDA-side helpers: device count and the one-call matmul on the
// CUDA backend (host x and y; device copies live only for the call).
#include <cstring>
#include <vector>

#include "cpu/reference_impl.hpp"
#include "cuda/common.cuh"
#include "plan/cuda_hooks.hpp"

namespace sparsenm::detail {

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // reset the last-error state so later calls start clean
    return 0;
  }
  return n;
}

void cuda_device_synchronize() { SPARSENM_CUDA_CHECK(cudaDeviceSynchronize()); }

void cuda_matmul(const MatrixView& x, const CondensedMatrix& w, const MutableMatrixView& y) {
  check_matmul_operands(x, w, y);
  if (x.rows == 0 || w.rows() == 0) return;
  MatmulDesc desc;
  desc.m = x.rows;
  desc.x_dtype = x.dtype;
  desc.y_dtype = y.dtype;
  desc.accumulate = Accumulate::f32;
  desc.backend = Backend::cuda;
  const Plan plan = Plan::create(w, desc);

  const std::size_t xe = dtype_size(x.dtype), ye = dtype_size(y.dtype);
  const std::size_t x_row = std::size_t(x.cols) * xe, y_row = std::size_t(y.cols) * ye;
  const std::size_t x_bytes = std::size_t(x.rows) * x_row, y_bytes = std::size_t(y.rows) * y_row;

  // Contiguous host staging where the views have padding (ld > cols).
  std::vector<std::byte> staging;
  const void* x_src = x.data;
  if (x.ld != x.cols) {
    staging.resize(x_bytes);
    for (std::int64_t i = 0; i < x.rows; ++i)
      std::memcpy(staging.data() + std::size_t(i) * x_row, static_cast<const std::byte*>(x.data) + std::size_t(i * x.ld) * xe,
                  x_row);
    x_src = staging.data();
  }
  cuda::DeviceBuffer xd(x_bytes), yd(y_bytes);
  xd.upload(x_src, x_bytes);
  plan.run(xd.get(), yd.get(), nullptr);
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  if (y.ld == y.cols) {
    yd.download(y.data, y_bytes);
  } else {
    std::vector<std::byte> out(y_bytes);
    yd.download(out.data(), y_bytes);
    for (std::int64_t i = 0; i < y.rows; ++i)
      std::memcpy(static_cast<std::byte*>(y.data) + std::size_t(i * y.ld) * ye, out.data() + std::size_t(i) * y_row, y_row);
  }
}

}  // namespace sparsenm::detail
