// sparsenm CLI — the few CUDA runtime calls the demo needs (buffers, a stream, event timing).
// Compiled against the CUDA runtime only in CUDA builds; otherwise every call throws Unsupported.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace sparsenm::cli::device {

/// Device memory; poison() fills it with 0xFF bytes (NaN for every float type).
class Buffer {
 public:
  explicit Buffer(std::size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const noexcept { return ptr_; }
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  void poison();

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Runs fn(stream) `warmup` times, then `reps` times each between two CUDA events on a fresh
/// stream; returns the milliseconds of each timed run. Checks every call.
std::vector<double> time_runs(const std::function<void(void* stream)>& fn, int warmup, int reps);

}  // namespace sparsenm::cli::device
