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

struct KinetoTrace {
  std::string file;
  std::string device_name;  // deviceProperties[0].name, "" when not recorded
  int world_size = 0;       // distributedInfo.world_size, 0 when not recorded
  std::vector<KinetoStep> steps;  // in time order
  std::vector<KinetoKernel> kernels;
  /// gpu_memcpy and gpu_memset events (device copies such as autograd's pow(x, 1) or a zero fill), attributed to
  /// steps and layers as kernels are; kind kOther.
  std::vector<KinetoKernel> copies;
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

}  // namespace orrery
