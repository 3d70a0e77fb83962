// sparsenm — host entry of the register-A 2:4 kernel (wgmma_ra.cuh): operand checks and the
// input-type dispatch (the instantiations live in wgmma_ra_f16.cu / wgmma_ra_bf16.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common.cuh"
#include "cuda/sptc/sptc.hpp"

namespace sparsenm::cuda::sptc {

template <class In>
void run_ra_in(const DeviceRa& a, RaTile tile, const Problem& p, cudaStream_t stream, RaOpts opts);

const char* to_string(RaTile t) noexcept {
  switch (t) {
    case RaTile::r128n256: return "ra128x256";
    case RaTile::r192n192: return "ra192x192";
    case RaTile::r256n128: return "ra256x128";
  }
  return "?";
}
int ra_tile_rows(RaTile t) noexcept { return t == RaTile::r128n256 ? 128 : t == RaTile::r192n192 ? 192 : 256; }
static int ra_tile_cols(RaTile t) { return t == RaTile::r128n256 ? 256 : t == RaTile::r192n192 ? 192 : 128; }

int ra_kblock_multiple(RaTile t, RaOpts o) noexcept { return o.batched ? 2 * ra_fence_batch(t) : 1; }

void run_sptc24_wgmma_ra(const DeviceRa& a, RaTile tile, const Problem& p, cudaStream_t stream, RaOpts opts) {
  if (p.ldx % 8 != 0 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0)
    throw InvalidArgument("x", "the wgmma kernel needs 16-byte aligned rows (ldx % 8 == 0, 16-byte aligned pointer)");
  if (a.frags == nullptr || a.meta == nullptr || reinterpret_cast<std::uintptr_t>(a.frags) % 16 != 0)
    throw InvalidArgument("packed W", "the register-A fragments and metadata must be set, fragments 16-byte aligned");
  if (a.rows_pad % ra_tile_rows(tile) != 0 || a.rows_pad < a.rows)
    throw InvalidArgument("packed W", "rows_pad must be >= rows and a multiple of the tile rows");
  if (a.k_pad % 64 != 0 || a.k_pad < p.k) throw InvalidArgument("packed W", "k_pad must be >= k and a multiple of 64");
  if (a.k_pad % (64 * ra_kblock_multiple(tile, opts)) != 0)
    throw InvalidArgument("packed W", "the batched form needs k_pad to be a multiple of 64 * ra_kblock_multiple() (pack_ra)");
  if (p.x_trans || p.y_trans) throw InvalidArgument("x_trans / y_trans", "not supported by the register-A kernel");
  if (p.n != a.rows) throw InvalidArgument("n", "must equal the packed weight's rows");
  if (p.m < 1) return;
  if (int(tile) < 0 || int(tile) > 2) throw InvalidArgument("tile", "unknown register-A tile");
  const int bn = ra_tile_cols(tile);
  if (std::int64_t((p.m + bn - 1) / bn) * (a.rows_pad / ra_tile_rows(tile)) > 0x7fffffff)
    throw InvalidArgument("m", "too many tiles for one grid");
  if (p.in == DType::f16)
    run_ra_in<__half>(a, tile, p, stream, opts);
  else if (p.in == DType::bf16)
    run_ra_in<__nv_bfloat16>(a, tile, p, stream, opts);
  else
    throw InvalidArgument("x dtype", "the sparse tensor cores take f16 or bf16");
}

}  // namespace sparsenm::cuda::sptc
