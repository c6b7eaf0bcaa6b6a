#include "hardware/gpu_profile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cctype>

#include "models/embedded_file.h"
#include "models/error.h"
#include "models/json_fields.h"
#include "models/physical_bounds.h"
#include "models/units.h"

namespace orrery {

namespace {


const nlohmann::json& list(FieldReader& in, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json* v = in.raw(key);
  if (!v) return empty;
  if (!v->is_array()) throw Error::invalid(in.field(key), describe_json(*v), "must be a list of samples");
  return *v;
}

// The GPU model in a device or preset name: its first word with a digit, upper-cased ("H200" in both CUDA's
// "NVIDIA H200" and the preset's "NVIDIA H200 SXM 141GB").
std::string gpu_model_word(const std::string& name) {
  std::string word, out;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    const char c = i < name.size() ? name[i] : ' ';
    if (c == ' ' || c == '-' || c == '_') {
      if (out.empty() && word.find_first_of("0123456789") != std::string::npos) out = word;
      word.clear();
    } else {
      word += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

}  // namespace

bool same_gpu_model(const std::string& device_name, const GpuSpec& gpu) {
  const std::string model = gpu_model_word(device_name);
  return device_name == gpu.name || device_name == gpu.display_name ||
         (!model.empty() && (model == gpu_model_word(gpu.display_name) || model == gpu_model_word(gpu.name)));
}

DType dtype_named(const std::string& name, const std::string& field) {
  for (DType d : {DType::kFp32, DType::kTf32, DType::kFp16, DType::kBf16, DType::kFp8}) {
    if (name == to_string(d)) return d;
  }
  throw Error::invalid(field, name, "must be one of fp32, tf32, fp16, bf16, fp8");
}

void require_format(FieldReader& in, const std::string& format, const std::string& written_by) {
  const std::string found = in.require_string("format");
  require(found == format, in.field("format"), found, fmt::format("must be \"{}\" ({})", format, written_by));
  const std::int64_t version = in.require_int("version", 1, 1000);
  require(version == 1, in.field("version"), std::to_string(version), "must be 1 (the format this build reads)");
}

AttentionSample read_attention_shape(FieldReader& r) {
  AttentionSample s;
  s.batch = r.require_int("batch", 1, INT32_MAX);
  s.heads = r.require_int("heads", 1, 1 << 16);
  s.kv_heads = r.int_or("kv_heads", s.heads, 1, s.heads);
  require(s.heads % s.kv_heads == 0, r.field("kv_heads"), std::to_string(s.kv_heads),
          fmt::format("must divide heads ({})", s.heads));
  s.seq = r.require_int("seq", 1, INT32_MAX);
  s.head_dim = r.require_int("head_dim", 1, 1 << 12);
  s.causal = r.bool_or("causal", true);
  return s;
}

CollectiveKind collective_kind_named(const std::string& op, const std::string& field) {
  for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                           CollectiveKind::kAllToAll, CollectiveKind::kSendRecv}) {
    if (op == to_string(k)) return k;
  }
  throw Error::invalid(field, op, "must be all_reduce, all_gather, reduce_scatter, all_to_all or send_recv");
}

bool is_memory_sample_kind(const std::string& kind) {
  if (kind == "elementwise" || kind == "reduction") return true;
  for (int k = 0; k <= static_cast<int>(ElementwiseKernel::kFusedAdamW); ++k) {
    if (kind == profile_kind(static_cast<ElementwiseKernel>(k))) return true;
  }
  return false;
}

GpuProfile parse_gpu_profile(const nlohmann::json& doc, const std::string& path) {
  FieldReader in(doc, path);
  require_format(in, "orrery-gpu-profile", "orrery calibrate fit or import-nccl-tests");
  GpuProfile p;
  p.gpu = in.require_string("gpu");
  p.driver = in.optional_string("driver").value_or("");
  p.cuda = in.optional_string("cuda").value_or("");
  p.date = in.optional_string("date").value_or("");
  p.source = in.optional_string("source").value_or("");
  in.allow("notes");
  in.allow("raw");  // the raw repetitions, kept for reference
  const nlohmann::json& gemm = list(in, "gemm");
  for (std::size_t i = 0; i < gemm.size(); ++i) {
    FieldReader g(gemm[i], fmt::format("{}.gemm[{}]", path, i));
    GemmSample s;
    s.m = g.require_int("m", 1, INT32_MAX);
    s.n = g.require_int("n", 1, INT32_MAX);
    s.k = g.require_int("k", 1, INT32_MAX);
    s.dtype = dtype_named(g.require_string("dtype"), g.field("dtype"));
    s.seconds = g.require_double("seconds", bounds::kMeasuredSeconds);
    g.allow("tflops");
    g.reject_unknown();
    // Source: a GEMM of m x n x k does 2mnk FLOPs; faster than the peak bound it was not measured.
    const double tflops = to_tflops(2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) / s.seconds);
    require(tflops <= bounds::kPeakTflops.max, g.field("seconds"), fmt::format("{}", s.seconds),
            fmt::format("would be {:.4g} TFLOP/s (2mnk / seconds), above the GPU peak bound of {} TFLOP/s ({})", tflops,
                        bounds::kPeakTflops.max, bounds::kPeakTflops.why));
    for (const GemmSample& o : p.gemm) {
      require(!(o.m == s.m && o.n == s.n && o.k == s.k && o.dtype == s.dtype), g.path(), "a repeated shape",
              "measures a GEMM an earlier sample measured");
    }
    p.gemm.push_back(s);
  }
  const nlohmann::json& memory = list(in, "memory");
  for (std::size_t i = 0; i < memory.size(); ++i) {
    FieldReader m(memory[i], fmt::format("{}.memory[{}]", path, i));
    CopySample s;
    s.kind = m.optional_string("kind").value_or("copy");
    require(is_memory_sample_kind(s.kind), m.field("kind"), s.kind,
            "must be copy, elementwise, reduction or a PyTorch kernel family (pytorch_vectorized, pytorch_cast, ...)");
    s.bytes = m.require_int("bytes", 1, INT64_MAX);
    s.seconds = m.require_double("seconds", bounds::kMeasuredSeconds);
    m.allow("gb_s");
    m.reject_unknown();
    p.memory.push_back(s);
  }
  const nlohmann::json& attention = list(in, "attention");
  for (std::size_t i = 0; i < attention.size(); ++i) {
    FieldReader a(attention[i], fmt::format("{}.attention[{}]", path, i));
    AttentionSample s = read_attention_shape(a);
    s.backward = a.bool_or("backward", false);
    s.dtype = dtype_named(a.require_string("dtype"), a.field("dtype"));
    s.seconds = a.require_double("seconds", bounds::kMeasuredSeconds);
    a.allow("tflops");
    a.reject_unknown();
    p.attention.push_back(s);
  }
  if (const nlohmann::json* launch = in.raw("launch")) {
    FieldReader l(*launch, in.field("launch"));
    p.launch_kernel = l.double_or("kernel_s", 0, bounds::kLaunchSeconds);
    p.launch_host = l.double_or("host_s", 0, bounds::kLaunchSeconds);
    l.reject_unknown();
  }
  const nlohmann::json& fitted = list(in, "fitted");
  for (std::size_t i = 0; i < fitted.size(); ++i) {
    FieldReader f(fitted[i], fmt::format("{}.fitted[{}]", path, i));
    FittedRate r;
    r.what = f.require_string("what");
    r.rate = f.require_double("rate", true);
    r.overhead = f.double_or("overhead_s", 0);
    require(r.overhead >= 0, f.field("overhead_s"), fmt::format("{}", r.overhead), "must not be negative");
    r.samples = static_cast<int>(f.int_or("samples", 0, 0, INT32_MAX));
    f.reject_unknown();
    p.fitted.push_back(r);
  }
  const nlohmann::json& collectives = list(in, "collectives");
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    FieldReader c(collectives[i], fmt::format("{}.collectives[{}]", path, i));
    CollectiveSample s;
    s.kind = collective_kind_named(c.require_string("op"), c.field("op"));
    s.ranks = static_cast<int>(c.require_int("ranks", 1, 1 << 20));
    s.nodes = static_cast<int>(c.require_int("nodes", 1, 1 << 20));
    s.bytes = c.require_int("bytes", 1, INT64_MAX);
    s.seconds = c.require_double("seconds", bounds::kMeasuredSeconds);
    s.source = c.optional_string("source").value_or("");
    c.allow("bus_gb_s");
    c.reject_unknown();
    p.collectives.push_back(s);
  }
  in.reject_unknown();
  return p;
}

nlohmann::json gpu_profile_json(const GpuProfile& p) {
  nlohmann::json gemm = nlohmann::json::array(), memory = nlohmann::json::array(), coll = nlohmann::json::array();
  for (const GemmSample& s : p.gemm) {
    gemm.push_back({{"m", s.m}, {"n", s.n}, {"k", s.k}, {"dtype", to_string(s.dtype)}, {"seconds", s.seconds}});
  }
  for (const CopySample& s : p.memory) {
    memory.push_back({{"kind", s.kind}, {"bytes", s.bytes}, {"seconds", s.seconds}});
  }
  nlohmann::json attention = nlohmann::json::array(), fitted = nlohmann::json::array();
  for (const AttentionSample& s : p.attention) {
    attention.push_back({{"batch", s.batch}, {"heads", s.heads}, {"kv_heads", s.kv_heads}, {"seq", s.seq},
                         {"head_dim", s.head_dim}, {"causal", s.causal}, {"backward", s.backward},
                         {"dtype", to_string(s.dtype)}, {"seconds", s.seconds}});
  }
  for (const FittedRate& r : p.fitted) {
    fitted.push_back({{"what", r.what}, {"rate", r.rate}, {"overhead_s", r.overhead}, {"samples", r.samples}});
  }
  for (const CollectiveSample& s : p.collectives) {
    coll.push_back({{"op", to_string(s.kind)},
                    {"ranks", s.ranks},
                    {"nodes", s.nodes},
                    {"bytes", s.bytes},
                    {"seconds", s.seconds},
                    {"bus_gb_s", static_cast<double>(s.bytes) * bus_bandwidth_factor(s.kind, s.ranks) / s.seconds / 1e9},
                    {"source", s.source}});
  }
  nlohmann::json out = {{"format", "orrery-gpu-profile"}, {"version", 1},    {"gpu", p.gpu},
                        {"driver", p.driver},             {"cuda", p.cuda},   {"date", p.date},
                        {"source", p.source},             {"gemm", gemm},     {"memory", memory},
                        {"attention", attention},         {"collectives", coll}};
  if (p.launch_kernel > 0 || p.launch_host > 0) {
    out["launch"] = {{"kernel_s", p.launch_kernel}, {"host_s", p.launch_host}};
  }
  if (!fitted.empty()) out["fitted"] = fitted;
  return out;
}

std::span<const EmbeddedFile> embedded_gpu_profiles();  // generated by cmake/EmbedJson.cmake

std::shared_ptr<const GpuProfile> builtin_gpu_profile(const std::string& name) {
  for (const EmbeddedFile& f : embedded_gpu_profiles()) {
    if (f.name != name) continue;
    auto p = std::make_shared<GpuProfile>(
        parse_gpu_profile(parse_json_text(std::string(f.text), "hardware/profiles/" + name + ".json"), name));
    p->file = "built-in profile " + name;
    return p;
  }
  return nullptr;
}

std::vector<std::string> builtin_gpu_profile_names() {
  std::vector<std::string> out;
  for (const EmbeddedFile& f : embedded_gpu_profiles()) out.emplace_back(f.name);
  return out;
}

CostParams cost_params_with_profile(const std::string& file) {
  CostParams params = default_cost_params();
  if (!file.empty()) params.profile = std::make_shared<const GpuProfile>(load_gpu_profile(file));
  return params;
}

GpuProfile load_gpu_profile(const std::string& file) {
  GpuProfile p = parse_gpu_profile(read_json_file(file, "--profile"), file);
  p.file = file;
  return p;
}

}  // namespace orrery
