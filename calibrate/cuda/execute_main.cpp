// orrery-execute: the reference executor. Runs a one-GPU workload (`orrery calibrate export-workload`) on the GPU
// and writes the measured timeline in the simulator's format, for `orrery compare --measured`.
//
//   orrery-execute --workload W.txt --out TIMELINE.json [--trace CHROME.json] [--repeat 3]
//
// Exit status: 0 done; 1 a CUDA or cuBLASLt call failed (the message names it); 2 bad arguments or workload file.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "calibrate/bench/raw_profile_writer.h"
#include "calibrate/bench/workload_file.h"
#include "calibrate/cuda/executor.h"
#include "models/output_file.h"

namespace {

using namespace orrery::bench;

[[noreturn]] void usage(const std::string& why, int status = 2) {
  (status ? std::cerr : std::cout) << "orrery-execute: " << why
                                   << "\nusage: orrery-execute --workload W.txt --out TIMELINE.json [--trace CHROME.json]"
                                      " [--repeat N]\n";
  std::exit(status);
}

std::string kind_of(const WorkloadTask& t) {
  if (t.op == "memory") return t.phase == "optimizer" ? "optimizer" : "elementwise";
  if (t.op == "sync") return "host_sync";
  if (t.op == "skip") return "collective";
  return t.op;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string workload, out, trace;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") usage("runs a one-GPU workload graph task by task and times it", 0);
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string v = argv[++i];
    if (flag == "--workload") {
      workload = v;
    } else if (flag == "--out") {
      out = v;
    } else if (flag == "--trace") {
      trace = v;
    } else if (flag == "--repeat") {
      try {
        repeat = std::stoi(v);
      } catch (const std::exception&) {
        repeat = 0;
      }
      if (repeat < 1 || repeat > 100) usage("--repeat (" + v + ") must be a whole number in 1..100");
    } else {
      usage("unknown option '" + flag + "'");
    }
  }
  if (workload.empty() || out.empty()) usage("--workload and --out are required");
  try {
    // Before the GPU work: an output that cannot be written is refused now, not after the measurement.
    orrery::check_output_path("--out", out);
    if (!trace.empty()) orrery::check_output_path("--trace", trace);
  } catch (const std::exception& e) {
    usage(e.what());
  }
  WorkloadFile w;
  try {
    std::ifstream in(workload);
    if (!in) usage("--workload: cannot read '" + workload + "'");
    w = parse_workload(in, workload);
  } catch (const std::invalid_argument& e) {
    std::cerr << "orrery-execute: " << e.what() << "\n";
    return 2;
  }
  try {
    const Execution x = execute_workload(w, repeat);
    double end = 0;
    long long statics = 0;
    for (long long b : w.static_bytes) statics += b;
    std::ostringstream tl, ct;
    tl << "{\"source\": " << json_string("orrery-execute on " + x.gpu) << ", \"device\": " << json_string(x.gpu)
       << ", \"peak_memory_bytes\": " << x.peak_bytes << ",\n \"tasks\": [";
    ct << "{\"traceEvents\": [";
    for (std::size_t i = 0; i < w.tasks.size(); ++i) {
      const WorkloadTask& t = w.tasks[i];
      const ExecutedTask& e = x.tasks[i];
      end = std::max(end, e.end_s);
      tl << (i ? ",\n  " : "\n  ") << "{\"rank\": 0, \"stream\": " << json_string(t.stream) << ", \"kind\": "
         << json_string(kind_of(t)) << ", \"name\": " << json_string(t.name) << ", \"stage\": 0, \"layer\": " << t.layer
         << ", \"microbatch\": " << t.microbatch << ", \"phase\": " << json_string(t.phase) << ", \"start_s\": "
         << number(e.start_s) << ", \"end_s\": " << number(e.end_s) << "}";
      ct << (i ? ",\n" : "\n") << "{\"ph\": \"X\", \"pid\": 0, \"tid\": " << json_string(t.stream) << ", \"name\": "
         << json_string(t.name) << ", \"cat\": " << json_string(t.phase) << ", \"ts\": " << number(e.start_s * 1e6)
         << ", \"dur\": " << number((e.end_s - e.start_s) * 1e6) << "}";
    }
    tl << "\n ],\n \"memory\": [{\"rank\": 0, \"stage\": 0, \"samples\": [[0, " << statics << "], [" << number(end)
       << ", " << x.peak_bytes << "]]}]}\n";
    ct << "\n]}\n";
    orrery::write_file_whole(out, tl.str());  // whole or not at all (models/output_file.h)
    if (!trace.empty()) orrery::write_file_whole(trace, ct.str());
    std::fprintf(stderr, "orrery-execute: %zu tasks on %s, iteration %.6f s, peak %.3f GiB -> %s\n", w.tasks.size(),
                 x.gpu.c_str(), end, static_cast<double>(x.peak_bytes) / 1073741824.0, out.c_str());
  } catch (const std::exception& e) {
    std::cerr << "orrery-execute: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
