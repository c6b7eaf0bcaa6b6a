#pragma once
// A single-GPU workload graph as the reference executor (`orrery-execute`) reads it: the rank-0 program of a
// lowered scenario, task by task in issue order, written by `orrery calibrate export-workload`. Line-based text, so
// the executor reads it with the C++ standard library alone (it builds on bare GPU machines):
//
//   orrery-workload 1
//   static WEIGHTS GRADIENTS OPTIMIZER ACTIVATIONS OTHER        bytes resident from the start, by memory kind
//   task ID STREAM PHASE LAYER MICROBATCH START_KIND START_BYTES END_KIND END_BYTES DEPS N D1..DN OP ... | NAME
//
// STREAM and PHASE as the simulator names them (compute, tp, ...; forward, backward_input, ...); memory kinds
// weights, gradients, optimizer, activations, other; START_BYTES >= 0 allocated when the task starts, END_BYTES <= 0
// freed when it ends. DEPS lists the tasks it waits for (earlier ids). OP is one of
//   gemm M N K BATCH DTYPE GROUPED      (GROUPED 1: BATCH separate kernels; 0: one strided-batched kernel)
//   attention B H KVH Q KV DQK DV CAUSAL BACKWARD DTYPE
//   memory READ WRITTEN                 (elementwise and optimizer kernels: bytes read and written)
//   sync                                (the host waits for the GPU: a device-to-host synchronisation)
//   skip                                (communication or host work, which one GPU cannot run)
// NAME is the task's timeline name ("L3 q_proj gemm mb0"), to the end of the line.
//
// C++17 and the standard library only.

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace orrery::bench {

struct WorkloadTask {
  int id = 0;
  std::string stream, phase, name;
  int layer = -1, microbatch = -1;
  std::string start_kind = "activations", end_kind = "activations";
  std::int64_t start_bytes = 0, end_bytes = 0;
  std::vector<int> deps;
  std::string op;  // gemm, attention, memory, sync, skip
  // gemm: m n k batch grouped; attention: b h kvh q kv dqk dv causal backward; memory: read written
  std::vector<std::int64_t> args;
  std::string dtype;  // gemm and attention
};

struct WorkloadFile {
  std::array<std::int64_t, 5> static_bytes{};  // weights, gradients, optimizer, activations, other
  std::vector<WorkloadTask> tasks;
};

/// Writes the format above.
std::string format_workload(const WorkloadFile& w);

/// Parses it. Errors: std::invalid_argument "NAME:LINE: ..." naming the token and the rule (a task id out of
/// order, a dependency on a later task, an unknown op or memory kind, a wrong argument count).
WorkloadFile parse_workload(std::istream& in, const std::string& name);

}  // namespace orrery::bench
