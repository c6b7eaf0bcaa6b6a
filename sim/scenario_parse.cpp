// parse_scenario: reads every section of a scenario file strictly, then checks the cross-section rules
// (divisibility, GPU count, features not modelled yet). Defaults are documented in scenarios/README.md.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "models/physical_bounds.h"
#include "models/model_input.h"
#include "sim/option_table.h"
#include "sim/pipeline_layout.h"
#include "sim/scenario.h"
#include "sim/plan/goodput_parse.h"
#include "sim/scenario_validate.h"

namespace orrery {

using nlohmann::json;

namespace {

template <typename Enum, std::size_t N>
Enum parse_enum(FieldReader& in, const char* key, Enum fallback, const std::pair<const char*, Enum> (&names)[N]) {
  auto text = in.optional_string(key);
  if (!text) return fallback;
  std::string known;
  for (const auto& [name, value] : names) {
    if (*text == name) return value;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  throw Error::invalid(in.field(key), fmt::format("\"{}\"", *text), "must be one of: " + known);
}

// Reads a plan size given either by its key or by its file alias (Megatron-LM's argument name), from the option table.
std::optional<std::int64_t> size_with_alias(FieldReader& in, const char* key) {
  const OptionSpec* option = find_option("parallel", key);
  const std::string megatron_name(option ? option->file_alias : std::string_view{});
  auto short_value = in.optional_int(key, 1, limits::kGpus);
  auto long_value = megatron_name.empty() ? std::nullopt : in.optional_int(megatron_name, 1, limits::kGpus);
  if (short_value && long_value) {
    throw Error::invalid(in.field(megatron_name), std::to_string(*long_value),
                         fmt::format("duplicates {}; give one of the two", key));
  }
  return short_value ? short_value : long_value;
}


// training.packed_documents: {"lengths": [...]} or {"distribution": "lognormal", "median": M, "sigma": S, "seed": K}.
PackingSpec parse_packing(const json& value) {
  FieldReader in(value, "training.packed_documents");
  PackingSpec p;
  if (const json* lengths = in.raw("lengths")) {
    if (!lengths->is_array() || lengths->empty()) {
      throw Error::invalid(in.field("lengths"), describe_json(*lengths), "must be a non-empty list of document lengths");
    }
    for (const json& n : *lengths) {
      if (!n.is_number_integer() || n.get<std::int64_t>() < 1 || n.get<std::int64_t>() > limits::kSequence) {
        throw Error::invalid(in.field("lengths"), describe_json(*lengths),
                             "entries must be integers from 1 to " + std::to_string(limits::kSequence) + " tokens");
      }
      p.lengths.push_back(n.get<std::int64_t>());
    }
    if (in.has("distribution")) {
      throw Error::invalid(in.field("distribution"), "given", "cannot be combined with lengths");
    }
  } else {
    const std::string kind = in.require_string("distribution");
    if (kind != "lognormal") throw Error::invalid(in.field("distribution"), kind, "must be lognormal");
    p.median = in.require_double("median", true);
    if (p.median > static_cast<double>(limits::kSequence)) {
      throw Error::invalid(in.field("median"), fmt::format("{}", p.median),
                           fmt::format("must be at most {} tokens", limits::kSequence));
    }
    p.sigma = in.double_or("sigma", 1.0, false);
    require(p.sigma >= 0 && p.sigma <= 4, in.field("sigma"), fmt::format("{}", p.sigma),
            "is the standard deviation of log(length) and must be from 0 to 4");
    p.seed = static_cast<std::uint64_t>(in.int_or("seed", 1, 0, INT32_MAX));
  }
  in.reject_unknown();
  return p;
}

TrainingSpec parse_training(const json& value, const ModelSpec& model) {
  FieldReader in(value, "training");
  TrainingSpec t;
  t.seq_length = in.int_or("seq_length", std::min<std::int64_t>(model.max_position_embeddings, 8192), 1, limits::kSequence);
  t.micro_batch_size = in.int_or("micro_batch_size", 1, 1, limits::kMicroBatch);
  t.global_batch_size = in.int_or("global_batch_size", 0, 1, limits::kGlobalBatch);
  static constexpr std::pair<const char*, Precision> kPrecisions[] = {
      {"bf16", Precision::kBf16}, {"fp16", Precision::kFp16}, {"fp32", Precision::kFp32}, {"fp8", Precision::kFp8}};
  t.precision = parse_enum(in, "precision", Precision::kBf16, kPrecisions);
  // The FP8 settings are for FP8 runs only.
  auto require_fp8 = [&](const char* key) {
    if (t.precision == Precision::kFp8) return;
    throw Error::invalid(in.field(key), fmt::format("\"{}\"", in.optional_string(key).value_or("")),
                         fmt::format("needs training.precision \"fp8\" (the precision is \"{}\")",
                                     to_string(t.precision)));
  };
  if (in.raw("fp8_recipe")) {
    t.fp8_recipe = parse_enum(in, "fp8_recipe", Fp8Recipe::kDelayed, kFp8RecipeNames);
    require_fp8("fp8_recipe");
  }
  if (in.raw("fp8_format")) {
    t.fp8_format = parse_enum(in, "fp8_format", Fp8Format::kHybrid, kFp8FormatNames);
    require_fp8("fp8_format");
  }
  t.recompute = parse_enum(in, "recompute", Recompute::kNone, kRecomputeNames);
  if (const json* modules = in.raw("recompute_modules")) {
    const std::string field = in.field("recompute_modules");
    if (t.recompute != Recompute::kSelective) {
      throw Error::invalid(field, describe_json(*modules),
                           "needs training.recompute \"selective\" (Megatron applies --recompute-modules only with "
                           "--recompute-granularity selective)");
    }
    if (!modules->is_array()) throw Error::invalid(field, describe_json(*modules), "must be a list of module names");
    t.recompute_modules = {};
    t.recompute_modules.core_attn = false;  // the list replaces Megatron's default, not adds to it
    for (const json& m : *modules) {
      const std::string name = m.is_string() ? m.get<std::string>() : describe_json(m);
      const auto* known = std::find_if(std::begin(kRecomputeModuleNames), std::end(kRecomputeModuleNames),
                                       [&](const auto& entry) { return name == entry.first; });
      if (known != std::end(kRecomputeModuleNames)) {
        t.recompute_modules.*(known->second) = true;
      } else {
        std::string names;
        for (const auto& entry : kRecomputeModuleNames) names += std::string(names.empty() ? "" : ", ") + entry.first;
        throw Error::invalid(field, m.is_string() ? "\"" + name + "\"" : name,
                             "must name Megatron-Core recompute modules: " + names);
      }
    }
  }
  // Megatron-Core's full recompute: which layers and how many per checkpoint (TransformerConfig recompute_method,
  // recompute_num_layers), for recompute "full" only.
  static constexpr std::pair<const char*, RecomputeMethod> kMethods[] = {{"uniform", RecomputeMethod::kUniform},
                                                                        {"block", RecomputeMethod::kBlock}};
  const bool method_given = in.has("recompute_method"), layers_given = in.has("recompute_num_layers");
  t.recompute_method = parse_enum(in, "recompute_method", RecomputeMethod::kUniform, kMethods);
  t.recompute_num_layers = static_cast<int>(in.int_or("recompute_num_layers", 1, 0, limits::kLayers));
  if ((method_given || layers_given) && t.recompute != Recompute::kFull) {
    const char* key = method_given ? "recompute_method" : "recompute_num_layers";
    throw Error::invalid(in.field(key), describe_json(*in.raw(key)),
                         fmt::format("needs training.recompute \"full\" (Megatron-Core applies it only with "
                                     "--recompute-granularity full; the recompute is \"{}\")",
                                     to_string(t.recompute)));
  }
  if (t.recompute_method == RecomputeMethod::kUniform && t.recompute_num_layers < 1) {
    throw Error::invalid(in.field("recompute_num_layers"), std::to_string(t.recompute_num_layers),
                         "must be at least 1 with recompute_method \"uniform\" (layers per checkpoint)");
  }
  static constexpr std::pair<const char*, Optimizer> kOptimizers[] = {
      {"adam", Optimizer::kAdam}, {"adamw", Optimizer::kAdam}, {"sgd", Optimizer::kSgd}};
  t.optimizer = parse_enum(in, "optimizer", Optimizer::kAdam, kOptimizers);
  // Megatron-LM's --attention-backend also takes auto (its default) and fused: Transformer Engine then runs its
  // fused attention kernel (FlashAttention or cuDNN's), which Orrery prices as flash.
  static constexpr std::pair<const char*, AttentionBackend> kBackends[] = {{"flash", AttentionBackend::kFlash},
                                                                           {"fused", AttentionBackend::kFlash},
                                                                           {"auto", AttentionBackend::kFlash},
                                                                           {"unfused", AttentionBackend::kUnfused}};
  t.attention_backend = parse_enum(in, "attention_backend", AttentionBackend::kFlash, kBackends);
  t.framework = parse_enum(in, "framework", Framework::kMegatron, kFrameworkNames);
  t.grad_reduce_in_fp32 = in.bool_or("grad_reduce_in_fp32", true);
  t.moe_load_imbalance = in.double_or("moe_load_imbalance", 1.0, true);
  if (t.moe_load_imbalance < 1.0) {
    throw Error::invalid(in.field("moe_load_imbalance"), fmt::format("{}", t.moe_load_imbalance),
                         "is the busiest rank's load over the mean and must be at least 1");
  }
  t.moe_expert_capacity_factor = in.optional_double("moe_expert_capacity_factor", true);
  t.moe_pad_expert_input_to_capacity = in.bool_or("moe_pad_expert_input_to_capacity", false);
  if (const json* packing = in.raw("packed_documents")) t.packed_documents = parse_packing(*packing);
  t.optimizer_cpu_offload = in.bool_or("optimizer_cpu_offload", false);
  t.cpu_offloading_num_layers = static_cast<int>(in.int_or("cpu_offloading_num_layers", 0, 0, limits::kLayers));
  t.apply_rope_fusion = in.optional_bool("apply_rope_fusion");
  if (t.moe_pad_expert_input_to_capacity && !t.moe_expert_capacity_factor) {
    throw Error::invalid(in.field("moe_pad_expert_input_to_capacity"), "true",
                         "needs moe_expert_capacity_factor (padding is to the capacity)");
  }
  in.reject_unknown();
  check_documented_keys("training", in.read_keys());
  return t;
}

Expectation parse_expect(const json& value) {
  FieldReader in(value, "expect");
  Expectation e;
  // Published figures within physical bounds: the comparison divides by them, so 4.9e-324 or 1e308 would give an
  // infinite error, and no real run published such a figure.
  e.iteration_time_s = in.optional_double("iteration_time_s", bounds::kIterationSeconds);
  e.tokens_per_s_per_gpu = in.optional_double("tokens_per_s_per_gpu", bounds::kTokensPerSecondPerGpu);
  e.tflops_per_gpu = in.optional_double("tflops_per_gpu", bounds::kAchievedTflops);
  e.mfu = in.optional_double("mfu", bounds::kUtilization);
  e.hfu = in.optional_double("hfu", bounds::kUtilization);
  e.peak_memory_gib = in.optional_double("peak_memory_gib", bounds::kPeakMemoryGiB);
  e.flops_convention = in.optional_string("flops_convention").value_or("");
  if (!e.flops_convention.empty() && e.flops_convention != "megatron-sc21" &&
      e.flops_convention != "full-attention" && e.flops_convention != "causal-halved") {
    throw Error::invalid("expect.flops_convention", e.flops_convention,
                         "must be one of: megatron-sc21, full-attention, causal-halved");
  }
  in.optional_string("iteration_time_basis");
  in.reject_unknown();
  return e;
}

std::vector<Straggler> parse_stragglers(const json& value) {
  if (!value.is_array()) throw Error::invalid("stragglers", describe_json(value), "must be a list of {rank, compute_slowdown}");
  std::vector<Straggler> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    FieldReader in(value[i], fmt::format("stragglers[{}]", i));
    Straggler s;
    s.rank = static_cast<int>(in.require_int("rank", 0, limits::kGpus));
    s.compute_slowdown = in.require_double("compute_slowdown", true);
    // A straggler is slower: below 1 a rank would run faster than the GPU's own cost model (MFU above 100%).
    require(s.compute_slowdown >= 1.0 && s.compute_slowdown <= limits::kSlowdown, in.field("compute_slowdown"),
            fmt::format("{}", s.compute_slowdown),
            fmt::format("must be between 1 (no slowdown) and {} (how many times as long its compute takes)",
                        limits::kSlowdown));
    in.reject_unknown();
    out.push_back(s);
  }
  return out;
}

void check_text(const json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null() || it->is_string()) return;
  if (it->is_array()) {
    for (const json& item : *it) {
      if (!item.is_string()) throw Error::invalid(key, describe_json(*it), "must be text or a list of text");
    }
    return;
  }
  throw Error::invalid(key, describe_json(*it), "must be text or a list of text");
}

}  // namespace

ParallelPlan parse_parallel(const json& value) {
  FieldReader in(value, "parallel");
  ParallelPlan p;
  auto i32 = [](std::optional<std::int64_t> v, int fallback) { return v ? static_cast<int>(*v) : fallback; };
  p.tp = i32(size_with_alias(in, "tp"), 1);
  p.pp = i32(size_with_alias(in, "pp"), 1);
  p.dp = i32(size_with_alias(in, "dp"), 0);
  p.cp = i32(size_with_alias(in, "cp"), 1);
  p.ep = i32(size_with_alias(in, "ep"), 1);
  p.etp = i32(size_with_alias(in, "etp"), 0);
  p.vpp = i32(size_with_alias(in, "vpp"), 1);
  if (p.etp == 0) p.etp = p.tp;
  if (auto v = in.optional_int("num_layers_per_virtual_pipeline_stage", 1, limits::kLayers)) {
    if (in.has("vpp") || in.has("virtual_pipeline_model_parallel_size")) {
      throw Error::invalid("parallel.num_layers_per_virtual_pipeline_stage", std::to_string(*v),
                           "duplicates vpp; give one of the two");
    }
    p.num_layers_per_virtual_pipeline_stage = static_cast<int>(*v);
  }  // Megatron-Core: expert TP defaults to TP
  p.sequence_parallel = in.bool_or("sequence_parallel", false);
  auto zero = in.optional_int("zero_stage", 0, 3);
  auto distopt = in.optional_bool("use_distributed_optimizer");
  if (zero && distopt && (*zero == 1) != *distopt) {
    throw Error::invalid("parallel.use_distributed_optimizer", *distopt ? "true" : "false",
                         fmt::format("contradicts zero_stage ({}); the distributed optimizer is ZeRO stage 1", *zero));
  }
  p.zero_stage = static_cast<int>(zero.value_or(distopt.value_or(false) ? 1 : 0));
  p.schedule = parse_enum(in, "schedule", Schedule::k1F1B, kScheduleNames);
  static constexpr std::pair<const char*, CpCommType> kCpCommTypes[] = {{"p2p", CpCommType::kP2p},
                                                                         {"a2a", CpCommType::kAllToAll},
                                                                         {"allgather", CpCommType::kAllGather},
                                                                         {"a2a+p2p", CpCommType::kA2aP2p}};
  p.cp_comm_type = parse_enum(in, "cp_comm_type", CpCommType::kP2p, kCpCommTypes);
  if (const json* sizes = in.raw("hierarchical_context_parallel_sizes")) {
    const std::string field = in.field("hierarchical_context_parallel_sizes");
    if (p.cp_comm_type != CpCommType::kA2aP2p) {
      throw Error::invalid(field, describe_json(*sizes), "applies only with cp_comm_type \"a2a+p2p\"");
    }
    if (!sizes->is_array() || sizes->size() != 2) {
      throw Error::invalid(field, describe_json(*sizes),
                           "must be two group sizes, [all-to-all size, ring size], as Megatron-Core's a2a+p2p takes");
    }
    for (const json& n : *sizes) {
      if (!n.is_number_integer() || n.get<std::int64_t>() < 1 || n.get<std::int64_t>() > limits::kGpus) {
        throw Error::invalid(field, describe_json(*sizes), "entries must be positive integers");
      }
      p.hierarchical_context_parallel_sizes.push_back(n.get<int>());
    }
  } else if (p.cp_comm_type == CpCommType::kA2aP2p) {
    throw Error::invalid("parallel.hierarchical_context_parallel_sizes", "missing",
                         "is required with cp_comm_type \"a2a+p2p\" ([all-to-all size, ring size])");
  }
  static constexpr std::pair<const char*, MoeDispatcher> kDispatchers[] = {
      {"alltoall", MoeDispatcher::kAllToAll}, {"allgather", MoeDispatcher::kAllGather}, {"flex", MoeDispatcher::kFlex}};
  p.moe_token_dispatcher_type = parse_enum(in, "moe_token_dispatcher_type", MoeDispatcher::kAllToAll, kDispatchers);
  static constexpr std::pair<const char*, FlexBackend> kFlexBackends[] = {{"deepep", FlexBackend::kDeepEP},
                                                                          {"hybridep", FlexBackend::kHybridEP}};
  if (in.has("moe_flex_dispatcher_backend") && p.moe_token_dispatcher_type != MoeDispatcher::kFlex) {
    throw Error::invalid("parallel.moe_flex_dispatcher_backend", in.optional_string("moe_flex_dispatcher_backend").value_or("?"),
                         fmt::format("needs moe_token_dispatcher_type \"flex\", not \"{}\"", to_string(p.moe_token_dispatcher_type)));
  }
  p.moe_flex_dispatcher_backend = parse_enum(in, "moe_flex_dispatcher_backend", FlexBackend::kDeepEP, kFlexBackends);
  const auto grad_reduce = in.optional_bool("overlap_grad_reduce");
  const auto param_gather = in.optional_bool("overlap_param_gather");
  const auto tp_overlap = in.optional_bool("tp_comm_overlap");
  p.overlap_grad_reduce = grad_reduce.value_or(true);
  p.overlap_param_gather = param_gather.value_or(true);
  p.tp_comm_overlap = tp_overlap.value_or(true);
  const auto p2p_overlap = in.optional_bool("overlap_p2p_comm");
  p.overlap_requested = {grad_reduce.has_value(), param_gather.has_value(), tp_overlap.has_value(),
                         p2p_overlap.has_value()};
  p.overlap_p2p_comm = p2p_overlap.value_or(true);
  p.overlap_moe_expert_parallel_comm = in.bool_or("overlap_moe_expert_parallel_comm", false);
  p.delay_wgrad_compute = in.bool_or("delay_wgrad_compute", false);
  if (auto v = in.optional_int("decoder_first_pipeline_num_layers", 0, limits::kLayers)) p.decoder_first_pipeline_num_layers = static_cast<int>(*v);
  if (auto v = in.optional_int("decoder_last_pipeline_num_layers", 0, limits::kLayers)) p.decoder_last_pipeline_num_layers = static_cast<int>(*v);
  p.account_for_embedding_in_pipeline_split = in.bool_or("account_for_embedding_in_pipeline_split", false);
  p.account_for_loss_in_pipeline_split = in.bool_or("account_for_loss_in_pipeline_split", false);
  if (const json* layout = in.raw("pipeline_layout")) {
    if (!layout->is_array() || layout->empty()) {
      throw Error::invalid("parallel.pipeline_layout", describe_json(*layout),
                           "must be a non-empty list of layer counts, one per virtual stage");
    }
    for (const json& n : *layout) {
      if (!n.is_number_integer() || n.get<std::int64_t>() < 0 || n.get<std::int64_t>() > limits::kLayers) {
        throw Error::invalid("parallel.pipeline_layout", describe_json(*layout),
                             "entries must be integers from 0 to " + std::to_string(limits::kLayers));
      }
      p.pipeline_layout.push_back(n.get<int>());
    }
  }
  if (const json* pools = in.raw("pipeline_stage_pools")) {
    if (!pools->is_array() || pools->empty()) {
      throw Error::invalid("parallel.pipeline_stage_pools", describe_json(*pools),
                           "must be a non-empty list of pool indices, one per pipeline stage");
    }
    for (const json& n : *pools) {
      if (!n.is_number_integer() || n.get<std::int64_t>() < 0 || n.get<std::int64_t>() > limits::kGpus) {
        throw Error::invalid("parallel.pipeline_stage_pools", describe_json(*pools),
                             "entries must be pool indices (integers from 0, in cluster.pools order)");
      }
      p.pipeline_stage_pools.push_back(n.get<int>());
    }
  }
  in.reject_unknown();
  check_documented_keys("parallel", in.read_keys());
  return p;
}

Scenario read_scenario(const json& doc, const std::filesystem::path& base_dir) {
  FieldReader top(doc, "");
  Scenario s;
  s.name = top.optional_string("name").value_or("");
  s.source = top.optional_string("source").value_or("");
  for (const char* key : {"notes", "assumed"}) {
    check_text(doc, key);
    top.allow(key);
  }
  const json* model = top.raw("model");
  if (!model) throw Error::invalid("model", "missing", "is required (a preset name, {\"hf_config\": ...} or a config object)");
  s.model = parse_model_input(*model, base_dir, "model", &s.warnings);
  const json* cluster = top.raw("cluster");
  if (!cluster) throw Error::invalid("cluster", "missing", "is required (a preset name or object)");
  s.cluster = parse_cluster(*cluster, "cluster", base_dir);
  const json empty = json::object();
  const json* parallel = top.raw("parallel");
  s.parallel = parse_parallel(parallel ? *parallel : empty);
  const json* training = top.raw("training");
  s.training = parse_training(training ? *training : empty, s.model);
  // torchtitan's FSDP2 shards every parameter and reshards each block after its forward: ZeRO stage 3 unless the
  // scenario names a stage.
  const bool stage_given = parallel && (parallel->contains("zero_stage") || parallel->contains("use_distributed_optimizer"));
  if (s.training.framework == Framework::kFsdp2 && !stage_given) s.parallel.zero_stage = 3;
  if (const json* expect = top.raw("expect")) s.expect = parse_expect(*expect);
  if (const json* stragglers = top.raw("stragglers")) s.stragglers = parse_stragglers(*stragglers);
  if (const json* energy = top.raw("energy")) s.energy = parse_energy_section(*energy, "energy");
  if (const json* cost = top.raw("cost")) s.cost = parse_cost_section(*cost, "cost");
  if (const json* failures = top.raw("failures")) s.failures = parse_failures(*failures, "failures");
  if (const json* checkpoint = top.raw("checkpoint")) s.checkpoint = parse_checkpoint(*checkpoint, "checkpoint");
  if (const json* placement = top.raw("placement")) s.placement = parse_placement(*placement);
  if (const json* jitter = top.raw("jitter")) s.jitter = parse_jitter(*jitter, "jitter");
  top.reject_unknown();
  if (s.name.empty()) s.name = s.model.name;
  return s;
}

Scenario parse_scenario(const json& doc, const std::filesystem::path& base_dir) {
  Scenario s = read_scenario(doc, base_dir);
  validate_scenario(s);  // on the scenario this function builds: no caller's scenario changes
  return s;
}

Scenario load_scenario(const std::filesystem::path& file) {
  const json doc = read_json_file(file, "scenario");  // its errors name the file already
  try {
    return load_scenario(doc, file);
  } catch (const Error& e) {
    throw e.in("scenario " + file.string());
  }
}

Scenario load_scenario(const json& doc, const std::filesystem::path& file) {
  Scenario s = parse_scenario(doc, file.parent_path());
  if (s.name.empty()) s.name = file.stem().string();
  return s;
}

int Scenario::num_microbatches() const {
  return static_cast<int>(training.global_batch_size / (training.micro_batch_size * parallel.dp));
}

}  // namespace orrery
