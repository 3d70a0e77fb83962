// sparsenm GPU tests — a minimal probe of how compute-sanitizer racecheck treats shared memory
// written by `cp.async.bulk ... mbarrier::complete_tx` (ptx.cuh bulk_load) and then read by generic
// ld.shared after the mbarrier phase completed. Our 2:4 / V:2:M kernels read their metadata words
// this way and racecheck reports RAW / WAR hazards on them (docs/PERF-sptc.md, "racecheck on the
// bulk-copied metadata"). This file has no kernel logic of the library: one CTA, one buffer, the
// producer/consumer protocol of those kernels reduced to its steps, so the racecheck report (or
// its silence) on these two tests decides whether racecheck models bulk-copy completion.
//   BulkCopyMbarrierThenRead: thread 0 inits `full`, expect_tx + one bulk copy; every thread waits
//     on the phase and reads the buffer (no reuse: a RAW report here is a tool limitation).
//   BulkCopyReuseOneRound: the same, then every warp releases the buffer (__syncwarp + one-lane
//     arrive on `empty`), thread 0 waits on `empty`, issues a second bulk copy into the same buffer;
//     all wait and read again (the WAR / RAW pair of a ring slot refill).
// Both check every word read against the source, so they fail if the protocol is broken.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/sptc/ptx.cuh"

namespace sparsenm {
namespace {

constexpr int kWords = 1024;  // 4 KB per bulk copy (a multiple of 16 bytes)
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) bulk_probe_kernel(const std::uint32_t* __restrict__ src,
                                                              std::uint32_t* __restrict__ out, int rounds) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cs = cuda::sptc;
  __shared__ alignas(128) std::uint32_t buf[kWords];
  __shared__ alignas(8) std::uint64_t full, empty;
  const int tid = int(threadIdx.x);
  if (tid == 0) {
    cs::mbar_init(&full, 1);
    cs::mbar_init(&empty, kThreads / 32);
    cs::fence_mbar_init();
  }
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    if (tid == 0) {
      if (r > 0) cs::mbar_wait(&empty, (r - 1) & 1);  // every warp read round r-1
      cs::mbar_expect_tx(&full, kWords * 4);
      cs::bulk_load(buf, src + std::size_t(r) * kWords, kWords * 4, &full);
    }
    cs::mbar_wait(&full, r & 1);
    for (int i = tid; i < kWords; i += kThreads) out[std::size_t(r) * kWords + i] = buf[i];  // generic ld.shared
    if (r + 1 < rounds) {
      __syncwarp();  // the arrive releases lane 0's accesses only
      if (tid % 32 == 0) cs::mbar_arrive(&empty);
    }
  }
#else
  (void)src; (void)out; (void)rounds;
  __trap();
#endif
}

bool have_sm90() {
  int n = 0, dev = 0, major = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return false;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major == 9;
}

void run_probe(int rounds) {
  if (!have_sm90()) GTEST_SKIP() << "no sm_90 CUDA device: cp.async.bulk racecheck probe skipped";
  const std::size_t words = std::size_t(rounds) * kWords;
  std::vector<std::uint32_t> h(words);
  std::uint32_t s = 0x9E3779B9u;
  for (auto& v : h) {  // distinct per round, never 0 or 0xFFFFFFFF
    s = s * 1664525u + 1013904223u;
    v = (s >> 1) | 1u;
  }
  cuda::DeviceBuffer src(words * 4), out(words * 4);
  src.upload(h.data(), words * 4);
  for (int rep = 0; rep < 3; ++rep) {
    SPARSENM_CUDA_CHECK(cudaMemset(out.get(), 0xFF, words * 4));  // poison
    bulk_probe_kernel<<<1, kThreads>>>(src.as<std::uint32_t>(), out.as<std::uint32_t>(), rounds);
    SPARSENM_CUDA_CHECK(cudaGetLastError());
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint32_t> got(words);
    out.download(got.data(), words * 4);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < words; ++i) bad += got[i] != h[i];
    EXPECT_EQ(bad, 0u) << "rounds " << rounds << " rep " << rep << ": words read from the bulk-copied buffer differ";
  }
}

TEST(RacecheckProbe, BulkCopyMbarrierThenRead) { run_probe(1); }
TEST(RacecheckProbe, BulkCopyReuseOneRound) { run_probe(2); }

}  // namespace
}  // namespace sparsenm
