// sparsenm — cuda:vnm_gemv variants 20 / 21 / 23 (kernel10.cuh): the launch entry points, defined in
// launch10_impl.cuh and instantiated per (dtype, n8 tiles) in inst10_*.cu (so the other
// instantiation files do not compile this kernel). Used by launch.cuh.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/vnm_small/layout.hpp"
#include "cuda/vnm_small/traits.cuh"

namespace sparsenm::cuda::vnm_small {

/// X -> Xt, then the kernel (PDL; variant 20 with splits: clusters; 21: reduce kernel); 23: the kernel alone.
template <class T, int NT>
void launch_vlean(const Params& p, const sparsenm::vnm_small::Geometry& g, std::int64_t groups, cudaStream_t stream);
/// Lifts the variant's two kernel instances' dynamic shared-memory limit to `bound`; their smaller occupancy.
template <class T, int NT>
int prepare_vlean(int variant, int threads, std::size_t smem_bytes, std::size_t bound);
/// Variants 20 / 23 with g.splits > 1: clusters of g.splits blocks resident at once.
template <class T, int NT>
int vlean_max_clusters(const sparsenm::vnm_small::Geometry& g);

}  // namespace sparsenm::cuda::vnm_small
