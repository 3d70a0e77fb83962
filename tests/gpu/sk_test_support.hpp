// sparsenm GPU tests — shared harness of the stream-K SpMV tests (test_ew_spmv_sk.cu: m = 1,
// test_ew_spmv_skm.cu: m = 2..8): the direct launch with poisoned X / Y, a guard row and the
// workspace / counter check, a forced or automatic CUDA plan's descriptor, and three runs of a plan.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/ew/spmv_layout.hpp"
#include "sparsenm/plan.hpp"
#include "ew_support.hpp"

namespace ewtest {

/// The patterns the stream-K kernels are compiled for (element N:M; hw24 runs as element 2:4).
inline const std::vector<Pattern>& sk_compiled_patterns() {
  static const std::vector<Pattern> p = {Pattern::element(2, 4),  Pattern::element(4, 8),  Pattern::element(2, 8),
                                         Pattern::element(1, 8),  Pattern::element(2, 16), Pattern::element(1, 16),
                                         Pattern::element(8, 32), Pattern::element(16, 32)};
  return p;
}

/// Launches a stream-K instance `fn(a, cfg, nullptr)` three times on the packed weight and X
/// (X surrounded by NaN, shifted by 2 bytes when `misaligned_x`), with a workspace of `ws_bytes`
/// and counters of `cnt_bytes` zeroed once before the first launch. Y (`ybytes`) is poisoned
/// before each launch together with `extra` guard bytes that must stay untouched. Afterwards the
/// workspace and the counters must be zero again; y receives Y of the last launch. `a`: Args as
/// filled by the plan (SkArgs / SkmArgs); its pointers and y_dtype are set here (but a V:2:M
/// launch's column tables, SkArgs::tab: the caller's). Packed: SpmvPacked or detail::VnmSkPacked.
template <class Packed, class Args, class Config, class LaunchFn>
void run_stream_k(const Packed& packed, const DenseMatrix& x, bool misaligned_x, DType yt,
                  std::size_t ybytes, std::size_t extra, std::size_t ws_bytes, std::size_t cnt_bytes, Args& a,
                  const Config& cfg, LaunchFn fn, std::vector<std::byte>& y) {
  DeviceMem dv(packed.values.size()), di(packed.indices.size() * 4), dx(x.size_bytes() + 16);
  DeviceMem ws(ws_bytes), cnt(cnt_bytes);
  DeviceMem dy(ybytes + extra);
  const std::size_t xoff = misaligned_x ? 2 : 0;
  EW_CUDA(cudaMemcpy(dv.p, packed.values.data(), packed.values.size(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemcpy(di.p, packed.indices.data(), packed.indices.size() * 4, cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemset(dx.p, 0xFF, x.size_bytes() + 16));  // NaN around X: a read past k (or m) would show
  EW_CUDA(cudaMemcpy(static_cast<char*>(dx.p) + xoff, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  EW_CUDA(cudaMemset(ws.p, 0, ws_bytes));
  EW_CUDA(cudaMemset(cnt.p, 0, cnt_bytes));
  for (int rep = 0; rep < 3; ++rep) {
    EW_CUDA(cudaMemset(dy.p, 0xFF, ybytes + extra));
    a.values = dv.p;
    a.indices = static_cast<const std::uint32_t*>(di.p);
    a.x = static_cast<const char*>(dx.p) + xoff;
    a.y = dy.p;
    a.ws = static_cast<float*>(ws.p);
    a.cnt = static_cast<unsigned*>(cnt.p);
    a.y_dtype = yt == DType::f32 ? 0 : yt == DType::f16 ? 1 : 2;
    fn(a, cfg, nullptr);
    EW_CUDA(cudaGetLastError());
    EW_CUDA(cudaDeviceSynchronize());
  }
  // The workspace and the counters are zero again after every launch.
  std::vector<float> hws(ws_bytes / 4);
  std::vector<unsigned> hcnt(cnt_bytes / 4);
  EW_CUDA(cudaMemcpy(hws.data(), ws.p, ws_bytes, cudaMemcpyDeviceToHost));
  EW_CUDA(cudaMemcpy(hcnt.data(), cnt.p, cnt_bytes, cudaMemcpyDeviceToHost));
  for (float v : hws) ASSERT_EQ(v, 0.0f);
  for (unsigned v : hcnt) ASSERT_EQ(v, 0u);
  read_back_guarded(dy.p, ybytes, extra, y);
}

/// Descriptor of a CUDA plan with X and Y in dtype t; `kernel` forces one ("" = the automatic choice).
inline MatmulDesc cuda_desc(std::int64_t m, DType t, const char* kernel = "") {
  MatmulDesc d;
  d.m = m;
  d.x_dtype = t;
  d.y_dtype = t;
  d.backend = Backend::cuda;
  d.kernel = kernel;
  return d;
}

/// Runs the plan three times (Y of `ybytes` poisoned before each run) on X uploaded from x;
/// y receives Y of the last run.
inline void run_plan_thrice(const Plan& plan, const DenseMatrix& x, std::size_t ybytes, std::vector<std::byte>& y) {
  DeviceMem dx(x.size_bytes()), dy(ybytes);
  EW_CUDA(cudaMemcpy(dx.p, x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  for (int rep = 0; rep < 3; ++rep) {
    EW_CUDA(cudaMemset(dy.p, 0xFF, ybytes));
    plan.run(dx.p, dy.p, nullptr);
    EW_CUDA(cudaDeviceSynchronize());
  }
  y.resize(ybytes);
  EW_CUDA(cudaMemcpy(y.data(), dy.p, y.size(), cudaMemcpyDeviceToHost));
}

}  // namespace ewtest
