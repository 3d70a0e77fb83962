// sparsenm — the element-wise training kernels: masked decay (seed 003 eq. 10), flip count
// (Definition 4.1) and the gated activations GEGLU / SwiGLU (§5.2), forward and backward.
//
// All are pure streaming kernels: each thread owns 8 consecutive elements of one row and moves
// them with 16-byte loads/stores (two for f32), grid-stride over (row, 8-column chunk); a warp
// touches 512 contiguous bytes (f16) per access. Every input is read once, every output
// written once (.cs streaming hints). Unaligned shapes or tail chunks take a guarded scalar path.
// Bytes per element (f16):
//   masked decay   grad r/w 2+2, w 2, mask 1/8  -> 6.125 B   (f32: 12.125 B)
//   flip count     2 masks: 2 * 2 B per 16 elements (0.25 B), one 8-byte atomic per CTA
//   GLU forward    a, b read, out written       -> 6 B per output element
//   GLU backward   a, b, dout read, da, db written -> 10 B per output element
// Floor = bytes / copy bandwidth; the math (tanhf / expf, ~20-40 instructions per element in
// the GLUs) stays below the issue budget at these byte rates on H100/H200.
#pragma once
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/train/train_common.cuh"

namespace sparsenm::train::detail {

constexpr int kEwThreads = 256;

inline unsigned ew_blocks(std::int64_t work) {
  const std::int64_t b = (work + kEwThreads - 1) / kEwThreads;
  return unsigned(b < 132 * 16 ? (b < 1 ? 1 : b) : 132 * 16);
}

template <class T>
__global__ void __launch_bounds__(kEwThreads) masked_decay_kernel(DecayArgs args) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  const std::int64_t rows = args.rows, cols = args.cols, chunks = (cols + 7) / 8, bcols = (cols + 3) / 4;
  Raw* __restrict__ grad = static_cast<Raw*>(args.grad);
  const Raw* __restrict__ w = static_cast<const Raw*>(args.w);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows * chunks;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / chunks, c0 = (i % chunks) * 8, bc = c0 / 4;
    const std::uint16_t* mrow = args.mask + (r / 4) * bcols;
    const unsigned sh = 4 * unsigned(r % 4);
    const unsigned keep = ((unsigned(mrow[bc]) >> sh) & 0xfu) | (bc + 1 < bcols ? ((unsigned(mrow[bc + 1]) >> sh) & 0xfu) << 4 : 0u);
    const bool fast = args.aligned && c0 + 8 <= cols;
    Raw g[8], x[8];
    if (fast) {
      load_vec<Raw, 8>(grad + r * cols + c0, g);
      load_vec<Raw, 8>(w + r * cols + c0, x);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        g[j] = c0 + j < cols ? grad[r * cols + c0 + j] : Raw(0);
        x[j] = c0 + j < cols ? w[r * cols + c0 + j] : Raw(0);
      }
    }
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (!((keep >> j) & 1u)) g[j] = E::from_float(__fmaf_rn(args.lambda, E::to_float(x[j]), E::to_float(g[j])));
    if (fast) {
      store_vec<Raw, 8>(grad + r * cols + c0, g);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (c0 + j < cols) grad[r * cols + c0 + j] = g[j];
    }
  }
}

struct GeluTanh {
  static __device__ __forceinline__ void eval(float x, float& y, float& dy) {
    const float k0 = 0.7978845608028654f, k1 = 0.044715f;
    const float x2 = x * x;
    const float t = tanhf(k0 * x * (1.f + k1 * x2));
    y = 0.5f * x * (1.f + t);
    dy = 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * k0 * (1.f + 3.f * k1 * x2);
  }
};
struct Silu {
  static __device__ __forceinline__ void eval(float x, float& y, float& dy) {
    const float s = 1.f / (1.f + expf(-x));
    y = x * s;
    dy = s * (1.f + x * (1.f - s));
  }
};

template <class T, class Act, bool kBackward>
__global__ void __launch_bounds__(kEwThreads) glu_kernel(GluArgs args) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  const std::int64_t rows = args.rows, cols = args.cols, chunks = (cols + 7) / 8;
  const Raw* __restrict__ in = static_cast<const Raw*>(args.in);
  const Raw* __restrict__ dout = static_cast<const Raw*>(args.dout);
  Raw* __restrict__ out = static_cast<Raw*>(args.out);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows * chunks;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / chunks, c0 = (i % chunks) * 8;
    const bool fast = args.aligned && c0 + 8 <= cols;
    const std::int64_t ia = r * args.ld_in + c0, ib = ia + args.gate_offset;
    Raw a[8], b[8], d[8];
    if (fast) {
      load_vec<Raw, 8>(in + ia, a);
      load_vec<Raw, 8>(in + ib, b);
      if constexpr (kBackward) load_vec<Raw, 8>(dout + r * args.ld_dout + c0, d);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const bool ok = c0 + j < cols;
        a[j] = ok ? in[ia + j] : Raw(0);
        b[j] = ok ? in[ib + j] : Raw(0);
        if constexpr (kBackward) d[j] = ok ? dout[r * args.ld_dout + c0 + j] : Raw(0);
      }
    }
    Raw o1[8], o2[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float y, dy;
      const float av = E::to_float(a[j]);
      Act::eval(E::to_float(b[j]), y, dy);
      if constexpr (kBackward) {
        const float g = E::to_float(d[j]);
        o1[j] = E::from_float(g * y);
        o2[j] = E::from_float(g * av * dy);
      } else {
        o1[j] = E::from_float(av * y);
      }
    }
    if constexpr (kBackward) {
      if (fast) {
        store_vec<Raw, 8>(out + ia, o1);
        store_vec<Raw, 8>(out + ib, o2);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if (c0 + j < cols) {
            out[ia + j] = o1[j];
            out[ib + j] = o2[j];
          }
      }
    } else {
      const std::int64_t io = r * args.ld_out + c0;
      if (fast) {
        store_vec<Raw, 8>(out + io, o1);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if (c0 + j < cols) out[io + j] = o1[j];
      }
    }
  }
}

template <class T>
void launch_masked_decay_impl(const DecayArgs& a, cudaStream_t s) {
  masked_decay_kernel<T><<<ew_blocks(a.rows * ((a.cols + 7) / 8)), kEwThreads, 0, s>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("masked_decay_kernel");
}

template <class T>
void launch_glu_impl(const GluArgs& a, bool backward, cudaStream_t s) {
  const unsigned blocks = ew_blocks(a.rows * ((a.cols + 7) / 8));
  if (a.gate == 0) {
    if (backward) glu_kernel<T, GeluTanh, true><<<blocks, kEwThreads, 0, s>>>(a);
    else glu_kernel<T, GeluTanh, false><<<blocks, kEwThreads, 0, s>>>(a);
  } else {
    if (backward) glu_kernel<T, Silu, true><<<blocks, kEwThreads, 0, s>>>(a);
    else glu_kernel<T, Silu, false><<<blocks, kEwThreads, 0, s>>>(a);
  }
  SPARSENM_CUDA_CHECK_LAUNCH("glu_kernel");
}

}  // namespace sparsenm::train::detail
