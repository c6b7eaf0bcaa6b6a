// orrery-calibrate: measures one GPU (and its local NCCL collectives) over a calibration plan and writes the raw
// measurements ("orrery-gpu-raw", calibrate/bench/raw_profile_writer.h). `orrery calibrate fit RAW.json` turns them
// into the profile the cost models read.
//
//   orrery-calibrate --plan calibrate/plans/default.plan --out raw.json [--warmup 5] [--repetitions 30]
//                    [--only gemm,memory,launch,collectives] [--device 0] [--max-gemm-gib 16]
//
// Exit status: 0 measured and written; 1 a CUDA, cuBLASLt or NCCL call failed (the message names it); 2 bad
// arguments or plan. Arguments are parsed by hand so that the program builds with the CUDA toolkit alone.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "calibrate/bench/bench_plan.h"
#include "calibrate/bench/raw_profile_writer.h"
#include "calibrate/cuda/gemm_bench.h"
#include "calibrate/cuda/memory_bench.h"
#include "models/output_file.h"
#ifdef ORRERY_WITH_NCCL
#include "calibrate/cuda/nccl_bench.h"
#endif

namespace {

using namespace orrery::bench;

struct Args {
  std::string plan, out;
  TimingOptions timing;
  std::set<std::string> only{"gemm", "memory", "launch", "collectives"};
  int device = 0;
  double max_gemm_gib = 16;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "orrery-calibrate: " << why
            << "\nusage: orrery-calibrate --plan FILE --out RAW.json [--warmup N] [--repetitions N]"
               " [--only gemm,memory,launch,collectives] [--device D] [--max-gemm-gib G]\n";
  std::exit(2);
}

int whole(const std::string& flag, const std::string& v, int lo, int hi) {
  std::size_t used = 0;
  int x = 0;
  try {
    x = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || x < lo || x > hi) {
    usage(flag + " (" + v + ") must be a whole number in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << "orrery-calibrate: measures GEMMs, memory kernels, launches and NCCL collectives\n"
                   "usage: orrery-calibrate --plan FILE --out RAW.json [--warmup N] [--repetitions N]"
                   " [--only gemm,memory,launch,collectives] [--device D] [--max-gemm-gib G]\n";
      std::exit(0);
    }
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string v = argv[++i];
    if (flag == "--plan") {
      a.plan = v;
    } else if (flag == "--out") {
      a.out = v;
    } else if (flag == "--warmup") {
      a.timing.warmup = whole(flag, v, 0, 1000);
    } else if (flag == "--repetitions") {
      a.timing.repetitions = whole(flag, v, 1, 10000);
    } else if (flag == "--device") {
      a.device = whole(flag, v, 0, 255);
    } else if (flag == "--max-gemm-gib") {
      a.max_gemm_gib = whole(flag, v, 1, 1 << 20);
    } else if (flag == "--only") {
      a.only.clear();
      std::istringstream parts(v);
      std::string part;
      while (std::getline(parts, part, ',')) {
        if (part != "gemm" && part != "memory" && part != "launch" && part != "collectives") {
          usage("--only (" + part + ") must list gemm, memory, launch or collectives");
        }
        a.only.insert(part);
      }
    } else {
      usage("unknown option '" + flag + "'");
    }
  }
  if (a.plan.empty()) usage("--plan is required");
  if (a.out.empty()) usage("--out is required");
  try {
    orrery::check_output_path("--out", a.out);  // before the measurement, not after it
  } catch (const std::exception& e) {
    usage(e.what());
  }
  return a;
}

std::string version_string(int v, int major_div, int minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / minor_div);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

void progress(const std::string& what, const std::vector<double>& seconds) {
  std::fprintf(stderr, "  %-48s median %10.3f us\n", what.c_str(), median(seconds) * 1e6);
}

RawProfile measure(const Args& args, const BenchPlan& plan) {
  RawProfile raw;
  ORRERY_CUDA(cudaSetDevice(args.device));
  cudaDeviceProp prop{};
  ORRERY_CUDA(cudaGetDeviceProperties(&prop, args.device));
  int driver = 0, runtime = 0, nccl = 0;
  ORRERY_CUDA(cudaDriverGetVersion(&driver));
  ORRERY_CUDA(cudaRuntimeGetVersion(&runtime));
#ifdef ORRERY_WITH_NCCL
  ORRERY_NCCL(ncclGetVersion(&nccl));
#endif
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  raw.gpu = prop.name;
  raw.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  raw.sm_count = prop.multiProcessorCount;
  raw.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  raw.driver = version_string(driver, 1000, 10);
  raw.cuda_runtime = version_string(runtime, 1000, 10);
  raw.cublaslt = std::to_string(cublasLtGetVersion());
  raw.nccl = nccl ? std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." + std::to_string(nccl % 100)
                  : "not built with NCCL";
  raw.date = utc_now();
  raw.host = host;
  raw.warmup = args.timing.warmup;
  raw.repetitions = args.timing.repetitions;
  std::fprintf(stderr, "orrery-calibrate: %s (cc %s, %d SMs), driver %s, runtime %s, cuBLASLt %s, NCCL %s\n",
               raw.gpu.c_str(), raw.compute_capability.c_str(), raw.sm_count, raw.driver.c_str(),
               raw.cuda_runtime.c_str(), raw.cublaslt.c_str(), raw.nccl.c_str());

  cudaStream_t stream = nullptr;
  ORRERY_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (args.only.count("launch") && plan.launch) {
    raw.launch_kernel_s = launch_gpu_seconds(stream, args.timing);
    raw.launch_host_s = launch_host_seconds(stream, args.timing);
    progress("launch (GPU, back to back)", raw.launch_kernel_s);
    progress("launch (host call)", raw.launch_host_s);
  }
  if (args.only.count("memory")) {
    for (const PlanMemory& m : plan.memory) {
      if (static_cast<double>(m.bytes) > 0.4 * static_cast<double>(prop.totalGlobalMem)) {
        raw.skipped.push_back({"memory " + m.kind + " " + std::to_string(m.bytes), "larger than 40% of device memory"});
        continue;
      }
      std::int64_t moved = m.bytes;
      std::vector<double> seconds = run_memory(m, prop.multiProcessorCount, stream, args.timing, &moved);
      raw.memory.push_back({PlanMemory{m.kind, moved}, std::move(seconds)});
      progress("memory " + m.kind + " " + std::to_string(moved), raw.memory.back().seconds);
    }
  }
  if (args.only.count("gemm")) {
    GemmBench gemm(stream);
    const double cap = args.max_gemm_gib * 1073741824.0;
    for (const PlanGemm& g : plan.gemm) {
      const std::string what = "gemm " + std::to_string(g.m) + " " + std::to_string(g.n) + " " +
                               std::to_string(g.k) + " " + g.dtype;
      const std::string why = gemm.unsupported(g, prop.major, prop.minor);
      if (!why.empty()) {
        raw.skipped.push_back({what, why});
        continue;
      }
      if (static_cast<double>(GemmBench::footprint(g)) > cap) {
        raw.skipped.push_back({what, "operands larger than --max-gemm-gib"});
        continue;
      }
      RawGemm r;
      r.shape = g;
      r.workspace_bytes = static_cast<std::int64_t>(gemm.workspace_bytes());
      r.seconds = gemm.run(g, args.timing);
      progress(what, r.seconds);
      raw.gemm.push_back(r);
    }
  }
  ORRERY_CUDA(cudaStreamDestroy(stream));
#ifndef ORRERY_WITH_NCCL
  if (args.only.count("collectives") && !plan.collectives.empty()) {
    raw.skipped.push_back({"collectives", "orrery-calibrate was built without NCCL"});
  }
#else
  if (args.only.count("collectives") && !plan.collectives.empty()) {
    NcclBench nccl_bench;
    for (const PlanCollective& c : plan.collectives) {
      RawCollective r;
      r.what = c;
      r.ranks = nccl_bench.ranks();
      r.seconds = nccl_bench.run(c, args.timing, &r.what.bytes);
      progress("collective " + c.op + " " + std::to_string(c.bytes) + " x" + std::to_string(r.ranks), r.seconds);
      raw.collectives.push_back(r);
    }
  }
#endif
  return raw;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  BenchPlan plan;
  try {
    std::ifstream in(args.plan);
    if (!in) usage("--plan: cannot read '" + args.plan + "'");
    plan = parse_bench_plan(in, args.plan);
  } catch (const std::invalid_argument& e) {
    std::cerr << "orrery-calibrate: " << e.what() << "\n";
    return 2;
  }
  try {
    const RawProfile raw = measure(args, plan);
    orrery::write_file_whole(args.out, raw_profile_json(raw));  // whole or not at all (models/output_file.h)
    std::fprintf(stderr, "orrery-calibrate: %zu GEMMs, %zu memory kernels, %zu collectives, %zu skipped -> %s\n",
                 raw.gemm.size(), raw.memory.size(), raw.collectives.size(), raw.skipped.size(), args.out.c_str());
  } catch (const std::exception& e) {
    std::cerr << "orrery-calibrate: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
