// sparsenm — the EW-N:M family's plan candidates: "cuda:ew_spmv" (m <= 8, CUDA cores, any N:M),
// "cuda:ew_spmv_tc" (m <= 8, tensor cores, f16 / bf16, the patterns in spmv_tc_instances.def, finite X)
// "cuda:ew_spmv_sk" / "cuda:ew_spmv_sk4" (m = 1, f16 / bf16, stream-K split, bulk-copied X),
// "cuda:ew_spmv_skr" (the same with a 3-stage cp.async shared-memory tile ring per warp),
// "cuda:ew_spmv_skv" (opt-in) / "cuda:ew_spmv_skw" (the ring of value vectors only, index words
// through registers; 8-warp CTAs / one 32-warp CTA per SM), "cuda:ew_spmv_skrg" / "_skwg" (skr / skw
// on the weight stored in the order the planned grid consumes it: session 7b; "_skg", the register
// form, opt-in),
// "cuda:ew_spmv_tc_sk" (m <= 8, the tc tile and PRMT decode on the stream-K tile ring; session 8),
// "cuda:ew_spmv_tc_sp" (the same tile and ring on the sparse tensor cores, mma.sp m16n8k32; session 8b;
// opt-in: no faster than tc_sk on the H200, SPARSENM_RACE_TC_SP=1 races it),
// "cuda:ew_spmv_tc_sk24" / "cuda:ew_spmv_tc_sk24r2" / "cuda:ew_spmv_tc_sk16r4" (the tc_sk kernel at 24
// warps per CTA with 3 / 2 ring stages, at 16 warps with 4; session 8c), "cuda:ew_spmv_tc_sks" /
// "_sk16r4s" / "_sk24r2s" (the three shapes with the lean settle: 16-byte REDs, plain read-back; session
// 9b), "cuda:ew_spmv_tc_sk16r4b" / "_sk16r4c" (tc_sk16r4s with X staged in pieces on mbarriers, the piece
// copies issued by one warp / by every warp). Raced by default: tc_sks, tc_sk16r4s, tc_sk24r2s, tc_sk24r2
// (each the fastest tc_sk form somewhere in the H200 run at d50a8a4); the others are opt-in
// (SPARSENM_RACE_TC_SKW=1 races them; the session-9 shapes 12 x 6, 8 x 8 and the L2-prefetch rings
// measured slower everywhere and were removed in session 9b),
// "cuda:ew_spmv_sk_mb" / "cuda:ew_spmv_sk_mb2" (m = 2..8, f16 / bf16, stream-K split, CUDA cores)
// and "cuda:ew_spmm" / "cuda:ew_spmm_async" / "_async16" / "_async_x4" (any m; the async ones: f32).
// The plan races every supported one (plus cuBLAS) and names its pick. Each also takes a venom
// V:2:M weight, run as the element 2:M weight with the same stored slots (format/as_element.hpp;
// the instance's description says so): at small m the EW streaming kernels can beat cuda:vnm_gemv
// despite the 1 - 2 extra index bits per value (docs/PERF-vnm-small.md, session 6).
// "cuda:vnm_spmv_sk" / "cuda:vnm_spmv_skr" (m = 1, venom V:2:M, V % 32 == 0, M in {8, 16}) run the
// same stream-K kernel natively on the V:2:M bytes (2-bit indices + the slab's column tables,
// format/vnm_sk_pack.hpp; docs/PERF-vnm-small.md, session 7: as fast as the element form at
// M = 8, 1-2.5 % faster at M = 16 on the H200); the plan races them with the rest.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

#include "cuda/common.cuh"
#include "cuda/ew/spmv.hpp"
#include "cuda/ew/spmv_sk.hpp"
#include "cuda/ew/spmv_sk_kernel.cuh"
#include "cuda/ew/spmv_skm.hpp"
#include "cuda/ew/spmv_skm_kernel.cuh"
#include "cuda/ew/spmv_tc.hpp"
#include "cuda/ew/spmv_tcsk.hpp"
#include "cuda/ew/spmv_vnm_sk.hpp"
#include "format/as_element.hpp"
#include "format/vnm_sk_pack.hpp"
#include "plan/registry.hpp"

namespace sparsenm::detail {
namespace {

int y_code(DType t) { return t == DType::f32 ? 0 : t == DType::f16 ? 1 : 2; }

/// Thread-block clusters (split-k through DSMEM) need compute capability 9.0 or newer.
bool cluster_capable() {
  int dev = 0, major = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major >= 9;
}

/// The layout the EW kernels see: a venom V:2:M weight as element 2:M (as_element.hpp), any other
/// weight as it is.
FormatLayout ew_layout(const CondensedMatrix& w) {
  if (w.pattern().kind != Granularity::venom) return w.layout;
  return FormatLayout::of(Pattern::element(2, w.pattern().m), w.rows(), w.cols());
}

/// The weight the EW kernels pack: `w` itself, or (venom) its element 2:M form held in `hold`.
const CondensedMatrix& ew_weight(const CondensedMatrix& w, std::optional<CondensedMatrix>& hold) {
  if (w.pattern().kind != Granularity::venom) return w;
  hold.emplace(venom_as_element(w));
  return *hold;
}

/// What an instance adds to its description when it runs a venom weight through its EW form.
std::string ew_repack_note(const CondensedMatrix& w) {
  if (w.pattern().kind != Granularity::venom) return {};
  return "V:N:M weight " + w.pattern().str() + " run as element 2:" + std::to_string(w.pattern().m) +
         " (same stored slots)";
}

std::string join_notes(std::string a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "; " + b;
}

int sm_count() {
  int dev = 0, sms = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

/// Uploads a packed weight (value bytes, 32-bit index words) into `values` / `indices`.
template <class Packed>
void upload_packed(const Packed& p, cuda::DeviceBuffer& values, cuda::DeviceBuffer& indices) {
  values = cuda::DeviceBuffer(p.values.size());
  values.upload(p.values.data(), p.values.size());
  indices = cuda::DeviceBuffer(p.indices.size() * sizeof(std::uint32_t));
  indices.upload(p.indices.data(), indices.size());
}

/// A zeroed device buffer: the stream-K workspaces and counters (every launch leaves them zero;
/// Plan::create waits for the memset before the first run).
cuda::DeviceBuffer zeroed(std::size_t bytes) {
  cuda::DeviceBuffer b(bytes);
  SPARSENM_CUDA_CHECK(cudaMemset(b.get(), 0, b.size()));
  return b;
}

/// Points a kernel's argument block at its uploaded weight and sets the output dtype code.
template <class Args>
void bind_weight(Args& a, const cuda::DeviceBuffer& values, const cuda::DeviceBuffer& indices, DType y) {
  a.values = values.get();
  a.indices = indices.as<std::uint32_t>();
  a.y_dtype = y_code(y);
}

/// Points a stream-K kernel's argument block at its split-k workspace and counters.
template <class Args>
void bind_workspace(Args& a, const cuda::DeviceBuffer& ws, const cuda::DeviceBuffer& cnt) {
  a.ws = ws.as<float>();
  a.cnt = cnt.as<unsigned>();
}

/// Checks shared by the EW candidates; "" when (w, desc) is an EW problem we can serve.
std::string ew_common_unsupported(const CondensedMatrix& w, const MatmulDesc& d) {
  const auto kind = w.pattern().kind;
  if (kind != Granularity::element && kind != Granularity::hw24 && kind != Granularity::venom)
    return "needs an element, hw24 or venom pattern (got " + w.pattern().str() + ")";
  if (d.x_dtype != w.dtype) return "x_dtype must equal the weight dtype";
  if (!is_weight_dtype(d.y_dtype)) return "y_dtype must be f32, f16 or bf16";
  if (d.accumulate != Accumulate::f32) return "accumulates in f32 only";
  return {};
}

/// One EW candidate's instance: the packed weight on the device, the kernel arguments, the
/// launch configuration and the compiled launcher of "cuda:ew_spmv" (kSpmm false) or
/// "cuda:ew_spmm" and its variants (kSpmm true; `v` picks the variant).
template <bool kSpmm>
class EwInstance final : public KernelInstance {
 public:
  EwInstance(const CondensedMatrix& w0, const MatmulDesc& d, cuda::ew::SpmmVariant v = cuda::ew::SpmmVariant::base) {
    std::optional<CondensedMatrix> hold;
    const CondensedMatrix& w = ew_weight(w0, hold);
    note_ = ew_repack_note(w0);
    const cuda::ew::SpmvPacked p = cuda::ew::pack_spmv(w);
    upload_packed(p, values_, indices_);
    if constexpr (kSpmm)
      cfg_ = cuda::ew::plan_spmm(p.layout, w.dtype, int(d.m), args_, 0, v);
    else
      cfg_ = cuda::ew::plan_spmv(p.layout, w.dtype, int(d.m), sm_count(), args_, 0,
                                 /*max_split=*/cluster_capable() ? 0 : 1);
    bind_weight(args_, values_, indices_, d.y_dtype);
    if constexpr (kSpmm)
      launch_ = cuda::ew::find_spmm(w.dtype, p.layout.bits, p.layout.n, p.layout.m, nullptr, v);
    else
      launch_ = cuda::ew::find_spmv(w.dtype, cfg_.mr, p.layout.bits, p.layout.n, p.layout.m);
    if (!launch_)
      throw Unsupported(std::string(kSpmm ? cuda::ew::spmm_variant_name(v) + 5 : "ew_spmv") + ": no compiled instance for " +
                        w.pattern().str());
  }
  void run(const void* x, void* y, void* stream) const override {
    cuda::ew::SpmvArgs a = args_;
    a.x = x;
    a.y = y;
    launch_(a, cfg_, static_cast<cudaStream_t>(stream));
  }

  std::string describe() const override { return note_; }

 private:
  std::string note_;
  cuda::DeviceBuffer values_, indices_;
  cuda::ew::SpmvArgs args_;
  cuda::ew::SpmvConfig cfg_;
  cuda::ew::SpmvLaunchFn launch_ = nullptr;
};

std::string c_name(cuda::ew::SpmmVariant v) { return cuda::ew::spmm_variant_name(v); }

/// The plan candidate "cuda:ew_spmv" (kSpmm false) or the SpMM variant `v` (kSpmm true).
template <bool kSpmm>
KernelCandidate ew_candidate(cuda::ew::SpmmVariant v = cuda::ew::SpmmVariant::base) {
  KernelCandidate c;
  c.name = kSpmm ? cuda::ew::spmm_variant_name(v) : "cuda:ew_spmv";
  c.backend = Backend::cuda;
  c.unsupported = [v](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
    const std::string name = kSpmm ? cuda::ew::spmm_variant_name(v) + 5 : "ew_spmv";
    if (auto why = ew_common_unsupported(w, d); !why.empty()) return name + " " + why;
    const auto layout = cuda::ew::SpmvLayout::of(ew_layout(w), w.dtype);
    const std::string why =
        kSpmm ? cuda::ew::spmm_unsupported(layout, w.dtype, d.m, v) : cuda::ew::spmv_unsupported(layout, w.dtype, d.m);
    // x4 (the 16-byte-LDS experiment) measured 2-9 % slower than ew_spmm_async on every case of
    // the H200 run at 5c4bea2 (docs/PERF.md, ew_spmm session 4): opt-in, not raced.
    if (why.empty() && kSpmm && v == cuda::ew::SpmmVariant::async_x4 && d.kernel != c_name(v))
      return name + " is opt-in (force desc.kernel): slower than ew_spmm_async on the H200";
    return why;
  };
  c.create = [v](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
    return std::make_unique<EwInstance<kSpmm>>(w, d, v);
  };
  return c;
}

/// "cuda:ew_spmv_sk" (waves = 1) / "cuda:ew_spmv_sk4" (waves = 4): the ew_spmv packed weight, an
/// fp32 workspace and per-group counters (zeroed once here; every launch leaves them zero), the
/// launch arguments and the compiled launcher. ring > 0: "cuda:ew_spmv_skr" (shared-memory tile ring);
/// + vals_only: "cuda:ew_spmv_skv" (ring of value vectors, index words through registers), with 32
/// warps per CTA "cuda:ew_spmv_skw".
class EwSkInstance final : public KernelInstance {
 public:
  EwSkInstance(const CondensedMatrix& w0, const MatmulDesc& d, int waves, int ring, bool vals_only, int warps,
               bool grid) {
    std::optional<CondensedMatrix> hold;
    const CondensedMatrix& w = ew_weight(w0, hold);
    note_ = ew_repack_note(w0);
    cuda::ew::SpmvPacked p = cuda::ew::pack_spmv(w);
    cfg_ = cuda::ew::plan_spmv_sk(p.layout, w.dtype, sm_count(), waves, args_, 0, ring, vals_only, warps);
    // Grid order: the tiles reordered once for this grid (the plan fixes it), before the upload.
    if (grid) cuda::ew::spmv_sk_grid_order(p, args_);
    grid_ = grid;
    upload_packed(p, values_, indices_);
    ws_ = zeroed(cuda::ew::spmv_sk_ws_bytes(p.layout));
    cnt_ = zeroed(cuda::ew::spmv_sk_cnt_bytes(p.layout));
    bind_weight(args_, values_, indices_, d.y_dtype);
    bind_workspace(args_, ws_, cnt_);
    launch_ = cuda::ew::find_spmv_sk(w.dtype, p.layout.n, p.layout.m, ring, vals_only, warps, grid);
    if (!launch_) throw Unsupported("ew_spmv_sk: no compiled instance for " + w.pattern().str());
  }
  void run(const void* x, void* y, void* stream) const override {
    cuda::ew::SkArgs a = args_;
    a.x = x;
    a.y = y;
    launch_(a, cfg_, static_cast<cudaStream_t>(stream));
  }
  std::size_t workspace_bytes() const override { return ws_.size() + cnt_.size(); }
  std::string describe() const override {
    const int warps = args_.warps_total / std::max(1, cfg_.grid);
    return join_notes(std::to_string(cfg_.grid) + " CTAs x " + std::to_string(warps) + " warps, " +
                          std::to_string(cfg_.smem_bytes) +
                          (args_.ring_off > 0 ? " B of X + tile rings per CTA" : " B of X per CTA") +
                          (grid_ ? ", tiles in grid order" : ""),
                      note_);
  }

 private:
  std::string note_;
  bool grid_ = false;
  cuda::DeviceBuffer values_, indices_, ws_, cnt_;
  cuda::ew::SkArgs args_;
  cuda::ew::SkConfig cfg_;
  cuda::ew::SkLaunchFn launch_ = nullptr;
};

/// Largest dynamic shared memory one CTA may opt in to on the current device.
int smem_optin() {
  int dev = 0, bytes = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return bytes;
}

KernelCandidate ew_sk_candidate(int waves, int ring = 0, bool vals_only = false, int warps = 8, bool grid = false) {
  KernelCandidate c;
  c.name = vals_only ? (warps == 8 ? "cuda:ew_spmv_skv" : "cuda:ew_spmv_skw")
           : ring > 0 ? "cuda:ew_spmv_skr"
           : waves == 1 ? "cuda:ew_spmv_sk"
                        : "cuda:ew_spmv_sk" + std::to_string(waves);
  if (grid) c.name += "g";
  c.backend = Backend::cuda;
  c.unsupported = [waves, ring, vals_only, warps, grid, name = c.name](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
    if (auto why = ew_common_unsupported(w, d); !why.empty()) return name.substr(5) + " " + why;
    const auto l = cuda::ew::SpmvLayout::of(ew_layout(w), w.dtype);
    const std::string why = cuda::ew::spmv_sk_unsupported(l, w.dtype, d.m);
    if (why.empty() && ring > 0) {
      const int need = cuda::ew::spmv_sk_smem_bytes(l, ring, vals_only, warps), have = smem_optin();
      if (need > have)
        return name.substr(5) + ": X + tile rings need " + std::to_string(need) + " B of shared memory per CTA, the device allows " +
               std::to_string(have);
      // Raced beside the register form (docs/PERF.md, session 6, H200 bench at bacae0e): 1.1-3.1 us
      // faster at 28672 x 8192 2:8 and 12288^2 1:8 / 2:16, 0.4-1.2 us slower in the other bar cases.
    }
    // 4 waves (every CTA stages the whole X again) measured 10-27 % slower than 1 wave in all six
    // bar cases on the H200 at 20d8a0f (docs/PERF.md, ew_spmv session 5): opt-in, not raced.
    if (why.empty() && waves != 1 && d.kernel != name)
      return name.substr(5) + " is opt-in (force desc.kernel): slower than ew_spmv_sk on the H200";
    // The 8-warp value ring was the fastest form in none of the six bar cases on the H200 at 3105dde
    // (docs/PERF.md, ew_spmv session 7: within noise of skr / sk at best, 0.3-1.1 us slower than the
    // best form elsewhere): opt-in, not raced. Its 32-warp form "cuda:ew_spmv_skw" is raced (fastest
    // at 12288^2 1:8 / 2:16).
    if (why.empty() && vals_only && warps == 8 && d.kernel != name)
      return name.substr(5) + " is opt-in (force desc.kernel): never the fastest m = 1 form on the H200";
    // The register form on the grid-ordered weight was 0.1-1.2 us slower than "cuda:ew_spmv_sk" in all
    // six bar cases of the H200 probe at 596e0cf (docs/PERF.md, ew_spmv session 7b): opt-in. Its ring
    // forms "_skrg" / "_skwg" are raced (0.2-0.8 us faster than their twins at 2:8).
    if (why.empty() && grid && ring == 0 && d.kernel != name)
      return name.substr(5) + " is opt-in (force desc.kernel): slower than ew_spmv_sk on the H200";
    return why;
  };
  c.create = [waves, ring, vals_only, warps, grid](const CondensedMatrix& w,
                                                   const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
    return std::make_unique<EwSkInstance>(w, d, waves, ring, vals_only, warps, grid);
  };
  return c;
}

/// "cuda:vnm_spmv_sk" (ring 0) / "cuda:vnm_spmv_skr" (ring 3): a venom V:2:M weight packed natively
/// (values and 2-bit indices in the EW tile layout + per-slab column tables), the fp32 workspace
/// and counters of the stream-K split (zeroed once; every launch leaves them zero), the launch
/// arguments and the compiled launcher.
class VnmSkInstance final : public KernelInstance {
 public:
  VnmSkInstance(const CondensedMatrix& w, const MatmulDesc& d, int ring) {
    const VnmSkPacked p = pack_vnm_sk(w);
    launch_ = cuda::ew::find_vnm_sk(w.dtype, p.layout.m, ring);
    if (!launch_) throw Unsupported("vnm_spmv_sk: no compiled instance for " + w.pattern().str());
    upload_packed(p, values_, indices_);
    table_ = cuda::DeviceBuffer(p.table.size());
    table_.upload(p.table.data(), p.table.size());
    ws_ = zeroed(cuda::ew::vnm_sk_ws_bytes(p.layout));
    cnt_ = zeroed(cuda::ew::vnm_sk_cnt_bytes(p.layout));
    cfg_ = cuda::ew::plan_vnm_sk(p.layout, w.dtype, sm_count(), ring, args_);
    bind_weight(args_, values_, indices_, d.y_dtype);
    bind_workspace(args_, ws_, cnt_);
    args_.tab = table_.as<unsigned char>();
    bytes_ = p.layout.total_bytes();
  }
  void run(const void* x, void* y, void* stream) const override {
    cuda::ew::SkArgs a = args_;
    a.x = x;
    a.y = y;
    launch_(a, cfg_, static_cast<cudaStream_t>(stream));
  }
  std::size_t workspace_bytes() const override { return ws_.size() + cnt_.size(); }
  std::string describe() const override {
    return "native V:2:M (2-bit indices + slab column tables, " + std::to_string(bytes_) + " B), " +
           std::to_string(cfg_.grid) + " CTAs x 8 warps, " + std::to_string(cfg_.smem_bytes) +
           (args_.ring_off > 0 ? " B of X + tile rings + gather buffers per CTA" : " B of X + gather buffers per CTA");
  }

 private:
  cuda::DeviceBuffer values_, indices_, table_, ws_, cnt_;
  cuda::ew::SkArgs args_;
  cuda::ew::SkConfig cfg_;
  cuda::ew::SkLaunchFn launch_ = nullptr;
  std::size_t bytes_ = 0;
};

KernelCandidate vnm_sk_candidate(int ring) {
  KernelCandidate c;
  c.name = ring > 0 ? "cuda:vnm_spmv_skr" : "cuda:vnm_spmv_sk";
  c.backend = Backend::cuda;
  c.unsupported = [ring, name = c.name](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
    if (w.pattern().kind != Granularity::venom) return name.substr(5) + " needs a venom V:2:M pattern (got " + w.pattern().str() + ")";
    if (auto why = ew_common_unsupported(w, d); !why.empty()) return name.substr(5) + " " + why;
    if (auto why = cuda::ew::vnm_sk_unsupported(w.layout, w.dtype, d.m, ring); !why.empty()) return why;
    const VnmSkLayout l = VnmSkLayout::of(w.layout, w.dtype);
    if (l.table_bytes() >= (std::size_t(1) << 32))
      return name.substr(5) + ": the column tables must be < 4 GiB (32-bit offsets)";
    const int need = cuda::ew::vnm_sk_smem_bytes(l, ring), have = smem_optin();
    if (need > have)
      return name.substr(5) + ": X" + (ring > 0 ? " + tile rings" : "") + " + gather buffers need " + std::to_string(need) +
             " B of shared memory per CTA, the device allows " + std::to_string(have);
    return {};
  };
  c.create = [ring](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
    return std::make_unique<VnmSkInstance>(w, d, ring);
  };
  return c;
}

/// "cuda:ew_spmv_sk_mb" (min_chunks 1) / "cuda:ew_spmv_sk_mb2" (min_chunks 2), m = 2..8: the ew_spmv
/// packed weight, an fp32 workspace [mb][rows] and per-group counters (zeroed once here; every launch
/// leaves them zero), the launch arguments and the compiled launcher.
class EwSkmInstance final : public KernelInstance {
 public:
  EwSkmInstance(const CondensedMatrix& w0, const MatmulDesc& d, int min_chunks) {
    std::optional<CondensedMatrix> hold;
    const CondensedMatrix& w = ew_weight(w0, hold);
    note_ = ew_repack_note(w0);
    const cuda::ew::SpmvPacked p = cuda::ew::pack_spmv(w);
    const int mb = cuda::ew::spmv_skm_mb(d.m);
    launch_ = cuda::ew::find_spmv_skm(w.dtype, p.layout.n, p.layout.m, mb);
    if (!launch_) throw Unsupported("ew_spmv_sk_mb: no compiled instance for " + w.pattern().str());
    upload_packed(p, values_, indices_);
    ws_ = zeroed(cuda::ew::spmv_skm_ws_bytes(p.layout, mb));
    cnt_ = zeroed(cuda::ew::spmv_skm_cnt_bytes(p.layout));
    cfg_ = cuda::ew::plan_spmv_skm(p.layout, w.dtype, int(d.m), sm_count(), min_chunks, args_);
    bind_weight(args_, values_, indices_, d.y_dtype);
    bind_workspace(args_, ws_, cnt_);
  }
  void run(const void* x, void* y, void* stream) const override {
    cuda::ew::SkmArgs a = args_;
    a.x = x;
    a.y = y;
    launch_(a, cfg_, static_cast<cudaStream_t>(stream));
  }
  std::size_t workspace_bytes() const override { return ws_.size() + cnt_.size(); }
  std::string describe() const override {
    return join_notes(std::to_string(cfg_.grid) + " CTAs x 16 warps, " + std::to_string(args_.chunks) + " k chunk(s), " +
                          std::to_string(cfg_.smem_bytes) + " B of X per CTA, mb " + std::to_string(cfg_.mb),
                      note_);
  }

 private:
  std::string note_;
  cuda::DeviceBuffer values_, indices_, ws_, cnt_;
  cuda::ew::SkmArgs args_;
  cuda::ew::SkmConfig cfg_;
  cuda::ew::SkmLaunchFn launch_ = nullptr;
};

KernelCandidate ew_skm_candidate(int min_chunks) {
  KernelCandidate c;
  c.name = min_chunks == 1 ? "cuda:ew_spmv_sk_mb" : "cuda:ew_spmv_sk_mb" + std::to_string(min_chunks);
  c.backend = Backend::cuda;
  c.unsupported = [min_chunks, name = c.name](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
    if (auto why = ew_common_unsupported(w, d); !why.empty()) return "ew_spmv_sk_mb " + why;
    const std::string why = cuda::ew::spmv_skm_unsupported(cuda::ew::SpmvLayout::of(ew_layout(w), w.dtype), w.dtype, d.m);
    // The forced 2-chunk form: within -1.2 / +0.5 us of ew_spmv_sk_mb in the 8 m = 8 bar cases on the
    // H200 (b6c5e5f, docs/PERF.md session 6); opt-in until a run times the race with it.
    if (why.empty() && min_chunks != 1 && d.kernel != name)
      return name.substr(5) + " is opt-in (force desc.kernel): a measurement variant (docs/PERF.md, session 6)";
    return why;
  };
  c.create = [min_chunks](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
    return std::make_unique<EwSkmInstance>(w, d, min_chunks);
  };
  return c;
}

/// "cuda:ew_spmv_tc" / "_bal" / "_prmt" / "_ring" (SpmvTcVariant): the weight in the tensor-core layout on
/// the device, the launch arguments and the compiled launcher. x_vec is decided per run (it
/// depends on the x pointer).
class EwTcInstance final : public KernelInstance {
 public:
  EwTcInstance(const CondensedMatrix& w0, const MatmulDesc& d, cuda::ew::SpmvTcVariant v) {
    std::optional<CondensedMatrix> hold;
    const CondensedMatrix& w = ew_weight(w0, hold);
    note_ = ew_repack_note(w0);
    const cuda::ew::SpmvTcPacked p = cuda::ew::pack_spmv_tc(w);
    upload_packed(p, values_, indices_);
    cfg_ = cuda::ew::plan_spmv_tc(p.layout, w.dtype, int(d.m), sm_count(), args_, 0,
                                  /*max_split=*/cluster_capable() ? 0 : 1, v);
    bind_weight(args_, values_, indices_, d.y_dtype);
    launch_ = cuda::ew::find_spmv_tc(w.dtype, p.layout.n, p.layout.m, v);
    if (!launch_)
      throw Unsupported(std::string(cuda::ew::spmv_tc_variant_name(v)) + ": no compiled instance for " + w.pattern().str());
  }
  void run(const void* x, void* y, void* stream) const override {
    cuda::ew::SpmvTcArgs a = args_;
    a.x = x;
    a.y = y;
    a.x_vec = cuda::ew::spmv_tc_x_vec(x, a.k);
    launch_(a, cfg_, static_cast<cudaStream_t>(stream));
  }

  std::string describe() const override { return note_; }

 private:
  std::string note_;
  cuda::DeviceBuffer values_, indices_;
  cuda::ew::SpmvTcArgs args_;
  cuda::ew::SpmvTcConfig cfg_;
  cuda::ew::SpmvTcLaunchFn launch_ = nullptr;
};

KernelCandidate ew_tc_candidate(cuda::ew::SpmvTcVariant v) {
  KernelCandidate c;
  c.name = std::string("cuda:") + cuda::ew::spmv_tc_variant_name(v);
  c.backend = Backend::cuda;
  c.unsupported = [v](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
    if (auto why = ew_common_unsupported(w, d); !why.empty()) return std::string(cuda::ew::spmv_tc_variant_name(v)) + " " + why;
    if (auto why = cuda::ew::spmv_tc_unsupported(ew_layout(w), w.dtype, d.m, v); !why.empty()) return why;
    // All four variants race in the automatic choice (measured on the H200 at d55cf64: ring is the
    // fastest at 2:8 and at 2:16 on 12288^2, prmt at 2:16 on 28672 x 8192, shift or balanced at
    // 1:8 / 1:16; docs/PERF.md, ew_spmv_tc).
    return needs_finite_x(d, "multiplies X by explicit zeros at pruned positions (dense tensor-core fragments)");
  };
  c.create = [v](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
    return std::make_unique<EwTcInstance>(w, d, v);
  };
  return c;
}

/// "cuda:ew_spmv_tc_sk": the tc-layout weight stored in the planned unit order (chunk-major), the fp32
/// workspace and per-row-block counters (zeroed once; every launch leaves them zero).
/// sparse: "cuda:ew_spmv_tc_sp", the same stored weight and plan on the sparse tensor cores (session 8b).
class EwTcSkInstance final : public KernelInstance {
 public:
  EwTcSkInstance(const CondensedMatrix& w0, const MatmulDesc& d, bool sparse, cuda::ew::TcSkShape shape) {
    std::optional<CondensedMatrix> hold;
    const CondensedMatrix& w = ew_weight(w0, hold);
    note_ = ew_repack_note(w0);
    launch_ = cuda::ew::find_spmv_tcsk(w.dtype, w.pattern().n, w.pattern().m, sparse, shape);
    if (!launch_)
      throw Unsupported(std::string(sparse ? "ew_spmv_tc_sp" : "ew_spmv_tc_sk") + ": no compiled instance for " +
                        w.pattern().str());
    cuda::ew::SpmvTcPacked p = cuda::ew::pack_spmv_tc(w);
    cfg_ = cuda::ew::plan_spmv_tcsk(p.layout, int(d.m), sm_count(), smem_optin(), args_, 0, 0, 0, sparse, shape);
    {
      std::vector<std::byte> v;
      std::vector<std::uint32_t> i;
      cuda::ew::reorder_spmv_tcsk(p, args_.kc, v, i);
      p.values.swap(v);
      p.indices.swap(i);
    }
    upload_packed(p, values_, indices_);
    ws_ = zeroed(cuda::ew::spmv_tcsk_ws_bytes(p.layout));
    cnt_ = zeroed(cuda::ew::spmv_tcsk_cnt_bytes(p.layout));
    bind_weight(args_, values_, indices_, d.y_dtype);
    bind_workspace(args_, ws_, cnt_);
  }
  void run(const void* x, void* y, void* stream) const override {
    cuda::ew::TcSkArgs a = args_;
    a.x = x;
    a.y = y;
    a.x_vec = cuda::ew::spmv_tc_x_vec(x, a.k);
    launch_(a, cfg_, static_cast<cudaStream_t>(stream));
  }
  std::size_t workspace_bytes() const override { return ws_.size() + cnt_.size(); }
  std::string describe() const override {
    return join_notes(std::to_string(cfg_.grid) + " CTAs x " + std::to_string(args_.cta_warps) + " warps, " +
                          std::to_string(args_.chunks) + " k chunk(s) of " + std::to_string(args_.kc) + " tiles, " +
                          std::to_string(cfg_.smem_bytes) + " B of shared memory per CTA",
                      note_);
  }

 private:
  std::string note_;
  cuda::DeviceBuffer values_, indices_, ws_, cnt_;
  cuda::ew::TcSkArgs args_;
  cuda::ew::TcSkConfig cfg_;
  cuda::ew::TcSkLaunchFn launch_ = nullptr;
};

KernelCandidate ew_tcsk_candidate(bool sparse, cuda::ew::TcSkShape shape = cuda::ew::TcSkShape::w16r3) {
  KernelCandidate c;
  const std::string name = sparse ? "cuda:ew_spmv_tc_sp" : cuda::ew::tcsk_shape_kernel(shape);
  c.name = name;
  c.backend = Backend::cuda;
  c.unsupported = [sparse, shape, name](const CondensedMatrix& w, const MatmulDesc& d) -> std::string {
    if (auto why = ew_common_unsupported(w, d); !why.empty())
      return std::string(sparse ? "ew_spmv_tc_sp " : "ew_spmv_tc_sk ") + why;
    if (auto why = cuda::ew::spmv_tcsk_unsupported(ew_layout(w), w.dtype, d.m, sparse); !why.empty()) return why;
    try {  // one tile of X beside the rings and the table must fit the device's shared memory
      cuda::ew::TcSkArgs a;
      (void)cuda::ew::plan_spmv_tcsk(cuda::ew::SpmvTcLayout::of(ew_layout(w), w.dtype), int(d.m), sm_count(), smem_optin(), a,
                                     0, 0, 0, sparse, shape);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    // tc_sp passes its GPU tests (lead's run at 2834e58) but measured no faster than tc_sk (28672x8192
    // m = 8: 2:8 50.1 vs 49.7 us, 1:8 41.5 vs 41.7 us; docs/PERF.md "Session 8b"): the halved mma count is
    // not what limits these kernels. Opt-in (forced desc.kernel), or raced where SPARSENM_RACE_TC_SP=1.
    if (sparse && d.kernel != "cuda:ew_spmv_tc_sp") {
      const char* race = std::getenv("SPARSENM_RACE_TC_SP");
      if (race == nullptr || std::string(race) != "1")
        return "ew_spmv_tc_sp is opt-in (force desc.kernel, or SPARSENM_RACE_TC_SP=1): measured no faster than ew_spmv_tc_sk";
    }
    // Which tc_sk shapes the plan races (docs/PERF.md "Session 9: the lead's integrated run"): in the H200
    // run at d50a8a4 (m = 8, 2:8 / 1:8 / 2:16 on 28672x8192 and 12288^2, all shapes forced in one process)
    // the lean-settle forms tc_sks / tc_sk16r4s / tc_sk24r2s and tc_sk24r2 were the fastest tc_sk form in
    // every case (tc_sk24r2s 46.2 us at 28672x8192 2:8, tc_sks 32.1 us at 12288^2 2:8, tc_sk16r4s 28.5 us at
    // 12288^2 2:16, tc_sk24r2 39.7 us at 28672x8192 2:16): raced. tc_sk and tc_sk16r4 were slower than their
    // lean-settle twins in all six cases, tc_sk16r4b (+ X in pieces) and tc_sk16r4c (+ pieces issued by every
    // warp) the fastest in none, tc_sk24 (session 8c) in none: opt-in (forced desc.kernel, or
    // SPARSENM_RACE_TC_SKW=1 races them all).
    using cuda::ew::TcSkShape;
    const bool optin = shape == TcSkShape::w24r3 || shape == TcSkShape::w16r3 || shape == TcSkShape::w16r4 ||
                       shape == TcSkShape::w16r4b || shape == TcSkShape::w16r4c;
    if (!sparse && optin && d.kernel != name) {
      const char* race = std::getenv("SPARSENM_RACE_TC_SKW");
      if (race == nullptr || std::string(race) != "1")
        return name.substr(5) + " is opt-in (force desc.kernel, or SPARSENM_RACE_TC_SKW=1): " +
               (shape == TcSkShape::w16r3 || shape == TcSkShape::w16r4 ? "slower than its lean-settle form on the H200"
                                                                        : "the fastest form in no case of the H200 run");
    }
    return needs_finite_x(d, sparse ? "multiplies X by explicit zeros (the padding slots of the 2:4 groups)"
                                    : "multiplies X by explicit zeros at pruned positions (dense tensor-core fragments)");
  };
  c.create = [sparse, shape](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
    return std::make_unique<EwTcSkInstance>(w, d, sparse, shape);
  };
  return c;
}

}  // namespace

void register_ew_kernels(KernelRegistry& r) {
  r.add(ew_candidate<false>());
  r.add(ew_sk_candidate(1));
  r.add(ew_sk_candidate(4));
  r.add(ew_sk_candidate(1, 3));
  r.add(ew_sk_candidate(1, 3, true));
  r.add(ew_sk_candidate(1, 3, true, 32));
  r.add(ew_sk_candidate(1, 0, false, 8, true));
  r.add(ew_sk_candidate(1, 3, false, 8, true));
  r.add(ew_sk_candidate(1, 3, true, 32, true));
  r.add(vnm_sk_candidate(0));
  r.add(vnm_sk_candidate(3));
  r.add(ew_skm_candidate(1));
  r.add(ew_skm_candidate(2));
  r.add(ew_tc_candidate(cuda::ew::SpmvTcVariant::shift));
  r.add(ew_tc_candidate(cuda::ew::SpmvTcVariant::balanced));
  r.add(ew_tc_candidate(cuda::ew::SpmvTcVariant::prmt));
  r.add(ew_tc_candidate(cuda::ew::SpmvTcVariant::ring));
  r.add(ew_tcsk_candidate(false));
  r.add(ew_tcsk_candidate(true));
  r.add(ew_tcsk_candidate(false, cuda::ew::TcSkShape::w24r3));
  r.add(ew_tcsk_candidate(false, cuda::ew::TcSkShape::w24r2));
  r.add(ew_tcsk_candidate(false, cuda::ew::TcSkShape::w16r4));
  r.add(ew_tcsk_candidate(false, cuda::ew::TcSkShape::w16r3s));
  r.add(ew_tcsk_candidate(false, cuda::ew::TcSkShape::w16r4b));
  r.add(ew_tcsk_candidate(false, cuda::ew::TcSkShape::w16r4s));
  r.add(ew_tcsk_candidate(false, cuda::ew::TcSkShape::w24r2s));
  r.add(ew_tcsk_candidate(false, cuda::ew::TcSkShape::w16r4c));
  r.add(ew_candidate<true>());
  r.add(ew_candidate<true>(cuda::ew::SpmmVariant::async));
  r.add(ew_candidate<true>(cuda::ew::SpmmVariant::async16));
  r.add(ew_candidate<true>(cuda::ew::SpmmVariant::async_x4));
}

}  // namespace sparsenm::detail
