#pragma once
// ORRERY_NCCL(call): as the macros of check.h, for NCCL calls (only in programs built with NCCL).

#include <nccl.h>

#include "calibrate/cuda/check.h"

#define ORRERY_NCCL(call)                                                                     \
  do {                                                                                        \
    const ncclResult_t orrery_status_ = (call);                                               \
    if (orrery_status_ != ncclSuccess)                                                        \
      ::orrery::bench::fail_call(#call, __FILE__, __LINE__, ncclGetErrorString(orrery_status_)); \
  } while (0)
