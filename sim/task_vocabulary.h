#pragma once
// The lowering's vocabulary for the workload graph (ARCHITECTURE.md "The workload graph and the engine"): the streams
// of a Megatron-Core rank, its communication groups, and the resources its tasks demand. The engine knows none of
// these names: declare_vocabulary() writes them into WorkloadGraph's tables (a stream's name, lane and side; a group
// kind's name, report category and pairing; a demand's resource model and role), and tasks carry indices into them.
//
// Stream and GroupKind are plain enums inside their own namespaces, so that `Stream::kTp` reads as before, converts
// to the Task field (a table index) without a cast, and the two kTp enumerators do not collide.

#include <cstdint>

#include "sim/engine/workload_graph.h"

namespace orrery {

namespace stream_names {
/// Streams of one rank: compute, and one per kind of communication so that overlap is modelled. Point-to-point
/// traffic has a stream per direction and peer, as Megatron's batched isend/irecv lets each progress. The *B streams
/// carry a backward pass that runs merged with a forward pass of another micro-batch (Megatron-Core's
/// overlap_moe_expert_parallel_comm). A stream and its twin form one lane (side 0 and side 1) that the engine runs
/// one task at a time, alternating between the passes when both have work: the one GPU, and the one communication
/// stream Megatron-Core issues both passes' collectives on. So one pass's all-to-alls hide behind the other's compute.
enum Stream : std::uint8_t {
  kCompute,
  kTp,
  kCp,
  kEp,
  kDp,        // data-parallel parameter all-gathers
  kDpReduce,  // data-parallel gradient all-reduces / reduce-scatters
  kPpSendNext,
  kPpRecvPrev,
  kPpSendPrev,
  kPpRecvNext,
  // DualPipe's reverse direction (chunk 1): activations towards the previous rank, gradients towards the next.
  kPpReverseSendPrev,
  kPpReverseRecvNext,
  kPpReverseSendNext,
  kPpReverseRecvPrev,
  kDeviceToHost,  // copy engine towards the host, and the host work that follows it (CPU offload)
  kHostToDevice,  // copy engine towards the GPU
  // FP8 amax all-reduces: Megatron-Core's amax reduction group is a communicator of its own (parallel_state
  // _AMAX_REDUCTION_GROUP), so they do not queue behind the data-parallel gathers and reductions.
  kAmax,
  kComputeB,
  kTpB,
  kCpB,
  kEpB,
};
}  // namespace stream_names
using stream_names::Stream;
inline constexpr int kNumStreams = 21;

/// The streams that have a twin, in lane order; kTwinStreams[i]'s twin is Stream(kComputeB + i).
inline constexpr Stream kTwinStreams[] = {Stream::kCompute, Stream::kTp, Stream::kCp, Stream::kEp};
inline constexpr int kNumLanes = 4;
/// The stream a merged backward pass uses in place of `stream` (the streams without a twin map to themselves).
Stream overlapped_twin(Stream stream);
/// The lane of `stream`: its index in kTwinStreams, or that of the stream it is the twin of; -1 for the others.
int twin_lane(Stream stream);
/// True for the twin streams (kComputeB, kTpB, kCpB, kEpB).
inline bool is_twin(Stream stream) { return stream >= Stream::kComputeB; }

namespace group_names {
/// The communication group a rendezvous task belongs to. The p2p kinds pair a sender with its receiver: a
/// kPpForwardSend task of stage s and a kPpForwardRecv task of stage s+1 meet in the same group. The kPpReverse
/// kinds carry DualPipe's reverse direction, whose forward runs from stage s to s-1; they have kinds of their own so
/// that each direction's transfers pair in micro-batch order.
enum GroupKind : std::uint8_t {
  kNone,           // no rendezvous (WorkloadGraph's group kind 0)
  kTp,
  kCp,
  kEp,             // expert parallelism: the ranks that exchange tokens for their experts
  kDp,             // data-parallel gradients and parameters (dp x cp ranks)
  kEmbedding,      // first and last pipeline stage, for tied embeddings
  kModelParallel,  // all tp x pp ranks of one model replica (gradient norm)
  kAmax,           // all tp x cp x dp ranks of one pipeline stage (FP8 amax reduction, Megatron's amax group)
  kExpertTp,       // expert tensor parallelism (ETP) inside an expert-parallel rank
  kExpertDp,       // ranks holding the same expert shard: their gradients are reduced together
  kCpA2a,          // hierarchical CP: the all-to-all group (consecutive CP ranks)
  kCpP2p,          // hierarchical CP: the ring across all-to-all groups
  // DualPipe: ranks s and pp-1-s, which hold copies of the same two model stages, summing the gradients of the
  // one in the first (Low) or second (High) half of the model: two kinds, so each pairs on its own.
  kPipelineMirrorLow,
  kPipelineMirrorHigh,
  // The point-to-point kinds come last, each send kind followed by its receive kind (instances.cpp pairs them).
  kPpForwardSend,
  kPpForwardRecv,
  kPpBackwardSend,
  kPpBackwardRecv,
  kPpReverseForwardSend,   // me -> prev
  kPpReverseForwardRecv,   // next -> me
  kPpReverseBackwardSend,  // me -> next
  kPpReverseBackwardRecv,  // prev -> me
};
}  // namespace group_names
using group_names::GroupKind;
inline constexpr int kNumGroupKinds = 22;
/// The point-to-point kinds (pipeline transfers), which pair one sender with one receiver.
inline bool is_pipeline_transfer(GroupKind g) { return g >= GroupKind::kPpForwardSend; }
/// The sending side of a point-to-point pair: the first of each send/receive pair of kinds.
inline bool is_pipeline_send(GroupKind g) {
  return is_pipeline_transfer(g) && (static_cast<int>(g) - static_cast<int>(GroupKind::kPpForwardSend)) % 2 == 0;
}
/// A task's group kind, as the lowering names it.
inline GroupKind group_of(const Task& t) { return static_cast<GroupKind>(t.group); }
/// A task's stream, as the lowering names it.
inline Stream stream_of(const Task& t) { return static_cast<Stream>(t.stream); }

/// Whether a task runs on a compute stream (the GPU's SMs: kCompute or its twin).
inline bool is_compute(const Task& t) { return t.stream == Stream::kCompute || t.stream == Stream::kComputeB; }
/// Non-compute work that takes SMs from compute (NCCL kernels); PCIe copies run on copy engines and a host's wait for
/// a side-stream copy takes none.
inline bool contends_for_sms(const Task& t) {
  return !is_compute(t) && t.kind != TaskKind::kHostOp && t.kind != TaskKind::kHostSync;
}

const char* to_string(Stream stream);
const char* to_string(GroupKind kind);

/// The demand bits of Program::demands (WorkloadGraph::demands[bit] declares each one's model and role).
namespace demand_bits {
inline constexpr std::uint8_t kSmCompute = 1;    // "sm_contention" "compute": slowed while NCCL kernels run beside it
inline constexpr std::uint8_t kSmContender = 2;  // "sm_contention" "contender": an NCCL kernel taking SMs
inline constexpr std::uint8_t kPortSend = 4;     // "port_fair_share" "send": the rank's network port, sending
inline constexpr std::uint8_t kPortReceive = 8;  // "port_fair_share" "receive": the rank's network port, receiving
}  // namespace demand_bits

/// The resources a task of the lowering demands (a DemandRule for ProgramBuilder): SM contention for compute and for
/// communication kernels; the rank's network port, in the directions it uses, for a transfer whose group spans NVLink
/// domains (or an expert dispatch that sends across them): collectives send and receive, pipeline sends only send,
/// receives only receive.
std::uint8_t resource_demands(const Task& task, const Op& op);

/// Writes the lowering's streams, group kinds and resource demands into `graph`'s tables (WorkloadGraph::streams,
/// group_kinds, demands), in the enums' order, so Task::stream, Task::group and Program::demands index them.
void declare_vocabulary(WorkloadGraph& graph);

/// A ProgramBuilder whose tasks get resource_demands() (the lowering's, and hand-built graphs in tests that mean
/// the same streams).
inline ProgramBuilder program_builder(int stage) { return ProgramBuilder(stage, &resource_demands); }

}  // namespace orrery
