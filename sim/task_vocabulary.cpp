#include "sim/task_vocabulary.h"

#include <variant>

namespace orrery {

const char* to_string(Stream stream) {
  switch (stream) {
    case Stream::kCompute: return "compute";
    case Stream::kTp: return "tp";
    case Stream::kCp: return "cp";
    case Stream::kEp: return "ep";
    case Stream::kDp: return "dp";
    case Stream::kDpReduce: return "dp_reduce";
    case Stream::kPpSendNext: return "pp_send_next";
    case Stream::kPpRecvPrev: return "pp_recv_prev";
    case Stream::kPpSendPrev: return "pp_send_prev";
    case Stream::kPpRecvNext: return "pp_recv_next";
    case Stream::kPpReverseSendPrev: return "pp_reverse_send_prev";
    case Stream::kPpReverseRecvNext: return "pp_reverse_recv_next";
    case Stream::kPpReverseSendNext: return "pp_reverse_send_next";
    case Stream::kPpReverseRecvPrev: return "pp_reverse_recv_prev";
    case Stream::kDeviceToHost: return "device_to_host";
    case Stream::kHostToDevice: return "host_to_device";
    case Stream::kComputeB: return "compute_b";
    case Stream::kTpB: return "tp_b";
    case Stream::kCpB: return "cp_b";
    case Stream::kEpB: return "ep_b";
    case Stream::kAmax: return "amax";
  }
  return "?";
}

int twin_lane(Stream stream) {
  if (is_twin(stream)) return static_cast<int>(stream) - static_cast<int>(Stream::kComputeB);
  for (int lane = 0; lane < kNumLanes; ++lane) {
    if (kTwinStreams[lane] == stream) return lane;
  }
  return -1;
}

Stream overlapped_twin(Stream stream) {
  const int lane = twin_lane(stream);
  if (lane < 0 || is_twin(stream)) return stream;
  return static_cast<Stream>(static_cast<int>(Stream::kComputeB) + lane);
}

const char* to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::kNone: return "none";
    case GroupKind::kTp: return "tp";
    case GroupKind::kCp: return "cp";
    case GroupKind::kEp: return "ep";
    case GroupKind::kDp: return "dp";
    case GroupKind::kEmbedding: return "embedding";
    case GroupKind::kModelParallel: return "model_parallel";
    case GroupKind::kAmax: return "amax";
    case GroupKind::kExpertTp: return "expert_tp";
    case GroupKind::kExpertDp: return "expert_dp";
    case GroupKind::kCpA2a: return "cp_a2a";
    case GroupKind::kCpP2p: return "cp_p2p";
    case GroupKind::kPpForwardSend: return "pp_forward_send";
    case GroupKind::kPpForwardRecv: return "pp_forward_recv";
    case GroupKind::kPpBackwardSend: return "pp_backward_send";
    case GroupKind::kPpBackwardRecv: return "pp_backward_recv";
    case GroupKind::kPipelineMirrorLow: return "pipeline_mirror_low";
    case GroupKind::kPipelineMirrorHigh: return "pipeline_mirror_high";
    case GroupKind::kPpReverseForwardSend: return "pp_reverse_forward_send";
    case GroupKind::kPpReverseForwardRecv: return "pp_reverse_forward_recv";
    case GroupKind::kPpReverseBackwardSend: return "pp_reverse_backward_send";
    case GroupKind::kPpReverseBackwardRecv: return "pp_reverse_backward_recv";
  }
  return "?";
}

namespace {

// The report category of a group kind's communication (sim/report.cpp's breakdown rows): hierarchical CP's two
// levels are CP, expert TP is expert parallelism, every pipeline transfer is PP; gradient, norm, amax and mirror
// reductions are data-parallel-side traffic.
const char* category(GroupKind kind) {
  if (is_pipeline_transfer(kind)) return "pp";
  switch (kind) {
    case GroupKind::kNone: return "";
    case GroupKind::kTp: return "tp";
    case GroupKind::kCp: case GroupKind::kCpA2a: case GroupKind::kCpP2p: return "cp";
    case GroupKind::kEp: case GroupKind::kExpertTp: return "ep";
    default: return "dp";
  }
}

// Groups whose members sit on different pipeline stages: waiting for them is pipeline bubble.
bool spans_stages(GroupKind g) {
  return g == GroupKind::kModelParallel || g == GroupKind::kEmbedding || is_pipeline_transfer(g);
}

std::uint8_t port_directions(Stream stream) {
  using namespace demand_bits;
  switch (stream) {
    case Stream::kPpSendNext: case Stream::kPpSendPrev: case Stream::kPpReverseSendPrev: case Stream::kPpReverseSendNext:
      return kPortSend;
    case Stream::kPpRecvPrev: case Stream::kPpRecvNext: case Stream::kPpReverseRecvNext: case Stream::kPpReverseRecvPrev:
      return kPortReceive;
    default: return kPortSend | kPortReceive;
  }
}

}  // namespace

std::uint8_t resource_demands(const Task& t, const Op& op) {
  using namespace demand_bits;
  if (is_compute(t)) return kSmCompute;
  std::uint8_t demands = contends_for_sms(t) ? kSmContender : 0;
  const auto* c = std::get_if<CollectiveOp>(&op);
  if (!c || c->bytes <= 0) return demands;
  const bool crosses = c->kind == CollectiveKind::kExpertDispatch ? c->network_bytes > 0 : c->placement.domains > 1;
  return crosses ? static_cast<std::uint8_t>(demands | port_directions(stream_of(t))) : demands;
}

void declare_vocabulary(WorkloadGraph& graph) {
  graph.streams.clear();
  for (int s = 0; s < kNumStreams; ++s) {
    const auto stream = static_cast<Stream>(s);
    StreamInfo info;
    info.name = to_string(stream);
    info.lane = static_cast<std::int8_t>(twin_lane(stream));
    info.side = is_twin(stream) ? 1 : 0;
    info.compute = stream == Stream::kCompute || stream == Stream::kComputeB;
    graph.streams.push_back(info);
  }
  graph.group_kinds.clear();
  for (int k = 0; k < kNumGroupKinds; ++k) {
    const auto kind = static_cast<GroupKind>(k);
    GroupKindInfo info;
    info.name = to_string(kind);
    info.category = category(kind);
    info.spans_stages = spans_stages(kind);
    if (is_pipeline_transfer(kind)) {
      info.pair = static_cast<std::int8_t>(is_pipeline_send(kind) ? k + 1 : k - 1);
      info.sends = is_pipeline_send(kind);
    }
    graph.group_kinds.push_back(info);
  }
  graph.demands = {{"sm_contention", "compute"}, {"sm_contention", "contender"},
                   {"port_fair_share", "send"}, {"port_fair_share", "receive"}};
}

}  // namespace orrery
