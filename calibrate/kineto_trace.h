#pragma once
// A PyTorch profiler (Kineto) trace of real training steps, reduced to what `orrery compare --kineto` needs:
// the GPU kernels, each attributed to the profiler step whose CPU window launched it, classified by kind, with the
// NCCL arguments PyTorch records; and the `ProfilerStep#N` annotations.
//
// Kineto's Chrome-trace JSON (optionally gzip-compressed, as torch.profiler's tensorboard handler writes it):
// events `{"ph": "X", "cat": "kernel", "name", "ts" (us), "dur" (us), "args": {"device", "stream",
// "correlation", "Collective name", "In msg nelems", "Group size", "dtype", ...}}`; the CPU launch is the
// `cuda_runtime` event with the same `correlation`; steps are `user_annotation` events named "ProfilerStep#N".
// Layers: tools/pytorch_train_step.py wraps each decoder layer's forward and backward in user annotations named
// "orrery.layer<N>.forward" / "orrery.layer<N>.backward"; a kernel launched inside one (same thread) belongs to it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/units.h"

namespace orrery {

enum class KernelClass : std::uint8_t { kGemm, kAttention, kCommunication, kOther };
const char* to_string(KernelClass c);

/// The class of a GPU kernel by its name: NCCL kernels ("nccl"); fused attention ("flash", "fmha", "attention",
/// "sdpa", and cuDNN SDPA's "cudnn::fusion" helpers); GEMMs (cuBLAS/CUTLASS names: "gemm", "cutlass", "xmma",
/// "cublas", "wgmma", cuBLAS 12.8+'s Hopper "nvjet", Volta/Ampere "s884"/"s16816" tensor-core kernels); everything
/// else (elementwise, norms, reductions, softmax, optimizer) is kOther.
KernelClass classify_kernel(std::string_view name);

struct KinetoKernel {
  std::string name;
  int device = 0, stream = 0;
  Seconds start = 0, duration = 0;  // start on the trace's clock
  KernelClass kind = KernelClass::kOther;
  int step = -1;                    // index into KinetoTrace::steps of the step that launched it; -1 outside
  std::string collective;           // NCCL: "allreduce", "allgather", ... ("" when not recorded)
  std::int64_t in_elements = 0;     // NCCL: elements of the input message
  int group_size = 0;               // NCCL: ranks in the process group
  std::string dtype;                // NCCL: element type as PyTorch names it
  int layer = -1;                   // the decoder layer whose annotation holds the launch (-1: none)
  bool backward = false;            // ... its backward annotation rather than its forward one
};

struct KinetoStep {
  std::string name;  // "ProfilerStep#4"
  Seconds start = 0, duration = 0;
};

/// A CPU range of one thread: a decoder layer's forward or backward annotation, or the optimizer step
/// (torch.optim's "Optimizer.step#<Name>.step" annotation), with the kernel and copy launches made inside it.
struct KinetoRange {
  enum class What : std::uint8_t { kForward, kBackward, kOptimizer };
  What what = What::kForward;
  int layer = -1;  // -1 for the optimizer step
  Seconds start = 0, duration = 0;
  int launches = 0;             // runtime calls inside the range whose kernel the trace holds (copies and fills
                                // belong to the kernel launch that issued them, as cuBLASLt's workspace memset)
  Seconds longest_launch = 0;   // the longest of those calls
  std::vector<Seconds> launch_calls;  // each of those calls' own CPU time
};

struct KinetoTrace {
  std::string file;
  std::string device_name;  // deviceProperties[0].name, "" when not recorded
  int world_size = 0;       // distributedInfo.world_size, 0 when not recorded
  std::vector<KinetoStep> steps;  // in time order
  std::vector<KinetoKernel> kernels;
  /// gpu_memcpy and gpu_memset events (device copies such as autograd's pow(x, 1) or a zero fill), attributed to
  /// steps and layers as kernels are; kind kOther.
  std::vector<KinetoKernel> copies;
  std::vector<KinetoRange> ranges;  // layer and optimizer-step ranges, in time order
};

/// Reads a trace (.json or .json.gz). Errors: Error::io for an unreadable file; Error::invalid naming the file for
/// malformed JSON, a missing `traceEvents` list, or an event whose `ts`/`dur` is not a non-negative number.
KinetoTrace read_kineto_trace(const std::string& file);

/// GPU time of each kernel class within one step (kernels launched by that step), seconds; and of the device copies
/// and fills it launched (`copies`, not in by_class).
struct StepKernelTime {
  Seconds by_class[4] = {0, 0, 0, 0};
  int kernels = 0;
  Seconds copies = 0;
};
StepKernelTime step_kernel_time(const KinetoTrace& trace, int step);

/// The host's CPU time per launch, by phase: the median over the traces' ranges of that phase of range time /
/// launches, counting only ranges in which no launch call took longer than `blocked_call` (a longer call waited
/// for a slot in CUDA's full launch queue, so the host was held by the GPU and its range measures the GPU's pace).
/// The time per launch covers everything the thread did between launches: the framework's Python, the dispatcher,
/// autograd, the allocator and the launch call. Zero, with count 0, for a phase without an unblocked range.
struct HostIssueRates {
  Seconds forward = 0, backward = 0, optimizer = 0;
  Seconds launch_call = 0;  // median CPU time of the launch call itself over those ranges' launches
  int forward_ranges = 0, backward_ranges = 0, optimizer_ranges = 0;  // unblocked ranges the medians are over
};
HostIssueRates host_issue_rates(const std::vector<KinetoTrace>& traces, Seconds blocked_call = 50e-6);

}  // namespace orrery
