#include "calibrate/kineto_trace.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <unordered_map>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/text_file.h"

namespace orrery {

namespace {

using json = nlohmann::json;

// The whole file, decompressed when it is gzip (zlib's gzread passes plain files through unchanged).
std::string read_maybe_gzip(const std::string& file) {
  // A device file or a FIFO would be read forever (/dev/zero) or block (a FIFO without a writer).
  require_regular_file(file, "Kineto trace");
  gzFile f = gzopen(file.c_str(), "rb");
  if (!f) throw Error::io(file, "cannot be opened");
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  int err = 0;
  const char* message = gzerror(f, &err);
  const std::string why = n < 0 ? std::string(message) : "";
  gzclose(f);
  if (n < 0) throw Error::io(file, "cannot be read (" + why + ")");
  // zlib reports a stream that ends inside its compressed data as Z_BUF_ERROR once the data runs out.
  if (err == Z_BUF_ERROR) throw Error::io(file, "is a truncated gzip stream (it ends before its compressed data does)");
  return text;
}

bool contains(std::string_view haystack, std::string_view needle) { return haystack.find(needle) != std::string_view::npos; }

double number(const json& e, const char* key, const std::string& where) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number() || !(it->get<double>() >= 0) || !std::isfinite(it->get<double>())) {
    throw Error::invalid(fmt::format("{}.{}", where, key), it == e.end() ? "missing" : describe_json(*it),
                         "must be a non-negative number of microseconds");
  }
  return it->get<double>();
}

std::int64_t int_arg(const json& args, const char* key) {
  const auto it = args.find(key);
  if (it == args.end()) return 0;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number()) return static_cast<std::int64_t>(it->get<double>());
  return 0;
}

std::string string_arg(const json& args, const char* key) {
  const auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

const char* to_string(KernelClass c) {
  switch (c) {
    case KernelClass::kGemm: return "gemm";
    case KernelClass::kAttention: return "attention";
    case KernelClass::kCommunication: return "communication";
    case KernelClass::kOther: return "other";
  }
  return "other";
}

KernelClass classify_kernel(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (contains(lower, "nccl")) return KernelClass::kCommunication;
  // cudnn::fusion kernels are the helpers of cuDNN's fused SDPA backward (compute_dot_do_o, convert_dq_to_16bits,
  // fmha_reduce_head), seen around it in PyTorch 2.11 traces on an H200 (scenarios/measured/h200-2026-11-30).
  for (const char* k : {"flash", "fmha", "attention", "sdpa", "cudnn::fusion"}) {
    if (contains(lower, k)) return KernelClass::kAttention;
  }
  // nvjet_*: the GEMM kernels cuBLAS 12.8+ ships for Hopper and later (nvjet_sm90_tst_128x256_... in the H200 traces).
  for (const char* k : {"gemm", "cutlass", "xmma", "cublas", "wgmma", "nvjet", "_s884", "_s1688", "_s16816", "_h884"}) {
    if (contains(lower, k)) return KernelClass::kGemm;
  }
  return KernelClass::kOther;
}

// What every GPU-side event (kernel, copy, fill) records: name, device, stream, start and duration in seconds.
KinetoKernel gpu_event(const json& e, const json& args, const std::string& where, const std::string& default_name) {
  KinetoKernel k;
  k.name = e.value("name", default_name);
  k.device = static_cast<int>(args.contains("device") ? int_arg(args, "device") : int_arg(e, "pid"));
  k.stream = static_cast<int>(args.contains("stream") ? int_arg(args, "stream") : int_arg(e, "tid"));
  k.start = number(e, "ts", where) * 1e-6;
  k.duration = number(e, "dur", where) * 1e-6;
  return k;
}

KinetoTrace read_kineto_trace(const std::string& file) {
  const json doc = parse_json_text(read_maybe_gzip(file), file);
  const auto events = doc.find("traceEvents");
  if (!doc.is_object() || events == doc.end() || !events->is_array()) {
    throw Error::invalid(file + ".traceEvents",
                         events == doc.end() || !doc.is_object() ? "missing" : describe_json(*events),
                         "must be the list of trace events (a Kineto trace)");
  }
  KinetoTrace t;
  t.file = file;
  if (const auto dp = doc.find("deviceProperties"); dp != doc.end() && dp->is_array() && !dp->empty() &&
                                                     (*dp)[0].is_object()) {
    t.device_name = (*dp)[0].value("name", "");
  }
  if (const auto di = doc.find("distributedInfo"); di != doc.end() && di->is_object()) {
    t.world_size = static_cast<int>(int_arg(*di, "world_size"));
  }
  struct Launch {
    double ts = 0, dur = 0;
    std::int64_t pid = 0, tid = 0;
  };
  std::unordered_map<std::int64_t, Launch> launch_us;  // correlation id -> CPU launch
  struct LayerRange {
    double ts = 0, end = 0;
    std::int64_t pid = 0, tid = 0;
    int layer = -1;
    bool backward = false;
    bool optimizer = false;
  };
  std::vector<LayerRange> layer_ranges;
  std::vector<std::pair<double, std::size_t>> kernel_launch, copy_launch;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const std::string where = fmt::format("{}.traceEvents[{}]", file, i);
    const json empty = json::object();
    const json& args = e.contains("args") && e["args"].is_object() ? e["args"] : empty;
    if (cat == "user_annotation") {
      const std::string name = e.value("name", "");
      if (name.rfind("ProfilerStep#", 0) == 0) {
        t.steps.push_back({name, number(e, "ts", where) * 1e-6, number(e, "dur", where) * 1e-6});
      } else if (name.rfind("Optimizer.step#", 0) == 0) {
        const double ts = number(e, "ts", where);
        layer_ranges.push_back({ts, ts + number(e, "dur", where), int_arg(e, "pid"), int_arg(e, "tid"), -1, false, true});
      } else if (name.rfind("orrery.layer", 0) == 0) {
        const std::size_t dot = name.find('.', 12);
        const std::string phase = dot == std::string::npos ? "" : name.substr(dot + 1);
        int layer = -1;
        try {
          layer = std::stoi(name.substr(12, dot - 12));
        } catch (const std::exception&) {
          layer = -1;
        }
        if (layer >= 0 && (phase == "forward" || phase == "backward")) {
          const double ts = number(e, "ts", where);
          layer_ranges.push_back({ts, ts + number(e, "dur", where), int_arg(e, "pid"), int_arg(e, "tid"), layer,
                                  phase == "backward"});
        }
      }
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (args.contains("correlation")) {
        launch_us[int_arg(args, "correlation")] = {number(e, "ts", where), number(e, "dur", where), int_arg(e, "pid"),
                                                   int_arg(e, "tid")};
      }
    } else if (cat == "gpu_memcpy" || cat == "gpu_memset") {
      t.copies.push_back(gpu_event(e, args, where, cat));
      copy_launch.emplace_back(static_cast<double>(int_arg(args, "correlation")), t.copies.size() - 1);
    } else if (cat == "kernel") {
      KinetoKernel k = gpu_event(e, args, where, "");
      k.kind = classify_kernel(k.name);
      k.collective = string_arg(args, "Collective name");
      k.in_elements = std::max<std::int64_t>(0, int_arg(args, "In msg nelems"));
      k.group_size = static_cast<int>(int_arg(args, "Group size"));
      k.dtype = string_arg(args, "dtype");
      const std::int64_t corr = int_arg(args, "correlation");
      t.kernels.push_back(std::move(k));
      kernel_launch.emplace_back(static_cast<double>(corr), t.kernels.size() - 1);
    }
  }
  std::sort(t.steps.begin(), t.steps.end(), [](const KinetoStep& a, const KinetoStep& b) { return a.start < b.start; });
  // A kernel or copy belongs to the step whose CPU window holds its launch (its correlated runtime call); without
  // one, to the step whose window holds its own start.
  const auto attribute = [&](KinetoKernel& k, std::int64_t corr) {
    const auto it = launch_us.find(corr);
    const Seconds at = it != launch_us.end() ? it->second.ts * 1e-6 : k.start;
    for (std::size_t s = 0; s < t.steps.size(); ++s) {
      if (at >= t.steps[s].start && at < t.steps[s].start + t.steps[s].duration) k.step = static_cast<int>(s);
    }
    if (it == launch_us.end()) return;
    for (const LayerRange& r : layer_ranges) {  // innermost wins: ranges of one thread do not overlap
      if (r.optimizer) continue;
      if (r.pid == it->second.pid && r.tid == it->second.tid && it->second.ts >= r.ts && it->second.ts < r.end) {
        k.layer = r.layer;
        k.backward = r.backward;
      }
    }
  };
  for (const auto& [corr, index] : kernel_launch) attribute(t.kernels[index], static_cast<std::int64_t>(corr));
  for (const auto& [corr, index] : copy_launch) attribute(t.copies[index], static_cast<std::int64_t>(corr));
  // Each range's launches: the runtime calls of its thread inside it whose kernel the trace holds, one per library
  // call. A call's helper work belongs to it: copies and fills (cuBLASLt's workspace memset before a GEMM), cuBLASLt's
  // split-K reduction kernel, and the kernels after the first of a run of cuDNN kernels (SDPA's backward launches
  // five: its dO.O reduction, the main kernel, dQ's conversion...).
  enum class Library : std::uint8_t { kOther, kCublasHelper, kCudnn };
  struct Call {
    Launch at;
    Library library = Library::kOther;
  };
  std::vector<Call> calls;
  for (const auto& [corr, index] : kernel_launch) {
    const auto it = launch_us.find(static_cast<std::int64_t>(corr));
    if (it == launch_us.end()) continue;
    const std::string& name = t.kernels[index].name;
    const Library library = name.find("splitKreduce") != std::string::npos ? Library::kCublasHelper
                            : name.find("cudnn") != std::string::npos      ? Library::kCudnn
                                                                           : Library::kOther;
    calls.push_back({it->second, library});
  }
  std::sort(calls.begin(), calls.end(), [](const Call& x, const Call& y) { return x.at.ts < y.at.ts; });
  std::vector<Launch> launches;
  std::unordered_map<std::int64_t, bool> in_cudnn_run;  // per thread: its previous launch was a cuDNN kernel
  for (const Call& c : calls) {
    bool& run = in_cudnn_run[c.at.tid];
    const bool helper = c.library == Library::kCublasHelper || (c.library == Library::kCudnn && run);
    if (!helper) launches.push_back(c.at);
    run = c.library == Library::kCudnn;
  }
  std::sort(layer_ranges.begin(), layer_ranges.end(), [](const LayerRange& a, const LayerRange& b) { return a.ts < b.ts; });
  for (const LayerRange& r : layer_ranges) {
    KinetoRange out;
    out.what = r.optimizer ? KinetoRange::What::kOptimizer
                           : (r.backward ? KinetoRange::What::kBackward : KinetoRange::What::kForward);
    out.layer = r.layer;
    out.start = r.ts * 1e-6;
    out.duration = (r.end - r.ts) * 1e-6;
    const auto first = std::lower_bound(launches.begin(), launches.end(), r.ts,
                                        [](const Launch& l, double ts) { return l.ts < ts; });
    for (auto it = first; it != launches.end() && it->ts < r.end; ++it) {
      if (it->pid != r.pid || it->tid != r.tid) continue;
      ++out.launches;
      out.longest_launch = std::max(out.longest_launch, it->dur * 1e-6);
      out.launch_calls.push_back(it->dur * 1e-6);
    }
    t.ranges.push_back(out);
  }
  return t;
}

HostIssueRates host_issue_rates(const std::vector<KinetoTrace>& traces, Seconds blocked_call) {
  std::array<std::vector<double>, 3> per_launch;
  std::vector<double> calls;
  for (const KinetoTrace& t : traces) {
    for (const KinetoRange& r : t.ranges) {
      if (r.launches == 0 || r.longest_launch > blocked_call) continue;
      per_launch[static_cast<std::size_t>(r.what)].push_back(r.duration / r.launches);
      calls.insert(calls.end(), r.launch_calls.begin(), r.launch_calls.end());
    }
  }
  const auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  HostIssueRates out;
  out.forward = median(per_launch[0]);
  out.backward = median(per_launch[1]);
  out.optimizer = median(per_launch[2]);
  out.launch_call = median(calls);
  out.forward_ranges = static_cast<int>(per_launch[0].size());
  out.backward_ranges = static_cast<int>(per_launch[1].size());
  out.optimizer_ranges = static_cast<int>(per_launch[2].size());
  return out;
}

StepKernelTime step_kernel_time(const KinetoTrace& trace, int step) {
  StepKernelTime out;
  for (const KinetoKernel& k : trace.kernels) {
    if (k.step != step) continue;
    out.by_class[static_cast<int>(k.kind)] += k.duration;
    ++out.kernels;
  }
  for (const KinetoKernel& c : trace.copies) {
    if (c.step == step) out.copies += c.duration;
  }
  return out;
}

}  // namespace orrery
