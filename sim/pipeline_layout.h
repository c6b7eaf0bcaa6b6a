#pragma once
// Assignment of transformer layers to pipeline stages and virtual stages (interleaving), following Megatron-LM:
// virtual stage v = chunk x pp + stage holds a contiguous run of layers, in v order. Uneven splits come from
// decoder_first/last_pipeline_num_layers, account_for_embedding/loss_in_pipeline_split, or an explicit
// pipeline_layout; without them the layers must divide evenly, as in Megatron-LM.
// DualPipe (arXiv:2412.19437 Section 3.2.1) mirrors instead: the model is cut into pp stages and rank s holds two
// chunks, stage s (chunk 0, run by micro-batches fed at rank 0) and a copy of stage pp - 1 - s (chunk 1, run by
// micro-batches fed at rank pp - 1, which travel towards rank 0).

#include <vector>

#include "models/model_spec.h"
#include "sim/scenario.h"

namespace orrery {

struct PipelineLayout {
  int pp = 1;
  int vpp = 1;                   // chunks per rank (2 with DualPipe)
  bool mirrored = false;         // DualPipe's two copies
  std::vector<int> layers;       // per virtual stage, in the order a micro-batch runs them
  std::vector<int> first_layer;  // global index of each virtual stage's first layer

  int virtual_stages() const { return static_cast<int>(layers.size()); }
  /// The position of (stage, chunk) along its micro-batches' path: chunk x pp + stage, or with DualPipe the model
  /// stage the chunk holds.
  int virtual_stage(int stage, int chunk) const {
    if (mirrored) return chunk == 0 ? stage : pp - 1 - stage;
    return chunk * pp + stage;
  }
  /// Whether the chunk's micro-batches travel from the last rank towards the first (DualPipe's chunk 1).
  bool reversed(int chunk) const { return mirrored && chunk == 1; }
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
