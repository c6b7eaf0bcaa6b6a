#include "models/model_spec.h"

#include <algorithm>

namespace orrery {

namespace {

// Multi-token prediction layers (index >= num_layers) take the last decoder layer's kind.
std::size_t kind_index(const ModelSpec& m, int layer) { return static_cast<std::size_t>(std::min(layer, m.num_layers - 1)); }

}  // namespace

bool ModelSpec::layer_is_moe(int layer) const {
  if (!is_moe()) return false;
  return moe.moe_layers.at(kind_index(*this, layer));
}

std::int64_t ModelSpec::layer_window(int layer) const {
  if (sliding_window <= 0) return 0;
  if (sliding_window_layers.empty()) return sliding_window;
  return sliding_window_layers.at(kind_index(*this, layer)) ? sliding_window : 0;
}

const char* to_string(NormKind kind) { return kind == NormKind::kLayerNorm ? "LayerNorm" : "RMSNorm"; }

const char* to_string(Activation act) {
  switch (act) {
    case Activation::kGelu: return "GELU";
    case Activation::kSilu: return "SiLU";
    case Activation::kRelu: return "ReLU";
    case Activation::kSquaredRelu: return "squared ReLU";
  }
  return "?";
}

const char* to_string(PositionKind kind) {
  switch (kind) {
    case PositionKind::kLearned: return "learned";
    case PositionKind::kRotary: return "rotary";
    case PositionKind::kAlibi: return "ALiBi";
  }
  return "?";
}

}  // namespace orrery
