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

/// A cudaLaunchKernelEx configuration with the two launch attributes the kernels use: a cluster of
/// (1, y, 1) blocks (the k splits of one row group) and programmatic stream serialization (the launch
/// may begin before the stream's previous kernel ends; the kernel waits for it with
/// griddepcontrol.wait). It holds the attribute array that get() points to, so it is neither copied
/// nor moved: build it where it is launched.
class LaunchConfig {
 public:
  LaunchConfig(dim3 grid, dim3 block, std::size_t smem_bytes, cudaStream_t stream = nullptr) noexcept {
    cfg_.gridDim = grid;
    cfg_.blockDim = block;
    cfg_.dynamicSmemBytes = smem_bytes;
    cfg_.stream = stream;
    cfg_.attrs = attrs_;
  }
  LaunchConfig(const LaunchConfig&) = delete;
  LaunchConfig& operator=(const LaunchConfig&) = delete;

  /// Clusters of (1, y, 1) blocks.
  LaunchConfig& cluster_y(int y) noexcept {
    cudaLaunchAttribute& a = attrs_[cfg_.numAttrs++];
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = 1;
    a.val.clusterDim.y = unsigned(y);
    a.val.clusterDim.z = 1;
    return *this;
  }
  /// A programmatic dependent of the stream's previous launch.
  LaunchConfig& dependent() noexcept {
    cudaLaunchAttribute& a = attrs_[cfg_.numAttrs++];
    a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a.val.programmaticStreamSerializationAllowed = 1;
    return *this;
  }
  const cudaLaunchConfig_t* get() const noexcept { return &cfg_; }

 private:
  cudaLaunchConfig_t cfg_{};
  cudaLaunchAttribute attrs_[2]{};
};

}  // namespace sparsenm::cuda
