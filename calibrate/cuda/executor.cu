#include "calibrate/cuda/executor.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <tuple>

#include "calibrate/cuda/device_buffer.h"
#include "calibrate/cuda/check.h"
#include "calibrate/cuda/event_timer.h"
#include "calibrate/cuda/lt_matmul.h"

namespace orrery::bench {

namespace {

// Reads `in_vectors` and writes `out_vectors` 16-byte vectors, cycling through buffers of `cap` vectors (1 GiB:
// far past the L2 cache, so every pass is HBM traffic) when a task moves more than that.
__global__ void stream_kernel(const float4* __restrict__ in, std::size_t in_vectors, float4* __restrict__ out,
                              std::size_t out_vectors, std::size_t cap, std::size_t offset) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t n = in_vectors > out_vectors ? in_vectors : out_vectors;
  for (std::size_t i = first; i < n; i += stride) {
    const std::size_t j = (i + offset) & (cap - 1);  // cap is a power of two
    const float4 v = i < in_vectors ? in[j] : make_float4(1, 1, 1, 1);
    if (i < out_vectors) out[j] = make_float4(v.x * 0.5f, v.y, v.z, v.w);
  }
}

constexpr std::size_t kStreamCap = std::size_t{1} << 30;

class Runner {
 public:
  explicit Runner(const WorkloadFile& w) : w_(w) {
    ORRERY_CUBLAS(cublasLtCreate(&lt_));
    int sms = 0;
    ORRERY_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    sm_count_ = static_cast<std::size_t>(sms > 0 ? sms : 1);
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    ORRERY_CUDA(cudaMemPoolCreate(&pool_, &props));
    // Keep what the pool has reserved across synchronisations, so repeats do not re-reserve it while being timed.
    std::uint64_t keep = UINT64_MAX;
    ORRERY_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
    ORRERY_CUDA(cudaStreamCreateWithFlags(&memory_stream_, cudaStreamNonBlocking));
    ORRERY_CUDA(cudaEventCreate(&origin_));
    std::size_t a = 1, b = 1, d = 1;
    for (const WorkloadTask& t : w.tasks) {
      for (const auto& [m, n, k, batch, es] : gemm_shapes(t)) {
        a = std::max(a, static_cast<std::size_t>(m * k * batch) * es);
        b = std::max(b, static_cast<std::size_t>(k * n * batch) * es);
        d = std::max(d, static_cast<std::size_t>(m * n * batch) * std::max<std::size_t>(es, 2));
      }
    }
    for (auto* p : {&a_, &b_, &d_, &read_, &write_}) *p = nullptr;
    ORRERY_CUDA(cudaMalloc(&a_, a));
    ORRERY_CUDA(cudaMalloc(&b_, b));
    ORRERY_CUDA(cudaMalloc(&d_, d));
    ORRERY_CUDA(cudaMalloc(&read_, kStreamCap));
    ORRERY_CUDA(cudaMalloc(&write_, kStreamCap));
    // Every GEMM's descriptors and algorithm up front: no heuristic query inside a timed window, and a shape
    // cuBLASLt cannot run fails before anything is timed.
    for (const WorkloadTask& t : w.tasks) {
      for (const auto& [m, n, k, batch, es] : gemm_shapes(t)) {
        (void)es;
        matmul(m, n, k, batch, t.op == "gemm" ? t.dtype : "bf16");
      }
    }
    fill_random(a_, a / 2, ElementType::kBf16, 1, nullptr);
    fill_random(b_, b / 2, ElementType::kBf16, 2, nullptr);
    fill_random(read_, kStreamCap / 4, ElementType::kF32, 3, nullptr);
    ORRERY_CUDA(cudaDeviceSynchronize());
  }

  ~Runner() {
    for (void* p : {a_, b_, d_, read_, write_}) {
      if (p) cudaFree(p);
    }
    for (auto& [name, s] : streams_) cudaStreamDestroy(s);
    for (auto& [name, ws] : workspaces_) cudaFree(ws);
    if (memory_stream_) cudaStreamDestroy(memory_stream_);
    if (origin_) cudaEventDestroy(origin_);
    if (pool_) cudaMemPoolDestroy(pool_);
    if (lt_) cublasLtDestroy(lt_);
  }

  Execution run() {
    Execution out;
    const std::size_t n = w_.tasks.size();
    std::vector<cudaEvent_t> start(n), end(n);
    for (std::size_t i = 0; i < n; ++i) {
      ORRERY_CUDA(cudaEventCreate(&start[i]));
      ORRERY_CUDA(cudaEventCreate(&end[i]));
    }
    std::uint64_t zero = 0;
    ORRERY_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
    const char* kinds[] = {"weights", "gradients", "optimizer", "activations", "other"};
    for (int k = 0; k < 5; ++k) allocate(kinds[k], w_.static_bytes[static_cast<std::size_t>(k)]);
    ORRERY_CUDA(cudaStreamSynchronize(memory_stream_));
    // The compute stream spins while the host enqueues the program, so the GPU does not wait for the host's
    // launches (up to 0.2 s of spin: about 10 us per task); every stream starts after the origin.
    origin_stream_ = stream("compute");
    spin_stream(origin_stream_, std::min(0.2, 10e-6 * static_cast<double>(n)));
    ORRERY_CUDA(cudaEventRecord(origin_, origin_stream_));
    for (auto& [name, st] : streams_) {
      if (st != origin_stream_) ORRERY_CUDA(cudaStreamWaitEvent(st, origin_, 0));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const WorkloadTask& t = w_.tasks[i];
      cudaStream_t s = stream(t.stream);
      for (int dep : t.deps) {
        if (w_.tasks[static_cast<std::size_t>(dep)].stream != t.stream) {
          ORRERY_CUDA(cudaStreamWaitEvent(s, end[static_cast<std::size_t>(dep)], 0));
        }
      }
      // The graph's memory effects, in issue order on an otherwise idle stream: the pool's high-water mark is the
      // largest live total along the program, as the simulator counts it.
      allocate(t.start_kind, t.start_bytes);
      ORRERY_CUDA(cudaEventRecord(start[i], s));
      work(t, s);
      ORRERY_CUDA(cudaEventRecord(end[i], s));
      release(t.end_kind, -t.end_bytes);
    }
    ORRERY_CUDA(cudaDeviceSynchronize());
    for (std::size_t i = 0; i < n; ++i) {
      float a = 0, b = 0;
      ORRERY_CUDA(cudaEventElapsedTime(&a, origin_, start[i]));
      ORRERY_CUDA(cudaEventElapsedTime(&b, origin_, end[i]));
      out.tasks.push_back({a * 1e-3, b * 1e-3});
      ORRERY_CUDA(cudaEventDestroy(start[i]));
      ORRERY_CUDA(cudaEventDestroy(end[i]));
    }
    std::uint64_t high = 0;
    ORRERY_CUDA(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &high));
    out.peak_bytes = static_cast<long long>(high);
    for (int k = 0; k < 5; ++k) release(kinds[k], w_.static_bytes[static_cast<std::size_t>(k)]);
    ORRERY_CUDA(cudaDeviceSynchronize());
    live_.clear();
    return out;
  }

 private:
  static constexpr std::size_t kWorkspace = std::size_t{32} << 20;  // Transformer Engine's cuBLASLt workspace on Hopper

  static std::size_t elem(const std::string& dtype) { return element_bytes(LtMatmul::input_type(dtype)); }

  // The GEMMs a task runs: (m, n, k, batch, element bytes) each.
  static std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::size_t>> gemm_shapes(
      const WorkloadTask& t) {
    if (t.op == "gemm") return {{t.args[0], t.args[1], t.args[2], t.args[4] ? 1 : t.args[3], elem(t.dtype)}};
    if (t.op != "attention") return {};
    const std::int64_t b = t.args[0], h = t.args[1], kvh = t.args[2], q = t.args[3], kv = t.args[4], dqk = t.args[5],
                       dv = t.args[6];
    const std::int64_t batch = b * kvh, rows = (h / kvh) * q;
    if (!t.args[8]) return {{rows, kv, dqk, batch, 2}, {rows, dv, kv, batch, 2}};       // S = Q K^T; O = P V
    return {{rows, kv, dv, batch, 2}, {kv, dv, rows, batch, 2}, {rows, dqk, kv, batch, 2}, {kv, dqk, rows, batch, 2}};
  }

  // Bytes streamed by the task's memory kernel: elementwise READ/WRITTEN, or the attention score matrix pass.
  static std::pair<std::size_t, std::size_t> streamed(const WorkloadTask& t) {
    if (t.op == "memory") return {static_cast<std::size_t>(t.args[0]), static_cast<std::size_t>(t.args[1])};
    const std::size_t scores = static_cast<std::size_t>(t.args[0] * t.args[1] * t.args[3] * t.args[4]) * 2;
    return t.args[8] ? std::make_pair(2 * scores, scores) : std::make_pair(scores, scores);
  }

  cudaStream_t stream(const std::string& name) {
    auto it = streams_.find(name);
    if (it != streams_.end()) return it->second;
    cudaStream_t s = nullptr;
    ORRERY_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (origin_stream_) ORRERY_CUDA(cudaStreamWaitEvent(s, origin_, 0));
    streams_[name] = s;
    void* ws = nullptr;  // cuBLASLt workspaces must not be shared by concurrent streams
    ORRERY_CUDA(cudaMalloc(&ws, kWorkspace));
    workspaces_[s] = ws;
    return s;
  }

  void allocate(const std::string& kind, std::int64_t bytes) {
    if (bytes <= 0) return;
    void* p = nullptr;
    ORRERY_CUDA(cudaMallocFromPoolAsync(&p, static_cast<std::size_t>(bytes), pool_, memory_stream_));
    live_[kind].push_back({p, bytes});
  }

  // Frees `bytes` of `kind`, oldest blocks first; a block freed in part is replaced by one of the remainder.
  void release(const std::string& kind, std::int64_t bytes) {
    cudaStream_t s = memory_stream_;
    std::deque<std::pair<void*, std::int64_t>>& blocks = live_[kind];
    while (bytes > 0 && !blocks.empty()) {
      auto [p, size] = blocks.front();
      blocks.pop_front();
      ORRERY_CUDA(cudaFreeAsync(p, s));
      if (size > bytes) {
        void* rest = nullptr;
        ORRERY_CUDA(cudaMallocFromPoolAsync(&rest, static_cast<std::size_t>(size - bytes), pool_, s));
        blocks.push_front({rest, size - bytes});
      }
      bytes -= std::min(bytes, size);
    }
  }

  // The cached plan of a GEMM; FP8 shapes cuBLASLt cannot run (k not a multiple of 16, m of 8; Transformer Engine
  // pads them) run in bf16, with a note.
  const LtMatmul& matmul(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, const std::string& dtype) {
    const auto key = std::make_tuple(m, n, k, batch, dtype);
    auto it = cache_.find(key);
    if (it != cache_.end()) return *it->second;
    std::unique_ptr<LtMatmul> plan = LtMatmul::plan(lt_, m, n, k, batch, dtype, kWorkspace);
    if (!plan && dtype == "fp8") {
      std::fprintf(stderr, "orrery-execute: FP8 GEMM %lld x %lld x %lld unsupported; timed in bf16\n",
                   static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k));
      plan = LtMatmul::plan(lt_, m, n, k, batch, "bf16", kWorkspace);
    }
    if (!plan) fail_call("cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__, "no algorithm for a workload GEMM");
    return *cache_.emplace(key, std::move(plan)).first->second;
  }

  void gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, const std::string& dtype, cudaStream_t s) {
    matmul(m, n, k, batch, dtype).run(lt_, a_, b_, d_, workspaces_.at(s), s);
  }

  void stream_bytes(std::size_t read, std::size_t written, cudaStream_t s) {
    const std::size_t rv = read / 16, wv = written / 16;
    if (rv == 0 && wv == 0) return;
    const std::size_t n = std::max(rv, wv);
    // Four blocks of 256 threads per SM with grid-stride loops, the grid memory_bench.cu measures bandwidth with.
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, sm_count_ * 4));
    // Each task starts where the last one stopped in the 1 GiB buffers, so small tasks do not find their data in L2.
    const std::size_t cap = kStreamCap / 16;
    const std::size_t offset = cursor_;
    cursor_ = (cursor_ + n) & (cap - 1);
    stream_kernel<<<blocks, 256, 0, s>>>(static_cast<const float4*>(read_), rv, static_cast<float4*>(write_), wv, cap,
                                         offset);
    ORRERY_CUDA(cudaGetLastError());
  }

  void work(const WorkloadTask& t, cudaStream_t s) {
    if (t.op == "gemm") {
      const std::int64_t kernels = t.args[4] ? t.args[3] : 1;
      for (std::int64_t i = 0; i < kernels; ++i) gemm(t.args[0], t.args[1], t.args[2], t.args[4] ? 1 : t.args[3], t.dtype, s);
    } else if (t.op == "attention") {
      const auto shapes = gemm_shapes(t);
      const auto [r, wbytes] = streamed(t);
      gemm(std::get<0>(shapes[0]), std::get<1>(shapes[0]), std::get<2>(shapes[0]), std::get<3>(shapes[0]), "bf16", s);
      stream_bytes(r, wbytes, s);  // softmax (or its backward) over the score matrix
      for (std::size_t i = 1; i < shapes.size(); ++i) {
        gemm(std::get<0>(shapes[i]), std::get<1>(shapes[i]), std::get<2>(shapes[i]), std::get<3>(shapes[i]), "bf16", s);
      }
    } else if (t.op == "memory") {
      stream_bytes(static_cast<std::size_t>(t.args[0]), static_cast<std::size_t>(t.args[1]), s);
    } else if (t.op == "sync") {
      ORRERY_CUDA(cudaStreamSynchronize(s));
    }
  }

  const WorkloadFile& w_;
  cublasLtHandle_t lt_ = nullptr;
  std::map<cudaStream_t, void*> workspaces_;
  cudaMemPool_t pool_ = nullptr;
  cudaStream_t memory_stream_ = nullptr, origin_stream_ = nullptr;
  cudaEvent_t origin_ = nullptr;
  std::size_t cursor_ = 0;
  std::size_t sm_count_ = 1;
  void *a_ = nullptr, *b_ = nullptr, *d_ = nullptr, *read_ = nullptr, *write_ = nullptr;
  std::map<std::string, cudaStream_t> streams_;
  std::map<std::string, std::deque<std::pair<void*, std::int64_t>>> live_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string>, std::unique_ptr<LtMatmul>>
      cache_;
};

}  // namespace

Execution execute_workload(const WorkloadFile& w, int repeat) {
  Runner runner(w);
  Execution last;
  for (int r = 0; r < std::max(repeat, 1); ++r) last = runner.run();
  cudaDeviceProp prop{};
  ORRERY_CUDA(cudaGetDeviceProperties(&prop, 0));
  last.gpu = prop.name;
  return last;
}

}  // namespace orrery::bench
