#pragma once
// NCCL collectives over every local GPU, one process driving all of them (ncclCommInitAll), sized as nccl-tests
// sizes them: all_reduce and all_to_all `bytes` per rank; all_gather `bytes` of output (bytes/ranks sent);
// reduce_scatter `bytes` of input; send_recv `bytes` from each rank to the next in a ring. FP32 sum. A repetition
// is timed from an event before the group call to an event after it on every GPU; its time is the slowest GPU's.
// On a one-GPU machine NCCL copies locally, so the figures are launch and protocol overheads, not network speed
// (multi-GPU and multi-node tables come from nccl-tests logs: `orrery calibrate import-nccl-tests`).

#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

#include "calibrate/bench/bench_plan.h"
#include "calibrate/cuda/device_buffer.h"
#include "calibrate/cuda/nccl_check.h"
#include "calibrate/cuda/event_timer.h"

namespace orrery::bench {

class NcclBench {
 public:
  /// Opens one communicator per visible GPU. Errors: std::runtime_error from CUDA or NCCL.
  NcclBench();
  ~NcclBench();
  NcclBench(const NcclBench&) = delete;
  NcclBench& operator=(const NcclBench&) = delete;

  int ranks() const { return static_cast<int>(comms_.size()); }
  /// Seconds per call, one per repetition. `c.bytes` is rounded down to whole FP32 elements per rank; `bytes`
  /// receives the size measured. Each repetition first holds every GPU's stream with a spin kernel so the host's
  /// enqueueing of the group call is not timed.
  std::vector<double> run(const PlanCollective& c, const TimingOptions& opt, std::int64_t* bytes);

 private:
  void issue(const PlanCollective& c, std::size_t elements, const std::vector<DeviceBuffer>& send,
             const std::vector<DeviceBuffer>& recv);
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace orrery::bench
