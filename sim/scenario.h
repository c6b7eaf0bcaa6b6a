#pragma once
// The scenario file (ARCHITECTURE.md "Scenario file", the stable input contract): model, cluster, parallel plan,
// training settings, expectations and stragglers. Plain structs, read by parse_scenario (ARCHITECTURE.md rule 7).

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hardware/cluster_spec.h"
#include "models/model_spec.h"
#include "models/ops.h"
#include "sim/jitter/jitter_spec.h"
#include "sim/plan/facility.h"
#include "sim/plan/goodput.h"
#include "sim/placement_spec.h"

namespace orrery {

enum class Precision { kFp32, kFp16, kBf16, kFp8 };
/// How FP8 tensors are scaled (Megatron-LM `--fp8-recipe`, Transformer Engine's recipes; sim/lower/fp8.h prices
/// each): one scale per tensor from the amax history of past iterations (delayed), one per tensor from the
/// tensor's own amax (tensorwise, Float8CurrentScaling), one per 1 x 128 / 128 x 128 block (blockwise,
/// Float8BlockScaling) or per 32 elements (mxfp8, MXFP8BlockScaling).
enum class Fp8Recipe { kDelayed, kTensorwise, kBlockwise, kMxfp8 };
inline constexpr std::pair<const char*, Fp8Recipe> kFp8RecipeNames[] = {{"delayed", Fp8Recipe::kDelayed},
                                                                       {"tensorwise", Fp8Recipe::kTensorwise},
                                                                       {"blockwise", Fp8Recipe::kBlockwise},
                                                                       {"mxfp8", Fp8Recipe::kMxfp8}};
/// Which FP8 types the tensors use (Megatron-LM `--fp8-format`, Transformer Engine's `Format`): E4M3 for activations
/// and weights with E5M2 for gradients (hybrid), or E4M3 throughout. It does not change cost: Hopper and Blackwell
/// tensor cores run every E4M3/E5M2 pairing at one FP8 rate (the H100 and B200 datasheets give one dense FP8
/// figure), and both types are one byte.
enum class Fp8Format { kHybrid, kE4m3 };
inline constexpr std::pair<const char*, Fp8Format> kFp8FormatNames[] = {{"hybrid", Fp8Format::kHybrid},
                                                                       {"e4m3", Fp8Format::kE4m3}};
enum class Recompute { kNone, kSelective, kFull };
/// Megatron-Core's recompute_method with full recompute: layers checkpointed in groups of recompute_num_layers
/// (uniform), or only the first recompute_num_layers layers of each model chunk recomputed (block).
enum class RecomputeMethod { kUniform, kBlock };
enum class AttentionBackend { kFlash, kUnfused };
enum class Schedule { k1F1B, kGPipe, kZbH1, kDualPipe, kDualPipeV };  // 1F1B is interleaved when vpp > 1
/// DualPipe and DualPipeV: two model chunks per rank of their own (no vpp), run as overlapped forward-backward pairs.
inline bool is_dualpipe(Schedule s) { return s == Schedule::kDualPipe || s == Schedule::kDualPipeV; }
enum class Optimizer { kAdam, kSgd };
/// Which software runs the step: Megatron-LM/Megatron-Core (fused kernels, bf16 parameters with fp32 master
/// weights), plain PyTorch eager on a Hugging Face model (sim/lower/pytorch_step.h), Megatron-DeepSpeed with
/// the ZeRO stage 3 of DeepSpeed 0.3 (2021), per-parameter and unoverlapped (sim/lower/sharded_params.h), PyTorch
/// FSDP2 as torchtitan runs it (sim/lower/fsdp2.h), or today's Megatron-DeepSpeed: Megatron's legacy layers on
/// DeepSpeed's engine, ZeRO 0-3 and blocking pipeline engine (sim/lower/megatron_deepspeed.h).
enum class Framework { kMegatron, kPytorch, kDeepSpeed03, kFsdp2, kMegatronDeepSpeed };
/// The scenario names of the frameworks (`training.framework`), for the parser and its error message.
inline constexpr std::pair<const char*, Framework> kFrameworkNames[] = {
    {"megatron", Framework::kMegatron},           {"pytorch", Framework::kPytorch},
    {"deepspeed-0.3", Framework::kDeepSpeed03},   {"fsdp2", Framework::kFsdp2},
    {"megatron-deepspeed", Framework::kMegatronDeepSpeed}};
/// Frameworks whose layers are PyTorch eager modules (sim/lower/pytorch_step.h): pytorch and fsdp2.
inline bool is_eager_pytorch(Framework f) { return f == Framework::kPytorch || f == Framework::kFsdp2; }
/// How context parallelism exchanges keys and values (Megatron-Core `--cp-comm-type`): ring attention, Ulysses
/// all-to-all, an all-gather of K and V, or hierarchical: all-to-all inside groups of the first
/// `hierarchical_context_parallel_sizes` entry and a ring across them (sim/lower/context_parallel.h).
enum class CpCommType { kP2p, kAllToAll, kAllGather, kA2aP2p };
/// How tokens reach their experts (Megatron-Core `--moe-token-dispatcher-type`): all-to-all over the EP group, an
/// all-gather of every token and a reduce-scatter of the outputs, or the flex dispatcher's fused kernels (DeepEP or
/// HybridEP), which send each token once per destination node and rank (sim/lower/moe_block.cpp).
enum class MoeDispatcher { kAllToAll, kAllGather, kFlex };
/// The flex dispatcher's kernels (Megatron-Core `--moe-flex-dispatcher-backend`).
enum class FlexBackend { kDeepEP, kHybridEP };

/// The scenario names of the recompute policies and pipeline schedules (`training.recompute`, `parallel.schedule`,
/// and the search's `--recompute` and `--schedule`): one table each for every reader.
inline constexpr std::pair<const char*, Recompute> kRecomputeNames[] = {
    {"none", Recompute::kNone}, {"selective", Recompute::kSelective}, {"full", Recompute::kFull}};
inline constexpr std::pair<const char*, Schedule> kScheduleNames[] = {
    {"1f1b", Schedule::k1F1B}, {"gpipe", Schedule::kGPipe}, {"zb-h1", Schedule::kZbH1}, {"dualpipe", Schedule::kDualPipe},
    {"dualpipev", Schedule::kDualPipeV}};

const char* to_string(Precision p);
const char* to_string(Fp8Recipe r);
/// The GEMM operand scaling of an FP8 recipe.
Fp8Scaling fp8_scaling(Fp8Recipe r);
const char* to_string(Recompute r);
const char* to_string(AttentionBackend a);
const char* to_string(Schedule s);
const char* to_string(CpCommType c);
const char* to_string(MoeDispatcher d);
const char* to_string(FlexBackend b);
const char* to_string(Framework f);
/// The GEMM data type of a training precision (FP8 runs keep BF16 outside the FP8 GEMMs).
DType gemm_dtype(Precision p);
/// The data type of activations and of the model's parameters in memory.
DType activation_dtype(Precision p);

/// Which overlap switches a scenario gave (true) rather than left at their default, for the report's warnings.
struct OverlapRequests {
  bool grad_reduce = false, param_gather = false, tp_comm = false, p2p = false;
};

/// Parallel plan. Names follow ARCHITECTURE.md "Scenario file": short names for the sizes, Megatron-LM's names for
/// everything else.
struct ParallelPlan {
  int tp = 1, pp = 1, dp = 0, cp = 1, ep = 1, etp = 1, vpp = 1;  // dp 0 = derive from num_gpus
  bool sequence_parallel = false;
  int zero_stage = 0;  // DeepSpeed's term: 1 is Megatron's distributed optimizer, 3 is FSDP
  Schedule schedule = Schedule::k1F1B;
  CpCommType cp_comm_type = CpCommType::kP2p;
  /// Megatron-Core --hierarchical-context-parallel-sizes with cp_comm_type a2a+p2p: {all-to-all group size,
  /// ring size}, their product cp; empty otherwise.
  std::vector<int> hierarchical_context_parallel_sizes;
  /// The all-to-all (inner) group size of hierarchical CP; 1 without it.
  int cp_a2a_size() const { return hierarchical_context_parallel_sizes.empty() ? 1 : hierarchical_context_parallel_sizes[0]; }
  MoeDispatcher moe_token_dispatcher_type = MoeDispatcher::kAllToAll;
  FlexBackend moe_flex_dispatcher_backend = FlexBackend::kDeepEP;  // with the flex dispatcher only
  // Megatron overlap switches; on by default as the Megatron-Core training recipes set them.
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = true;
  bool overlap_p2p_comm = true;
  OverlapRequests overlap_requested;  // which of them the scenario set (not the default), for sim/overlap_switches.h
  /// Megatron-Core overlap_moe_expert_parallel_comm (--overlap-moe-expert-parallel-comm; Megatron-Bridge's
  /// moe_a2a_overlap): in the steady state each backward runs merged with a forward of another micro-batch, so
  /// the expert all-to-alls of one hide behind the other's compute. Off by default, as in Megatron-Core.
  bool overlap_moe_expert_parallel_comm = false;
  /// Megatron-Core delay_wgrad_compute (--delay-wgrad-compute; Megatron-Bridge comm_overlap.delay_wgrad_compute),
  /// with the expert all-to-all overlap: the routed experts' weight gradients (TE GroupedLinear backward_dw) run
  /// after the expert input gradients have gone to the dispatch's backward all-to-all, so that all-to-all overlaps
  /// them instead of waiting for them (combined_1f1b schedule_layer_1f1b). Off by default.
  bool delay_wgrad_compute = false;
  // Uneven pipeline splits (Megatron-LM arguments).
  std::optional<int> decoder_first_pipeline_num_layers;
  std::optional<int> decoder_last_pipeline_num_layers;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  /// Layer-sized slots the embedding and the loss take in an accounted split (0, 1 or 2).
  int accounted_slots() const {
    return (account_for_embedding_in_pipeline_split ? 1 : 0) + (account_for_loss_in_pipeline_split ? 1 : 0);
  }
  std::vector<int> pipeline_layout;  // transformer layers per virtual stage, in virtual-stage order
  /// With cluster.pools: the pool index of each pipeline stage (pp entries); empty: ranks fill the pools in order.
  std::vector<int> pipeline_stage_pools;
  std::optional<int> num_layers_per_virtual_pipeline_stage;  // Megatron's way to set vpp

  int model_parallel_size() const { return tp * pp * cp; }
  int num_gpus() const { return tp * pp * dp * cp; }
  /// The data-parallel size `gpus` GPUs leave to this plan's tp x pp x cp, as Megatron-LM derives
  /// --data-parallel-size (world size / (tp x pp x cp)); 0 where that does not divide or a size is not positive.
  /// The one derivation of dp: the validator, the search's enumeration and its records all use it.
  std::int64_t data_parallel_size_for(std::int64_t gpus) const { return data_parallel_size(gpus, tp, pp, cp); }
  /// The same for sizes not yet in a plan (a search candidate's).
  static std::int64_t data_parallel_size(std::int64_t gpus, std::int64_t tp, std::int64_t pp, std::int64_t cp) {
    const std::int64_t mp = tp * pp * cp;
    return mp > 0 && gpus > 0 && gpus % mp == 0 ? gpus / mp : 0;
  }
  /// True when the TP all-gathers / reduce-scatters are overlapped with GEMMs (needs sequence parallelism).
  bool tp_overlap_active() const { return tp_comm_overlap && sequence_parallel && tp > 1; }
};

/// Documents packed into sequences (sim/packing.h): either explicit lengths, repeated until the global batch is
/// full, or a log-normal distribution of lengths (median, sigma of the log) sampled with a fixed seed.
struct PackingSpec {
  std::vector<std::int64_t> lengths;  // tokens per document
  double median = 0, sigma = 0;       // log-normal; used when lengths is empty
  std::uint64_t seed = 1;
  bool enabled() const { return !lengths.empty() || median > 0; }
};

struct TrainingSpec {
  std::int64_t seq_length = 0;
  std::int64_t micro_batch_size = 1;
  std::int64_t global_batch_size = 0;  // 0 = micro_batch_size x dp
  Precision precision = Precision::kBf16;
  /// With precision fp8: Megatron-LM's --fp8-recipe (default delayed, as Megatron-LM's; Megatron-Bridge's H100
  /// FP8 recipes run tensorwise, its Blackwell ones mxfp8).
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  /// With precision fp8: Megatron-LM's --fp8-format (default hybrid, the Megatron-Core recipes' choice); read and
  /// checked, priced the same (see Fp8Format).
  Fp8Format fp8_format = Fp8Format::kHybrid;
  Recompute recompute = Recompute::kNone;
  /// Megatron-Core --recompute-modules, with recompute "selective" (--recompute-granularity selective): which
  /// submodules' outputs are dropped in the forward pass and recomputed in the backward. Megatron's default is
  /// core_attn alone.
  struct RecomputeModules {
    bool core_attn = true;   // the attention core (Korthikanti et al. Section 5)
    bool layernorm = false;  // the outputs of the input and pre-MLP norms
    bool moe_act = false;    // the routed experts' activation outputs
    bool mlp = false;        // a dense layer's MLP (its input kept; up, activation and down run again)
    bool shared_experts = false;  // the MoE layers' shared-expert MLP, likewise
    bool mla_up_proj = false;     // multi-head latent attention's up projections and rotary (the core's q, k, v)
    bool moe = false;             // the whole MoE layer, dispatch and combine included (its input kept)
  } recompute_modules;
  /// With recompute full: Megatron-Core's --recompute-method and --recompute-num-layers (default uniform with one
  /// layer per checkpoint, every layer recomputed).
  RecomputeMethod recompute_method = RecomputeMethod::kUniform;
  int recompute_num_layers = 1;
  /// True when layer `index_in_chunk` of a model chunk holding `chunk_layers` layers runs its forward again in the
  /// backward (full recompute; block recomputes the chunk's first recompute_num_layers layers).
  bool recomputes_layer(int index_in_chunk) const {
    return recompute == Recompute::kFull &&
           (recompute_method == RecomputeMethod::kUniform || index_in_chunk < recompute_num_layers);
  }
  Optimizer optimizer = Optimizer::kAdam;
  /// Megatron-Core DDPConfig.grad_reduce_in_fp32 (Megatron-LM --accumulate-allreduce-grads-in-fp32, forced on for
  /// bf16 by Megatron-LM; Megatron-Bridge/NeMo ddp.grad_reduce_in_fp32): the gradient buffer and its data-parallel
  /// reduction in fp32. False keeps them in the 16-bit training dtype, as the NeMo and Megatron-Bridge
  /// performance recipes run; the optimizer then keeps fp32 main gradients of its shard (the fp16 row of
  /// Megatron-LM's distributed-optimizer table). Only meaningful for bf16/fp8 under Megatron's optimizer, ZeRO
  /// stage 0 or 1. Counting the fp32 main gradients as resident is pessimistic: Megatron-Core makes them at the
  /// optimizer step and frees them at the next zero_grad, so they are not live at the activation peak.
  bool grad_reduce_in_fp32 = true;
  AttentionBackend attention_backend = AttentionBackend::kFlash;
  Framework framework = Framework::kMegatron;
  // Routing statistics of mixture-of-experts layers (Megatron-LM --moe-expert-capacity-factor and
  // --moe-pad-expert-input-to-capacity; the load imbalance is Orrery's): the busiest expert-parallel rank receives
  // moe_load_imbalance times the mean number of token copies (1 = balanced); a capacity factor drops what exceeds
  // that multiple of the mean, or with padding makes every expert process exactly that many.
  double moe_load_imbalance = 1.0;
  std::optional<double> moe_expert_capacity_factor;
  bool moe_pad_expert_input_to_capacity = false;
  PackingSpec packed_documents;  // disabled: every sequence is one document
  /// Megatron-LM --optimizer-cpu-offload (ZeRO-Offload, arXiv:2101.06840): fp32 master weights and Adam moments
  /// live in host memory; each step copies the rank's gradient shard to the host, runs Adam on the CPU and copies
  /// the updated parameters back.
  bool optimizer_cpu_offload = false;
  /// Megatron-LM/Transformer Engine --cpu-offloading-num-layers: the saved activations of this many layers of each
  /// model chunk go to host memory after their forward and come back before their backward (0: none).
  int cpu_offloading_num_layers = 0;
  /// Megatron-Core TransformerConfig.apply_rope_fusion (Megatron-LM --no-rope-fusion turns it off): Transformer
  /// Engine's fused RoPE kernel. Unset: fused, except for YaRN rotary scaling (ModelSpec::rope_yarn), where
  /// Megatron-Bridge's validate_rope_fusion_compatibility (src/megatron/bridge/utils/fusions.py, v0.2.0 and v0.3.0)
  /// turns it off; asked for with YaRN it is turned off with a warning.
  std::optional<bool> apply_rope_fusion;
  /// Token copies the busiest expert rank processes, as a multiple of the balanced mean.
  double moe_effective_load() const;
  /// Megatron's names of the recomputed modules (empty unless recompute is selective).
  std::vector<std::string> recompute_module_names() const;
};

/// Megatron-Core's --recompute-modules names the lowering builds, and the switch each sets (the parser and the
/// report's list share it).
inline constexpr std::pair<const char*, bool TrainingSpec::RecomputeModules::*> kRecomputeModuleNames[] = {
    {"core_attn", &TrainingSpec::RecomputeModules::core_attn},
    {"layernorm", &TrainingSpec::RecomputeModules::layernorm},
    {"moe_act", &TrainingSpec::RecomputeModules::moe_act},
    {"mlp", &TrainingSpec::RecomputeModules::mlp},
    {"shared_experts", &TrainingSpec::RecomputeModules::shared_experts},
    {"mla_up_proj", &TrainingSpec::RecomputeModules::mla_up_proj},
    {"moe", &TrainingSpec::RecomputeModules::moe},
};

struct Expectation {
  std::optional<double> iteration_time_s, tokens_per_s_per_gpu, tflops_per_gpu, mfu, hfu, peak_memory_gib;
  std::string flops_convention;  // megatron-sc21, full-attention, causal-halved
  bool empty() const {
    return !iteration_time_s && !tokens_per_s_per_gpu && !tflops_per_gpu && !mfu && !hfu && !peak_memory_gib;
  }
};

struct Straggler {
  int rank = 0;
  double compute_slowdown = 1.0;  // multiplies the rank's compute time; 1.1 = 10% slower
};

struct Scenario {
  std::string name;
  std::string source;
  ModelSpec model;
  ClusterSpec cluster;
  ParallelPlan parallel;
  TrainingSpec training;
  Expectation expect;
  std::vector<Straggler> stragglers;
  /// Capacity planning's inputs (`orrery plan`; sim/plan/): what the job draws besides its GPUs and what its
  /// GPU-hours cost. `orrery predict` reads `energy` for the report's energy figures.
  FacilitySpec energy;
  PriceSpec cost;
  /// The goodput model's inputs (`failures`, `checkpoint`; sim/plan/goodput.h): absent failures mean the
  /// llama3-405b preset's rates (hardware/presets/failures.json) when `orrery plan` needs them.
  std::optional<FailureModel> failures;
  CheckpointSpec checkpoint;
  /// Where the ranks run on the fabric (`placement`, sim/placement_spec.h); absent: sequential on the job's own
  /// nodes with each tier's fixed oversubscription, as before the section existed.
  std::optional<PlacementSpec> placement;
  /// Stochastic stragglers and noise (`jitter`; sim/jitter/): absent, `orrery predict` runs no Monte-Carlo.
  std::optional<JitterSpec> jitter;
  std::vector<std::string> warnings;  // accepted but noteworthy input (e.g. sequence_parallel with tp 1)

  /// Micro-batches per pipeline per iteration: global batch / (micro-batch x dp). The formula's one home, for the
  /// validator; readers take Job::microbatches() (sim/job/job.h).
  int num_microbatches() const;
};

/// Parses and validates a whole scenario. `base_dir` resolves relative paths (model.hf_config).
/// Errors: Error::invalid naming the field, value and rule; Error::not_modelled for valid features the simulator
/// does not model yet (message starts "not modelled yet:").
Scenario parse_scenario(const nlohmann::json& document, const std::filesystem::path& base_dir);

/// Reads a scenario's `parallel` object alone, without the cross-section rules (the search reads the settings it
/// keeps from a scenario this way). Errors: Error::invalid naming the `parallel.*` field, value and rule.
ParallelPlan parse_parallel(const nlohmann::json& parallel);

/// Reads every section of a scenario document with each section's own checks (unknown keys, ranges), without the
/// cross-section rules: dp is not derived and the plan not checked. resolve() (sim/job/job.h) or resolve_base
/// validates what it returns. Errors: Error::invalid naming the field, value and rule of a section.
Scenario read_scenario(const nlohmann::json& document, const std::filesystem::path& base_dir);

/// Reads a scenario file. Errors: Error::invalid for unreadable or malformed JSON (naming the file), and all of
/// parse_scenario's errors, found in "scenario FILE" (Error::in).
Scenario load_scenario(const std::filesystem::path& file);

/// The same for a scenario file's document already read (`file` names it and resolves relative paths; its stem is
/// the default name). Errors: parse_scenario's.
Scenario load_scenario(const nlohmann::json& document, const std::filesystem::path& file);

}  // namespace orrery
