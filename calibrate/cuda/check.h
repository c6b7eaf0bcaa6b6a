#pragma once
// Every CUDA and cuBLASLt call goes through one of these (NCCL's: nccl_check.h): a failure throws
// std::runtime_error naming the call, the file and line, and the library's own message, so a broken measurement
// never reaches a profile.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace orrery::bench {

[[noreturn]] inline void fail_call(const char* call, const char* file, int line, const std::string& why) {
  throw std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + why);
}

}  // namespace orrery::bench

#define ORRERY_CUDA(call)                                                                    \
  do {                                                                                       \
    const cudaError_t orrery_status_ = (call);                                               \
    if (orrery_status_ != cudaSuccess)                                                       \
      ::orrery::bench::fail_call(#call, __FILE__, __LINE__, cudaGetErrorString(orrery_status_)); \
  } while (0)

#define ORRERY_CUBLAS(call)                                                                   \
  do {                                                                                        \
    const cublasStatus_t orrery_status_ = (call);                                             \
    if (orrery_status_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::orrery::bench::fail_call(#call, __FILE__, __LINE__,                                   \
                                 std::string("cuBLAS status ") + std::to_string(static_cast<int>(orrery_status_))); \
  } while (0)
