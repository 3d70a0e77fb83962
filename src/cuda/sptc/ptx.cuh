// sparsenm — thin PTX wrappers for the sparse tensor-core kernels: mbarriers, TMA, bulk copies,
// cp.async, wgmma fences and shared-memory matrix descriptors.
#pragma once
#include <cuda.h>
#include <cstdint>

namespace sparsenm::cuda::sptc {

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier (sm_90) ----
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

// ---- TMA and bulk copies (sm_90) ----
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          smem_u32(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
/// 1-D bulk copy global -> shared; bytes % 16 == 0, both addresses 16-byte aligned.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, std::uint32_t bytes, std::uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}

// ---- thread-block clusters (sm_90) ----
__device__ __forceinline__ std::uint32_t cluster_ctarank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
/// All threads of all CTAs of the cluster (release / acquire at cluster scope).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
/// Arrive on the mbarrier at the same shared-memory offset in CTA `rank` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(std::uint64_t* bar, std::uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_u32(bar)),
      "r"(rank)
      : "memory");
}
/// TMA 2-D load written to the same offset in every CTA of `mask`, completing on each one's
/// mbarrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1,
                                                      std::uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}

// ---- cp.async (sm_80) ----
/// 16-byte copy; src_bytes < 16 zero-fills the rest (0: pure zero fill, src is not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes) : "memory");
}
/// The same with the destination as a shared-memory address (no generic -> shared conversion per copy).
__device__ __forceinline__ void cp_async16_s(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
/// 8-byte copy (cache at all levels); src_bytes 0 zero-fills.
__device__ __forceinline__ void cp_async8(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
/// Arrive on `bar` when all prior cp.async of this thread complete (does not count as a pending arrival).
__device__ __forceinline__ void cp_async_mbar_arrive(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// ---- wgmma (sm_90a) ----
__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}
/// Keeps the sparsity-metadata register `v` of a wgmma.mma_async.sp alive, unmodified, up to this
/// point. The tensor core reads that register asynchronously (a kernel that reloaded it while the
/// wgmma was still in flight computed wrong products, docs/PERF-sptc.md, run at 0442059), but
/// ptxas treats it as consumed at issue and may reuse the physical register right after. Place this
/// after the wgmma.wait_group that retires the wgmma reading `v`: a predicated store that never
/// executes (`never` < 0 never holds: pass a kernel argument known to be >= 0, e.g. the k-block
/// count) is an instruction ptxas cannot drop, so `v` stays in its register until here. (An empty
/// asm is not enough: it emits no PTX, and the compiler may hand the wgmma a copy.)
__device__ __forceinline__ void hold_sp_meta(std::uint32_t v, int never, const void* smem_word) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.lt.s32 p, %1, 0;\n@p st.shared.b32 [%2], %0;\n}" ::"r"(v), "r"(never),
      "r"(static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_word))));
#else
  (void)v; (void)never; (void)smem_word;
#endif
}

/// The consumer k-loop of the sparse wgmma kernels with one wgmma group in flight (commit, then
/// wait_group 1), unrolled by 2 so that consecutive stages read their metadata from two different
/// variables: stage(i, mw) waits for stage i, loads the metadata word into mw, issues its wgmma.sp
/// reading mw, commits and waits until stage i-1 retired; after(i) then releases what stage i-1
/// used. Each variable is held (hold_sp_meta) after the wait that retires the wgmma reading it, so
/// it is never rewritten while that wgmma is in flight. Ends with wait_group 0. Verify the SASS
/// with scripts/sass-meta-check.
template <class Stage, class After>
__device__ __forceinline__ void sp_mainloop(int count, int never, const void* hold_word, const Stage& stage,
                                            const After& after) {
  std::uint32_t m0 = 0, m1 = 0;
  int i = 0;
  for (; i + 1 < count; i += 2) {
    stage(i, m0);  // its wait_group 1 retired stage i-1, which read m1
    hold_sp_meta(m1, never, hold_word);
    after(i);
    stage(i + 1, m1);  // retired stage i (m0)
    hold_sp_meta(m0, never, hold_word);
    after(i + 1);
  }
  if (i < count) {
    stage(i, m0);
    hold_sp_meta(m1, never, hold_word);
    after(i);
  }
  wgmma_wait<0>();
  hold_sp_meta(m0, never, hold_word);
  hold_sp_meta(m1, never, hold_word);
}

/// sp_mainloop with the metadata word from global memory (load(i) returns k-block i's word; it
/// must accept i == count and return any valid word there): stage(i, mw) must not assign mw. Each
/// variable is loaded directly (no register-to-register rotation, which let ptxas copy a held value
/// and reuse its register in flight) right after the wait that retired the wgmma reading its old
/// value, i.e. one stage ahead; the other variable is held across that load so the new word cannot
/// land in the register an in-flight wgmma reads. Verify with scripts/sass-meta-check.
template <class Load, class Stage, class After>
__device__ __forceinline__ void sp_mainloop_gmeta(int count, int never, const void* hold_word, const Load& load,
                                                  const Stage& stage, const After& after) {
  std::uint32_t m0 = load(0), m1 = 0;
  int i = 0;
  for (; i + 1 < count; i += 2) {
    stage(i, m0);  // retired stage i-1 (m1)
    hold_sp_meta(m1, never, hold_word);
    m1 = load(i + 1);
    after(i);
    stage(i + 1, m1);  // retired stage i (m0)
    hold_sp_meta(m0, never, hold_word);
    m0 = load(i + 2);
    after(i + 1);
  }
  if (i < count) {
    stage(i, m0);
    hold_sp_meta(m1, never, hold_word);
    after(i);
  }
  wgmma_wait<0>();
  hold_sp_meta(m0, never, hold_word);
  hold_sp_meta(m1, never, hold_word);
}

/// sp_mainloop_gmeta when G, else sp_mainloop (load unused).
template <bool G, class Load, class Stage, class After>
__device__ __forceinline__ void sp_mainloop_sel(int count, int never, const void* hold_word, const Load& load,
                                                const Stage& stage, const After& after) {
  if constexpr (G)
    sp_mainloop_gmeta(count, never, hold_word, load, stage, after);
  else
    sp_mainloop(count, never, hold_word, stage, after);
}

/// Keeps the compiler from moving accumulator reads/writes across wgmma issue/wait.
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
#endif
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
#endif
}

/// Shared-memory matrix descriptor (wgmma): start address, leading / stride byte offsets,
/// swizzle mode (1 = 128B, 2 = 64B, 3 = 32B, 0 = none). The base offset stays 0: every tile
/// starts on its swizzle pattern's alignment (k steps inside an atom only move the start).
__device__ __forceinline__ std::uint64_t smem_desc(const void* p, std::uint32_t lbo, std::uint32_t sbo, int swizzle) {
  std::uint64_t d = 0;
  d |= std::uint64_t((smem_u32(p) & 0x3FFFFu) >> 4);
  d |= std::uint64_t((lbo & 0x3FFFFu) >> 4) << 16;
  d |= std::uint64_t((sbo & 0x3FFFFu) >> 4) << 32;
  d |= std::uint64_t(swizzle & 3) << 62;
  return d;
}

}  // namespace sparsenm::cuda::sptc
