// orrery-calibrate: the GPU side of calibration. Until the calibration work lands it only lists the CUDA devices
// it would measure and says that measuring is not implemented; it exits 2 so no script mistakes it for a profile.
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    std::fprintf(stderr, "orrery-calibrate: no usable CUDA device (%s)\n", cudaGetErrorString(status));
    return 2;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    std::printf("device %d: %s, %d SMs, %.1f GiB, compute capability %d.%d\n", d, prop.name,
                prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                prop.major, prop.minor);
  }
  std::fprintf(stderr, "not modelled yet: orrery-calibrate microbenchmarks are not implemented in this version\n");
  return 2;
}
