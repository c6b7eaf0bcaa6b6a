#include "sim/rank_layout.h"

#include <algorithm>

namespace orrery {

RankLayout::RankLayout(const ParallelPlan& plan)
    : tp_(plan.tp), cp_(plan.cp), dp_(plan.dp), pp_(plan.pp), ep_(plan.ep), etp_(plan.etp), cp_a2a_(plan.cp_a2a_size()) {}

RankCoord RankLayout::coord(int rank) const {
  RankCoord c;
  c.tp = rank % tp_;
  rank /= tp_;
  c.cp = rank % cp_;
  rank /= cp_;
  c.dp = rank % dp_;
  c.pp = rank / dp_;
  return c;
}

RankLayout::ExpertCoord RankLayout::expert_coord(int rank) const {
  const int index = rank % (tp_ * cp_ * dp_);
  return {rank - index, index % etp_, (index / etp_) % ep_, index / (etp_ * ep_)};
}

std::vector<int> RankLayout::group_members(GroupKind kind, int rank) const {
  const RankCoord me = coord(rank);
  std::vector<int> out;
  auto with = [&](auto change) {
    RankCoord c = me;
    change(c);
    out.push_back(this->rank(c));
  };
  const int next = (me.pp + 1) % pp_;
  const int prev = (me.pp + pp_ - 1) % pp_;
  switch (kind) {
    case GroupKind::kNone: break;
    case GroupKind::kTp:
      for (int t = 0; t < tp_; ++t) with([&](RankCoord& c) { c.tp = t; });
      break;
    case GroupKind::kCp:
      for (int x = 0; x < cp_; ++x) with([&](RankCoord& c) { c.cp = x; });
      break;
    case GroupKind::kCpA2a:  // Megatron-Core's hierarchical CP groups: the inner level is consecutive CP ranks
      for (int x = 0; x < cp_a2a_; ++x) with([&](RankCoord& c) { c.cp = me.cp / cp_a2a_ * cp_a2a_ + x; });
      break;
    case GroupKind::kCpP2p:
      for (int x = me.cp % cp_a2a_; x < cp_; x += cp_a2a_) with([&](RankCoord& c) { c.cp = x; });
      break;
    case GroupKind::kEp:
    case GroupKind::kExpertTp:
    case GroupKind::kExpertDp: {
      const auto [base, e_tp, e_ep, e_dp] = expert_coord(rank);
      const int edp = tp_ * cp_ * dp_ / (etp_ * ep_);
      auto at = [&, base = base](int t, int e, int d) { out.push_back(base + t + etp_ * (e + ep_ * d)); };
      if (kind == GroupKind::kEp) {
        for (int e = 0; e < ep_; ++e) at(e_tp, e, e_dp);
      } else if (kind == GroupKind::kExpertTp) {
        for (int t = 0; t < etp_; ++t) at(t, e_ep, e_dp);
      } else {
        for (int d = 0; d < edp; ++d) at(e_tp, e_ep, d);
      }
      break;
    }
    case GroupKind::kDp:
      for (int d = 0; d < dp_; ++d) {
        for (int x = 0; x < cp_; ++x) with([&](RankCoord& c) { c.dp = d, c.cp = x; });
      }
      break;
    case GroupKind::kAmax:
      for (int d = 0; d < dp_; ++d) {
        for (int x = 0; x < cp_; ++x) {
          for (int t = 0; t < tp_; ++t) with([&](RankCoord& c) { c.dp = d, c.cp = x, c.tp = t; });
        }
      }
      break;
    case GroupKind::kEmbedding:
      with([&](RankCoord& c) { c.pp = 0; });
      if (pp_ > 1) with([&](RankCoord& c) { c.pp = pp_ - 1; });
      break;
    case GroupKind::kModelParallel:
      for (int s = 0; s < pp_; ++s) {
        for (int t = 0; t < tp_; ++t) with([&](RankCoord& c) { c.pp = s, c.tp = t; });
      }
      break;
    // The reverse kinds (DualPipe's second direction) pair the same neighbours the other way round.
    case GroupKind::kPpForwardSend:         // me -> next
    case GroupKind::kPpReverseBackwardSend:
      if (pp_ > 1) out = {rank, this->rank({me.tp, me.cp, me.dp, next})};
      break;
    case GroupKind::kPpForwardRecv:         // prev -> me
    case GroupKind::kPpReverseBackwardRecv:
      if (pp_ > 1) out = {this->rank({me.tp, me.cp, me.dp, prev}), rank};
      break;
    case GroupKind::kPpBackwardSend:        // me -> prev
    case GroupKind::kPpReverseForwardSend:
      if (pp_ > 1) out = {rank, this->rank({me.tp, me.cp, me.dp, prev})};
      break;
    case GroupKind::kPpBackwardRecv:        // next -> me
    case GroupKind::kPpReverseForwardRecv:
      if (pp_ > 1) out = {this->rank({me.tp, me.cp, me.dp, next}), rank};
      break;
    case GroupKind::kPipelineMirrorLow:
    case GroupKind::kPipelineMirrorHigh:
      with([&](RankCoord& c) { c.pp = std::min(me.pp, pp_ - 1 - me.pp); });
      if (pp_ > 1) with([&](RankCoord& c) { c.pp = std::max(me.pp, pp_ - 1 - me.pp); });
      break;
  }
  return out;
}

int RankLayout::group_leader(GroupKind kind, int rank) const {
  const RankCoord me = coord(rank);
  auto with = [&](auto change) {
    RankCoord c = me;
    change(c);
    return this->rank(c);
  };
  // Each case sets the coordinates group_members varies to their lowest value over the group (a rank grows with
  // every coordinate); the p2p cases give group_members' first member, the sender.
  switch (kind) {
    case GroupKind::kNone: return -1;
    case GroupKind::kTp: return with([](RankCoord& c) { c.tp = 0; });
    case GroupKind::kCp: return with([](RankCoord& c) { c.cp = 0; });
    case GroupKind::kCpA2a: return with([&](RankCoord& c) { c.cp = me.cp / cp_a2a_ * cp_a2a_; });
    case GroupKind::kCpP2p: return with([&](RankCoord& c) { c.cp = me.cp % cp_a2a_; });
    case GroupKind::kEp:
    case GroupKind::kExpertTp:
    case GroupKind::kExpertDp: {
      const auto [base, e_tp, e_ep, e_dp] = expert_coord(rank);
      if (kind == GroupKind::kEp) return base + e_tp + etp_ * ep_ * e_dp;
      if (kind == GroupKind::kExpertTp) return base + etp_ * (e_ep + ep_ * e_dp);
      return base + e_tp + etp_ * e_ep;
    }
    case GroupKind::kDp: return with([](RankCoord& c) { c.dp = 0, c.cp = 0; });
    case GroupKind::kAmax: return with([](RankCoord& c) { c.dp = 0, c.cp = 0, c.tp = 0; });
    case GroupKind::kEmbedding: return with([](RankCoord& c) { c.pp = 0; });
    case GroupKind::kModelParallel: return with([](RankCoord& c) { c.pp = 0, c.tp = 0; });
    case GroupKind::kPipelineMirrorLow:
    case GroupKind::kPipelineMirrorHigh: return with([&](RankCoord& c) { c.pp = std::min(me.pp, pp_ - 1 - me.pp); });
    case GroupKind::kPpForwardSend:
    case GroupKind::kPpReverseBackwardSend:
    case GroupKind::kPpBackwardSend:
    case GroupKind::kPpReverseForwardSend: return pp_ > 1 ? rank : -1;
    case GroupKind::kPpForwardRecv:  // prev -> me
    case GroupKind::kPpReverseBackwardRecv: return pp_ > 1 ? with([&](RankCoord& c) { c.pp = (me.pp + pp_ - 1) % pp_; }) : -1;
    case GroupKind::kPpBackwardRecv:  // next -> me
    case GroupKind::kPpReverseForwardRecv: return pp_ > 1 ? with([&](RankCoord& c) { c.pp = (me.pp + 1) % pp_; }) : -1;
  }
  return -1;
}

}  // namespace orrery
