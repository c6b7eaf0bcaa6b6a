#pragma once
// Assignment of transformer layers to pipeline stages and virtual stages (interleaving), following Megatron-LM:
// virtual stage v = chunk x pp + stage holds a contiguous run of layers, in v order. Uneven splits come from
// decoder_first/last_pipeline_num_layers, account_for_embedding/loss_in_pipeline_split, or an explicit
// pipeline_layout; without them the layers must divide evenly, as in Megatron-LM.
// DualPipe (arXiv:2412.19437 Section 3.2.1) mirrors instead: the model is cut into pp stages and rank s holds two
// chunks, stage s (chunk 0, run by micro-batches fed at rank 0) and a copy of stage pp - 1 - s (chunk 1, run by
// micro-batches fed at rank pp - 1, which travel towards rank 0).
// DualPipeV (github.com/deepseek-ai/DualPipe, dualpipev.py: DualPipe "cut in half") folds the model in a V: it is
// cut into 2 pp virtual stages and rank s holds virtual stage s (chunk 0) and 2 pp - 1 - s (chunk 1). Every
// micro-batch enters at rank 0, runs chunk 0 down to the last rank, turns there to chunk 1 on the same rank and
// runs back up to rank 0, which also holds the LM head and loss.

#include <vector>

#include "models/model_spec.h"
#include "sim/scenario.h"

namespace orrery {

struct PipelineLayout {
  int pp = 1;
  int vpp = 1;                   // chunks per rank (2 with DualPipe)
  bool mirrored = false;         // DualPipe's two copies
  bool v_shape = false;          // DualPipeV's fold
  std::vector<int> layers;       // per virtual stage, in the order a micro-batch runs them
  std::vector<int> first_layer;  // global index of each virtual stage's first layer

  int virtual_stages() const { return static_cast<int>(layers.size()); }
  /// The position of (stage, chunk) along its micro-batches' path: chunk x pp + stage, with DualPipe the model
  /// stage the chunk holds, with DualPipeV stage on the way down and 2 pp - 1 - stage on the way back.
  int virtual_stage(int stage, int chunk) const {
    if (mirrored) return chunk == 0 ? stage : pp - 1 - stage;
    if (v_shape) return chunk == 0 ? stage : 2 * pp - 1 - stage;
    return chunk * pp + stage;
  }
  /// Whether the chunk's micro-batches travel from the last rank towards the first (DualPipe's and DualPipeV's
  /// chunk 1).
  bool reversed(int chunk) const { return head_beside_embedding() && chunk == 1; }
  /// DualPipeV's turn: on the last rank, chunk 0 hands its activations to chunk 1 and chunk 1 its gradients to
  /// chunk 0 on the same GPU, with no transfer. `forward`: the forward pass's hand-over (into chunk 1), else the
  /// backward's (into chunk 0).
  bool turns_locally(int stage, int chunk, bool forward) const {
    return v_shape && stage == pp - 1 && chunk == (forward ? 1 : 0);
  }
  /// Whether the rank that runs the LM head also holds the word embedding (DualPipe, DualPipeV), so the two
  /// share one copy and no stage keeps an extra one.
  bool head_beside_embedding() const { return mirrored || v_shape; }
  int layers_in(int stage, int chunk) const { return layers[static_cast<std::size_t>(virtual_stage(stage, chunk))]; }
  int first_layer_of(int stage, int chunk) const {
    return first_layer[static_cast<std::size_t>(virtual_stage(stage, chunk))];
  }
  /// Layers held by physical stage `stage` over all its chunks.
  int layers_on_stage(int stage) const;
  bool holds_embedding(int stage, int chunk) const { return virtual_stage(stage, chunk) == 0; }
  bool holds_head(int stage, int chunk) const { return virtual_stage(stage, chunk) == virtual_stages() - 1; }
};

/// Virtual stages along a micro-batch's path for the plan: pp x vpp, pp with DualPipe (the model cut in pp, each
/// rank holding two), 2 pp with DualPipeV. Errors: none.
int virtual_stage_count(const ParallelPlan& p);

/// Errors: Error::invalid naming the split keys when layers do not divide evenly and no split is given, when a
/// split does not add up, or when split keys are combined.
PipelineLayout make_pipeline_layout(const ModelSpec& model, const ParallelPlan& plan);

}  // namespace orrery
