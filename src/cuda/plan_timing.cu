// sparsenm — plan-time timing of CUDA kernel candidates (Plan::create's race; never in run()).
//
// Method: random x (fixed seed) and y on the current device, a private non-blocking stream, two
// untimed warm-up runs (then a sync that surfaces any kernel fault), then `reps` runs each
// bracketed by CUDA events, with a read of twice the L2 size before each one (l2_flush.cuh: a
// read, not a memset, so no dirty lines are written back during the timed run) so the weight
// comes from HBM as it does in a model cycling through its layers. Median of the reps (15: close
// candidates, e.g. ew_spmv / ew_spmv_sk / ew_spmv_skr at 2 % apart, need more than 7).
#include <algorithm>
#include <memory>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/l2_flush.cuh"
#include "plan/cuda_hooks.hpp"

namespace sparsenm::detail {
namespace {

struct TimerState {
  cuda::DeviceBuffer x, y;
  std::unique_ptr<cuda::L2Flush> flush;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  int reps = 15;

  TimerState() = default;
  TimerState(const TimerState&) = delete;
  TimerState& operator=(const TimerState&) = delete;
  ~TimerState() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};

}  // namespace

KernelTimer make_cuda_timer(const CondensedMatrix& w, const MatmulDesc& desc, int reps) {
  auto s = std::make_shared<TimerState>();
  s->reps = std::max(reps, 1);
  const DenseMatrix xh = random_matrix(desc.x_dtype, desc.m, w.cols(), 0x9a11e5u);
  s->x = cuda::DeviceBuffer(xh.size_bytes());
  s->x.upload(xh.data(), xh.size_bytes());
  s->y = cuda::DeviceBuffer(std::size_t(desc.m) * std::size_t(w.rows()) * dtype_size(desc.y_dtype));
  s->flush = std::make_unique<cuda::L2Flush>();
  SPARSENM_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  SPARSENM_CUDA_CHECK(cudaEventCreate(&s->start));
  SPARSENM_CUDA_CHECK(cudaEventCreate(&s->stop));

  return [s](const KernelInstance& k) {
    for (int i = 0; i < 2; ++i) k.run(s->x.get(), s->y.get(), s->stream);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    SPARSENM_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    std::vector<float> ms(std::size_t(s->reps));
    for (int r = 0; r < s->reps; ++r) {
      (*s->flush)(s->stream);
      SPARSENM_CUDA_CHECK(cudaEventRecord(s->start, s->stream));
      k.run(s->x.get(), s->y.get(), s->stream);
      SPARSENM_CUDA_CHECK(cudaEventRecord(s->stop, s->stream));
      SPARSENM_CUDA_CHECK(cudaEventSynchronize(s->stop));
      SPARSENM_CUDA_CHECK(cudaGetLastError());
      SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&ms[std::size_t(r)], s->start, s->stop));
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return double(ms[ms.size() / 2]);
  };
}

}  // namespace sparsenm::detail
