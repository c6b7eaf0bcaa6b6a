#pragma once
// Assignment of transformer layers to pipeline stages and virtual stages (interleaving), following Megatron-LM:
// virtual stage v = chunk x pp + stage holds a contiguous run of layers, in v order. Uneven splits come from
// decoder_first/last_pipeline_num_layers, account_for_embedding/loss_in_pipeline_split, or an explicit
// pipeline_layout; without them the layers must divide evenly, as in Megatron-LM.

#include <vector>

#include "models/model_spec.h"
#include "sim/scenario.h"

namespace orrery {

struct PipelineLayout {
  int pp = 1;
  int vpp = 1;
  std::vector<int> layers;       // per virtual stage, index chunk * pp + stage
  std::vector<int> first_layer;  // global index of each virtual stage's first layer

  int virtual_stages() const { return pp * vpp; }
  int virtual_stage(int stage, int chunk) const { return chunk * pp + stage; }
  int layers_in(int stage, int chunk) const { return layers[static_cast<std::size_t>(virtual_stage(stage, chunk))]; }
  int first_layer_of(int stage, int chunk) const {
    return first_layer[static_cast<std::size_t>(virtual_stage(stage, chunk))];
  }
  /// Layers held by physical stage `stage` over all its chunks.
  int layers_on_stage(int stage) const;
  bool holds_embedding(int stage, int chunk) const { return virtual_stage(stage, chunk) == 0; }
  bool holds_head(int stage, int chunk) const { return virtual_stage(stage, chunk) == virtual_stages() - 1; }
};

/// Errors: Error::invalid naming the split keys when layers do not divide evenly and no split is given, when a
/// split does not add up, or when split keys are combined.
PipelineLayout make_pipeline_layout(const ModelSpec& model, const ParallelPlan& plan);

}  // namespace orrery
