// sparsenm — plan candidate cuda:sptc_24_wgmma_dec: hardware 2:4 at decode sizes (1 <= m <= 32)
// on sm_90 (built as sm_90a): wgmma.mma_async.sp with BN = 8 / 16 / 32, a TMA ring and a stream-K
// split reduced by fp32 atomics (sptc24_wgmma_dec.cu). Takes what cuda:sptc_24_wgmma takes (hw24,
// element N:M and V:2:M weights whose aligned groups of 4 hold <= 2 nonzeros, repacked to 2:4),
// f16/bf16 in, f32 accumulation, f32/f16/bf16 out. Registered in its own function so that a build
// of only the small-m families (scripts/wgdec10-device) can race it against cuda:vnm_gemv and
// cuSPARSELt without the other sparse tensor-core kernels.
#include <cuda_runtime.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cuda/common.cuh"
#include "cuda/sptc/pack.hpp"
#include "cuda/sptc/sptc.hpp"
#include "plan/registry.hpp"

namespace sparsenm::detail {
namespace {

namespace cs = sparsenm::cuda::sptc;

std::string dec_unsupported(const CondensedMatrix& w, const MatmulDesc& d) {
  if (cs::device_cc() != 90) return "needs an sm_90 device (Hopper; built as sm_90a)";
  if (d.x_dtype != w.dtype) return "x dtype must equal the weight dtype";
  if (d.y_dtype != DType::f32 && d.y_dtype != DType::f16 && d.y_dtype != DType::bf16) return "y dtype must be f32, f16 or bf16";
  if (d.accumulate != Accumulate::f32) return "accumulates in f32 only";
  if (d.m < 1 || d.m > 32) return "m must be in 1..32 (the decode form; larger m: cuda:sptc_24_wgmma)";
  if (w.layout.rows >= (std::int64_t(1) << 31) || w.layout.cols >= (std::int64_t(1) << 31)) return "dimensions must be < 2^31";
  if (!every_group_stores_two(w))
    if (std::string why = needs_finite_x(d, "zero-fills groups of 4 holding fewer than 2 stored slots"); !why.empty())
      return why;
  return sptc::hw24_unsupported(w);
}

/// Packed weight (rows padded to 128), its tensor map, the zeroed reduction workspace and, when
/// k % 8 != 0, the padded-X buffer.
class DecInstance : public KernelInstance {
 public:
  DecInstance(const CondensedMatrix& w, const MatmulDesc& d, int grid_limit, int sets)
      : desc_(d), grid_limit_(grid_limit), sets_(sets) {
    if (std::string why = dec_unsupported(w, d); !why.empty()) throw InvalidArgument("weight / desc", why);
    n_ = w.layout.rows;
    k_ = w.layout.cols;
    ldx_ = sptc::round_up(k_, 8);
    sptc::Packed24 p = sptc::pack_hw24(w, 128);
    values_ = cuda::DeviceBuffer(p.values.size() * 2);
    values_.upload(p.values.data(), p.values.size() * 2);
    meta_ = cuda::DeviceBuffer(p.meta.size() * 4);
    meta_.upload(p.meta.data(), p.meta.size() * 4);
    a_ = cs::DeviceA{values_.get(), meta_.as<std::uint32_t>(), n_, p.rows_pad, p.k_pad};
    map_ = cs::make_values_map_rows(a_, 128);
    ws_ = cuda::DeviceBuffer(cs::dec_workspace_bytes(a_, d.m));
    SPARSENM_CUDA_CHECK(cudaMemset(ws_.get(), 0, ws_.size()));
    SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());  // zero before a launch on any stream
    if (ldx_ != k_) xpad_ = cuda::DeviceBuffer(std::size_t(d.m * ldx_) * 2);
    cs::Problem pr{desc_.x_dtype, desc_.y_dtype, nullptr, nullptr, desc_.m, n_, k_, ldx_};
    geo_ = cs::run_sptc24_wgmma_dec(a_, map_, pr, nullptr, nullptr, grid_limit_, true, sets_);
  }

  void run(const void* x, void* y, void* stream) const override {
    auto s = static_cast<cudaStream_t>(stream);
    cs::Problem p{desc_.x_dtype, desc_.y_dtype, x, y, desc_.m, n_, k_, ldx_};
    if (ldx_ != k_) {
      cs::pad_x(desc_.x_dtype, x, desc_.m, k_, xpad_.get(), ldx_, s);
      p.x = xpad_.get();
    }
    cs::run_sptc24_wgmma_dec(a_, map_, p, ws_.get(), s, grid_limit_, false, sets_);
  }
  std::size_t workspace_bytes() const override { return ws_.size() + xpad_.size(); }
  std::string describe() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "BN %d, %d accumulator sets, %d stages, stream-K %lld units over %d CTAs (%.1f k-blocks each)",
                  geo_.bn, geo_.sets, geo_.stages, geo_.units, geo_.grid, double(geo_.units) / double(geo_.grid));
    return buf;
  }

 private:
  MatmulDesc desc_;
  int grid_limit_ = 0, sets_ = 0;
  std::int64_t n_ = 0, k_ = 0, ldx_ = 0;
  cuda::DeviceBuffer values_, meta_, ws_, xpad_;
  cs::DeviceA a_;
  CUtensorMap map_{};
  cs::DecLaunch geo_;
};

}  // namespace

std::unique_ptr<KernelInstance> create_sptc_dec(const CondensedMatrix& w, const MatmulDesc& d, int grid_limit, int sets) {
  return std::make_unique<DecInstance>(w, d, grid_limit, sets);
}

void register_sptc_dec_kernels(KernelRegistry& r) {
  r.add({"cuda:sptc_24_wgmma_dec", Backend::cuda, dec_unsupported,
         [](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
           return std::make_unique<DecInstance>(w, d, 0, 0);
         }});
}

/// Measurement rows only (scripts/wgdec10f-device; not in the library's registry): the decode kernel
/// with a fixed accumulator-set count, "cuda:sptc_24_wgmma_dec_s<1|2|4|8>".
void register_sptc_dec_set_rows(KernelRegistry& r) {
  for (int sets : {1, 2, 4, 8})
    r.add({"cuda:sptc_24_wgmma_dec_s" + std::to_string(sets), Backend::cuda, dec_unsupported,
           [sets](const CondensedMatrix& w, const MatmulDesc& d) -> std::unique_ptr<KernelInstance> {
             return std::make_unique<DecInstance>(w, d, 0, sets);
           }});
}

}  // namespace sparsenm::detail
