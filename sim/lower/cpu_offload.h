#pragma once
// Transformer Engine's activation CPU offload (Megatron-LM --cpu-offloading-num-layers,
// TrainingSpec::cpu_offloading_num_layers): which decoder layers of a model chunk copy their saved activations to
// the host, and by when each copy must be done.

#include <cstddef>
#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/sharded_params.h"

namespace orrery {

/// Whether unit `i` of a chunk's `units` is offloaded: the first cpu_offloading_num_layers decoder layers of each
/// chunk (not multi-token prediction depths, which sit outside the decoder block).
bool offloaded(const LoweringContext& ctx, const std::vector<ParamUnit>& units, std::size_t i);

/// Transformer Engine's windowed offload (AsyncDoubleBufferGroupOffloadHandler, layer_window_map): with k of a
/// chunk's L decoder layers offloaded, the copy of layer j must be done by the end of decoder layer
/// (L / k)(j + 1) - 1 + min(j + 1, L mod k): there the compute stream waits for the copy stream, so a copy that
/// falls behind stalls the forward instead of holding more memory. Returns each offloaded layer's window, as a
/// decoder index of the chunk (increasing; the last is the chunk's last decoder layer). Empty without offload.
std::vector<int> offload_windows(const LoweringContext& ctx, const std::vector<ParamUnit>& units);

}  // namespace orrery
