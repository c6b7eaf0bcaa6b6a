#include "sim/scenario.h"

#include <algorithm>

namespace orrery {

const char* to_string(Fp8Recipe r) {
  for (const auto& [name, value] : kFp8RecipeNames) {
    if (value == r) return name;
  }
  return "?";
}

Fp8Scaling fp8_scaling(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kTensorwise: return Fp8Scaling::kTensor;
    case Fp8Recipe::kBlockwise: return Fp8Scaling::kBlock128;
    case Fp8Recipe::kMxfp8: return Fp8Scaling::kMx32;
  }
  return Fp8Scaling::kTensor;
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kFp8: return "fp8";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

const char* to_string(AttentionBackend a) { return a == AttentionBackend::kFlash ? "flash" : "unfused"; }

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::k1F1B: return "1f1b";
    case Schedule::kGPipe: return "gpipe";
    case Schedule::kZbH1: return "zb-h1";
    case Schedule::kDualPipe: return "dualpipe";
    case Schedule::kDualPipeV: return "dualpipev";
  }
  return "?";
}

const char* to_string(CpCommType c) {
  switch (c) {
    case CpCommType::kP2p: return "p2p";
    case CpCommType::kAllToAll: return "a2a";
    case CpCommType::kAllGather: return "allgather";
    case CpCommType::kA2aP2p: return "a2a+p2p";
  }
  return "?";
}

std::vector<std::string> TrainingSpec::recompute_module_names() const {
  std::vector<std::string> out;
  if (recompute != Recompute::kSelective) return out;
  for (const auto& [name, member] : kRecomputeModuleNames) {
    if (recompute_modules.*member) out.push_back(name);
  }
  return out;
}

const char* to_string(Framework f) {
  switch (f) {
    case Framework::kMegatron: return "megatron";
    case Framework::kPytorch: return "pytorch";
    case Framework::kDeepSpeed03: return "deepspeed-0.3";
    case Framework::kFsdp2: return "fsdp2";
    case Framework::kMegatronDeepSpeed: return "megatron-deepspeed";
  }
  return "?";
}

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::kAllToAll: return "alltoall";
    case MoeDispatcher::kAllGather: return "allgather";
    case MoeDispatcher::kFlex: return "flex";
  }
  return "?";
}

const char* to_string(FlexBackend b) { return b == FlexBackend::kDeepEP ? "deepep" : "hybridep"; }

double TrainingSpec::moe_effective_load() const {
  if (!moe_expert_capacity_factor) return moe_load_imbalance;
  if (moe_pad_expert_input_to_capacity) return *moe_expert_capacity_factor;
  return std::min(moe_load_imbalance, *moe_expert_capacity_factor);
}

DType gemm_dtype(Precision p) {
  switch (p) {
    case Precision::kFp32: return DType::kFp32;
    case Precision::kFp16: return DType::kFp16;
    case Precision::kBf16: return DType::kBf16;
    case Precision::kFp8: return DType::kFp8;
  }
  return DType::kBf16;
}

DType activation_dtype(Precision p) {
  switch (p) {
    case Precision::kFp32: return DType::kFp32;
    case Precision::kFp16: return DType::kFp16;
    case Precision::kBf16:
    case Precision::kFp8: return DType::kBf16;
  }
  return DType::kBf16;
}

}  // namespace orrery
