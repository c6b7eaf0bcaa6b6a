#include "hardware/gpu_profile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/error.h"
#include "models/json_fields.h"

namespace orrery {

namespace {

DType dtype_of(const std::string& name, const std::string& field) {
  for (DType d : {DType::kFp32, DType::kTf32, DType::kFp16, DType::kBf16, DType::kFp8}) {
    if (name == to_string(d)) return d;
  }
  throw Error::invalid(field, name, "must be one of fp32, tf32, fp16, bf16, fp8");
}

const nlohmann::json& list(FieldReader& in, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json* v = in.raw(key);
  if (!v) return empty;
  if (!v->is_array()) throw Error::invalid(in.field(key), describe_json(*v), "must be a list of samples");
  return *v;
}

}  // namespace

GpuProfile parse_gpu_profile(const nlohmann::json& doc, const std::string& path) {
  FieldReader in(doc, path);
  const std::string format = in.require_string("format");
  require(format == "orrery-gpu-profile", in.field("format"), format, "must be \"orrery-gpu-profile\"");
  const std::int64_t version = in.require_int("version", 1, 1000);
  require(version == 1, in.field("version"), std::to_string(version), "must be 1 (the format this build reads)");
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
    s.dtype = dtype_of(g.require_string("dtype"), g.field("dtype"));
    s.seconds = g.require_double("seconds", true);
    g.allow("tflops");
    g.reject_unknown();
    p.gemm.push_back(s);
  }
  const nlohmann::json& memory = list(in, "memory");
  for (std::size_t i = 0; i < memory.size(); ++i) {
    FieldReader m(memory[i], fmt::format("{}.memory[{}]", path, i));
    CopySample s;
    s.bytes = m.require_int("bytes", 1, INT64_MAX);
    s.seconds = m.require_double("seconds", true);
    m.allow("gb_s");
    m.reject_unknown();
    p.memory.push_back(s);
  }
  in.reject_unknown();
  return p;
}

GpuProfile load_gpu_profile(const std::string& file) {
  GpuProfile p = parse_gpu_profile(read_json_file(file, "--profile"), file);
  p.file = file;
  return p;
}

}  // namespace orrery
