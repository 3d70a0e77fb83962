// sparsenm bench — suite "train": the memory-bound kernels of 2:4 sparse training
// (include/sparsenm/train.hpp) at GPT-2 774M / 1.5B FFN shapes (d = 1280 / 1600, 4d; tokens
// 8192 / 16384), reported as GB/s against the device-to-device copy bandwidth of the same run.
// Method (BENCH.md): per-call CUDA events between back-to-back calls after warm-up; median and
// min; operands rotate over enough copies that >= 320 MB of other data is touched before a
// buffer is reused (the weight shapes are below 2x L2). `bytes` = every input read once + every
// output written once. Correctness is covered by tests/gpu/test_train_*.cu (bit-exact against
// host references); rows carry rel_err -1 except where the suite checks a kernel itself.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cuda/common.cuh"
#include "event_timing.cuh"
#include "train_probe.cuh"
#include "sparsenm/error.hpp"
#include "sparsenm/train.hpp"
#include "cuda/train/train_common.cuh"

namespace sparsenm::bench {
namespace {

using cuda::DeviceBuffer;

int rotation_slots(double bytes_per_call);

/// Copy bandwidth at the case's own size: cudaMemcpyAsync of bytes/2 (read + write = bytes),
/// rotated like the case; shows how much of the gap to the 1 GiB copy is size (launch, ramp,
/// tail) rather than the kernel.
double copy_same_size_GBps(double bytes, int warmup, int reps) {
  const std::size_t half = (std::size_t(bytes / 2) + 255) / 256 * 256;
  const int slots = rotation_slots(bytes);
  std::vector<cuda::DeviceBuffer> src, dst;
  for (int i = 0; i < slots; ++i) {
    src.emplace_back(half);
    dst.emplace_back(half);
    SPARSENM_CUDA_CHECK(cudaMemset(src.back().get(), 1, half));
  }
  const Timing t = time_calls(
      [&](int i) {
        SPARSENM_CUDA_CHECK(cudaMemcpyAsync(dst[std::size_t(i)].get(), src[std::size_t(i)].get(), half, cudaMemcpyDeviceToDevice));
      },
      slots, warmup, reps);
  return 2.0 * double(half) / (t.median * 1e6);
}

int rotation_slots(double bytes_per_call) {
  const double want = 320e6;
  return int(std::clamp(std::ceil(want / std::max(bytes_per_call, 1.0)), 1.0, 32.0));
}

/// A set of device buffers per rotation slot, filled with non-zero random-ish data.
struct Slots {
  std::vector<std::vector<DeviceBuffer>> bufs;
  Slots(int slots, const std::vector<std::size_t>& sizes) : bufs(std::size_t(slots)) {
    for (auto& s : bufs)
      for (std::size_t b : sizes) s.emplace_back(b);
  }
  void* at(int slot, int i) const { return bufs[std::size_t(slot)][std::size_t(i)].get(); }
};

__global__ void fill_kernel(std::uint16_t* p, std::size_t n, std::uint32_t seed, std::uint16_t and_mask, std::uint16_t or_mask) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h = std::uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = std::uint16_t((h & and_mask) | or_mask);
  }
}
/// Random finite values: f16 in about [-2, 2] (exponent field capped), bf16 likewise, f32 as
/// pairs of such halves (finite). Masks: random transposable-looking words are not needed by
/// the kernels' speed; apply uses a mask produced by the search.
void fill(void* p, std::size_t bytes, std::uint32_t seed) {
  fill_kernel<<<1024, 256>>>(static_cast<std::uint16_t*>(p), bytes / 2, seed, 0xBFFF, 0x0000);
  SPARSENM_CUDA_CHECK(cudaGetLastError());
}

struct Shape {
  std::int64_t rows, cols;
};

/// Mask kernel variants (Mask24Args::variant; the accepted set: variants.hpp): 1 = session-2
/// kernel (mask24_s2.cuh, 4 x 8 region per thread), 2 = session-3 kernel (mask24.cuh, 8 x 8
/// region per thread), 3 = its persistent prefetching form, 4 = session-2 code over 256 x 256
/// footprints with whole-sector stores, 8 = the lean 16-bit search with staged whole-sector
/// stores ("Session 5b"), 9 = 8 over 128-column strips ("Session 5c"). The bench times every
/// variant other than the API's default (mask24_default_variant) in the same run. One-matrix rows
/// time variants 1-4; batched rows 1, 4, the occupancy control (variant 4 with one resident CTA
/// per SM fewer, docs/PERF-train.md "Session 4"), label "lines_kernel_minus1cta", and 8, 9
/// (batched 16-bit search rows only: other calls fall back to the default kernel; 9 on rows with
/// cols % 128 == 0). (Variants 5, 6, 7, 10 were dropped in session 9: "Session 9: variants
/// dropped".) SPARSENM_MASK_VARIANTS (comma list, e.g. "4,8") replaces the batched list;
/// SPARSENM_TRAIN_ONLY=maskb runs only the batched 16-bit mask rows.
/// Session 8 line-order movers (bench/train_probe.cuh): label, stream mix, launcher.
struct LineMover {
  const char* label;
  bool apply;
  std::function<void(const train::detail::Mask24Args&)> launch;
};
const std::vector<LineMover>& line_movers() {
  static const std::vector<LineMover> list = {
      {"line_128x128_strip1024", false, [](const train::detail::Mask24Args& a) { probe::launch_mask_line_mover<128, 128, 8>(a); }},
      {"line_128x128_strip1024_prefetch", false,
       [](const train::detail::Mask24Args& a) { probe::launch_mask_line_mover<128, 128, 8, false, true>(a); }},
      {"line_128x256_strip1024", false, [](const train::detail::Mask24Args& a) { probe::launch_mask_line_mover<128, 256, 8>(a); }},
      {"line_64x128_strip1024", false, [](const train::detail::Mask24Args& a) { probe::launch_mask_line_mover<64, 128, 16>(a); }},
      {"line_128x128_strip512", false, [](const train::detail::Mask24Args& a) { probe::launch_mask_line_mover<128, 128, 4>(a); }},
      {"line_64x128_strip512", false, [](const train::detail::Mask24Args& a) { probe::launch_mask_line_mover<64, 128, 8>(a); }},
      {"line_128x128_strip1024_apply", true,
       [](const train::detail::Mask24Args& a) { probe::launch_mask_line_mover<128, 128, 8, true>(a); }},
  };
  return list;
}

/// Runs line mover `lm` once over `batch` matrices rows x cols into outputs poisoned with 0xFF
/// bytes (4 KiB poisoned slack after each): every 16-bit word of every output must be written
/// (the W fill keeps bit 14 of each 16-bit word clear, and every stored word is an XOR of such
/// words: never 0xFFFF) and every slack byte left alone. Returns "ok" or what failed.
std::string line_mover_coverage(const LineMover& lm, std::int64_t batch, std::int64_t rows, std::int64_t cols) {
  constexpr std::size_t kSlack = 4096;
  const std::size_t wb = std::size_t(batch * rows * cols) * 2, mb = std::size_t(batch * train::mask24_words(rows, cols)) * 2;
  const std::size_t vb = std::size_t(batch * rows * train::hw24_value_cols(cols)) * 2,
                    ib = std::size_t(batch * rows * train::hw24_index_row_bytes(cols));
  const std::size_t tvb = std::size_t(batch * cols * train::hw24_value_cols(rows)) * 2,
                    tib = std::size_t(batch * cols * train::hw24_index_row_bytes(rows));
  const std::size_t sizes[6] = {wb, mb, vb, ib, tvb, tib};
  std::vector<DeviceBuffer> buf;
  for (std::size_t z : sizes) {
    buf.emplace_back(z + kSlack);
    SPARSENM_CUDA_CHECK(cudaMemset(buf.back().get(), 0xFF, z + kSlack));
  }
  fill(buf[0].get(), wb, 91u);
  if (lm.apply) fill(buf[1].get(), mb, 93u);
  train::detail::Mask24Args a;
  a.w = buf[0].get();
  a.rows = rows, a.cols = cols, a.batch = batch;
  if (lm.apply) a.mask_in = buf[1].as<std::uint16_t>();
  else a.mask_out = buf[1].as<std::uint16_t>();
  a.w_values = buf[2].get(), a.w_indices = buf[3].as<std::uint8_t>();
  a.wt_values = buf[4].get(), a.wt_indices = buf[5].as<std::uint8_t>();
  a.aligned = true;
  lm.launch(a);
  SPARSENM_CUDA_CHECK(cudaDeviceSynchronize());
  static const char* names[6] = {"w", "mask", "w_values", "w_indices", "wt_values", "wt_indices"};
  std::string bad;
  for (int k = 1; k < 6; ++k) {
    std::vector<std::uint16_t> h((sizes[k] + kSlack) / 2);
    SPARSENM_CUDA_CHECK(cudaMemcpy(h.data(), buf[std::size_t(k)].get(), sizes[k] + kSlack, cudaMemcpyDeviceToHost));
    std::size_t unwritten = 0, slack_hit = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      const bool in = i < sizes[k] / 2;
      if (in && h[i] == 0xFFFFu) ++unwritten;  // (apply: the read mask, filled: must stay so)
      if (!in && h[i] != 0xFFFFu) ++slack_hit;
    }
    if (unwritten || slack_hit)
      bad += std::string(bad.empty() ? "" : ", ") + names[k] + ": " + std::to_string(unwritten) + " words unwritten, " +
             std::to_string(slack_hit) + " slack words hit";
  }
  return bad.empty() ? "ok (batch " + std::to_string(batch) + ")" : "FAILED (" + bad + ")";
}

constexpr int kMaskVariants[] = {1, 2, 3, 4};
constexpr int kMaskVariantsBatched[] = {1, 4, -4, 8, 9};  ///< -4: variant 4 under the occupancy control
const char* mask24_variant_label(int v) {
  return v == 1   ? "session2_kernel"
         : v == 2 ? "session3_kernel"
         : v == 3 ? "persistent_kernel"
         : v == 4 ? "lines_kernel"
         : v == 8 ? "lean_staged_kernel"
         : v == 9 ? "lean_staged_wide_kernel"
                  : "lines_kernel_minus1cta";
}

/// The mask kernels with kernel `variant` selected, for a same-run comparison. Returns the row's
/// kernel label. Shapes and pointers of the suite satisfy the vector path's alignment (rows, cols
/// multiples of 32, cudaMalloc).
const char* mask24_other_variant(int variant, DType t, bool search, const void* w, std::int64_t batch, std::int64_t rows,
                                 std::int64_t cols, std::uint16_t* mask, train::Compressed24View w24, train::Compressed24View wt24) {
  train::detail::Mask24Args a;
  a.w = w;
  a.rows = rows;
  a.cols = cols;
  a.batch = batch;
  if (search) a.mask_out = mask;
  else a.mask_in = mask;
  a.w_values = w24.values;
  a.w_indices = w24.indices;
  a.wt_values = wt24.values;
  a.wt_indices = wt24.indices;
  a.aligned = true;
  a.variant = variant < 0 ? -variant : variant;
  a.max_ctas_per_sm = variant < 0 ? -1 : 0;
  if (t == DType::f16) train::detail::launch_mask24<__half>(a, search, nullptr);
  else if (t == DType::bf16) train::detail::launch_mask24<__nv_bfloat16>(a, search, nullptr);
  else train::detail::launch_mask24<float>(a, search, nullptr);
  return mask24_variant_label(variant);
}

/// MVUE with kernel `variant` (Mvue24Args::variant, the kept set of variants.hpp; -1: variant 1
/// under the occupancy control, one resident CTA per SM fewer), the arguments the API builds.
void mvue24_variant(int variant, DType t, const void* g, std::int64_t T, std::int64_t n, train::GradLayout layout,
                    std::uint64_t seed, train::Compressed24View out) {
  train::detail::Mvue24Args a = train::detail::make_mvue24_args(g, T, n, layout, seed, out);
  a.variant = variant < 0 ? -variant : variant;
  a.max_ctas_per_sm = variant < 0 ? -1 : 0;
  if (t == DType::f16) train::detail::launch_mvue24<__half>(a, nullptr);
  else if (t == DType::bf16) train::detail::launch_mvue24<__nv_bfloat16>(a, nullptr);
  else train::detail::launch_mvue24<float>(a, nullptr);
}

}  // namespace

Suite train_suite() {
  Suite s;
  s.name = "train";
  s.description = "2:4 sparse training kernels (mask search/apply, MVUE, masked decay, flip count, GEGLU/SwiGLU) vs copy bandwidth";
  s.needs_gpu = true;
  s.run = [](Context& ctx) {
    const int warmup = ctx.options.warmup, reps = ctx.options.reps;
    const std::vector<std::int64_t> ds = {1280, 1600};
    const std::vector<std::int64_t> tokens = ctx.options.quick ? std::vector<std::int64_t>{8192, 16384}
                                                               : std::vector<std::int64_t>{8192, 16384};
    auto emit = [&](const std::string& op, const std::string& dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                    const std::string& kernel, Timing t, double bytes, int slots, const std::string& extra) {
      Row r;
      r.suite = "train";
      r.op = op;
      r.format = "hw24";
      r.pattern = "2:4";
      r.dtype = dtype;
      r.m = m;
      r.n = n;
      r.k = k;
      r.impl = "sparsenm:" + kernel;
      r.ms_median = t.median;
      r.ms_min = t.min;
      r.reps = reps;
      r.bytes = bytes;
      const double gbps = bytes / (t.median * 1e6);
      const double same = copy_same_size_GBps(bytes, warmup, reps);
      char buf[512];
      std::snprintf(buf, sizeof buf, "GBps=%.0f frac_copy=%.3f copy_same_size_GBps=%.0f frac_same_size=%.3f L2 rotated over %d slot(s)%s%s",
                    gbps, ctx.copy_GBps > 0 ? gbps / ctx.copy_GBps : 0.0, same, gbps / same, slots, extra.empty() ? "" : "; ",
                    extra.c_str());
      r.note = buf;
      ctx.emit(r);
    };
    const DType dt16 = DType::f16;
    // SPARSENM_TRAIN_ONLY (comma list of mask, maskb, mvue, probe, probem, probecheck, decay, flip,
    // glu): run only those sections (e.g. SPARSENM_TRAIN_ONLY=mask: a short device run of the mask
    // rows; probem: the mask movers of the probe only; probecheck: only the line movers' coverage
    // check, for compute-sanitizer); unset: all but probecheck.
    const char* only = std::getenv("SPARSENM_TRAIN_ONLY");
    auto want = [&](const char* section) {
      if (!only || !*only) return true;
      const std::string list = std::string(",") + only + ",";
      return list.find(std::string(",") + section + ",") != std::string::npos;
    };

    for (std::int64_t d : ds) {
      // ---- probecheck: coverage of the session-8 line movers only (small: 2 matrices; for
      //      compute-sanitizer), printed, no rows ----
      if (only && want("probecheck"))
        for (const auto& lm : line_movers())
          std::printf("probecheck %s 2 x %lldx%lld: %s\n", lm.label, static_cast<long long>(4 * d), static_cast<long long>(d),
                      line_mover_coverage(lm, 2, 4 * d, d).c_str());
      // ---- weights: c_fc W [4d][d] and c_proj W [d][4d] ----
      if (want("mask"))
      for (Shape w : {Shape{4 * d, d}, Shape{d, 4 * d}}) {
        for (DType t : {DType::f16, DType::bf16, DType::f32}) {
          if (t != dt16 && w.rows != 4 * d) continue;
          const std::int64_t R = w.rows, C = w.cols;
          const std::size_t wb = std::size_t(R * C) * dtype_size(t), mb = std::size_t(train::mask24_words(R, C)) * 2;
          const std::size_t vb = std::size_t(R * train::hw24_value_cols(C)) * dtype_size(t),
                            ib = std::size_t(R * train::hw24_index_row_bytes(C));
          const std::size_t tvb = std::size_t(C * train::hw24_value_cols(R)) * dtype_size(t),
                            tib = std::size_t(C * train::hw24_index_row_bytes(R));
          const double search_bytes = double(wb + mb + vb + ib + tvb + tib);
          const int slots = rotation_slots(search_bytes);
          Slots b(slots, {wb, mb, vb, ib, tvb, tib});
          for (int i = 0; i < slots; ++i) fill(b.at(i, 0), wb, 17u + unsigned(i));
          auto search = [&](int i) {
            train::transposable_mask24(t, b.at(i, 0), R, C, static_cast<std::uint16_t*>(b.at(i, 1)),
                                       {b.at(i, 2), static_cast<std::uint8_t*>(b.at(i, 3))},
                                       {b.at(i, 4), static_cast<std::uint8_t*>(b.at(i, 5))});
          };
          emit("mask24_search", std::string(to_string(t)), 0, R, C, "transposable_mask24",
               time_calls(search, slots, warmup, reps), search_bytes, slots, "W + mask + S(W) + S(W)^T");
          // apply with the mask each slot's search just wrote; check apply == search outputs
          for (int i = 0; i < slots; ++i) search(i);
          std::vector<std::uint8_t> ref_v(vb), got_v(vb);
          SPARSENM_CUDA_CHECK(cudaMemcpy(ref_v.data(), b.at(0, 2), vb, cudaMemcpyDeviceToHost));
          auto apply = [&](int i) {
            train::apply_mask24(t, b.at(i, 0), R, C, static_cast<const std::uint16_t*>(b.at(i, 1)),
                                {b.at(i, 2), static_cast<std::uint8_t*>(b.at(i, 3))},
                                {b.at(i, 4), static_cast<std::uint8_t*>(b.at(i, 5))});
          };
          SPARSENM_CUDA_CHECK(cudaMemset(b.at(0, 2), 0xFF, vb));
          const Timing ta = time_calls(apply, slots, warmup, reps);
          SPARSENM_CUDA_CHECK(cudaMemcpy(got_v.data(), b.at(0, 2), vb, cudaMemcpyDeviceToHost));
          emit("mask24_apply", std::string(to_string(t)), 0, R, C, "apply_mask24", ta, search_bytes, slots,
               got_v == ref_v ? "apply(search mask) == search: ok" : "apply(search mask) != search: MISMATCH");
          if (t == dt16 || w.rows == 4 * d) {  // same-run comparison with the other kernels
            for (bool srch : {true, false})
            for (int variant : kMaskVariants) {
              if (variant == train::detail::mask24_default_variant(dtype_size(t), srch, 1, R, C)) continue;
              const char* label = "";
              auto call = [&](int i) {
                label = mask24_other_variant(variant, t, srch, b.at(i, 0), 1, R, C, static_cast<std::uint16_t*>(b.at(i, 1)),
                                             {b.at(i, 2), static_cast<std::uint8_t*>(b.at(i, 3))},
                                             {b.at(i, 4), static_cast<std::uint8_t*>(b.at(i, 5))});
              };
              const Timing tt = time_calls(call, slots, warmup, reps);
              emit(srch ? "mask24_search" : "mask24_apply", std::string(to_string(t)), 0, R, C,
                   std::string(srch ? "transposable_mask24:" : "apply_mask24:") + label, tt, search_bytes, slots,
                   "opt-in non-default kernel, same run");
            }
          }
        }
      }
      // ---- aggregate: the mask refresh of every c_fc weight of the model in one batched launch
      //      (and apply), i.e. what the refresh every l steps costs; same-size copy in the note ----
      if (want("mask") || want("maskb")) {
        const std::int64_t layers = d == 1280 ? 36 : 48;
        std::vector<int> batched_variants(std::begin(kMaskVariantsBatched), std::end(kMaskVariantsBatched));
        if (const char* env = std::getenv("SPARSENM_MASK_VARIANTS")) {
          batched_variants.clear();
          for (const char* q = env; *q;) {
            char* end = nullptr;
            const long v = std::strtol(q, &end, 10);
            if (end == q) break;
            batched_variants.push_back(int(v));
            q = *end == ',' ? end + 1 : end;
          }
        }
        for (DType t : {DType::f16, DType::bf16, DType::f32}) {
          if (!want("mask") && t == DType::f32) continue;  // maskb: the 16-bit rows only
          const std::int64_t B = layers, R = 4 * d, C = d;
          const std::size_t wb = std::size_t(B * R * C) * dtype_size(t), mb = std::size_t(B * train::mask24_words(R, C)) * 2;
          const std::size_t vb = std::size_t(B * R * train::hw24_value_cols(C)) * dtype_size(t),
                            ib = std::size_t(B * R * train::hw24_index_row_bytes(C));
          const std::size_t tvb = std::size_t(B * C * train::hw24_value_cols(R)) * dtype_size(t),
                            tib = std::size_t(B * C * train::hw24_index_row_bytes(R));
          const double bytes = double(wb + mb + vb + ib + tvb + tib);
          const int slots = rotation_slots(bytes);
          Slots b(slots, {wb, mb, vb, ib, tvb, tib});
          for (int i = 0; i < slots; ++i) fill(b.at(i, 0), wb, 21u + unsigned(i));
          auto search = [&](int i) {
            train::transposable_mask24_batched(t, b.at(i, 0), B, R, C, static_cast<std::uint16_t*>(b.at(i, 1)),
                                               {b.at(i, 2), static_cast<std::uint8_t*>(b.at(i, 3))},
                                               {b.at(i, 4), static_cast<std::uint8_t*>(b.at(i, 5))});
          };
          const std::string what = "all " + std::to_string(B) + " c_fc weights [" + std::to_string(R) + "][" +
                                   std::to_string(C) + "] in one batched launch";
          emit("mask24_search_batched", std::string(to_string(t)), B, R, C, "transposable_mask24_batched",
               time_calls(search, slots, warmup, reps), bytes, slots, what);
          for (int i = 0; i < slots; ++i) search(i);
          auto apply = [&](int i) {
            train::apply_mask24_batched(t, b.at(i, 0), B, R, C, static_cast<const std::uint16_t*>(b.at(i, 1)),
                                        {b.at(i, 2), static_cast<std::uint8_t*>(b.at(i, 3))},
                                        {b.at(i, 4), static_cast<std::uint8_t*>(b.at(i, 5))});
          };
          emit("mask24_apply_batched", std::string(to_string(t)), B, R, C, "apply_mask24_batched",
               time_calls(apply, slots, warmup, reps), bytes, slots, what);
          for (bool srch : {true, false})
          for (int variant : batched_variants) {
            if (variant == train::detail::mask24_default_variant(dtype_size(t), srch, B, R, C)) continue;
            if ((variant == 8 || variant == 9) && (!srch || dtype_size(t) != 2)) continue;  // falls back to the default there
            if (variant == 9 && C % 128 != 0) continue;  // runs variant 8 there (128-column strips)
            const char* label = "";
            auto call = [&](int i) {
              label = mask24_other_variant(variant, t, srch, b.at(i, 0), B, R, C, static_cast<std::uint16_t*>(b.at(i, 1)),
                                           {b.at(i, 2), static_cast<std::uint8_t*>(b.at(i, 3))},
                                           {b.at(i, 4), static_cast<std::uint8_t*>(b.at(i, 5))});
            };
            const Timing tt = time_calls(call, slots, warmup, reps);
            emit(srch ? "mask24_search_batched" : "mask24_apply_batched", std::string(to_string(t)), B, R, C,
                 std::string(srch ? "transposable_mask24_batched:" : "apply_mask24_batched:") + label, tt, bytes, slots,
                 what + "; opt-in non-default kernel, same run");
          }
        }
      }
      // ---- MVUE of dZ^T: dZ [tokens][n], n = 4d (c_fc output) and d (c_proj output); f16 and
      //      bf16 (the bar), f32 at the largest c_fc shape ----
      if (want("mvue"))
      for (DType t : {DType::f16, DType::bf16, DType::f32})
      for (std::int64_t T : tokens) {
        for (std::int64_t n : {4 * d, d}) {
          for (auto layout : {train::GradLayout::token_major, train::GradLayout::feature_major}) {
            if (layout == train::GradLayout::feature_major && n != 4 * d) continue;
            if (t == DType::f32 && (T != tokens.back() || n != 4 * d)) continue;
            // SPARSENM_MVUE_BIG=1: only the bar's shapes (the largest token count, n = 4d; session 6)
            if (std::getenv("SPARSENM_MVUE_BIG") && (T != tokens.back() || n != 4 * d)) continue;
            const std::size_t gb = std::size_t(T * n) * dtype_size(t), vb = std::size_t(n * train::hw24_value_cols(T)) * dtype_size(t),
                              ib = std::size_t(n * train::hw24_index_row_bytes(T));
            const double bytes = double(gb + vb + ib);
            const int slots = rotation_slots(bytes);
            Slots b(slots, {gb, vb, ib});
            for (int i = 0; i < slots; ++i) fill(b.at(i, 0), gb, 33u + unsigned(i));
            std::uint64_t seed = 1;
            auto call = [&](int i) {
              train::mvue24(t, b.at(i, 0), T, n, layout, seed++, {b.at(i, 1), static_cast<std::uint8_t*>(b.at(i, 2))});
            };
            const bool tm = layout == train::GradLayout::token_major;
            emit(tm ? "mvue24_token_major" : "mvue24_feature_major", std::string(to_string(t)), T, n, 0, "mvue24",
                 time_calls(call, slots, warmup, reps),
                 bytes, slots, tm ? "dZ [T][n] -> hw24 MVUE(dZ^T)" : "dZ^T [n][T] -> hw24 MVUE(dZ^T)");
            // same-run comparison: the other kernel variant (token-major f32 has one kernel)
            const int dflt = train::detail::mvue24_default_variant(t, tm, T, n);
            // the kept variants (variants.hpp) 1, 3, 6, 7, 10 where not the default here, and on
            // the 4d shapes the occupancy control -1 = variant 1 with one resident CTA per SM
            // fewer; 6 / 7 / 10 and 18 / 23 / 24 are 16-bit only (f32 runs 1 / 3 / 1), 10
            // feature-major only, 18 / 23 / 24 token-major only (elsewhere they run their
            // fallbacks, timed already). SPARSENM_MVUE_VARIANTS (comma list) replaces the list, e.g.
            // "18,23,24" for the token-major kernels. (The variants dropped in session 9 are in the
            // history: docs/PERF-train.md "Session 9: variants dropped".)
            std::vector<int> others{1, 3, -1, 6, 7, 10};
            if (const char* env = std::getenv("SPARSENM_MVUE_VARIANTS")) {
              others.clear();
              for (const char* p = env; *p;) {
                char* end = nullptr;
                const long v = std::strtol(p, &end, 10);
                if (end == p) break;
                others.push_back(int(v));
                p = *end == ',' ? end + 1 : end;
              }
            }
            for (int variant : others) {
              if (variant == dflt || (variant < 0 && n != 4 * d) || (t == DType::f32 && variant >= 6) ||
                  (variant == 10 && tm) || (variant >= 18 && !tm))  // 10: feature-major only; 18-24: token-major only
                continue;
              auto other = [&](int i) {
                mvue24_variant(variant, t, b.at(i, 0), T, n, layout, seed++, {b.at(i, 1), static_cast<std::uint8_t*>(b.at(i, 2))});
              };
              emit(tm ? "mvue24_token_major" : "mvue24_feature_major", std::string(to_string(t)), T, n, 0,
                   variant == 1   ? "mvue24:chunk_kernel"
                   : variant == 3 ? "mvue24:lines_kernel"
                   : variant == 6 ? "mvue24:chunk_lean_kernel"
                   : variant == 7 ? "mvue24:lines_occ_lean_kernel"
                   : variant == 10 ? "mvue24:chunk_lean_jit_occ5_kernel"
                   : variant == 18 ? "mvue24:lines_lean_jit_tm_occ4_ahead1_kernel"
                   : variant == 23 ? "mvue24:lines_lean_jit_tm_occ4_ahead1_fmacvt_tokenx_kernel"
                   : variant == 24 ? "mvue24:lines_lean_jit_tm_occ4_ahead1_tokenx_kernel"
                                  : "mvue24:chunk_kernel_minus1cta",
                   time_calls(other, slots, warmup, reps),
                   bytes, slots, std::string(tm ? "dZ [T][n] -> hw24 MVUE(dZ^T)" : "dZ^T [n][T] -> hw24 MVUE(dZ^T)") +
                                     "; opt-in non-default kernel, same run");
            }
          }
        }
      }
      // ---- access-pattern ceilings (session 6, bench/train_probe.cuh): data movers with the
      //      bytes, addresses, tile order and access widths of the shipped batched 16-bit mask
      //      search / apply and of the MVUE kernels at the bar's shapes, no compute; and the
      //      same total bytes as a 50/50 copy kernel, a read-only and a write-only pass ----
      if (want("probe") || want("probem")) {  // probem: the mask movers only (no MVUE movers)
        // same-total-bytes movers: copy (bytes / 2 each way), read-only, write-only (bytes)
        auto byte_movers = [&](const std::string& op, std::int64_t m, std::int64_t n, std::int64_t k, double bytes,
                               const std::string& what) {
          const std::int64_t n16_half = std::int64_t(bytes / 2) / 16, n16_all = 2 * n16_half;
          const int slots = rotation_slots(bytes);
          Slots b(slots, {std::size_t(n16_all) * 16, std::size_t(1) << 22});
          for (int i = 0; i < slots; ++i) fill(b.at(i, 0), std::size_t(n16_all) * 16, 71u + unsigned(i));
          const int gc = probe::full_grid(probe::copy16_kernel, 256), gr = probe::full_grid(probe::read16_kernel, 256),
                    gw = probe::full_grid(probe::write16_kernel, 256);
          if (std::size_t(gr) * 256 * 4 > (std::size_t(1) << 22)) throw InvalidArgument("probe", "read sink too small");
          auto copy = [&](int i) {
            const auto* src = static_cast<const uint4*>(b.at(i, 0));
            probe::copy16_kernel<<<gc, 256>>>(src, static_cast<uint4*>(b.at(i, 0)) + n16_half, n16_half);
          };
          emit(op, "f16", m, n, k, "mover:copy_kernel_50_50", time_calls(copy, slots, warmup, reps), bytes, slots,
               what + "; plain copy kernel, same total bytes (half read, half written)");
          auto rd = [&](int i) {
            probe::read16_kernel<<<gr, 256>>>(static_cast<const uint4*>(b.at(i, 0)), static_cast<std::uint32_t*>(b.at(i, 1)), n16_all);
          };
          emit(op, "f16", m, n, k, "mover:read_only", time_calls(rd, slots, warmup, reps), bytes, slots,
               what + "; read-only pass, same total bytes");
          auto wr = [&](int i) { probe::write16_kernel<<<gw, 256>>>(static_cast<uint4*>(b.at(i, 0)), n16_all, 5u + unsigned(i)); };
          emit(op, "f16", m, n, k, "mover:write_only", time_calls(wr, slots, warmup, reps), bytes, slots,
               what + "; write-only pass, same total bytes");
          SPARSENM_CUDA_CHECK(cudaGetLastError());
        };
        {
          const std::int64_t B = d == 1280 ? 36 : 48, R = 4 * d, C = d;
          const std::size_t wb = std::size_t(B * R * C) * 2, mb = std::size_t(B * train::mask24_words(R, C)) * 2;
          const std::size_t vb = std::size_t(B * R * train::hw24_value_cols(C)) * 2, ib = std::size_t(B * R * train::hw24_index_row_bytes(C));
          const std::size_t tvb = std::size_t(B * C * train::hw24_value_cols(R)) * 2, tib = std::size_t(B * C * train::hw24_index_row_bytes(R));
          const double bytes = double(wb + mb + vb + ib + tvb + tib);
          const int slots = rotation_slots(bytes);
          Slots b(slots, {wb, mb, vb, ib, tvb, tib});
          for (int i = 0; i < slots; ++i) {
            fill(b.at(i, 0), wb, 21u + unsigned(i));
            fill(b.at(i, 1), mb, 23u + unsigned(i));
          }
          auto args = [&](int i, bool apply) {
            train::detail::Mask24Args a;
            a.w = b.at(i, 0);
            a.rows = R, a.cols = C, a.batch = B;
            if (apply) a.mask_in = static_cast<const std::uint16_t*>(b.at(i, 1));
            else a.mask_out = static_cast<std::uint16_t*>(b.at(i, 1));
            a.w_values = b.at(i, 2), a.w_indices = static_cast<std::uint8_t*>(b.at(i, 3));
            a.wt_values = b.at(i, 4), a.wt_indices = static_cast<std::uint8_t*>(b.at(i, 5));
            a.aligned = true;
            return a;
          };
          const std::string what = "mover over all " + std::to_string(B) + " c_fc weights [" + std::to_string(R) + "][" +
                                   std::to_string(C) + "], 16-bit bytes";
          const bool wide = C % 128 == 0;  // the shipped search: variant 9 (kCW 4) where it fits, else 8
          // search stream mix, the shipped geometry at its occupancy (24 warps per SM) and uncapped
          for (int cap : {1, 0}) {
            auto call = [&](int i) {
              if (wide) probe::launch_mask_mover<4, false>(args(i, false), cap ? 3 : 0);
              else probe::launch_mask_mover<2, false>(args(i, false), cap ? 6 : 0);
            };
            emit("probe_mask24_search_batched", "f16", B, R, C,
                 std::string("mover:") + (wide ? "lean_v9_geometry" : "lean_v8_geometry") + (cap ? "_24warps" : "_uncapped"),
                 time_calls(call, slots, warmup, reps), bytes, slots, what + "; search stream mix, no compute");
          }
          if (wide) {  // variant 8's geometry (64-column strips) where the default is variant 9
            auto call = [&](int i) { probe::launch_mask_mover<2, false>(args(i, false), 6); };
            emit("probe_mask24_search_batched", "f16", B, R, C, "mover:lean_v8_geometry_24warps", time_calls(call, slots, warmup, reps),
                 bytes, slots, what + "; search stream mix, no compute");
          }
          {  // apply stream mix (mask read), lean geometry
            auto call = [&](int i) {
              if (wide) probe::launch_mask_mover<4, true>(args(i, true), 3);
              else probe::launch_mask_mover<2, true>(args(i, true), 6);
            };
            emit("probe_mask24_apply_batched", "f16", B, R, C,
                 std::string("mover:") + (wide ? "lean_v9_geometry" : "lean_v8_geometry") + "_apply_24warps",
                 time_calls(call, slots, warmup, reps), bytes, slots, what + "; apply stream mix (mask read), lean order, no compute");
          }
          {  // the alternative order: every array linear (long contiguous runs)
            const int gf = probe::full_grid(probe::flat_mask_mover_kernel, 256);
            auto call = [&](int i) {
              probe::flat_mask_mover_kernel<<<gf, 256>>>(
                  static_cast<const uint4*>(b.at(i, 0)), static_cast<uint4*>(b.at(i, 2)), static_cast<uint4*>(b.at(i, 4)),
                  static_cast<std::uint16_t*>(b.at(i, 1)), static_cast<std::uint16_t*>(b.at(i, 3)), static_cast<std::uint16_t*>(b.at(i, 5)),
                  std::int64_t(wb / 32));
            };
            emit("probe_mask24_search_batched", "f16", B, R, C, "mover:flat_linear_arrays", time_calls(call, slots, warmup, reps), bytes,
                 slots, what + "; search stream mix, every array written linearly, no compute");
          }
          // session 8: the line orders (bench/train_probe.cuh mask_line_mover_kernel), uncapped
          for (const auto& lm : line_movers()) {
            auto call = [&](int i) { lm.launch(args(i, lm.apply)); };
            emit(lm.apply ? "probe_mask24_apply_batched" : "probe_mask24_search_batched", "f16", B, R, C, std::string("mover:") + lm.label,
                 time_calls(call, slots, warmup, reps), bytes, slots,
                 what + (lm.apply ? "; apply stream mix (mask read)" : "; search stream mix") + ", line order " + lm.label +
                     ", no compute; coverage " + line_mover_coverage(lm, B > 2 ? 2 : B, R, C));
          }
          SPARSENM_CUDA_CHECK(cudaGetLastError());
          byte_movers("probe_mask24_bytes", B, R, C, bytes, what);
        }
        if (want("probe")) {
          const std::int64_t T = tokens.back(), n = 4 * d;
          const std::size_t gb = std::size_t(T * n) * 2, vb = std::size_t(n * train::hw24_value_cols(T)) * 2,
                            ib = std::size_t(n * train::hw24_index_row_bytes(T));
          const double bytes = double(gb + vb + ib);
          const int slots = rotation_slots(bytes);
          Slots b(slots, {gb, vb, ib});
          for (int i = 0; i < slots; ++i) fill(b.at(i, 0), gb, 33u + unsigned(i));
          if (T % 2048 != 0 || n % 128 != 0) throw InvalidArgument("probe", "MVUE movers need T % 2048 == 0 and n % 128 == 0");
          const unsigned fy = unsigned(std::min<std::int64_t>(n / 4, 65535));
          auto g16 = [&](int i) { return static_cast<const std::uint16_t*>(b.at(i, 0)); };
          auto o16 = [&](int i) { return static_cast<std::uint16_t*>(b.at(i, 1)); };
          auto ix = [&](int i) { return static_cast<std::uint8_t*>(b.at(i, 2)); };
          const std::string what = "mover, 16-bit bytes of T x n = " + std::to_string(T) + " x " + std::to_string(n);
          auto run = [&](const std::string& op, const std::string& label, auto kernel, dim3 grid, dim3 block, int cap,
                         const std::string& note) {
            const std::size_t smem = train::detail::occupancy_cap_smem(kernel, int(block.x * block.y), cap);
            auto call = [&](int i) { kernel<<<grid, block, smem>>>(g16(i), o16(i), ix(i), T, n); };
            emit(op, "f16", T, n, 0, label, time_calls(call, slots, warmup, reps), bytes, slots, what + "; " + note);
            SPARSENM_CUDA_CHECK(cudaGetLastError());
          };
          const dim3 fm_block(64, 4);
          run("probe_mvue24_feature_major", "mover:fm_chunk_v6_v8_geometry_32warps", probe::mvue_fm_chunk_mover,
              dim3(unsigned((T / 32 + 63) / 64), fy), fm_block, 4, "32-token chunk per thread (variants 6 / 8), 4 CTAs per SM");
          run("probe_mvue24_feature_major", "mover:fm_chunk_v6_v8_geometry_24warps", probe::mvue_fm_chunk_mover,
              dim3(unsigned((T / 32 + 63) / 64), fy), fm_block, 3, "32-token chunk per thread, 3 CTAs per SM (bf16 variant 6's 75 registers)");
          run("probe_mvue24_feature_major", "mover:fm_chunk_v6_v8_geometry_uncapped", probe::mvue_fm_chunk_mover,
              dim3(unsigned((T / 32 + 63) / 64), fy), fm_block, 0, "32-token chunk per thread, no occupancy cap");
          run("probe_mvue24_feature_major", "mover:fm_lines_v7_geometry_32warps", probe::mvue_fm_lines_mover,
              dim3(unsigned((T / 16 + 127) / 128), fy), fm_block, 4, "two 16-token units per lane (variant 7), 4 CTAs per SM");
          run("probe_mvue24_token_major", "mover:tm_tile_v1_geometry_24warps", probe::mvue_tm_tile_mover,
              dim3(unsigned(n / 128), unsigned(T / 128)), dim3(256), 3, "128 x 128 tiles (variant 1, bf16 default), 3 CTAs per SM");
          run("probe_mvue24_token_major", "mover:tm_tile_v1_geometry_uncapped", probe::mvue_tm_tile_mover,
              dim3(unsigned(n / 128), unsigned(T / 128)), dim3(256), 0, "128 x 128 tiles (variant 1), no occupancy cap");
          run("probe_mvue24_token_major", "mover:tm_lines_v5_geometry_32warps", probe::mvue_tm_lines_mover,
              dim3(unsigned(n / 64), unsigned(T / 256)), dim3(256), 4, "256 x 64 tiles (variant 5, f16 default), 4 CTAs per SM");
          byte_movers("probe_mvue24_bytes", T, n, 0, bytes, what);
        }
      }
      // ---- masked decay (f32 master grads, and f16) on c_fc W [4d][d] ----
      if (want("decay"))
      for (DType t : {DType::f32, DType::f16}) {
        const std::int64_t R = 4 * d, C = d;
        const std::size_t wb = std::size_t(R * C) * dtype_size(t), mb = std::size_t(train::mask24_words(R, C)) * 2;
        const double bytes = double(3 * wb + mb);
        const int slots = rotation_slots(bytes);
        Slots b(slots, {wb, wb, mb});
        for (int i = 0; i < slots; ++i) {
          fill(b.at(i, 0), wb, 5u + unsigned(i));
          fill(b.at(i, 1), wb, 55u + unsigned(i));
          fill(b.at(i, 2), mb, 555u + unsigned(i));
        }
        auto call = [&](int i) {
          train::masked_decay(t, b.at(i, 0), b.at(i, 1), static_cast<const std::uint16_t*>(b.at(i, 2)), R, C, 1e-30f);
        };
        emit("masked_decay", std::string(to_string(t)), 0, R, C, "masked_decay", time_calls(call, slots, warmup, reps), bytes, slots,
             "grad r/w + w + mask");
      }
      // ---- masked decay over every c_fc weight of the model in one call (stacked rows) ----
      if (want("decay"))
      for (DType t : {DType::f32, DType::f16}) {
        const std::int64_t layers = d == 1280 ? 36 : 48;
        const std::int64_t R = layers * 4 * d, C = d;
        const std::size_t wb = std::size_t(R * C) * dtype_size(t), mb = std::size_t(train::mask24_words(R, C)) * 2;
        const double bytes = double(3 * wb + mb);
        const int slots = rotation_slots(bytes);
        Slots b(slots, {wb, wb, mb});
        for (int i = 0; i < slots; ++i) {
          fill(b.at(i, 0), wb, 6u + unsigned(i));
          fill(b.at(i, 1), wb, 66u + unsigned(i));
          fill(b.at(i, 2), mb, 666u + unsigned(i));
        }
        auto call = [&](int i) {
          train::masked_decay(t, b.at(i, 0), b.at(i, 1), static_cast<const std::uint16_t*>(b.at(i, 2)), R, C, 1e-30f);
        };
        emit("masked_decay_all_layers", std::string(to_string(t)), layers, R, C, "masked_decay",
             time_calls(call, slots, warmup, reps), bytes, slots,
             "all " + std::to_string(layers) + " c_fc weights stacked, one call; grad r/w + w + mask");
      }
      // ---- flip count: one layer's c_fc mask, and all FFN masks of the model in one buffer ----
      if (want("flip")) {
        const std::int64_t layers = d == 1280 ? 36 : 48;
        for (Shape m : {Shape{4 * d, d}, Shape{2 * layers * 4 * d, d}}) {
          const std::size_t mb = std::size_t(train::mask24_words(m.rows, m.cols)) * 2;
          const double bytes = double(2 * mb);
          const int slots = rotation_slots(bytes);
          Slots b(slots, {mb, mb, 8});
          for (int i = 0; i < slots; ++i) {
            fill(b.at(i, 0), mb, 7u + unsigned(i));
            fill(b.at(i, 1), mb, 77u + unsigned(i));
          }
          auto call = [&](int i) {
            train::flip_count(static_cast<const std::uint16_t*>(b.at(i, 0)), static_cast<const std::uint16_t*>(b.at(i, 1)),
                              m.rows, m.cols, static_cast<unsigned long long*>(b.at(i, 2)));
          };
          emit("flip_count", "u16", 0, m.rows, m.cols, "flip_count", time_calls(call, slots, warmup, reps), bytes, slots,
               m.rows == 4 * d ? "one layer's c_fc mask" : "all FFN masks of the model in one buffer");
        }
      }
      // ---- GEGLU / SwiGLU: Z [T][2h], h = 4d; row-major and column-major (Z^T) ----
      if (want("glu"))
      for (std::int64_t T : tokens) {
        const std::int64_t h = 4 * d;
        for (bool colmajor : {false, true}) {
          for (auto gate : {train::Gate::geglu, train::Gate::swiglu}) {
            if (gate == train::Gate::swiglu && colmajor) continue;
            const DType t = dt16;
            const std::int64_t rows = colmajor ? h : T, cols = colmajor ? T : h, ld_in = colmajor ? T : 2 * h,
                               off = colmajor ? h * T : h;
            const std::size_t zb = std::size_t(2 * T * h) * dtype_size(t), ob = std::size_t(T * h) * dtype_size(t);
            const std::string gname = gate == train::Gate::geglu ? "geglu" : "swiglu";
            const std::string lay = colmajor ? "column-major Z (Z^T [2h][T])" : "row-major Z [T][2h]";
            {
              const double bytes = double(zb + ob);
              const int slots = rotation_slots(bytes);
              Slots b(slots, {zb, ob});
              for (int i = 0; i < slots; ++i) fill(b.at(i, 0), zb, 9u + unsigned(i));
              auto call = [&](int i) { train::glu_forward(gate, t, b.at(i, 0), rows, cols, ld_in, off, b.at(i, 1), cols); };
              emit(gname + "_fwd", "f16", T, h, 0, gname + "_forward", time_calls(call, slots, warmup, reps), bytes, slots, lay);
            }
            {
              const double bytes = double(2 * zb + ob);
              const int slots = rotation_slots(bytes);
              Slots b(slots, {zb, ob, zb});
              for (int i = 0; i < slots; ++i) {
                fill(b.at(i, 0), zb, 19u + unsigned(i));
                fill(b.at(i, 1), ob, 29u + unsigned(i));
              }
              auto call = [&](int i) {
                train::glu_backward(gate, t, b.at(i, 0), rows, cols, ld_in, off, b.at(i, 1), cols, b.at(i, 2));
              };
              emit(gname + "_bwd", "f16", T, h, 0, gname + "_backward", time_calls(call, slots, warmup, reps), bytes, slots, lay);
            }
          }
        }
      }
    }
  };
  return s;
}

}  // namespace sparsenm::bench
