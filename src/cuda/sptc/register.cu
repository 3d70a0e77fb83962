// sparsenm — plan candidates of the sparse tensor-core family:
//   cuda:sptc_24_wgmma  sm_90 (Hopper, sm_90a code): wgmma.mma_async.sp + TMA pipeline
//   cuda:sptc_24_mma    sm_80+: mma.sp::ordered_metadata m16n8k32 + cp.async
//   cuda:sptc_24_wgmma_p  sm_90: the same product on the persistent kernel (wgmma_persistent.cu)
//   cuda:sptc_24_wgmma_3  sm_90: 192 x 256 tiles on 3 warpgroups (sptc24_wgmma3.cu: one X stage in
//                       shared memory feeds 3 warpgroups, fewer shared-memory bytes per MMA)
//   cuda:vnm_wgmma      sm_90: V:2:M (venom) weights: X transposed into a workspace once per run,
//                       cp.async gather of the selected columns, wgmma.mma_async.sp (trans-b);
//                       tiles in groups of 8 row tiles sweeping all column tiles
//   cuda:vnm_wgmma_mr   the same with groups of 2 column tiles sweeping all row tiles (the Xt slice
//                       the gathers re-read stays in L2)
//   (both with gather mode 6 since session 4: the streamlined cp.async producer, 1.9-2.3x faster than
//   mode 1 on the H200, docs/PERF-sptc.md "Session 4"; modes 7 / 8 measured slower: experiments only)
//   (session 4b options - gather modes 9 / 10, the shared-memory index ring, the register transpose
//   of X (VnmInstance's `transpose` argument) - are tested options, not yet plan candidates: they were
//   not measured on a device yet, docs/PERF-sptc.md "Session 4b")
// The 2:4 candidates take hw24 weights and element N:M or venom V:2:M weights whose aligned groups of
// 4 hold <= 2 nonzeros (repacked to 2:4 at plan time; V:2:M with M % 4 == 0 always qualifies), f16/bf16
// in, f32 accumulation, f32/f16/bf16 out. A V:2:M plan thus races vnm_wgmma(_mr), these and cuBLAS.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "cuda/common.cuh"
#include "cuda/sptc/pack.hpp"
#include "cuda/sptc/sptc.hpp"
#include "plan/registry.hpp"

namespace sparsenm::detail {
namespace {

namespace cs = sparsenm::cuda::sptc;

std::string desc_unsupported(const CondensedMatrix& w, const MatmulDesc& d) {
  if (d.x_dtype != w.dtype) return "x dtype must equal the weight dtype";
  if (d.y_dtype != DType::f32 && d.y_dtype != DType::f16 && d.y_dtype != DType::bf16) return "y dtype must be f32, f16 or bf16";
  if (d.accumulate != Accumulate::f32) return "accumulates in f32 only";
  if (d.m < 1) return "m must be >= 1";
  if (w.layout.rows >= (std::int64_t(1) << 31) || w.layout.cols >= (std::int64_t(1) << 31) || d.m >= (std::int64_t(1) << 31))
    return "dimensions must be < 2^31";
  return {};
}

std::string common_unsupported(const CondensedMatrix& w, const MatmulDesc& d) {
  if (std::string why = desc_unsupported(w, d); !why.empty()) return why;
  if (!every_group_stores_two(w))
    if (std::string why = needs_finite_x(d, "zero-fills groups of 4 holding fewer than 2 stored slots"); !why.empty())
      return why;
  return sptc::hw24_unsupported(w);
}

std::string vnm_unsupported(const CondensedMatrix& w, const MatmulDesc& d) {
  if (cs::device_cc() != 90) return "needs an sm_90 device (Hopper; built as sm_90a)";
  if (std::string why = desc_unsupported(w, d); !why.empty()) return why;
  if (d.m > 4194240) return "m must be <= 4194240 (transpose grid)";
  return sptc::venom_unsupported(w);
}

int sm_count() {
  int sms = 132, dev = 0;
  if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms;
}

/// Packed weight on the device + the padded-X workspace when k % 8 != 0.
class Sptc24Instance : public KernelInstance {
 public:
  /// three: the 192 x 256 three-warpgroup kernel (cuda:sptc_24_wgmma_3; wgmma must be true)
  Sptc24Instance(const CondensedMatrix& w, const MatmulDesc& d, bool wgmma, bool persistent = false, bool three = false)
      : desc_(d), wgmma_(wgmma), persistent_(persistent), three_(three) {
    n_ = w.layout.rows;
    k_ = w.layout.cols;
    ldx_ = sptc::round_up(k_, 8);
    if (wgmma_) tile_ = choose_tile(n_, d.m);
    ptile_ = (tile_ == cs::WgTile::m128n256) ? cs::PTile::r128n256 : cs::PTile::r128n128;
    // every tile shape's row count divides 128, except the 192-row tile
    const int align = three_ ? 192 : 128;
    sptc::Packed24 p = sptc::pack_hw24(w, align);
    values_ = cuda::DeviceBuffer(p.values.size() * 2);
    values_.upload(p.values.data(), p.values.size() * 2);
    meta_ = cuda::DeviceBuffer(p.meta.size() * 4);
    meta_.upload(p.meta.data(), p.meta.size() * 4);
    a_.values = values_.get();
    a_.meta = meta_.as<std::uint32_t>();
    a_.rows = n_;
    a_.rows_pad = p.rows_pad;
    a_.k_pad = p.k_pad;
    if (ldx_ != k_) workspace_ = cuda::DeviceBuffer(std::size_t(d.m * ldx_) * 2);
    if (three_)
      map_ = cs::make_values_map_rows(a_, 192);
    else if (wgmma_)
      map_ = persistent_ ? cs::make_values_map_rows(a_, 128) : cs::make_values_map(a_, w.dtype, tile_);
  }

  void run(const void* x, void* y, void* stream) const override {
    auto s = static_cast<cudaStream_t>(stream);
    cs::Problem p{desc_.x_dtype, desc_.y_dtype, x, y, desc_.m, n_, k_, ldx_};
    if (ldx_ != k_) {
      cs::pad_x(desc_.x_dtype, x, desc_.m, k_, workspace_.get(), ldx_, s);
      p.x = workspace_.get();
    }
    if (three_)
      cs::run_sptc24_wgmma3(a_, map_, p, s);
    else if (persistent_)
      cs::run_sptc24_wgmma_persistent(a_, map_, ptile_, p, s);
    else if (wgmma_)
      cs::run_sptc24_wgmma(a_, map_, tile_, p, s);
    else
      cs::run_sptc24_mma(a_, p, s);
  }
  std::size_t workspace_bytes() const override { return workspace_.size(); }

  /// Tile heuristic from the H200 run (bench/results/NVIDIA_H200-sptc-*.jsonl): 128x256 wins once
  /// it fills ~1.4 waves of CTAs (all m >= 2048 cases), 128x128 below that, 64x128 for tiny grids.
  static cs::WgTile choose_tile(std::int64_t n, std::int64_t m) {
    const int sms = sm_count();
    auto tiles = [&](std::int64_t bm, std::int64_t bn) { return double(((n + bm - 1) / bm) * ((m + bn - 1) / bn)); };
    if (tiles(128, 256) >= 1.4 * sms) return cs::WgTile::m128n256;
    if (tiles(128, 128) >= 0.75 * sms) return cs::WgTile::m128n128;
    return cs::WgTile::m64n128;
  }

 private:
  MatmulDesc desc_;
  bool wgmma_, persistent_, three_;
  std::int64_t n_ = 0, k_ = 0, ldx_ = 0;
  cs::WgTile tile_ = cs::WgTile::m128n256;
  cs::PTile ptile_ = cs::PTile::r128n256;
  cuda::DeviceBuffer values_, meta_, workspace_;
  cs::DeviceA a_;
  CUtensorMap map_{};
};

/// V:2:M weight packed as a gathered 2:4 operand + the gather table on the device; X^T workspace.
class VnmInstance : public KernelInstance {
 public:
  VnmInstance(const CondensedMatrix& w, const MatmulDesc& d, cs::PSched sched, int gather_mode = 0, int transpose = 0)
      : desc_(d), sched_(sched), gather_mode_(gather_mode), transpose_(transpose) {
    n_ = w.layout.rows;
    k_ = w.layout.cols;
    ldt_ = sptc::round_up(d.m, 8);
    tile_ = choose_tile(w.layout.pattern.v, n_, d.m);
    sptc::PackedVnm p = sptc::pack_venom(w, cs::ptile_rows(tile_), 128);
    values_ = cuda::DeviceBuffer(p.a.values.size() * 2);
    values_.upload(p.a.values.data(), values_.size());
    meta_ = cuda::DeviceBuffer(p.a.meta.size() * 4);
    meta_.upload(p.a.meta.data(), meta_.size());
    gather_ = cuda::DeviceBuffer(p.gather.size() * 4);
    gather_.upload(p.gather.data(), gather_.size());
    a_ = cs::DeviceA{values_.get(), meta_.as<std::uint32_t>(), p.a.rows, p.a.rows_pad, p.a.k_pad};
    rows_per_tile_ = p.rows_per_group;
    map_ = cs::make_values_map_rows(a_, cs::ptile_rows(tile_));
    xt_ = cuda::DeviceBuffer(std::size_t(k_ * ldt_) * 2);
  }

  void run(const void* x, void* y, void* stream) const override {
    auto s = static_cast<cudaStream_t>(stream);
    cs::transpose_x(x, desc_.m, k_, xt_.get(), ldt_, s, transpose_);
    cs::Problem p{desc_.x_dtype, desc_.y_dtype, xt_.get(), y, desc_.m, n_, k_, ldt_};
    cs::run_vnm_wgmma(a_, map_, gather_.as<std::int32_t>(), rows_per_tile_, tile_, p, s, gather_mode_, sched_);
  }
  std::size_t workspace_bytes() const override { return xt_.size(); }

  /// V >= 128: 128-row tiles (one slab per tile); V = 64 / 32: 64-row tiles (V = 32 puts one
  /// slab in the upper half of each tile, at twice the tensor-core work, see pack.hpp). BN 256 once it fills ~1.4 waves.
  static cs::PTile choose_tile(int v, std::int64_t n, std::int64_t m) {
    const int sms = sm_count();
    auto tiles = [&](std::int64_t bm, std::int64_t bn) { return double(((n + bm - 1) / bm) * ((m + bn - 1) / bn)); };
    if (v >= 128) return tiles(128, 256) >= 1.4 * sms ? cs::PTile::r128n256 : cs::PTile::r128n128;
    return tiles(64, 256) >= 1.4 * sms ? cs::PTile::c64n256 : cs::PTile::c64n128;
  }

 private:
  MatmulDesc desc_;
  cs::PSched sched_;
  int gather_mode_ = 0, transpose_ = 0;
  std::int64_t n_ = 0, k_ = 0, ldt_ = 0;
  int rows_per_tile_ = 128;
  cs::PTile tile_ = cs::PTile::r128n256;
  cuda::DeviceBuffer values_, meta_, gather_, xt_;
  cs::DeviceA a_;
  CUtensorMap map_{};
};

}  // namespace

void register_sptc_kernels(KernelRegistry& r) {
  r.add({"cuda:sptc_24_wgmma", Backend::cuda,
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
           if (cs::device_cc() != 90) return "needs an sm_90 device (Hopper; built as sm_90a)";
           return common_unsupported(w, d);
         },
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
           return std::make_unique<Sptc24Instance>(w, d, true);
         }});
  r.add({"cuda:sptc_24_wgmma_p", Backend::cuda,
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
           if (cs::device_cc() != 90) return "needs an sm_90 device (Hopper; built as sm_90a)";
           return common_unsupported(w, d);
         },
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
           return std::make_unique<Sptc24Instance>(w, d, true, true);
         }});
  r.add({"cuda:sptc_24_wgmma_3", Backend::cuda,
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
           if (cs::device_cc() != 90) return "needs an sm_90 device (Hopper; built as sm_90a)";
           return common_unsupported(w, d);
         },
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
           return std::make_unique<Sptc24Instance>(w, d, true, false, true);
         }});
  r.add({"cuda:vnm_wgmma", Backend::cuda, vnm_unsupported,
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
           return std::make_unique<VnmInstance>(w, d, cs::PSched{8, true}, 6);
         }});
  r.add({"cuda:vnm_wgmma_mr", Backend::cuda, vnm_unsupported,
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
           return std::make_unique<VnmInstance>(w, d, cs::PSched{-2, true}, 6);
         }});

  r.add({"cuda:sptc_24_mma", Backend::cuda,
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
           if (cs::device_cc() < 80) return "needs an sm_80+ device";
           return common_unsupported(w, d);
         },
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
           return std::make_unique<Sptc24Instance>(w, d, false);
         }});
}

}  // namespace sparsenm::detail
