// sparsenm — cuda:vnm_gemv: support check, plan-time packing, instance, registration.
#include "cuda/vnm_small/vnm_small.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

#include "cuda/common.cuh"
#include "cuda/vnm_small/traits.cuh"
#include "sparsenm/error.hpp"

namespace sparsenm::cuda::vnm_small {

namespace sv = sparsenm::vnm_small;

namespace {

constexpr const char* kName = "cuda:vnm_gemv";

int device_sms() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 132;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 132;
  return sms;
}

int device_major() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return 0;
  return major;
}

using LaunchFn = void (*)(const Params&, const sv::Geometry&, std::int64_t, cudaStream_t);
using PrepareFn = int (*)(int, int, std::size_t);

template <class T>
LaunchFn pick(int nt) {
  switch (nt) {
    case 1: return &launch<T, 1>;
    case 2: return &launch<T, 2>;
    case 3: return &launch<T, 3>;
    default: return &launch<T, 4>;
  }
}
using ClustersFn = int (*)(const sv::Geometry&);
template <class T>
ClustersFn pick_clusters(int nt) {
  switch (nt) {
    case 1: return &max_active_clusters<T, 1>;
    case 2: return &max_active_clusters<T, 2>;
    case 3: return &max_active_clusters<T, 3>;
    default: return &max_active_clusters<T, 4>;
  }
}

template <class T>
PrepareFn pick_prepare(int nt) {
  switch (nt) {
    case 1: return &prepare<T, 1>;
    case 2: return &prepare<T, 2>;
    case 3: return &prepare<T, 3>;
    default: return &prepare<T, 4>;
  }
}

class Instance final : public detail::KernelInstance {
 public:
  Instance(std::shared_ptr<const DeviceWeight> dw, const CondensedMatrix& w, const MatmulDesc& desc, const Options& opt)
      : dw_(std::move(dw)) {
    layout_ = dw_->layout;
    geom_ = geometry_for(w, desc, opt);
    const bool stream = geom_.variant == sv::kStreamVariant;  // splits reduced in the cluster
    if (geom_.splits > 1 && !stream)
      ws_ = DeviceBuffer(std::size_t(geom_.splits) * std::size_t(desc.m) * std::size_t(layout_.n) * 4);
    const bool fused = geom_.variant == sv::kFusedVariant;  // variant 9's kernel, last-block reduction
    if (geom_.splits > 1 && (!sv::run1_geometry(geom_.variant) || fused) && !stream) {  // last-block reduction
      counters_ = DeviceBuffer(std::size_t(layout_.groups) * sizeof(int));
      SPARSENM_CUDA_CHECK(cudaMemset(counters_.get(), 0, counters_.size()));
    }
    if ((sv::transposed_variant(geom_.variant) || (stream && layout_.venom) || sv::async_variant(geom_.variant) || geom_.variant == sv::kPairVariant) &&
        geom_.variant != sv::kVnmDirectVariant)  // Xt: k columns x n_tiles 16-byte units (23 reads the X rows)
      xt_ = DeviceBuffer(std::size_t(layout_.k) * std::size_t(geom_.n_tiles) * 16);
    p_.w = dw_->records.as<uint4>();
    p_.xt = xt_.as<uint4>();
    p_.sel = dw_->sel.as<std::uint8_t>();
    p_.ws = ws_.as<float>();
    p_.counters = counters_.as<int>();
    p_.m = int(desc.m);
    p_.window = layout_.window;
    p_.y_dtype = desc.y_dtype == DType::f32 ? int(YType::f32) : desc.y_dtype == DType::f16 ? int(YType::f16) : int(YType::bf16);
    p_.n = layout_.n;
    p_.k = layout_.k;
    p_.windows = layout_.windows;
    p_.windows_pad = layout_.windows_pad();
    p_.pairs = layout_.pairs;
    p_.row_tiles = layout_.row_tiles;
    p_.tiles_per_group = geom_.tiles_per_group;
    p_.tiles_per_warp = geom_.tiles_per_warp;
    p_.chunk_pairs = geom_.chunk_pairs;
    p_.splits = geom_.splits;
    p_.smem_words_per_row = geom_.smem_words_per_row;
    p_.pairs_per_split = geom_.pairs_per_split;
    fn_ = w.dtype == DType::f16 ? pick<__half>(geom_.n_tiles) : pick<__nv_bfloat16>(geom_.n_tiles);
    if ((stream || sv::lean2_cluster_variant(geom_.variant)) && geom_.splits > 1)  // reported by describe()
      active_clusters_ = (w.dtype == DType::f16 ? pick_clusters<__half>(geom_.n_tiles) : pick_clusters<__nv_bfloat16>(geom_.n_tiles))(geom_);
  }
  void run(const void* x, void* y, void* stream) const override {
    Params p = p_;
    p.x = x;
    p.y = y;
    fn_(p, geom_, geom_.groups, static_cast<cudaStream_t>(stream));
  }
  std::size_t workspace_bytes() const override { return ws_.size() + xt_.size(); }
  std::string describe() const override {
    static const char* const kNames[sv::kVariants] = {"staged",       "batched",        "pipelined", "pipelined short",
                                                      "row gather",   "transposed X",   "transposed X + PDL",
                                                      "streamed",     "cp.async ring",  "async gather + ring",
                                                      "paired tiles",   "async gather + ring, fused reduce",
                                                      "async gather + ring, lean (hw24 direct)",
                                                      "async gather + ring, lean, two tiles per warp (hw24 direct)",
                                                      "async gather + ring, lean, two tiles per warp, cluster split reduce (hw24 direct)",
                                                      "async gather + ring, lean, two tiles per warp, 256-row groups, cluster split reduce (hw24 direct)",
                                                      "async gather + ring, lean, two tiles per warp, long chunks, cluster split reduce (hw24 direct)",
                                                      "(removed)",
                                                      "(removed)",
                                                      "async gather + producer warp, block bulk-copy ring, lean, two tiles per warp, cluster split reduce (hw24 direct)"};
    const char* name = geom_.variant == sv::kVnmLeanVariant ? "V:2:M lean, two tiles per warp, cluster split reduce (V = 128, transposed X)"
                       : geom_.variant == sv::kVnmLeanReduceVariant ? "V:2:M lean, two tiles per warp, reduce kernel (V = 128, transposed X)"
                       : geom_.variant == sv::kVnmDirectVariant ? "V:2:M lean, two tiles per warp, cluster split reduce (V = 128, direct gather from the X rows)"
                       : kNames[geom_.variant] ? kNames[geom_.variant] : "?";
    const bool spread = sv::vlean_variant(geom_.variant) && geom_.ring_bytes == sv::kVleanSpreadRingBytes;
    return "variant " + std::to_string(geom_.variant) + " (" + name + (spread ? ", shared memory padded: <= 2 blocks per SM" : "") +
           "), grid " + std::to_string(geom_.groups) +
           " x " + std::to_string(geom_.splits) + (geom_.variant == sv::kStreamVariant && geom_.splits > 1 ? " (clusters)" : "") +
           ", " + std::to_string(geom_.warps) + " warps" +
           (active_clusters_ > 0 ? ", clusters of " + std::to_string(geom_.splits) + ": " + std::to_string(active_clusters_) +
                                       " resident at once (cudaOccupancyMaxActiveClusters) for " + std::to_string(geom_.groups)
                                 : std::string());
  }

 private:
  sv::Layout layout_;
  sv::Geometry geom_;
  std::shared_ptr<const DeviceWeight> dw_;
  DeviceBuffer ws_, counters_, xt_;
  Params p_;
  LaunchFn fn_ = nullptr;
  int active_clusters_ = 0;  ///< variants 7 / 14 / 15 with splits: clusters resident at once (describe)
};

}  // namespace

std::string unsupported(const CondensedMatrix& w, const MatmulDesc& desc) {
  const Pattern& p = w.pattern();
  if (p.kind != Granularity::venom && p.kind != Granularity::hw24) return "pattern is not V:2:M or 2:4/hw";
  if (w.dtype != DType::f16 && w.dtype != DType::bf16) return "weight dtype must be f16 or bf16";
  if (desc.x_dtype != w.dtype) return "x dtype must equal the weight dtype";
  if (desc.y_dtype != DType::f16 && desc.y_dtype != DType::bf16 && desc.y_dtype != DType::f32)
    return "y dtype must be f32, f16 or bf16";
  if (desc.accumulate != Accumulate::f32) return "accumulates in f32 only";
  if (desc.m < 1 || desc.m > sv::kMaxM) return "m must be in 1..32 (larger m: tensor-core SpMM)";
  if (w.rows() > (std::int64_t(1) << 31) - 1 || w.cols() > (std::int64_t(1) << 31) - 1) return "n and k must be < 2^31";
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
    cudaGetLastError();
    return "no CUDA device";
  }
  if (major < 8) return "needs compute capability 8.0+ (mma.sp)";
  return {};
}

int default_variant(const CondensedMatrix& w, std::int64_t m) {
  // H200 runs (PERF-vnm-small.md). 534fe5f: variant 4 the fastest of 0-4 in all 30 cases.
  // bc8c4c5 (bench/results/NVIDIA_H200-vnm_small-2026-11-21-bc8c4c5.jsonl; all VnmSmallGpu tests
  // of every variant passed in the same run): the transposed-X variants 5/6 lose at m <= 8 (the
  // transpose launch and half the resident blocks: 2-10 us) and on most V:2:M cases, but win
  // for 2:4 at m = 16 and 32 (variant 6: 1.10-1.12x at m = 16, 1.06-1.16x at m = 32 on 12288^2
  // and 28672 x 8192) and for V:2:32 at m = 32 (variant 5: 1.12-1.20x). Elsewhere variant 4.
  // 46b70eb (session 7): variant 8 (cp.async record ring) is 3-14 % slower than 4 at m <= 8 and
  // 0.91-1.08x of it at m = 32 (wins only on V:2:M 12288^2 m = 32, loses at 28672 x 8192): not taken.
  // dfdb555 (session 7b, bench/results/NVIDIA_H200-vnm_small-2026-11-21-dfdb555-s7small2.jsonl):
  // variant 9 (async gather + ring) beats the default on 128:2:8 at m = 32 on both shapes
  // (1.08x / 1.04x), is mixed at m = 16 (1.02x / 0.96x; 128:2:16 1.05x on one shape only), loses
  // at m <= 8 (0.87-0.94x: the transpose and the ring) and on 128:2:16 at m = 32 (0.92x); 2:4
  // was not measured in that run. So 9 only for V:2:M with M <= 8 at m > 24.
  // 9a76b61 (session 7c, bench/results/NVIDIA_H200-vnm_small-2026-11-21-9a76b61-s7small3.jsonl):
  // variant 10 (paired tiles) is 0.81-1.00x of variant 9 in all 18 cases (2:4 / 128:2:8 / 128:2:16,
  // m = 8 / 16 / 32): not taken. Variant 9 on 2:4 (first measurement) against 6 at m = 16 / 32:
  // 1.03x / 1.08x on 12288^2 but 0.98x / 0.98x on 28672 x 8192; on 128:2:16 at m = 32 1.09x on
  // 12288^2, 0.92x on 28672 x 8192: mixed by shape, so the rule by pattern and m is unchanged.
  // 7258e61 (session 7d, bench/results/NVIDIA_H200-vnm_small-2026-11-21-7258e61-s7small4.jsonl):
  // at m = 32 variant 9 with the SM-balanced splits (layout.hpp balanced_splits, 4 splits on both
  // 2:4 shapes) beats variant 6 on 2:4 (92.7 against 97.9 us at 28672 x 8192, 60.2 against 74.9
  // at 12288^2); variant 11 (fused split reduce) is slower everywhere: not taken.
  // s8v24 (session 8, bench/results/NVIDIA_H200-vnm_small-2026-11-22-04e6c4d-s8v24.jsonl): variant
  // 12 (kernel8.cuh, the lean direct-staging kernel, ~3x fewer instructions per record) with its
  // one-wave split rule is the fastest 2:4 row at m = 1 / 8 / 16 / 32 on both shapes (28672 x 8192:
  // 65.3 / 66.2 / 67.4 / 73.8 us against the defaults 70.9 / 73.8 / 78.0 / 93.7; 12288^2: 47.8 /
  // 48.8 / 50.9 / 55.5 against 50.6 / 52.1 / 57.8 / 60.1). So 12 for hw24 with k % 8 == 0 at every
  // m (X misaligned at run time: variant 9's kernel in that geometry); k % 8 != 0: as before.
  // s8v24b (session 8b, bench/results/NVIDIA_H200-vnm_small-2026-11-22-aa971bd-s8v24b.jsonl, same
  // process as cuSPARSELt): variant 14 (kernel9.cuh: two row tiles per warp, k splits reduced in a
  // cluster) against 12 — 28672 x 8192 (1 split) m = 32 69.3 against 73.7 us, m = 1 / 8 / 16 64.8 /
  // 65.3 / 66.3 against 64.2 / 64.9 / 66.1 (0.4-0.9 % slower); 12288^2 (2 splits by the rule) 45.1 /
  // 46.3 / 48.2 / 53.1 against 47.0 / 48.3 / 49.8 / 54.7 at m = 1 / 8 / 16 / 32 (3 splits forced:
  // 44.2 / 45.1 / 47.1 / 52.4). So 14 for hw24 with k % 8 == 0, except where its geometry has one
  // split at m <= 16 (geometry_for keeps 12 there).
  // s8v24c (session 8c, bench/results/NVIDIA_H200-vnm_small-2026-11-22-9edc68e-s8v24c.jsonl): variant
  // 15 (256-row groups) slower than 14 at m = 8 / 16 / 32 on both shapes (12288^2 m = 32 52.93 by its
  // rule, 51.65 at 2 splits, against 51.52 for 14 at 3 splits; 28672 x 8192 3-6 % slower): not taken.
  // The cluster-fit check gave 14 its 3 splits at 12288^2 (124 clusters of 3 fit for 96 groups).
  // s8v24d (session 8d, bench/results/NVIDIA_H200-vnm_small-2026-11-22-80b4392-s8v24d.jsonl): variant 16
  // (14 with chunks of 16 / 16 / 8 / 8 pairs: half the block barriers, 2 blocks per SM) 0.6 % faster than
  // 14 at 12288^2 m = 32 (2 splits), ties at m = 16 and at 28672 x 8192: geometry_for takes 16 at m > 24
  // where 14 would run splits (and 16 does too), 14 / 12 elsewhere.
  // s9vnm (session 9, bench/results/NVIDIA_H200-vnm_small-2026-11-22-f3a9476-s9vnm.jsonl, same process as
  // cuBLAS): variant 20 (kernel10.cuh, V:2:M V = 128 on the lean paired structure, its own split rule)
  // beats the default (4 / 9) in all 12 cases measured — 128:2:8 and 128:2:16, 28672 x 8192 and 12288^2,
  // m = 8 / 16 / 32 — by 1.009-1.27x (128:2:8 28672 x 8192: 43.55 / 44.51 / 66.43 us against 46.91 /
  // 54.56 / 67.71). So 20 for V = 128 with M <= 16 at m >= 8 (m < 8 and M > 16 were not measured).
  // s9v24 (session 9, bench/results/NVIDIA_H200-vnm_small-2026-11-22-848b735-s9v24.jsonl): variants 17 / 18 (14
  // with the weight ring filled by cp.async.bulk; 18 with L2 hints) are not faster than this rule's choice
  // anywhere (12288^2 m = 32 51.20 / 51.14 against 16's 50.82 us; 1.6-2.2 % slower at m <= 16 and on
  // 28672 x 8192): not taken; both removed in session 9b (17 again 0.5-2.2 % slower than the default at d1ddc26).
  // s9v24b (session 9b, bench/results/NVIDIA_H200-vnm_small-2026-11-22-d1ddc26-s9v24b.jsonl): variant 19 (14 with a
  // producer warp and a block-wide bulk ring) 2.7 % faster than 16 at 12288^2 m = 32 (49.95 against 51.33 us), 4-8 %
  // slower at m <= 16, 2 % slower at 28672 x 8192 m = 32: geometry_for takes 19 where it took 16 (m > 24 with splits).
  const Pattern& p = w.pattern();
  // s9vnm2 (bench/results/NVIDIA_H200-vnm_small-2026-11-22-5585405-s9vnm2.jsonl): 20 with its shared memory
  // padded to <= 2 blocks per SM where the grid fits so (geometry_of_variant, layout.hpp vlean_spread):
  // 1.01-1.20x at 28672 x 8192 (measured as the then variant 23); 12288^2 (288 blocks) unchanged.
  // s10vnm (session 10, bench/results/NVIDIA_H200-vnm_small-2026-11-22-da846df-s10vnm.jsonl, same process as cuBLAS):
  // variant 23 (20 gathering from the X rows, no transpose launch) beats 20 at m = 8 in all four cases (128:2:8 /
  // 128:2:16 x 28672 x 8192 / 12288^2: 1.056 / 1.133 / 1.070 / 1.071x) and 20 / the old m = 1 default 4 at m = 1
  // (1.05-1.08x / 1.07-1.14x); at m = 16 / 32 it wins on 12288^2 (1.01-1.04x, 3 blocks per SM) but loses on
  // 28672 x 8192 (0.92-0.99x, the padded 2 blocks per SM: its +34 instructions per record at m = 32 show). So 23
  // for V = 128, M <= 16 at m <= 8 (m = 2..7: the same NT = 1 kernel, unmeasured), 20 at m > 8 (geometry_for takes
  // 23 there where 20's grid is not padded).
  if (p.kind == Granularity::venom && p.v == 128 && p.m <= 16 && m <= 8) return sv::kVnmDirectVariant;  // 4 below sm_90
  if (p.kind == Granularity::venom && p.v == 128 && p.m <= 16 && m > 8) return sv::kVnmLeanVariant;  // 4 below sm_90
  if (p.kind == Granularity::hw24 && w.cols() % 8 == 0) return sv::kLean2ClusterVariant;  // 4 below sm_90 (geometry_for)
  if (p.kind == Granularity::hw24 && m > 24) return sv::kAsyncVariant;  // 4 below sm_90 (geometry_for)
  if (p.kind == Granularity::hw24 && m > 8) return 6;  // 6 falls back to 5 below sm_90 (geometry_for)
  if (p.kind == Granularity::venom && p.m >= 32 && m > 24) return 5;
  if (p.kind == Granularity::venom && p.m <= 8 && m > 24) return sv::kAsyncVariant;  // 4 below sm_90 (geometry_for)
  return 4;
}

namespace {
sv::Geometry geometry_of_variant(const CondensedMatrix& w, const MatmulDesc& desc, const Options& opt, int variant);
}  // namespace

sv::Geometry geometry_for(const CondensedMatrix& w, const MatmulDesc& desc, const Options& opt) {
  if (opt.variant < -1 || opt.variant >= sv::kVariants || (opt.variant >= 0 && !sv::variant_built(opt.variant)))
    throw InvalidArgument("options.variant", "must be -1 (plan's choice) or a built variant in 0.." + std::to_string(sv::kVariants - 1) + " (17 and 18 were removed; 22 is not built)");
  sv::Geometry g = geometry_of_variant(w, desc, opt, opt.variant >= 0 ? opt.variant : default_variant(w, desc.m));
  // Plan's choice: variant 14 with one split at m <= 16 is variant 13 without partials, measured
  // 0.4-0.9 % slower than 12 (s8v24b, 28672 x 8192 m = 1 / 8 / 16; 6 % faster at m = 32): keep 12.
  if (opt.variant < 0 && opt.force_splits <= 0 && g.variant == sv::kLean2ClusterVariant && g.splits == 1 && g.n_tiles <= 2)
    g = geometry_of_variant(w, desc, opt, sv::kLeanVariant);
  // Plan's choice at m > 24 where variant 14 runs a cluster of splits: variant 19 (producer warp, block
  // bulk ring) when it runs splits too. s9v24b (H200, d1ddc26, same process): 12288^2 m = 32 19 at 2 splits
  // 49.95 us against 16 51.33 / 14 51.49 (cuSPARSELt 48.61); 19 is 4-8 % slower at m <= 16 and 2 % slower at
  // 28672 x 8192 m = 32 (1 split): not taken there. (Before: variant 16, s8v24d, 0.6 % faster than 14 there.)
  if (opt.variant < 0 && opt.force_splits <= 0 && g.variant == sv::kLean2ClusterVariant && g.splits > 1 && g.n_tiles == 4) {
    const sv::Geometry g19 = geometry_of_variant(w, desc, opt, sv::kLean2WsVariant);
    if (g19.variant == sv::kLean2WsVariant && g19.splits > 1) g = g19;
  }
  // Plan's choice at m > 8 where variant 20's grid is not padded (more than 2 blocks per SM, layout.hpp
  // vlean_spread): variant 23 (direct gather). s10vnm (H200, da846df, same process): 12288^2 (96 slabs x 3 splits,
  // 288 blocks) m = 16 / 32 23 1.013 / 1.027x (128:2:8) and 1.042 / 1.038x (128:2:16) of 20; where 20 is padded
  // (28672 x 8192, 224 blocks) 23 is 0.986 / 0.934x and 1.013 / 0.922x: not taken there.
  if (opt.variant < 0 && opt.force_splits <= 0 && g.variant == sv::kVnmLeanVariant && g.ring_bytes != sv::kVleanSpreadRingBytes) {
    const sv::Geometry g23 = geometry_of_variant(w, desc, opt, sv::kVnmDirectVariant);
    if (g23.variant == sv::kVnmDirectVariant && g23.splits == g.splits && g23.ring_bytes == g.ring_bytes) g = g23;
  }
  return g;
}

namespace {
sv::Geometry geometry_of_variant(const CondensedMatrix& w, const MatmulDesc& desc, const Options& opt, int variant) {
  const sv::Layout l = sv::Layout::of(w.layout);
  variant = sv::lean2_or_lean(l, variant);  // 13 only where its kernel applies (hw24, k % 8 == 0)
  if (variant == 6 && device_major() < 9) variant = 5;  // programmatic dependent launch: sm_90+
  if (variant == sv::kStreamVariant && device_major() < 9) variant = 4;  // clusters, distributed shared memory: sm_90+
  if (sv::async_variant(variant) && device_major() < 9) variant = 4;  // programmatic dependent launch: sm_90+
  if (variant == sv::kPairVariant && device_major() < 9) variant = 4;   // programmatic dependent launch: sm_90+
  const int sms = device_sms();
  sv::Geometry g = sv::choose_geometry(l, int(desc.m), sms, variant);
  // Occupancy of the kernel this geometry launches (also lifts its shared-memory limit).
  const PrepareFn prep = w.dtype == DType::f16 ? pick_prepare<__half>(g.n_tiles) : pick_prepare<__nv_bfloat16>(g.n_tiles);
  const int blocks = prep(variant, 32 * g.warps, g.smem_bytes());
  if (blocks < 1) throw InvalidArgument("weight", std::string(kName) + ": kernel does not fit on this device");
  g = sv::choose_geometry(l, int(desc.m), sms, variant, blocks);
  if ((variant == sv::kStreamVariant || sv::lean2_cluster_variant(g.variant)) && opt.force_splits <= 0) {
    // The split rule fills one wave of blocks; the clusters must fit in it too (run dd6d33a: one
    // cluster of 5 left for a second wave cost 1.45x). Halve the splits until they do.
    const ClustersFn clusters =
        w.dtype == DType::f16 ? pick_clusters<__half>(g.n_tiles) : pick_clusters<__nv_bfloat16>(g.n_tiles);
    if (g.variant == sv::kStreamVariant) {
      while (g.splits > 1 && std::int64_t(clusters(g)) < g.groups) sv::set_stream_splits(g, l.pairs, g.splits / 2);
    } else {
      // Variants 14 / 15: one fewer split at a time (s8v24b, 12288^2: clusters of 4 did not all fit, the
      // halving rule took 2 splits; 3 forced measured 1.02-1.03x faster than 2 at every m).
      while (g.splits > 1 && std::int64_t(clusters(g)) < g.groups) {
        const std::int64_t s = g.splits - 1;
        g.pairs_per_split = (l.pairs + s - 1) / s;
        g.splits = int((l.pairs + g.pairs_per_split - 1) / g.pairs_per_split);
      }
    }
  }
  if (opt.force_splits > 0) {
    std::int64_t s = std::min<std::int64_t>(opt.force_splits, l.pairs);
    if (g.variant == sv::kStreamVariant || sv::lean2_cluster_variant(g.variant))
      s = std::min<std::int64_t>(s, sv::kStreamMaxSplits);  // one cluster
    g.pairs_per_split = (l.pairs + s - 1) / s;
    g.splits = int((l.pairs + g.pairs_per_split - 1) / g.pairs_per_split);
  }
  // Variants 20 / 21: at most 2 blocks per SM where the grid fits so (layout.hpp vlean_spread, s9vnm2:
  // even placement beside the transpose's blocks); a cluster split keeps the padding only if its
  // clusters all fit at that occupancy.
  if (sv::vlean_variant(g.variant)) {
    const sv::Geometry unpadded = g;
    if (sv::vlean_spread(g, sms) && sv::lean2_cluster_variant(g.variant) && g.splits > 1) {
      const ClustersFn clusters =
          w.dtype == DType::f16 ? pick_clusters<__half>(g.n_tiles) : pick_clusters<__nv_bfloat16>(g.n_tiles);
      if (std::int64_t(clusters(g)) < g.groups) g = unpadded;
    }
  }
  return g;
}
}  // namespace

std::shared_ptr<const DeviceWeight> upload(const CondensedMatrix& w) {
  sv::Packed packed;
  try {
    packed = sv::pack(w);
  } catch (const std::invalid_argument& e) {
    throw InvalidArgument("weight", std::string(kName) + ": " + e.what());
  }
  auto dw = std::make_shared<DeviceWeight>();
  dw->layout = packed.layout;
  dw->dtype = w.dtype;
  dw->records = DeviceBuffer(packed.records.size());
  dw->records.upload(packed.records.data(), packed.records.size());
  if (!packed.sel.empty()) {
    dw->sel = DeviceBuffer(packed.sel.size());
    dw->sel.upload(packed.sel.data(), packed.sel.size());
  }
  return dw;
}

std::unique_ptr<detail::KernelInstance> create(std::shared_ptr<const DeviceWeight> dw, const CondensedMatrix& w,
                                               const MatmulDesc& desc, const Options& opt) {
  const std::string why = unsupported(w, desc);
  if (!why.empty()) throw InvalidArgument("weight", std::string(kName) + ": " + why);
  if (opt.force_splits < 0) throw InvalidArgument("options.force_splits", "must be >= 0");
  if (opt.variant < -1 || opt.variant >= sv::kVariants || (opt.variant >= 0 && !sv::variant_built(opt.variant)))
    throw InvalidArgument("options.variant", "must be -1 (plan's choice) or a built variant in 0.." + std::to_string(sv::kVariants - 1) + " (17 and 18 were removed; 22 is not built)");
  if (!dw) throw InvalidArgument("weight", std::string(kName) + ": no uploaded weight");
  const sv::Layout l = sv::Layout::of(w.layout);
  if (dw->dtype != w.dtype || dw->layout.n != l.n || dw->layout.k != l.k || dw->layout.window != l.window ||
      dw->layout.group_rows != l.group_rows || dw->layout.venom != l.venom)
    throw InvalidArgument("weight", std::string(kName) + ": the uploaded weight is not this matrix's");
  return std::make_unique<Instance>(std::move(dw), w, desc, opt);
}

std::unique_ptr<detail::KernelInstance> create(const CondensedMatrix& w, const MatmulDesc& desc, const Options& opt) {
  const std::string why = unsupported(w, desc);
  if (!why.empty()) throw InvalidArgument("weight", std::string(kName) + ": " + why);
  return create(upload(w), w, desc, opt);
}

}  // namespace sparsenm::cuda::vnm_small

namespace sparsenm::detail {

void register_vnm_small_kernels(KernelRegistry& r) {
  KernelCandidate c;
  c.name = "cuda:vnm_gemv";
  c.backend = Backend::cuda;
  c.unsupported = [](const CondensedMatrix& w, const MatmulDesc& d) { return cuda::vnm_small::unsupported(w, d); };
  c.create = [](const CondensedMatrix& w, const MatmulDesc& d) { return cuda::vnm_small::create(w, d); };
  r.add(std::move(c));
}

}  // namespace sparsenm::detail
