#include "calibrate/cuda/device_buffer.h"
#include "calibrate/cuda/event_timer.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

namespace orrery::bench {

namespace {

// SplitMix64 finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014).
__device__ float hash_unit(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;  // 24 bits -> [-1, 1)
}

template <class T>
__global__ void fill_kernel(T* out, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<T>(hash_unit(seed, i));
  }
}

__global__ void fill_fp8_kernel(__nv_fp8_e4m3* out, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = __nv_fp8_e4m3(hash_unit(seed, i));
  }
}

}  // namespace

std::size_t element_bytes(ElementType t) {
  switch (t) {
    case ElementType::kF32: return 4;
    case ElementType::kF16:
    case ElementType::kBf16: return 2;
    case ElementType::kFp8E4M3: return 1;
  }
  return 4;
}

void fill_random(void* ptr, std::size_t count, ElementType t, std::uint64_t seed, cudaStream_t stream) {
  if (count == 0) return;
  const unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((count + threads - 1) / threads, 65535));
  switch (t) {
    case ElementType::kF32: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<float*>(ptr), count, seed); break;
    case ElementType::kF16: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__half*>(ptr), count, seed); break;
    case ElementType::kBf16:
      fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__nv_bfloat16*>(ptr), count, seed);
      break;
    case ElementType::kFp8E4M3:
      fill_fp8_kernel<<<blocks, threads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(ptr), count, seed);
      break;
  }
  ORRERY_CUDA(cudaGetLastError());
}

}  // namespace orrery::bench

namespace orrery::bench {

namespace {

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

void spin_stream(cudaStream_t stream, double seconds) {
  int device = 0, khz = 0;
  ORRERY_CUDA(cudaGetDevice(&device));
  ORRERY_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<long long>(seconds * khz * 1e3));
  ORRERY_CUDA(cudaGetLastError());
}

}  // namespace orrery::bench
