// sparsenm — canonical condensed weights (format.hpp) -> the 2:4 operand of the sparse tensor
// cores (layout.hpp). Host-only, plain C++ (used by the CUDA plan code and the CPU tests).
#pragma once
#include <string>

#include "cuda/sptc/layout.hpp"
#include "sparsenm/format.hpp"

namespace sparsenm::sptc {

/// Empty when `w` can run on the sparse tensor cores as hardware 2:4: f16/bf16 values and a
/// hw24 or element pattern whose every aligned group of 4 columns holds at most 2 stored
/// nonzero values (stored zeros are dropped). Else the reason.
std::string hw24_unsupported(const CondensedMatrix& w);

/// Repacks `w` (see hw24_unsupported) into the tensor-core layout with rows padded to
/// `row_align`. Throws InvalidArgument when unsupported.
Packed24 pack_hw24(const CondensedMatrix& w, int row_align);

}  // namespace sparsenm::sptc
