#include "calibrate/raw_profile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>

#include "calibrate/bench/raw_profile_writer.h"
#include "models/error.h"
#include "models/json_fields.h"

namespace orrery {

namespace {

using json = nlohmann::json;

// The median of a list of repetition times; every entry must be a positive finite number.
Seconds median_time(FieldReader& in, const char* key) {
  const json* v = in.raw(key);
  if (!v || !v->is_array() || v->empty()) {
    throw Error::invalid(in.field(key), v ? describe_json(*v) : "missing", "must be a non-empty list of seconds");
  }
  std::vector<double> t;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& x = (*v)[i];
    if (!x.is_number() || !(x.get<double>() > 0) || !std::isfinite(x.get<double>())) {
      throw Error::invalid(fmt::format("{}[{}]", in.field(key), i), describe_json(x),
                           "must be a positive, finite number of seconds");
    }
    // No GPU kernel, launch or collective completes in under 100 ns: a smaller figure is a timing error.
    require(x.get<double>() >= 1e-7, fmt::format("{}[{}]", in.field(key), i), describe_json(x),
            "is below 1e-7 s, faster than any GPU operation can complete");
    t.push_back(x.get<double>());
  }
  return bench::median(t);
}

// A GEMM dtype orrery-calibrate measures (FP32 GEMMs run as TF32).
DType gemm_dtype(const std::string& name, const std::string& field) {
  const DType d = dtype_named(name, field);
  require(d != DType::kFp32, field, name, "must be bf16, fp16, tf32 or fp8");
  return d;
}

const json& list(FieldReader& in, const char* key) {
  static const json empty = json::array();
  const json* v = in.raw(key);
  if (!v) return empty;
  if (!v->is_array()) throw Error::invalid(in.field(key), describe_json(*v), "must be a list");
  return *v;
}

using RatePoints = std::map<std::string, std::vector<std::pair<double, double>>>;  // "memory copy" -> (work, s)

// The rest of a memory sample whose kind is read: its size and median time, no other field, no size measured twice;
// added to the profile and, when at least `min_bytes`, to the points of its "memory KIND" rate.
void add_memory_sample(FieldReader& m, const std::string& kind, Bytes min_bytes, GpuProfile& p, RatePoints& points) {
  CopySample s;
  s.kind = kind;
  s.bytes = m.require_int("bytes", 1, INT64_MAX);
  s.seconds = median_time(m, "times_s");
  m.reject_unknown();
  for (const CopySample& o : p.memory) {
    require(!(o.kind == s.kind && o.bytes == s.bytes), m.path(), "a repeated size", "measures a kernel an earlier entry measured");
  }
  p.memory.push_back(s);
  if (s.bytes >= min_bytes) points["memory " + s.kind].emplace_back(static_cast<double>(s.bytes), s.seconds);
}

// A fitted line per rate, errors naming the file.
void append_fits(const RatePoints& points, const std::string& path, GpuProfile& p) {
  for (const auto& [what, pts] : points) {
    try {
      p.fitted.push_back(fit_rate(what, pts));
    } catch (const Error& e) {
      throw Error::invalid(path + ": " + what, e.value(), e.rule());
    }
  }
}

// The optional "gpu" of a file measured beside the raw one must name the same GPU.
void require_same_gpu(FieldReader& in, const GpuProfile& p) {
  if (auto gpu = in.optional_string("gpu"); gpu && !p.gpu.empty()) {
    require(*gpu == p.gpu, in.field("gpu"), *gpu, fmt::format("must be the GPU the raw measurements ran on ({})", p.gpu));
  }
}

void read_attention(const json& doc, const std::string& path, GpuProfile& p) {
  FieldReader in(doc, path);
  require_format(in, "orrery-attention-raw", "tools/calibrate_attention.py");
  require_same_gpu(in, p);
  for (const char* key : {"torch", "cuda", "cudnn", "date", "source", "backend"}) in.optional_string(key);
  in.int_or("warmup", 0, 0, INT32_MAX);
  in.int_or("repetitions", 0, 0, INT32_MAX);
  in.int_or("rotate", 1, 1, INT32_MAX);  // input sets used in turn (L2-cold calls when more than one)
  if (auto hold = in.optional_string("hold")) {  // what held the stream between timed batches
    require(*hold == "gemm" || *hold == "sleep", in.field("hold"), *hold, "must be gemm or sleep");
  }
  const json& samples = list(in, "samples");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    FieldReader s(samples[i], fmt::format("{}.samples[{}]", path, i));
    AttentionSample a = read_attention_shape(s);
    const std::string dtype = s.require_string("dtype");
    require(dtype == "bf16" || dtype == "fp16", s.field("dtype"), dtype, "must be bf16 or fp16 (fused attention)");
    a.dtype = gemm_dtype(dtype, s.field("dtype"));
    for (const AttentionSample& o : p.attention) {
      require(!(o.batch == a.batch && o.heads == a.heads && o.kv_heads == a.kv_heads && o.seq == a.seq &&
                o.head_dim == a.head_dim && o.causal == a.causal && o.dtype == a.dtype),
              fmt::format("{}.samples[{}]", path, i), "a repeated shape", "measures a shape an earlier sample measured");
    }
    AttentionSample forward = a, backward = a;
    forward.seconds = median_time(s, "forward_s");
    backward.backward = true;
    backward.seconds = median_time(s, "backward_s");
    if (auto gqa = s.optional_string("gqa")) {
      require(*gqa == "native" || *gqa == "expanded", s.field("gqa"), *gqa, "must be native or expanded");
    }
    if (auto layout = s.optional_string("layout")) {
      require(*layout == "bshd" || *layout == "bhsd", s.field("layout"), *layout, "must be bshd or bhsd");
    }
    s.int_or("rotate", 1, 1, INT32_MAX);
    if (auto hold = s.optional_string("hold")) {
      require(*hold == "gemm" || *hold == "sleep", s.field("hold"), *hold, "must be gemm or sleep");
    }
    s.allow("kernels");  // the kernel names one call launched: documentation of the backend that ran
    s.reject_unknown();
    p.attention.push_back(forward);
    p.attention.push_back(backward);
  }
  in.reject_unknown();
}

}  // namespace

FittedRate fit_rate(const std::string& what, const std::vector<std::pair<double, double>>& pts) {
  require(!pts.empty(), what, "no samples", "needs at least one throughput-bound sample to fit a rate");
  FittedRate r;
  r.what = what;
  r.samples = static_cast<int>(pts.size());
  double inverse_rate = 0, overhead = 0;
  if (pts.size() >= 2) {
    Eigen::MatrixXd a(static_cast<Eigen::Index>(pts.size()), 2);
    Eigen::VectorXd b(static_cast<Eigen::Index>(pts.size()));
    for (std::size_t i = 0; i < pts.size(); ++i) {
      a(static_cast<Eigen::Index>(i), 0) = 1.0;
      a(static_cast<Eigen::Index>(i), 1) = pts[i].first;
      b(static_cast<Eigen::Index>(i)) = pts[i].second;
    }
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(b);
    overhead = x(0);
    inverse_rate = x(1);
  }
  if (pts.size() < 2 || overhead < 0 || inverse_rate <= 0) {
    // Through the origin: minimise sum (t - w c)^2 -> c = sum(w t) / sum(w^2).
    double wt = 0, ww = 0;
    for (const auto& [w, t] : pts) {
      wt += w * t;
      ww += w * w;
    }
    overhead = 0;
    inverse_rate = wt / ww;
  }
  require(inverse_rate > 0 && std::isfinite(inverse_rate), what, fmt::format("{}", inverse_rate),
          "the fitted time per unit of work must be positive");
  r.rate = 1.0 / inverse_rate;
  r.overhead = overhead;
  return r;
}

GpuProfile fit_raw_profile(const json& raw, const std::string& path, const json* attention,
                           const std::string& attention_path, const RawFitOptions& options) {
  FieldReader in(raw, path);
  require_format(in, "orrery-gpu-raw", "orrery-calibrate --out");
  GpuProfile p;
  p.gpu = in.require_string("gpu");
  require(!p.gpu.empty(), in.field("gpu"), "\"\"", "must name the GPU measured");
  p.driver = in.optional_string("driver").value_or("");
  const std::string runtime = in.optional_string("cuda_runtime").value_or("");
  const std::string cublaslt = in.optional_string("cublaslt").value_or("");
  const std::string nccl = in.optional_string("nccl").value_or("");
  p.cuda = fmt::format("runtime {}, cuBLASLt {}, NCCL {}", runtime, cublaslt, nccl);
  p.date = in.optional_string("date").value_or("");
  const std::string host = in.optional_string("host").value_or("");
  const std::int64_t warmup = in.int_or("warmup", 0, 0, INT32_MAX);
  const std::int64_t reps = in.int_or("repetitions", 0, 0, INT32_MAX);
  in.optional_string("compute_capability");
  in.int_or("sm_count", 0, 0, 1 << 20);
  in.int_or("memory_bytes", 0, 0, INT64_MAX);
  for (const nlohmann::json& skip : list(in, "skipped")) {
    if (!skip.is_object()) throw Error::invalid(in.field("skipped"), describe_json(skip), "must list {what, why} objects");
  }
  p.source = fmt::format("orrery-calibrate on {} ({}), medians of {} CUDA-event-timed repetitions after {} warm-up "
                         "calls, fitted by orrery calibrate fit from {}",
                         host.empty() ? "an unnamed host" : host, p.gpu, reps, warmup, path);

  RatePoints gemm_points, memory_points;
  const json& gemm = list(in, "gemm");
  for (std::size_t i = 0; i < gemm.size(); ++i) {
    FieldReader g(gemm[i], fmt::format("{}.gemm[{}]", path, i));
    GemmSample s;
    s.m = g.require_int("m", 1, INT32_MAX);
    s.n = g.require_int("n", 1, INT32_MAX);
    s.k = g.require_int("k", 1, INT32_MAX);
    s.dtype = gemm_dtype(g.require_string("dtype"), g.field("dtype"));
    s.seconds = median_time(g, "times_s");
    const std::string layout = g.optional_string("layout").value_or("TN");
    require(layout == "TN", g.field("layout"), layout, "must be TN, the layout orrery-calibrate measures");
    g.int_or("workspace_bytes", 0, 0, INT64_MAX);
    g.reject_unknown();
    for (const GemmSample& o : p.gemm) {
      require(!(o.m == s.m && o.n == s.n && o.k == s.k && o.dtype == s.dtype), g.path(), "a repeated shape",
              "measures a GEMM an earlier entry measured");
    }
    p.gemm.push_back(s);
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    if (flops >= options.min_gemm_flops) gemm_points[std::string("gemm ") + to_string(s.dtype)].emplace_back(flops, s.seconds);
  }
  const json& memory = list(in, "memory");
  for (std::size_t i = 0; i < memory.size(); ++i) {
    FieldReader m(memory[i], fmt::format("{}.memory[{}]", path, i));
    const std::string kind = m.require_string("kind");
    require(kind == "copy" || kind == "elementwise" || kind == "reduction", m.field("kind"), kind,
            "must be copy, elementwise or reduction");
    add_memory_sample(m, kind, options.min_memory_bytes, p, memory_points);
  }
  if (const json* launch = in.raw("launch")) {
    FieldReader l(*launch, in.field("launch"));
    for (const char* key : {"kernel_s", "host_s"}) {
      if (!l.has(key)) continue;
      const json* v = l.raw(key);
      if (v->is_array() && v->empty()) continue;  // not measured (`--only` left it out)
      (std::string(key) == "kernel_s" ? p.launch_kernel : p.launch_host) = median_time(l, key);
    }
    l.reject_unknown();
  }
  const json& collectives = list(in, "collectives");
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    FieldReader c(collectives[i], fmt::format("{}.collectives[{}]", path, i));
    CollectiveSample s;
    s.kind = collective_kind_named(c.require_string("op"), c.field("op"));
    s.ranks = static_cast<int>(c.require_int("ranks", 1, 1 << 20));
    s.nodes = static_cast<int>(c.int_or("nodes", 1, 1, 1 << 20));
    require(s.nodes <= s.ranks, c.field("nodes"), std::to_string(s.nodes), fmt::format("must not exceed ranks ({})", s.ranks));
    s.bytes = c.require_int("bytes", 1, INT64_MAX);
    s.seconds = median_time(c, "times_s");
    s.source = "orrery-calibrate " + path;
    c.reject_unknown();
    p.collectives.push_back(s);
  }
  in.reject_unknown();
  if (attention) read_attention(*attention, attention_path, p);
  require(!p.gemm.empty() || !p.memory.empty() || !p.attention.empty() || !p.collectives.empty() ||
              p.launch_kernel > 0,
          path, "no measurements", "must hold at least one GEMM, memory, attention, launch or collective sample");
  append_fits(gemm_points, path, p);
  append_fits(memory_points, path, p);
  return p;
}

void add_pytorch_kernels(const json& doc, const std::string& path, GpuProfile& p, const RawFitOptions& options) {
  FieldReader in(doc, path);
  require_format(in, "orrery-pytorch-kernels-raw", "tools/calibrate_pytorch_kernels.py");
  require_same_gpu(in, p);
  for (const char* key : {"torch", "cuda", "date"}) in.optional_string(key);
  in.int_or("warmup", 0, 0, INT32_MAX);
  in.int_or("repetitions", 0, 0, INT32_MAX);
  RatePoints points;
  const json& memory = list(in, "memory");
  require(!memory.empty(), in.field("memory"), in.has("memory") ? "[]" : "missing",
          "must list the kernel families' samples (tools/calibrate_pytorch_kernels.py writes them)");
  for (std::size_t i = 0; i < memory.size(); ++i) {
    FieldReader m(memory[i], fmt::format("{}.memory[{}]", path, i));
    const std::string kind = m.require_string("kind");
    require(kind.rfind("pytorch_", 0) == 0 && is_memory_sample_kind(kind), m.field("kind"), kind,
            "must be a PyTorch kernel family (pytorch_vectorized, pytorch_cast, pytorch_strided, ...)");
    m.int_or("elements", 0, 0, INT64_MAX);
    m.allow("kernels");  // the kernel names one call launched: documentation of the path PyTorch took
    points["memory " + kind];  // every family gets an entry, so one without a large sample is caught below
    add_memory_sample(m, kind, options.min_memory_bytes, p, points);
  }
  in.reject_unknown();
  for (const auto& [what, pts] : points) {
    require(!pts.empty(), path + ": " + what, fmt::format("no sample of {} MiB or more", options.min_memory_bytes >> 20),
            "must measure each kernel family at a size past the L2 cache, where its rate holds");
  }
  append_fits(points, path, p);
}

}  // namespace orrery
