// sparsenm CLI — CUDA helpers for the demo (see device.hpp).
#include "device.hpp"

#include "sparsenm/error.hpp"

#if defined(SPARSENM_WITH_CUDA)
#include "cuda/common.cuh"
#endif

namespace sparsenm::cli::device {

#if defined(SPARSENM_WITH_CUDA)

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) SPARSENM_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}
Buffer::~Buffer() {
  if (ptr_) cudaFree(ptr_);
}
void Buffer::upload(const void* host, std::size_t bytes) {
  if (bytes > bytes_) throw InvalidArgument("bytes", "upload larger than the buffer");
  if (bytes) SPARSENM_CUDA_CHECK(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
}
void Buffer::download(void* host, std::size_t bytes) const {
  if (bytes > bytes_) throw InvalidArgument("bytes", "download larger than the buffer");
  if (bytes) SPARSENM_CUDA_CHECK(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost));
}
void Buffer::poison() {
  if (bytes_) SPARSENM_CUDA_CHECK(cudaMemset(ptr_, 0xff, bytes_));
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
}

std::vector<double> time_runs(const std::function<void(void*)>& fn, int warmup, int reps) {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  SPARSENM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct Cleanup {
    cudaStream_t& s;
    cudaEvent_t &a, &b;
    ~Cleanup() {
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
      if (s) cudaStreamDestroy(s);
    }
  } cleanup{stream, start, stop};
  SPARSENM_CUDA_CHECK(cudaEventCreate(&start));
  SPARSENM_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) fn(stream);
  SPARSENM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    SPARSENM_CUDA_CHECK(cudaEventRecord(start, stream));
    fn(stream);
    SPARSENM_CUDA_CHECK(cudaEventRecord(stop, stream));
    SPARSENM_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    SPARSENM_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(double(t));
  }
  SPARSENM_CUDA_CHECK(cudaGetLastError());
  return ms;
}

#else

namespace {
[[noreturn]] void no_cuda() { throw Unsupported("this sparsenm build has no CUDA support"); }
}  // namespace

Buffer::Buffer(std::size_t) { no_cuda(); }
Buffer::~Buffer() = default;
void Buffer::upload(const void*, std::size_t) { no_cuda(); }
void Buffer::download(void*, std::size_t) const { no_cuda(); }
void Buffer::poison() { no_cuda(); }
std::vector<double> time_runs(const std::function<void(void*)>&, int, int) { no_cuda(); }

#endif

}  // namespace sparsenm::cli::device
