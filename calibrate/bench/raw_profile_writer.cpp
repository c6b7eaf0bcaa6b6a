#include "calibrate/bench/raw_profile_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace orrery::bench {

namespace {

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string times(const std::vector<double>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + number(v[i]);
  return out + "]";
}

template <class T, class F>
std::string list(const std::vector<T>& items, F one) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += std::string(i ? ",\n  " : "\n  ") + one(items[i]);
  return out + (items.empty() ? "]" : "\n ]");
}

}  // namespace

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

std::string raw_profile_json(const RawProfile& r) {
  std::ostringstream out;
  out << "{\n \"format\": \"orrery-gpu-raw\",\n \"version\": 1,\n"
      << " \"gpu\": " << json_string(r.gpu) << ",\n \"compute_capability\": " << json_string(r.compute_capability)
      << ",\n \"sm_count\": " << r.sm_count << ",\n \"memory_bytes\": " << r.memory_bytes
      << ",\n \"driver\": " << json_string(r.driver) << ",\n \"cuda_runtime\": " << json_string(r.cuda_runtime)
      << ",\n \"cublaslt\": " << json_string(r.cublaslt) << ",\n \"nccl\": " << json_string(r.nccl)
      << ",\n \"date\": " << json_string(r.date) << ",\n \"host\": " << json_string(r.host)
      << ",\n \"warmup\": " << r.warmup << ",\n \"repetitions\": " << r.repetitions << ",\n";
  out << " \"gemm\": " << list(r.gemm, [](const RawGemm& g) {
    return "{\"m\": " + std::to_string(g.shape.m) + ", \"n\": " + std::to_string(g.shape.n) +
           ", \"k\": " + std::to_string(g.shape.k) + ", \"dtype\": " + json_string(g.shape.dtype) +
           ", \"layout\": " + json_string(g.layout) + ", \"workspace_bytes\": " + std::to_string(g.workspace_bytes) +
           ", \"times_s\": " + times(g.seconds) + "}";
  }) << ",\n";
  out << " \"memory\": " << list(r.memory, [](const RawMemory& m) {
    return "{\"kind\": " + json_string(m.what.kind) + ", \"bytes\": " + std::to_string(m.what.bytes) +
           ", \"times_s\": " + times(m.seconds) + "}";
  }) << ",\n";
  out << " \"launch\": {\"kernel_s\": " << times(r.launch_kernel_s) << ", \"host_s\": " << times(r.launch_host_s)
      << "},\n";
  out << " \"collectives\": " << list(r.collectives, [](const RawCollective& c) {
    return "{\"op\": " + json_string(c.what.op) + ", \"ranks\": " + std::to_string(c.ranks) +
           ", \"nodes\": " + std::to_string(c.nodes) + ", \"bytes\": " + std::to_string(c.what.bytes) +
           ", \"times_s\": " + times(c.seconds) + "}";
  }) << ",\n";
  out << " \"skipped\": " << list(r.skipped, [](const RawSkip& s) {
    return "{\"what\": " + json_string(s.what) + ", \"why\": " + json_string(s.why) + "}";
  }) << "\n}\n";
  return out.str();
}

}  // namespace orrery::bench
