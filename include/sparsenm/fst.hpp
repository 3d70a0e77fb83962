// sparsenm — the FST (fully sparse training) linear layer, seed 003 eqs. 2-4 and §4 (docs/FST.md).
//
// PyTorch conventions: W [out][in], X [tokens][in], Z [tokens][out], all row-major (ld = cols),
// device pointers, one dtype (f16 or bf16) for W, b, X, Z and every gradient.
//   forward    Z  = X . S(W)^T + b            sparse tensor cores, S(W) 2:4 along `in`
//   backward   dX = dZ . S(W)                  sparse tensor cores, S(W)^T 2:4 along `out`
//              dW = MVUE(dZ^T) . X             sparse tensor cores, MVUE(dZ^T) 2:4 along tokens
//              db = column sums of dZ          dense
// S is the transposable 2:4 mask of the dense master weight W (STE: dW goes to the dense W),
// searched every `mask_interval` optimizer steps, applied to the current W at every step.
// Masked decay (seed 003 eq. 10): dW += lambda * (!mask . W). The last `dense_fraction` of the
// steps run dense (cuBLAS) without masks (dense fine-tune, seed 003 §4.4). Each sparse GEMM runs
// on our sparse tensor-core kernels or on cuSPARSELt, per GEMM (FstConfig::backends, backends()).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "sparsenm/dtype.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm::train {

enum class FstPhase { sparse, dense };
inline const char* to_string(FstPhase p) noexcept { return p == FstPhase::sparse ? "sparse" : "dense"; }

/// The step schedule of the layer (pure host logic): optimizer step t (0-based) runs sparse
/// while t < dense_from(), dense from then on; a sparse step t refreshes the mask (transposable
/// search) when t % mask_interval == 0 or when no mask exists yet (first sparse step, resume).
struct FstSchedule {
  std::int64_t mask_interval = 40;   ///< l >= 1
  std::int64_t total_steps = 0;      ///< 0: never switch to dense
  double dense_fraction = 1.0 / 6.0; ///< in [0, 1]: the last round(total * fraction) steps are dense

  /// Throws InvalidArgument naming the field and the rule.
  void validate() const {
    if (mask_interval < 1) throw InvalidArgument("mask_interval", "must be >= 1 (got " + std::to_string(mask_interval) + ")");
    if (total_steps < 0) throw InvalidArgument("total_steps", "must be >= 0 (0 = never dense) (got " + std::to_string(total_steps) + ")");
    if (!(dense_fraction >= 0.0 && dense_fraction <= 1.0))
      throw InvalidArgument("dense_fraction", "must be in [0, 1] (got " + std::to_string(dense_fraction) + ")");
  }
  /// First dense step: total - round(total * fraction); int64 max when total_steps == 0.
  std::int64_t dense_from() const noexcept {
    if (total_steps == 0) return std::numeric_limits<std::int64_t>::max();
    const auto dense = static_cast<std::int64_t>(std::llround(double(total_steps) * dense_fraction));
    return total_steps - (dense > total_steps ? total_steps : dense);
  }
  FstPhase phase(std::int64_t step) const noexcept { return step < dense_from() ? FstPhase::sparse : FstPhase::dense; }
  /// Whether sparse step `step` searches a new mask (has_mask: a mask exists from earlier steps).
  bool refreshes_mask(std::int64_t step, bool has_mask) const noexcept {
    return phase(step) == FstPhase::sparse && (!has_mask || step % mask_interval == 0);
  }
};

/// Which kernels run one of the layer's three 2:4 GEMMs in the sparse phase (docs/FST.md "GEMM
/// backends"): our sparse tensor-core kernels (src/cuda/sptc) or cuSPARSELt (when the build found
/// it and the library loads). cuSPARSELt's compressed format is opaque, so a cuSPARSELt GEMM also
/// pays, per step, a dense write of its sparse operand (S(W) = W . mask once per step for both
/// weight GEMMs; MVUE(dZ^T) per backward) and cusparseLtSpMMACompress of it.
enum class FstBackend {
  automatic,   ///< decided once at construction: timed on the device with the layer's shapes
  sptc,        ///< our kernels (the only backend without cuSPARSELt)
  cusparselt,  ///< cuSPARSELt: needs in, out, max_tokens multiples of 16; throws if impossible
};
inline const char* to_string(FstBackend b) noexcept {
  return b == FstBackend::automatic ? "automatic" : b == FstBackend::sptc ? "sptc" : "cusparselt";
}

/// Per-GEMM backend request (FstConfig::backends).
struct FstBackends {
  FstBackend forward = FstBackend::automatic;      ///< Z = X . S(W)^T
  FstBackend grad_input = FstBackend::automatic;   ///< dX = dZ . S(W)
  FstBackend grad_weight = FstBackend::automatic;  ///< dW = MVUE(dZ^T) . X
};

/// What the layer uses for one GEMM, decided at construction (FstLinear::backends()). A
/// cuSPARSELt GEMM is planned for tokens == max_tokens: calls with fewer tokens, or with operands
/// that are not 16-byte aligned, run on our kernels (same results up to fp32 summation order).
struct FstGemmChoice {
  FstBackend backend = FstBackend::sptc;  ///< sptc or cusparselt (never automatic)
  std::string reason;                     ///< forced, why cuSPARSELt is out, or the timing that decided
  /// Timed per-step cost with this GEMM on each backend (automatic choice with both possible; NaN
  /// otherwise), everything the step pays for it included: weight GEMMs: S(W) preparation + forward
  /// + dX GEMMs, the other weight GEMM at its chosen backend; dW: MVUE + packing or dense write +
  /// compress + GEMM. Milliseconds at tokens = max_tokens.
  double sptc_ms = std::numeric_limits<double>::quiet_NaN();
  double cusparselt_ms = std::numeric_limits<double>::quiet_NaN();
};
struct FstBackendReport {
  FstGemmChoice forward, grad_input, grad_weight;
  /// One line per GEMM: "forward: cusparselt (reason)".
  std::string to_string() const {
    return "forward: " + std::string(sparsenm::train::to_string(forward.backend)) + " (" + forward.reason + ")\n" +
           "grad_input: " + sparsenm::train::to_string(grad_input.backend) + " (" + grad_input.reason + ")\n" +
           "grad_weight: " + sparsenm::train::to_string(grad_weight.backend) + " (" + grad_weight.reason + ")";
  }
};

struct FstConfig {
  std::int64_t in_features = 0, out_features = 0;  ///< >= 1 each, < 2^31
  std::int64_t max_tokens = 0;                     ///< largest `tokens` of forward/backward (buffers)
  DType dtype = DType::f16;                        ///< f16 or bf16
  bool bias = true;
  float decay = 0.f;                               ///< masked decay lambda (0: off)
  std::uint64_t seed = 0;                          ///< MVUE seeds derive from it (mvue_seed())
  FstSchedule schedule;
  FstBackends backends;                            ///< per-GEMM backend (default: timed at construction)
};

/// What begin_step() did.
struct FstStepInfo {
  std::int64_t step = 0;
  FstPhase phase = FstPhase::sparse;
  bool mask_refreshed = false;  ///< a transposable mask search ran at this step
  bool flip_counted = false;    ///< ... and a flip count against the previous mask was enqueued
};

/// Device views of the layer's internal operands, for tests and inspection. Packed operands are
/// in the sparse tensor-core layout of src/cuda/sptc/layout.hpp (values [rows_pad][k_pad / 2] of
/// the dtype, metadata [k_pad / 64][rows_pad / 64][128] uint32).
struct FstPackedView {
  const void* values = nullptr;
  const std::uint32_t* meta = nullptr;
  std::int64_t rows = 0, rows_pad = 0, k = 0, k_pad = 0;
};
/// A dense row-major 16-bit matrix on the device (the operands cuSPARSELt compresses).
struct FstDenseView {
  const void* values = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0;
};
struct FstDebugView {
  const std::uint16_t* mask = nullptr;  ///< current transposable mask of W [out][in] (train.hpp layout)
  /// Packed operands of our kernels; values == nullptr when not current (S(W): both weight GEMMs
  /// ran on cuSPARSELt this step; MVUE: the last sparse backward's dW ran on cuSPARSELt).
  FstPackedView w;                      ///< S(W): rows = out, k = in
  FstPackedView wt;                     ///< S(W)^T: rows = in, k = out
  FstPackedView grad;                   ///< MVUE(dZ^T) of the last sparse backward: rows = out, k = tokens
  /// Dense operands compressed for cuSPARSELt; values == nullptr when not current.
  FstDenseView w_dense;                 ///< S(W) [out][in] of this step (a weight GEMM on cuSPARSELt)
  FstDenseView grad_dense;              ///< MVUE(dZ^T) [out][tokens] of the last backward (dW on cuSPARSELt)
};

/// The FST linear layer. Owns W, b, dW, db and every workspace on the current device. Usage per
/// optimizer step: begin_step(); forward(...); backward(...); <optimizer updates weight() in
/// place from weight_grad()>; end_step(). forward/backward may run several times per step
/// (micro-batches); backward overwrites dW and db (accumulate outside if needed). All calls
/// enqueue on `stream` (nullptr = legacy default stream) and do not synchronise, except
/// last_flip_* (which wait for the flip count).
class FstLinear {
 public:
  explicit FstLinear(const FstConfig& config);
  ~FstLinear();
  FstLinear(FstLinear&&) noexcept;
  FstLinear& operator=(FstLinear&&) noexcept;
  FstLinear(const FstLinear&) = delete;
  FstLinear& operator=(const FstLinear&) = delete;

  const FstConfig& config() const noexcept;
  void* weight() noexcept;             ///< [out][in] dense master weight (uninitialised until you write it)
  void* bias() noexcept;               ///< [out] or nullptr without bias
  void* weight_grad() noexcept;        ///< [out][in], written by backward
  void* bias_grad() noexcept;          ///< [out] or nullptr without bias

  std::int64_t step() const noexcept;  ///< current optimizer step (0-based)
  FstPhase phase() const noexcept;     ///< phase of the current step
  /// Jumps to optimizer step `step` (resume); the next sparse begin_step searches a mask.
  void set_step(std::int64_t step);

  /// Starts the current optimizer step: sparse phase: refresh the mask if due (search, flip count
  /// against the previous mask) else apply the current mask to W; compress S(W) and S(W)^T into
  /// the tensor-core layout. Dense phase: nothing. Must precede forward/backward of the step.
  FstStepInfo begin_step(void* stream = nullptr);
  /// Z [tokens][out] = X . S(W)^T (+ b). 1 <= tokens <= max_tokens.
  void forward(const void* x, std::int64_t tokens, void* z, void* stream = nullptr);
  /// dX (may be null: not computed), dW, db from X and dZ [tokens][out]. Masked decay is added
  /// to dW in the sparse phase when decay != 0. The MVUE seed of this call is mvue_seed().
  void backward(const void* x, const void* dz, std::int64_t tokens, void* dx, void* stream = nullptr);
  /// Ends the optimizer step (call after the optimizer updated W): step() + 1.
  void end_step();

  /// Seed the next sparse backward uses (derived from config.seed and a per-layer call counter).
  std::uint64_t mvue_seed() const noexcept;
  /// Flip count / rate of the latest refresh that had a previous mask (waits for the device);
  /// -1 / NaN when no such refresh happened yet.
  std::int64_t last_flip_count();
  double last_flip_rate();

  FstDebugView debug_view() const noexcept;
  /// Which backend each sparse GEMM uses, and why (decided at construction).
  const FstBackendReport& backends() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsenm::train
