// sparsenm — the kernel variant numbers the training launchers accept (Mask24Args::variant,
// Mvue24Args::variant; train_common.cuh). Host-only, no CUDA: the CPU tests check it too.
//
// Session 9 dropped the variants that measured slower than the default in the same device run
// and that no automatic choice selects (docs/PERF-train.md "Session 9: variants dropped"). The
// numbers of the kept variants stay as they were (docs and the JSONL history cite them); a
// dropped or unknown number is refused with InvalidArgument("variant", ...).
#pragma once
#include <algorithm>
#include <iterator>
#include <string>

#include "sparsenm/error.hpp"

namespace sparsenm::train::detail {

/// Mask search / apply: 0 = the default (mask24_default_variant), 1 = session-2 kernel, 2 =
/// session-3 kernel, 3 = its persistent prefetching form, 4 = whole-sector stores over 256 x 256
/// footprints, 8 = the lean staged 16-bit search, 9 = 8 over 128-column strips.
inline constexpr int kMask24Variants[] = {0, 1, 2, 3, 4, 8, 9};
/// MVUE: 0 = the default (mvue24_default_variant), 1 = one chunk / tile per thread / CTA, 3 =
/// whole-line stores, 6 / 7 = 1 / (3 under a 4-CTA register cap) with the ALU-lean 16-bit fast
/// path, 10 = the register-lean feature-major chunk kernel at 5 CTAs per SM, 18 = the token-major
/// kernel with short live ranges on 256 x 64 tiles, 23 / 24 = 18 with the token tiles along
/// blockIdx.x (23: bf16 conversions on the FMA pipe).
inline constexpr int kMvue24Variants[] = {0, 1, 3, 6, 7, 10, 18, 23, 24};

namespace variant_check {
template <std::size_t N>
std::string set_text(const int (&set)[N]) {
  std::string s = "{";
  for (std::size_t i = 0; i < N; ++i) s += (i ? ", " : "") + std::to_string(set[i]);
  return s + "}";
}
template <std::size_t N>
void require(const char* what, const int (&set)[N], int variant) {
  if (std::find(std::begin(set), std::end(set), variant) != std::end(set)) return;
  throw InvalidArgument("variant", std::string(what) + " must be one of " + set_text(set) +
                                       " (other numbers were dropped in session 9 or never existed; got " +
                                       std::to_string(variant) + ")");
}
}  // namespace variant_check

/// Throws InvalidArgument("variant", ...) unless `variant` is a kept mask kernel variant.
inline void check_mask24_variant(int variant) { variant_check::require("Mask24Args::variant", kMask24Variants, variant); }
/// Throws InvalidArgument("variant", ...) unless `variant` is a kept MVUE kernel variant.
inline void check_mvue24_variant(int variant) { variant_check::require("Mvue24Args::variant", kMvue24Variants, variant); }

}  // namespace sparsenm::train::detail
