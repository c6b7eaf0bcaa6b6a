#pragma once
// Device memory that frees itself, and a fill with pseudo-random values in [-1, 1) (never all zeros: tensor cores
// and memory compression run faster on zeros, which would flatter every figure).

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "calibrate/cuda/check.h"

namespace orrery::bench {

enum class ElementType { kF32, kF16, kBf16, kFp8E4M3 };

std::size_t element_bytes(ElementType t);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) { ORRERY_CUDA(cudaMalloc(&ptr_, bytes ? bytes : 1)); }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Fills `count` elements of type `t` at `ptr` with values of a counter-based hash of (seed, index), in [-1, 1).
void fill_random(void* ptr, std::size_t count, ElementType t, std::uint64_t seed, cudaStream_t stream);

}  // namespace orrery::bench
