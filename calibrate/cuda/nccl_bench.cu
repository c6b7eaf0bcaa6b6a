#include "calibrate/cuda/nccl_bench.h"

#include <algorithm>

namespace orrery::bench {

NcclBench::NcclBench() {
  int count = 0;
  ORRERY_CUDA(cudaGetDeviceCount(&count));
  comms_.resize(static_cast<std::size_t>(count));
  ORRERY_NCCL(ncclCommInitAll(comms_.data(), count, nullptr));
  for (int d = 0; d < count; ++d) {
    ORRERY_CUDA(cudaSetDevice(d));
    cudaStream_t s = nullptr;
    ORRERY_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    streams_.push_back(s);
  }
  ORRERY_CUDA(cudaSetDevice(0));
}

NcclBench::~NcclBench() {
  for (std::size_t d = 0; d < comms_.size(); ++d) {
    cudaSetDevice(static_cast<int>(d));
    if (d < streams_.size()) cudaStreamDestroy(streams_[d]);
    ncclCommDestroy(comms_[d]);
  }
  cudaSetDevice(0);
}

void NcclBench::issue(const PlanCollective& c, std::size_t elements, const std::vector<DeviceBuffer>& send,
                      const std::vector<DeviceBuffer>& recv) {
  const int n = ranks();
  const std::size_t per_rank = elements / static_cast<std::size_t>(n);
  ORRERY_NCCL(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    void* in = send[i].get();
    void* out = recv[i].get();
    if (c.op == "all_reduce") {
      ORRERY_NCCL(ncclAllReduce(in, out, elements, ncclFloat, ncclSum, comms_[i], streams_[i]));
    } else if (c.op == "all_gather") {
      ORRERY_NCCL(ncclAllGather(in, out, per_rank, ncclFloat, comms_[i], streams_[i]));
    } else if (c.op == "reduce_scatter") {
      ORRERY_NCCL(ncclReduceScatter(in, out, per_rank, ncclFloat, ncclSum, comms_[i], streams_[i]));
    } else if (c.op == "all_to_all") {
      for (int p = 0; p < n; ++p) {
        const std::size_t offset = static_cast<std::size_t>(p) * per_rank * sizeof(float);
        ORRERY_NCCL(ncclSend(static_cast<char*>(in) + offset, per_rank, ncclFloat, p, comms_[i], streams_[i]));
        ORRERY_NCCL(ncclRecv(static_cast<char*>(out) + offset, per_rank, ncclFloat, p, comms_[i], streams_[i]));
      }
    } else {  // send_recv: a ring, as nccl-tests' sendrecv_perf
      ORRERY_NCCL(ncclSend(in, elements, ncclFloat, (r + 1) % n, comms_[i], streams_[i]));
      ORRERY_NCCL(ncclRecv(out, elements, ncclFloat, (r + n - 1) % n, comms_[i], streams_[i]));
    }
  }
  ORRERY_NCCL(ncclGroupEnd());
}

std::vector<double> NcclBench::run(const PlanCollective& c, const TimingOptions& opt, std::int64_t* measured) {
  const int n = ranks();
  const std::size_t unit = static_cast<std::size_t>(n) * sizeof(float);
  const std::size_t bytes = std::max(unit, static_cast<std::size_t>(c.bytes) / unit * unit);
  const std::size_t elements = bytes / sizeof(float);
  *measured = static_cast<std::int64_t>(bytes);
  std::vector<DeviceBuffer> send, recv;
  for (int d = 0; d < n; ++d) {
    ORRERY_CUDA(cudaSetDevice(d));
    send.emplace_back(bytes);
    recv.emplace_back(bytes);
    fill_random(send.back().get(), elements, ElementType::kF32, 10 + static_cast<std::uint64_t>(d),
                streams_[static_cast<std::size_t>(d)]);
  }
  // Per-GPU event pairs; a repetition's time is the slowest GPU's.
  std::vector<std::vector<double>> per_gpu;
  for (int r = -opt.warmup; r < opt.repetitions; ++r) {
    std::vector<cudaEvent_t> start(static_cast<std::size_t>(n)), stop(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) {
      const auto i = static_cast<std::size_t>(d);
      ORRERY_CUDA(cudaSetDevice(d));
      ORRERY_CUDA(cudaEventCreate(&start[i]));
      ORRERY_CUDA(cudaEventCreate(&stop[i]));
      spin_stream(streams_[i], 200e-6 + n * kEnqueueAllowance);
      ORRERY_CUDA(cudaEventRecord(start[i], streams_[i]));
    }
    issue(c, elements, send, recv);
    std::vector<double> times;
    for (int d = 0; d < n; ++d) {
      const auto i = static_cast<std::size_t>(d);
      ORRERY_CUDA(cudaSetDevice(d));
      ORRERY_CUDA(cudaEventRecord(stop[i], streams_[i]));
    }
    for (int d = 0; d < n; ++d) {
      const auto i = static_cast<std::size_t>(d);
      ORRERY_CUDA(cudaSetDevice(d));
      ORRERY_CUDA(cudaEventSynchronize(stop[i]));
      float ms = 0;
      ORRERY_CUDA(cudaEventElapsedTime(&ms, start[i], stop[i]));
      times.push_back(static_cast<double>(ms) * 1e-3);
      ORRERY_CUDA(cudaEventDestroy(start[i]));
      ORRERY_CUDA(cudaEventDestroy(stop[i]));
    }
    if (r >= 0) per_gpu.push_back(times);
  }
  ORRERY_CUDA(cudaSetDevice(0));
  std::vector<double> out;
  for (const auto& t : per_gpu) out.push_back(*std::max_element(t.begin(), t.end()));
  return out;
}

}  // namespace orrery::bench
