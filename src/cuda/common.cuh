// sparsenm — CUDA helpers shared by every kernel family: error checks and device buffers.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "sparsenm/error.hpp"

namespace sparsenm::cuda {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                  ") at " + file + ":" + std::to_string(line));
}

}  // namespace sparsenm::cuda

/// Checks a CUDA runtime call; throws sparsenm::CudaError naming the call.
#define SPARSENM_CUDA_CHECK(call)                                                        \
  do {                                                                                   \
    cudaError_t sparsenm_e_ = (call);                                                    \
    if (sparsenm_e_ != cudaSuccess) ::sparsenm::cuda::throw_cuda(sparsenm_e_, #call, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: checks the launch error (not a sync).
#define SPARSENM_CUDA_CHECK_LAUNCH(name) SPARSENM_CUDA_CHECK(cudaPeekAtLastError())

namespace sparsenm::cuda {

/// Lets `kernel` launch with `bytes` of dynamic shared memory (the opt-in above 48 KiB).
template <class Kernel>
void allow_dynamic_smem(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

/// CTAs of `kernel` resident per SM with `threads` threads and `bytes` of dynamic shared memory.
template <class Kernel>
int resident_ctas(Kernel kernel, int threads, int bytes) {
  allow_dynamic_smem(kernel, bytes);
  int blocks = 0;
  SPARSENM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, std::size_t(bytes)));
  return blocks;
}

/// Owning device allocation (cudaMalloc), movable, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) SPARSENM_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }
  void reset() noexcept {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const noexcept { return ptr_; }
  template <class T> T* as() const noexcept { return static_cast<T*>(ptr_); }
  std::size_t size() const noexcept { return bytes_; }
  /// Uploads `bytes` from host (synchronous).
  void upload(const void* host, std::size_t bytes) {
    if (bytes) SPARSENM_CUDA_CHECK(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
  }
  void download(void* host, std::size_t bytes) const {
    if (bytes) SPARSENM_CUDA_CHECK(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost));
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace sparsenm::cuda
