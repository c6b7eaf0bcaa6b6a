#include "calibrate/cuda/memory_bench.h"

#include <cuda_bf16.h>

#include <chrono>

#include "calibrate/cuda/device_buffer.h"

namespace orrery::bench {

namespace {

constexpr int kRowLength = 8192;  // a hidden size typical of the models calibrated (Llama-3-70B)

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void axpb_kernel(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ out,
                            float s, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 x = a[i], y = b[i];
    out[i] = make_float4(x.x * s + y.x, x.y * s + y.y, x.z * s + y.z, x.w * s + y.w);
  }
}

// One block per row: each thread reads 8 BF16 values (16 bytes) per step, the block sums squares through shared
// memory, then every thread scales what it read.
__global__ void rmsnorm_kernel(const uint4* __restrict__ in, uint4* __restrict__ out, int rows) {
  constexpr int kVectors = kRowLength / 8;
  __shared__ float partial[32];
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const uint4* x = in + static_cast<std::size_t>(row) * kVectors;
    float sum = 0;
    for (int v = threadIdx.x; v < kVectors; v += blockDim.x) {
      const uint4 w = x[v];
      const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&w);
      for (int j = 0; j < 4; ++j) {
        const float2 f = __bfloat1622float2(h[j]);
        sum += f.x * f.x + f.y * f.y;
      }
    }
    for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
      float s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
      for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off);
      if (threadIdx.x == 0) partial[0] = rsqrtf(s / kRowLength + 1e-5f);
    }
    __syncthreads();
    const float scale = partial[0];
    for (int v = threadIdx.x; v < kVectors; v += blockDim.x) {
      uint4 w = x[v];
      __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&w);
      for (int j = 0; j < 4; ++j) {
        const float2 f = __bfloat1622float2(h[j]);
        h[j] = __floats2bfloat162_rn(f.x * scale, f.y * scale);
      }
      out[static_cast<std::size_t>(row) * kVectors + v] = w;
    }
    __syncthreads();
  }
}

__global__ void empty_kernel() {}

unsigned grid_for(std::size_t items, int sm_count, unsigned threads) {
  const std::size_t needed = (items + threads - 1) / threads;
  const std::size_t cap = static_cast<std::size_t>(sm_count > 0 ? sm_count : 1) * 4;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(needed, cap)));
}

}  // namespace

std::vector<double> run_memory(const PlanMemory& m, int sm_count, cudaStream_t stream, const TimingOptions& opt,
                               std::int64_t* moved) {
  const unsigned threads = 256;
  const auto bytes = static_cast<std::size_t>(m.bytes);
  if (m.kind == "copy") {
    const std::size_t vectors = std::max<std::size_t>(1, bytes / 2 / 16);
    DeviceBuffer in(vectors * 16), out(vectors * 16);
    *moved = static_cast<std::int64_t>(vectors * 32);
    fill_random(in.get(), vectors * 4, ElementType::kF32, 3, stream);
    const unsigned grid = grid_for(vectors, sm_count, threads);
    return time_on_stream(stream, opt, [&](cudaStream_t s) {
      copy_kernel<<<grid, threads, 0, s>>>(static_cast<const float4*>(in.get()), static_cast<float4*>(out.get()),
                                           vectors);
      ORRERY_CUDA(cudaGetLastError());
    });
  }
  if (m.kind == "elementwise") {
    const std::size_t vectors = std::max<std::size_t>(1, bytes / 3 / 16);
    DeviceBuffer a(vectors * 16), b(vectors * 16), out(vectors * 16);
    *moved = static_cast<std::int64_t>(vectors * 48);
    fill_random(a.get(), vectors * 4, ElementType::kF32, 4, stream);
    fill_random(b.get(), vectors * 4, ElementType::kF32, 5, stream);
    const unsigned grid = grid_for(vectors, sm_count, threads);
    return time_on_stream(stream, opt, [&](cudaStream_t s) {
      axpb_kernel<<<grid, threads, 0, s>>>(static_cast<const float4*>(a.get()), static_cast<const float4*>(b.get()),
                                           static_cast<float4*>(out.get()), 0.5f, vectors);
      ORRERY_CUDA(cudaGetLastError());
    });
  }
  // reduction
  const std::size_t row_bytes = kRowLength * 2;
  const int rows = static_cast<int>(std::max<std::size_t>(1, bytes / 2 / row_bytes));
  DeviceBuffer in(static_cast<std::size_t>(rows) * row_bytes), out(static_cast<std::size_t>(rows) * row_bytes);
  *moved = static_cast<std::int64_t>(2 * static_cast<std::size_t>(rows) * row_bytes);
  fill_random(in.get(), static_cast<std::size_t>(rows) * kRowLength, ElementType::kBf16, 6, stream);
  const unsigned grid = static_cast<unsigned>(std::min(rows, std::max(sm_count, 1) * 8));
  return time_on_stream(stream, opt, [&](cudaStream_t s) {
    rmsnorm_kernel<<<grid, threads, 0, s>>>(static_cast<const uint4*>(in.get()), static_cast<uint4*>(out.get()), rows);
    ORRERY_CUDA(cudaGetLastError());
  });
}

std::vector<double> launch_gpu_seconds(cudaStream_t stream, const TimingOptions& opt, int launches) {
  // The spin covers the host's enqueueing of all `launches`, so the events see the GPU's own per-kernel cost.
  cudaEvent_t start = nullptr, stop = nullptr;
  ORRERY_CUDA(cudaEventCreate(&start));
  ORRERY_CUDA(cudaEventCreate(&stop));
  std::vector<double> out;
  for (int r = -opt.warmup; r < opt.repetitions; ++r) {
    spin_stream(stream, launches * 20e-6);
    ORRERY_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 32, 0, stream>>>();
    ORRERY_CUDA(cudaGetLastError());
    ORRERY_CUDA(cudaEventRecord(stop, stream));
    ORRERY_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    ORRERY_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (r >= 0) out.push_back(static_cast<double>(ms) * 1e-3 / launches);
  }
  ORRERY_CUDA(cudaEventDestroy(start));
  ORRERY_CUDA(cudaEventDestroy(stop));
  return out;
}

std::vector<double> launch_host_seconds(cudaStream_t stream, const TimingOptions& opt, int launches) {
  std::vector<double> out;
  for (int r = -opt.warmup; r < opt.repetitions; ++r) {
    ORRERY_CUDA(cudaStreamSynchronize(stream));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 32, 0, stream>>>();
    const auto t1 = std::chrono::steady_clock::now();
    ORRERY_CUDA(cudaGetLastError());
    if (r >= 0) out.push_back(std::chrono::duration<double>(t1 - t0).count() / launches);
  }
  ORRERY_CUDA(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace orrery::bench
