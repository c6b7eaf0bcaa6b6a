// orrery-power: the board power of one GPU in each state a training step puts it in (issue 23's energy model),
// measured by holding the GPU in that state for a few seconds while nvidia-smi samples its power.
//
//   orrery-power --seconds 10 --out phases.json
//
// The phases, in order (each `--seconds` long, the GPU synchronised between them):
//   idle           nothing launched: the GPU drops to its idle clocks (a job that has not started)
//   launch_gaps    an empty kernel every 2 ms: clocks held up with almost no work, as in a pipeline bubble or a
//                  wait for a collective (the GPU is "busy" to the driver, its SMs idle)
//   gemm_bf16      8192 x 8192 x 8192 BF16 cuBLASLt GEMMs back to back: tensor-core bound, at the power limit
//   gemm_fp8       the same in FP8 (E4M3, BF16 output)
//   copy_all_sms   a grid-stride copy of 2 x 4 GiB over 4 blocks per SM: HBM bound (elementwise, norms, optimizer)
//   copy_16_sms    the same copy on 16 blocks: a communication kernel's footprint (NCCL drives a collective with
//                  one block per channel, 16-32 on NVLink); the NVLink or NIC traffic itself is not on one GPU
//   gemm_bf16+copy_16_sms  both at once on two streams (communication overlapped with compute)
// The file records each phase's wall-clock start and end (local time, nvidia-smi's timestamp format), the work it
// did (GEMMs, bytes) and the achieved rate; tools/power_phases.py joins it with nvidia-smi's samples.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/cuda/check.h"
#include "calibrate/cuda/device_buffer.h"
#include "calibrate/cuda/lt_matmul.h"

namespace orrery::bench {
namespace {

__global__ void copy_vectors(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void empty_kernel() {}

using Clock = std::chrono::system_clock;

// nvidia-smi's timestamp format, "2026/12/04 15:30:01.123", in local time.
std::string stamp(Clock::time_point t) {
  const std::time_t secs = Clock::to_time_t(t);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y/%m/%d %H:%M:%S", &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03d", text, static_cast<int>(ms));
  return out;
}

struct Phase {
  std::string name;
  std::string start, end;
  double seconds = 0;
  double gemms = 0, gemm_flops = 0;  // GEMMs completed and their FLOPs
  double copy_bytes = 0;             // bytes read plus written by the copies
};

// Runs `issue` (which enqueues one unit of work and returns it) until `seconds` have passed, keeping at most a few
// units queued so the phase ends on time.
void hold(double seconds, const std::function<void()>& issue, cudaStream_t sync) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int queued = 0;
  while (std::chrono::steady_clock::now() < until) {
    issue();
    if (++queued % 8 == 0) ORRERY_CUDA(cudaStreamSynchronize(sync));
  }
  ORRERY_CUDA(cudaDeviceSynchronize());
}

class Rig {
 public:
  explicit Rig(int sm_count) : sm_count_(sm_count) {
    ORRERY_CUDA(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    ORRERY_CUDA(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
    ORRERY_CUBLAS(cublasLtCreate(&lt_));
    workspace_ = std::make_unique<DeviceBuffer>(kWorkspace);
    for (const char* dtype : {"bf16", "fp8"}) {
      const ElementType in = LtMatmul::input_type(dtype), out = LtMatmul::output_type(dtype);
      Gemm g;
      g.a = std::make_unique<DeviceBuffer>(kN * kN * element_bytes(in));
      g.b = std::make_unique<DeviceBuffer>(kN * kN * element_bytes(in));
      g.d = std::make_unique<DeviceBuffer>(kN * kN * element_bytes(out));
      fill_random(g.a->get(), kN * kN, in, 11, compute_);
      fill_random(g.b->get(), kN * kN, in, 12, compute_);
      g.mm = LtMatmul::plan(lt_, kN, kN, kN, 1, dtype, kWorkspace);
      if (!g.mm) throw std::runtime_error(std::string("cuBLASLt has no ") + dtype + " algorithm for 8192^3");
      gemms_.push_back(std::move(g));
    }
    copy_in_ = std::make_unique<DeviceBuffer>(kCopyBytes);
    copy_out_ = std::make_unique<DeviceBuffer>(kCopyBytes);
    fill_random(copy_in_->get(), kCopyBytes / 4, ElementType::kF32, 13, compute_);
    ORRERY_CUDA(cudaDeviceSynchronize());
  }
  ~Rig() {
    cublasLtDestroy(lt_);
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(comm_);
  }

  void gemm(int which, cudaStream_t s, Phase& p) {
    const Gemm& g = gemms_[static_cast<std::size_t>(which)];
    g.mm->run(lt_, g.a->get(), g.b->get(), g.d->get(), workspace_->get(), s);
    p.gemms += 1;
    p.gemm_flops += 2.0 * kN * kN * kN;
  }
  void copy(unsigned blocks, cudaStream_t s, Phase& p) {
    const std::size_t vectors = kCopyBytes / 16;
    copy_vectors<<<blocks, 256, 0, s>>>(static_cast<const float4*>(copy_in_->get()),
                                       static_cast<float4*>(copy_out_->get()), vectors);
    ORRERY_CUDA(cudaGetLastError());
    p.copy_bytes += 2.0 * static_cast<double>(kCopyBytes);
  }

  Phase run(const std::string& name, double seconds) {
    Phase p;
    p.name = name;
    const auto t0 = Clock::now();
    p.start = stamp(t0);
    if (name == "idle") {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    } else if (name == "launch_gaps") {
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      while (std::chrono::steady_clock::now() < until) {
        empty_kernel<<<1, 32, 0, compute_>>>();
        ORRERY_CUDA(cudaStreamSynchronize(compute_));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    } else if (name == "gemm_bf16" || name == "gemm_fp8") {
      const int which = name == "gemm_bf16" ? 0 : 1;
      hold(seconds, [&] { gemm(which, compute_, p); }, compute_);
    } else if (name == "copy_all_sms") {
      hold(seconds, [&] { copy(static_cast<unsigned>(4 * sm_count_), compute_, p); }, compute_);
    } else if (name == "copy_16_sms") {
      hold(seconds, [&] { copy(16, comm_, p); }, comm_);
    } else if (name == "gemm_bf16+copy_16_sms") {
      // The copy stream is kept busy alongside: one 16-block copy (about 8 GiB at a fraction of HBM's rate) spans
      // several GEMMs.
      hold(seconds, [&] {
        gemm(0, compute_, p);
        if (cudaStreamQuery(comm_) == cudaSuccess) copy(16, comm_, p);
      }, compute_);
    } else {
      throw std::runtime_error("unknown phase " + name);
    }
    const auto t1 = Clock::now();
    p.end = stamp(t1);
    p.seconds = std::chrono::duration<double>(t1 - t0).count();
    return p;
  }

 private:
  static constexpr std::size_t kN = 8192;
  static constexpr std::size_t kWorkspace = 64ull << 20;
  static constexpr std::size_t kCopyBytes = 4ull << 30;
  struct Gemm {
    std::unique_ptr<DeviceBuffer> a, b, d;
    std::unique_ptr<LtMatmul> mm;
  };
  int sm_count_;
  cudaStream_t compute_ = nullptr, comm_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  std::unique_ptr<DeviceBuffer> workspace_, copy_in_, copy_out_;
  std::vector<Gemm> gemms_;
};

std::string phase_json(const Phase& p) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"name\": \"%s\", \"start\": \"%s\", \"end\": \"%s\", \"seconds\": %.3f, \"gemms\": %.0f, "
                "\"tflops\": %.1f, \"copy_GB_s\": %.1f}",
                p.name.c_str(), p.start.c_str(), p.end.c_str(), p.seconds, p.gemms,
                p.gemm_flops / p.seconds * 1e-12, p.copy_bytes / p.seconds * 1e-9);
  return buf;
}

}  // namespace
}  // namespace orrery::bench

int main(int argc, char** argv) {
  using namespace orrery::bench;
  double seconds = 10;
  std::string out = "power-phases.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seconds") {
      seconds = std::stod(argv[i + 1]);
    } else if (flag == "--out") {
      out = argv[i + 1];
    } else {
      std::fprintf(stderr, "usage: orrery-power [--seconds S] [--out FILE]\n");
      return 2;
    }
  }
  try {
    cudaDeviceProp prop{};
    ORRERY_CUDA(cudaGetDeviceProperties(&prop, 0));
    Rig rig(prop.multiProcessorCount);
    std::vector<std::string> phases;
    for (const char* name : {"idle", "launch_gaps", "gemm_bf16", "gemm_fp8", "copy_all_sms", "copy_16_sms",
                             "gemm_bf16+copy_16_sms", "idle"}) {
      const Phase p = rig.run(name, seconds);
      phases.push_back(phase_json(p));
      std::fprintf(stderr, "%s\n", phases.back().c_str());
    }
    std::ofstream file(out);
    file << "{\"gpu\": \"" << prop.name << "\", \"sm_count\": " << prop.multiProcessorCount
         << ", \"seconds_per_phase\": " << seconds << ", \"phases\": [\n  ";
    for (std::size_t i = 0; i < phases.size(); ++i) file << (i ? ",\n  " : "") << phases[i];
    file << "\n]}\n";
    if (!file) throw std::runtime_error("cannot write " + out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orrery-power: %s\n", e.what());
    return 1;
  }
  return 0;
}
