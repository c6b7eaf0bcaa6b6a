#include "sim/engine/engine.h"

#include "models/error.h"
#include "models/process_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace orrery {

namespace {

// Errors: Error::invalid naming --memory-budget when this process's resident memory is above `budget` bytes (0: no
// budget; an unreadable resident size passes).
void check_resident_memory(std::int64_t budget) {
  if (budget <= 0) return;
  const std::int64_t resident = resident_bytes();
  if (resident <= budget) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  throw Error::invalid("--memory-budget", fmt::format("{:.3g} GiB", static_cast<double>(budget) / kGiB),
                       fmt::format("was reached while simulating ({:.3g} GiB resident); raise it (up to the machine's "
                                   "memory) or simulate less (one rank per stage, fewer micro-batches)",
                                   static_cast<double>(resident) / kGiB));
}

// 24 bytes: the queue holds one per running task of every simulated rank, and its sift-downs dominate the run
// time of `--expand-ranks`, so the event stays small.
struct Event {
  Nanoseconds time;
  std::int64_t seq;  // issue order: ties in time resolve deterministically; also identifies re-timed events
  std::int32_t instance;
  std::int32_t task;  // the task that ends; ~task (negative): the host has issued it
};

// Orders the queue's top as the earliest (time, seq).
struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.time != b.time ? a.time > b.time : a.seq > b.seq; }
};

struct Arrival {
  std::int32_t instance;
  std::int32_t task;
};

struct Rendezvous {
  std::vector<Arrival> arrived;
};

// The compute task running on an instance, for re-timing under communication contention.
struct RunningCompute {
  std::int32_t task = -1;
  double remaining = 0;    // nanoseconds of work left at full speed
  Nanoseconds since = 0;   // when `remaining` was last updated
  bool slowed = false;
  Nanoseconds end = 0;      // when the task ends at the current speeds
  std::int64_t event = -1;  // seq of the queued completion event that stands for it; any other is superseded
};

// A running transfer that leaves the instance's NVLink domain, for re-timing as others start and end beside it.
struct RunningTransfer {
  std::int32_t task = -1;
  std::uint8_t directions = 0;  // bit 0: it sends through the network port, bit 1: it receives
  double remaining = 0;         // nanoseconds of work left at the whole port's speed
  Nanoseconds since = 0;        // when `remaining` was last updated
  int share = 0;                // transfers on its busiest direction, itself included (0: not yet timed)
  Nanoseconds end = 0;
  std::int64_t event = -1;      // seq of the queued completion event that stands for it
  std::int32_t group = -1;      // the TransferGroup it ends with (-1: it ends on its own)
};

constexpr std::uint8_t kSends = 1, kReceives = 2;

// A rendezvous transfer over several instances while its members' ports re-time them apart.
struct TransferGroup {
  std::vector<Arrival> members;
  int running = 0;  // members still transferring
};

// One lane of one instance: whether a task runs on it, and the ready tasks waiting for it, per side (min-heaps on
// the task index, the issue order).
struct Lane {
  bool busy = false;
  std::array<std::vector<std::int32_t>, 2> waiting;
};

// A complete rendezvous group that found a member's lane busy; it starts when all its members' lanes are free.
struct DeferredGroup {
  std::vector<Arrival> members;
  int lane = 0;
  int side = 0;
};

class Simulation {
 public:
  Simulation(const WorkloadGraph& g, const Instantiation& inst, const Durations& d, const RunOptions& opt)
      : graph_(g), inst_(inst), durations_(d), slowdown_(opt.overlap_slowdown), share_network_(opt.share_network),
        memory_budget_(opt.memory_budget) {
    const std::size_t n = inst.instances.size();
    offset_.resize(n + 1);
    std::int64_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      offset_[i] = total;
      total += static_cast<std::int64_t>(program(i).tasks.size());
    }
    offset_[n] = total;
    pending_.resize(static_cast<std::size_t>(total));
    for (std::size_t i = 0; i < n; ++i) {
      const Program& p = program(i);
      std::copy(p.in_degree.begin(), p.in_degree.end(), pending_.begin() + offset_[i]);
    }
    base_ns_.resize(g.programs.size());
    for (std::size_t p = 0; p < g.programs.size(); ++p) {
      for (Seconds s : d.op_seconds[p]) base_ns_[p].push_back(to_nanos(s));
    }
    result_.instances.resize(n);
    running_.resize(n);
    host_on_ = !d.issue_seconds.empty();
    if (host_on_) {
      issue_prefix_.resize(g.programs.size());
      blocking_.resize(g.programs.size());
      issue_position_.resize(g.programs.size());
      for (std::size_t p = 0; p < g.programs.size(); ++p) {
        const Program& prog = g.programs[p];
        Nanoseconds total_ns = 0;
        issue_prefix_[p].reserve(prog.tasks.size());
        if (!prog.issue_order.empty()) {
          issue_position_[p].resize(prog.tasks.size());
          for (std::size_t k = 0; k < prog.issue_order.size(); ++k) {
            issue_position_[p][static_cast<std::size_t>(prog.issue_order[k])] = static_cast<std::int32_t>(k);
          }
        }
        for (std::size_t k = 0; k < prog.tasks.size(); ++k) {
          const std::size_t t = prog.issue_order.empty() ? k : static_cast<std::size_t>(prog.issue_order[k]);
          total_ns += to_nanos(d.issue_seconds[p][t]);
          issue_prefix_[p].push_back(total_ns);
          if (blocks_host(prog, prog.tasks[t])) blocking_[p].push_back(static_cast<std::int32_t>(k));
        }
      }
      host_segment_.assign(n, 0);
      host_base_.assign(n, 0);
      host_waiting_.resize(n);
      host_bases_.resize(n);
    }
    // Lanes matter only when a program merges passes onto twin streams; otherwise stream order already runs one
    // task per stream at a time, and the run skips the bookkeeping.
    for (const Program& p : g.programs) {
      lanes_on_ = lanes_on_ || std::any_of(p.tasks.begin(), p.tasks.end(), [](const Task& t) { return is_twin(t.stream); });
    }
    if (lanes_on_) lanes_.resize(n);
    // A lane of a program with its own issue order is one CUDA stream: its tasks run in issue order, each after
    // the one issued before it on the lane (Megatron-Core's merged passes share its compute and communication
    // streams). That order is an extra predecessor of each such task.
    lane_next_.resize(g.programs.size());
    for (std::size_t p = 0; lanes_on_ && p < g.programs.size(); ++p) {
      const Program& prog = g.programs[p];
      if (prog.issue_order.empty()) continue;
      lane_next_[p].assign(prog.tasks.size(), -1);
      std::array<std::int32_t, kNumLanes> last{};
      last.fill(-1);
      for (std::int32_t t : prog.issue_order) {
        const int lane = twin_lane(prog.tasks[static_cast<std::size_t>(t)].stream);
        if (lane < 0) continue;
        std::int32_t& before = last[static_cast<std::size_t>(lane)];
        if (before >= 0) lane_next_[p][static_cast<std::size_t>(before)] = t;
        before = t;
      }
      for (std::size_t i = 0; i < n; ++i) {
        if (static_cast<std::size_t>(inst.instances[i].program) != p) continue;
        for (std::int32_t next : lane_next_[p]) {
          if (next >= 0) ++pending_[static_cast<std::size_t>(offset_[i] + next)];
        }
      }
    }
    communicating_.assign(n, 0);
    if (share_network_) {
      transfers_.resize(n);
      port_users_.assign(n, {0, 0});
      directions_.resize(g.programs.size());
      for (std::size_t p = 0; p < g.programs.size(); ++p) {
        const Program& prog = g.programs[p];
        directions_[p].reserve(prog.tasks.size());
        for (const Task& t : prog.tasks) directions_[p].push_back(network_directions(prog, t));
      }
    }
    const bool record_all = total <= opt.record_budget;
    std::vector<bool> stage_seen(g.programs.size(), false);
    for (std::size_t i = 0; i < n; ++i) {
      const Instance& in = inst.instances[i];
      bool record = record_all || !stage_seen[static_cast<std::size_t>(in.program)] || in.compute_slowdown != 1.0;
      stage_seen[static_cast<std::size_t>(in.program)] = true;
      InstanceRun& run = result_.instances[i];
      run.recorded = record;
      if (record) run.timings.resize(program(i).tasks.size());
      live_.push_back({});
      for (int k = 0; k < kNumMemoryKinds; ++k) {
        live_.back()[static_cast<std::size_t>(k)] = program(i).static_memory[static_cast<std::size_t>(k)];
      }
      note_memory(i, 0);
    }
  }

  RunResult run() {
    for (std::size_t i = 0; i < inst_.instances.size(); ++i) {
      const Program& p = program(i);
      for (std::size_t t = 0; t < p.tasks.size(); ++t) {
        if (pending_[static_cast<std::size_t>(offset_[i]) + t] == 0) {
          make_ready(static_cast<std::int32_t>(i), static_cast<std::int32_t>(t), 0);
        }
      }
    }
    std::uint32_t polls = 0;
    while (!events_.empty()) {
      // The estimate before the run cannot see the queue and the rendezvous at their fullest: the resident size
      // can, every 65,536 events (a /proc read each, under 0.1% of the run).
      if ((++polls & 0xFFFFu) == 0) check_resident_memory(memory_budget_);
      Event e = events_.top();
      events_.pop();
      if (e.task < 0) {  // the host has issued a task whose predecessors had ended
        arrive(e.instance, ~e.task, e.time);
        continue;
      }
      if (share_network_ && directions(static_cast<std::size_t>(e.instance), e.task) != 0) {
        if (!transfer_done(e)) continue;
      } else if (slowdown_ > 0 && !due(e)) {
        continue;
      }
      finish(e.instance, e.task, e.time);
      ++result_.events;
    }
    if (completed_ != static_cast<std::int64_t>(pending_.size())) {
      throw std::logic_error(fmt::format("engine: {} of {} tasks never ran (deadlock in the workload graph); {}",
                                         static_cast<std::int64_t>(pending_.size()) - completed_, pending_.size(),
                                         describe_stuck()));
    }
    for (const InstanceRun& r : result_.instances) result_.makespan = std::max(result_.makespan, r.end);
    return std::move(result_);
  }

 private:
  // The rendezvous each instance is stuck at, for the deadlock message.
  std::string describe_stuck() const {
    std::string text;
    for (const auto& [key, r] : rendezvous_) {
      for (const Arrival& a : r.arrived) {
        const Task& t = program(static_cast<std::size_t>(a.instance)).tasks[static_cast<std::size_t>(a.task)];
        text += fmt::format("[instance {} task {} ({}, group {}, seq {}, layer {}, mb {}) waits at group {}] ",
                            a.instance, a.task, t.label, static_cast<int>(t.group), t.group_seq, t.layer,
                            t.microbatch, key >> 32);
      }
      if (text.size() > 2000) break;
    }
    for (const DeferredGroup& g : deferred_) {
      text += fmt::format("[group of {} members waits for lane {}] ", g.members.size(), g.lane);
    }
    return text;
  }

  // Which directions of the rank's network port a task uses: none unless it is a transfer whose group spans
  // NVLink domains (or an expert dispatch that sends across them).
  static std::uint8_t network_directions(const Program& p, const Task& t) {
    if (t.is_compute() || t.op < 0) return 0;
    const auto* c = std::get_if<CollectiveOp>(&p.ops[static_cast<std::size_t>(t.op)]);
    if (!c || c->bytes <= 0) return 0;
    const bool crosses = c->kind == CollectiveKind::kExpertDispatch ? c->network_bytes > 0 : c->placement.domains > 1;
    if (!crosses) return 0;
    switch (t.stream) {
      case Stream::kPpSendNext: case Stream::kPpSendPrev: case Stream::kPpReverseSendPrev: case Stream::kPpReverseSendNext:
        return kSends;
      case Stream::kPpRecvPrev: case Stream::kPpRecvNext: case Stream::kPpReverseRecvNext: case Stream::kPpReverseRecvPrev:
        return kReceives;
      default: return kSends | kReceives;
    }
  }

  std::uint8_t directions(std::size_t instance, std::int32_t task) const {
    return directions_[static_cast<std::size_t>(inst_.instances[instance].program)][static_cast<std::size_t>(task)];
  }

  // Transfers on the port's busiest direction among those `directions` uses.
  int port_share(std::size_t instance, std::uint8_t dirs) const {
    const auto& users = port_users_[instance];
    return std::max({1, (dirs & kSends) ? users[0] : 0, (dirs & kReceives) ? users[1] : 0});
  }

  // A transfer started or ended on the instance's port: the others' speeds follow the new shares from now on.
  void reshare(std::int32_t instance, Nanoseconds now) {
    const auto i = static_cast<std::size_t>(instance);
    for (RunningTransfer& r : transfers_[i]) {
      const int share = port_share(i, r.directions);
      if (share == r.share) continue;
      if (r.share > 0) r.remaining = std::max(0.0, r.remaining - static_cast<double>(now - r.since) / r.share);
      r.since = now;
      r.share = share;
      r.end = after(now, static_cast<Nanoseconds>(std::llround(r.remaining * share)));
      r.event = next_seq_;
      events_.push({r.end, next_seq_++, instance, r.task});
    }
  }

  void begin_transfer(std::int32_t instance, std::int32_t task, std::uint8_t dirs, Nanoseconds now, Nanoseconds d) {
    const auto i = static_cast<std::size_t>(instance);
    if (dirs & kSends) ++port_users_[i][0];
    if (dirs & kReceives) ++port_users_[i][1];
    RunningTransfer r;
    r.task = task;
    r.directions = dirs;
    r.remaining = static_cast<double>(d);
    r.since = now;
    transfers_[i].push_back(r);
    reshare(instance, now);  // times it (share 0 -> its real share) and queues its completion
  }

  const Program& program(std::size_t instance) const {
    return graph_.programs[static_cast<std::size_t>(inst_.instances[instance].program)];
  }

  Nanoseconds duration(std::int32_t instance, std::int32_t task) const {
    const Instance& in = inst_.instances[static_cast<std::size_t>(instance)];
    const auto p = static_cast<std::size_t>(in.program);
    const Task& t = graph_.programs[p].tasks[static_cast<std::size_t>(task)];
    const auto op = static_cast<std::size_t>(t.op);
    if (in.compute_slowdown == 1.0 || !t.is_compute()) return base_ns_[p][op];
    return to_nanos(durations_.op_seconds[p][op] * in.compute_slowdown);
  }

  TaskTiming* timing(std::int32_t instance, std::int32_t task) {
    InstanceRun& r = result_.instances[static_cast<std::size_t>(instance)];
    return r.recorded ? &r.timings[static_cast<std::size_t>(task)] : nullptr;
  }

  // Whether a task holds its host until it ends: a device-to-host synchronisation, or CPU work on the host.
  static bool blocks_host(const Program& p, const Task& t) {
    if (t.kind == TaskKind::kHostSync) return true;
    if (t.kind != TaskKind::kHostOp || t.op < 0) return false;
    const auto* h = std::get_if<HostOpShape>(&p.ops[static_cast<std::size_t>(t.op)]);
    return h && h->kind == HostOpShape::Kind::kHostMemory;
  }

  // When the instance's host issues `task`: -1 while a blocking task before it has not ended (the host waits
  // there). One issued before the latest blocking task ended (so no later than now) gives its exact time on a
  // recorded instance, which keeps every blocking task's end, else 0.
  Nanoseconds issue_time(std::int32_t instance, std::int32_t task) const {
    const auto i = static_cast<std::size_t>(instance);
    const auto p = static_cast<std::size_t>(inst_.instances[i].program);
    const std::vector<std::int32_t>& blocking = blocking_[p];
    const std::int32_t at = issue_position_[p].empty() ? task : issue_position_[p][static_cast<std::size_t>(task)];
    const auto segment = static_cast<std::int32_t>(std::lower_bound(blocking.begin(), blocking.end(), at) - blocking.begin());
    if (segment > host_segment_[i]) return -1;
    const std::vector<Nanoseconds>& bases = host_bases_[i];
    if (segment < host_segment_[i] && bases.empty()) return 0;
    const Nanoseconds base = segment == host_segment_[i] ? host_base_[i] : (segment > 0 ? bases[static_cast<std::size_t>(segment - 1)] : 0);
    const Nanoseconds before = segment > 0 ? issue_prefix_[p][static_cast<std::size_t>(blocking[static_cast<std::size_t>(segment - 1)])] : 0;
    return base + issue_prefix_[p][static_cast<std::size_t>(at)] - before;
  }

  // A task's predecessors have ended: it arrives now if its host has issued it, else when it does.
  void make_ready(std::int32_t instance, std::int32_t task, Nanoseconds now) {
    if (host_on_) {
      const Nanoseconds issued = issue_time(instance, task);
      if (issued < 0) {
        host_waiting_[static_cast<std::size_t>(instance)].push_back(task);
        return;
      }
      if (TaskTiming* t = timing(instance, task)) t->issued = issued;
      if (issued > now) {
        events_.push({issued, next_seq_++, instance, ~task});
        return;
      }
    }
    arrive(instance, task, now);
  }

  // A task is ready (predecessors ended, issued): it starts, waits for its lane, or joins its rendezvous.
  void arrive(std::int32_t instance, std::int32_t task, Nanoseconds now) {
    if (TaskTiming* t = timing(instance, task)) t->ready = now;
    const Task& t = program(static_cast<std::size_t>(instance)).tasks[static_cast<std::size_t>(task)];
    if (!t.is_rendezvous()) {
      start_or_wait(instance, task, now);
      return;
    }
    const std::int32_t group = inst_.group(static_cast<std::size_t>(instance), t.group);
    const std::int32_t members = inst_.group_size[static_cast<std::size_t>(group)];
    if (members <= 1) {
      start_or_wait(instance, task, now);
      return;
    }
    const std::uint64_t key = (static_cast<std::uint64_t>(group) << 32) | static_cast<std::uint32_t>(t.group_seq);
    Rendezvous& r = rendezvous_[key];
    r.arrived.push_back({instance, task});
    if (static_cast<std::int32_t>(r.arrived.size()) < members) return;
    const int lane = lane_of(t.stream);
    if (lane >= 0 && !lane_free(r.arrived, lane)) {
      deferred_.push_back({std::move(r.arrived), lane, side_of(t.stream)});
    } else {
      start_group(r.arrived, now);
    }
    rendezvous_.erase(key);
  }

  // The lane of a task's stream (-1: none, or no twin streams in this run), and which side of it the stream is.
  int lane_of(Stream s) const { return lanes_on_ ? twin_lane(s) : -1; }
  static int side_of(Stream s) { return is_twin(s) ? 1 : 0; }

  // Starts a task now, or queues it while its lane runs another.
  void start_or_wait(std::int32_t instance, std::int32_t task, Nanoseconds now) {
    const Stream stream = program(static_cast<std::size_t>(instance)).tasks[static_cast<std::size_t>(task)].stream;
    const int lane = lane_of(stream);
    if (lane >= 0) {
      Lane& l = lanes_[static_cast<std::size_t>(instance)][static_cast<std::size_t>(lane)];
      if (l.busy) {
        std::vector<std::int32_t>& heap = l.waiting[static_cast<std::size_t>(side_of(stream))];
        heap.push_back(task);
        std::push_heap(heap.begin(), heap.end(), std::greater<>{});
        return;
      }
    }
    start(instance, task, now, duration(instance, task));
  }

  bool lane_free(const std::vector<Arrival>& members, int lane) const {
    return std::none_of(members.begin(), members.end(), [&](const Arrival& a) {
      return lanes_[static_cast<std::size_t>(a.instance)][static_cast<std::size_t>(lane)].busy;
    });
  }

  // All members start together and take as long as the slowest.
  void start_group(const std::vector<Arrival>& members, Nanoseconds now) {
    Nanoseconds d = 0;
    for (const Arrival& a : members) d = std::max(d, duration(a.instance, a.task));
    for (const Arrival& a : members) start(a.instance, a.task, now, d);
    // Members re-timed by their own ports' sharing still end together, when the last has done its part.
    if (!share_network_ || !std::all_of(members.begin(), members.end(), [&](const Arrival& a) {
          return directions(static_cast<std::size_t>(a.instance), a.task) != 0;
        })) {
      return;
    }
    std::int32_t id = static_cast<std::int32_t>(transfer_groups_.size());
    if (free_transfer_groups_.empty()) {
      transfer_groups_.emplace_back();
    } else {
      id = free_transfer_groups_.back();
      free_transfer_groups_.pop_back();
    }
    transfer_groups_[static_cast<std::size_t>(id)] = {members, static_cast<int>(members.size())};
    // start() has just appended each member's transfer to its instance's list.
    for (const Arrival& a : members) transfers_[static_cast<std::size_t>(a.instance)].back().group = id;
  }

  // A network transfer's completion event was popped. It stands only while it is the latest queued for the
  // transfer (re-sharing the port re-queues it); then the transfer's part is done: it leaves the port, the others
  // speed up. One of a group of several instances ends only with the group's last member, which ends them all.
  // Returns whether the task ends now on its own (finish() is the caller's).
  bool transfer_done(const Event& e) {
    const auto i = static_cast<std::size_t>(e.instance);
    auto& running = transfers_[i];
    const auto it = std::find_if(running.begin(), running.end(), [&](const RunningTransfer& r) { return r.task == e.task; });
    if (it == running.end() || it->event != e.seq) return false;
    if (it->directions & kSends) --port_users_[i][0];
    if (it->directions & kReceives) --port_users_[i][1];
    const std::int32_t group = it->group;
    running.erase(it);
    reshare(e.instance, e.time);
    if (group < 0) return true;
    TransferGroup& g = transfer_groups_[static_cast<std::size_t>(group)];
    if (--g.running > 0) return false;
    const std::vector<Arrival> members = std::move(g.members);
    g.members.clear();
    free_transfer_groups_.push_back(group);
    for (const Arrival& a : members) finish(a.instance, a.task, e.time);
    return false;
  }

  // The lane's task on `instance` ended: the other side's earliest issued waiting task starts if there is one
  // (the GPU, or the one communication stream, alternates between the merged passes as Megatron-Core interleaves
  // their layers), else the same side's; then deferred groups of this instance whose members are all free.
  void release_lane(std::int32_t instance, int lane, int side, Nanoseconds now) {
    Lane& l = lanes_[static_cast<std::size_t>(instance)][static_cast<std::size_t>(lane)];
    l.busy = false;
    for (int s : {1 - side, side}) {
      std::vector<std::int32_t>& heap = l.waiting[static_cast<std::size_t>(s)];
      if (heap.empty()) continue;
      std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
      const std::int32_t next = heap.back();
      heap.pop_back();
      start(instance, next, now, duration(instance, next));
      return;
    }
    for (int s : {1 - side, side}) {
      for (std::size_t k = 0; k < deferred_.size(); ++k) {
        DeferredGroup& g = deferred_[k];
        if (g.lane != lane || g.side != s) continue;
        const bool member = std::any_of(g.members.begin(), g.members.end(),
                                        [&](const Arrival& a) { return a.instance == instance; });
        if (!member || !lane_free(g.members, lane)) continue;
        const std::vector<Arrival> members = std::move(g.members);
        deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(k));
        start_group(members, now);
        return;
      }
    }
  }

  void start(std::int32_t instance, std::int32_t task, Nanoseconds now, Nanoseconds d) {
    if (TaskTiming* t = timing(instance, task)) t->start = now;
    const auto i = static_cast<std::size_t>(instance);
    const Task& t = program(i).tasks[static_cast<std::size_t>(task)];
    apply(i, t.at_start(), now);
    if (const int lane = lane_of(t.stream); lane >= 0) lanes_[i][static_cast<std::size_t>(lane)].busy = true;
    if (slowdown_ > 0 && t.is_compute()) {
      RunningCompute& rc = running_[i];
      rc.task = task;
      rc.remaining = static_cast<double>(d);
      rc.since = now;
      rc.slowed = communicating_[i] > 0;
      rc.end = after(now, stretched(rc.remaining, rc.slowed));
      rc.event = next_seq_;
      events_.push({rc.end, next_seq_++, instance, task});
      return;
    }
    if (const std::uint8_t dirs = share_network_ ? directions(i, task) : 0; dirs != 0) {
      begin_transfer(instance, task, dirs, now, d);
    } else {
      events_.push({after(now, d), next_seq_++, instance, task});
    }
    if (slowdown_ > 0 && t.contends_for_sms() && ++communicating_[i] == 1) retime(instance, now);
  }

  // Whether a popped event completes its task now. A compute task's event stands only while it is the one its
  // RunningCompute names; if the task was slowed since, its end moved later and the event is re-queued there.
  bool due(const Event& e) {
    const auto i = static_cast<std::size_t>(e.instance);
    if (!program(i).tasks[static_cast<std::size_t>(e.task)].is_compute()) return true;
    RunningCompute& rc = running_[i];
    if (rc.task != e.task || rc.event != e.seq) return false;
    if (rc.end == e.time) return true;
    rc.event = next_seq_;
    events_.push({rc.end, next_seq_++, e.instance, e.task});
    return false;
  }

  // Event times stay far inside 64-bit nanoseconds (about 292 years); beyond that the input is unphysical.
  static Nanoseconds after(Nanoseconds now, Nanoseconds d) {
    constexpr Nanoseconds kLimit = 4'000'000'000'000'000'000;  // about 127 years
    if (d > kLimit - now) {
      throw Error::invalid("scenario", "an iteration longer than 4e9 s", "is beyond the simulated clock; check the "
                           "cluster's bandwidths, the stragglers and the batch");
    }
    return now + d;
  }

  Nanoseconds stretched(double ns, bool slowed) const {
    return static_cast<Nanoseconds>(std::llround(slowed ? ns * (1.0 + slowdown_) : ns));
  }

  // The instance started or stopped communicating: its running compute task changes speed from now on.
  void retime(std::int32_t instance, Nanoseconds now) {
    const auto i = static_cast<std::size_t>(instance);
    RunningCompute& rc = running_[i];
    const bool slowed = communicating_[i] > 0;
    if (rc.task < 0 || rc.slowed == slowed) return;
    const double elapsed = static_cast<double>(now - rc.since);
    rc.remaining = std::max(0.0, rc.remaining - (rc.slowed ? elapsed / (1.0 + slowdown_) : elapsed));
    rc.since = now;
    rc.slowed = slowed;
    const Nanoseconds end = after(now, stretched(rc.remaining, slowed));
    // A later end waits for the queued event to surface (due() re-queues it then), which saves a queue push for
    // every slow-down; an earlier end must be queued now.
    if (end < rc.end) {
      rc.event = next_seq_;
      events_.push({end, next_seq_++, instance, rc.task});
    }
    rc.end = end;
  }

  void finish(std::int32_t instance, std::int32_t task, Nanoseconds now) {
    ++completed_;
    const auto i = static_cast<std::size_t>(instance);
    if (slowdown_ > 0) {
      const Task& done = program(i).tasks[static_cast<std::size_t>(task)];
      if (done.is_compute()) {
        running_[i].task = -1;
      } else if (done.contends_for_sms() && --communicating_[i] == 0) {
        retime(instance, now);
      }
    }
    if (TaskTiming* t = timing(instance, task)) t->end = now;
    const Program& p = program(i);
    apply(i, p.tasks[static_cast<std::size_t>(task)].at_end(), now);
    InstanceRun& r = result_.instances[i];
    r.end = std::max(r.end, now);
    if (host_on_ && blocks_host(p, p.tasks[static_cast<std::size_t>(task)])) {
      // The host resumes: the tasks after this one are issued from now on.
      ++host_segment_[i];
      host_base_[i] = now;
      if (r.recorded) host_bases_[i].push_back(now);
      std::vector<std::int32_t> waiting = std::move(host_waiting_[i]);
      host_waiting_[i].clear();
      for (std::int32_t w : waiting) make_ready(instance, w, now);
    }
    // The task's lane stays busy while its successors become ready, so they join the waiting ones before the
    // lane picks its next task.
    auto [begin, end] = boost::out_edges(static_cast<std::uint32_t>(task), p.successors);
    for (auto e = begin; e != end; ++e) {
      const auto next = static_cast<std::int32_t>(boost::target(*e, p.successors));
      if (--pending_[static_cast<std::size_t>(offset_[i] + next)] == 0) make_ready(instance, next, now);
    }
    if (const std::vector<std::int32_t>& next = lane_next_[static_cast<std::size_t>(inst_.instances[i].program)];
        !next.empty()) {
      const std::int32_t after = next[static_cast<std::size_t>(task)];
      if (after >= 0 && --pending_[static_cast<std::size_t>(offset_[i] + after)] == 0) make_ready(instance, after, now);
    }
    const Stream stream = p.tasks[static_cast<std::size_t>(task)].stream;
    if (const int lane = lane_of(stream); lane >= 0) release_lane(instance, lane, side_of(stream), now);
  }

  void apply(std::size_t instance, const MemoryEffect& effect, Nanoseconds now) {
    if (effect.bytes == 0) return;
    live_[instance][static_cast<std::size_t>(effect.kind)] += effect.bytes;
    note_memory(instance, now);
  }

  void note_memory(std::size_t instance, Nanoseconds now) {
    Bytes total = 0;
    for (Bytes b : live_[instance]) total += b;
    InstanceRun& r = result_.instances[instance];
    if (total > r.peak) {
      r.peak = total;
      r.at_peak = live_[instance];
    }
    if (r.recorded) {
      if (!r.memory.empty() && r.memory.back().time == now) {
        r.memory.back().live = total;
      } else {
        r.memory.push_back({now, total});
      }
    }
  }

  const WorkloadGraph& graph_;
  const Instantiation& inst_;
  const Durations& durations_;
  double slowdown_ = 0.0;
  bool share_network_ = false;
  std::int64_t memory_budget_ = 0;
  std::vector<std::vector<RunningTransfer>> transfers_;   // per instance, while share_network_
  std::vector<std::array<int, 2>> port_users_;            // per instance: transfers sending, receiving
  std::vector<std::vector<std::uint8_t>> directions_;     // per program and task: network_directions()
  std::vector<TransferGroup> transfer_groups_;
  std::vector<std::int32_t> free_transfer_groups_;  // transfer_groups_ slots to reuse
  std::vector<RunningCompute> running_;
  std::vector<std::array<Lane, kNumLanes>> lanes_;  // per instance (lanes exist only when lanes_on_)
  std::vector<DeferredGroup> deferred_;
  bool lanes_on_ = false;  // some task runs on a twin stream
  std::vector<int> communicating_;  // transferring communication tasks per instance
  std::vector<std::int64_t> offset_;
  std::vector<std::uint16_t> pending_;
  std::vector<std::vector<Nanoseconds>> base_ns_;
  // The host timeline (host_on_): per program, the cumulative issue time of its tasks and its blocking tasks in
  // issue order (Program::issue_order, else task order); per instance, the blocking tasks ended so far, when the last ended, and the ready tasks whose host
  // waits at a blocking task before them.
  bool host_on_ = false;
  std::vector<std::vector<Nanoseconds>> issue_prefix_;     // by issue position
  std::vector<std::vector<std::int32_t>> issue_position_;  // task -> issue position; empty: the task index
  std::vector<std::vector<std::int32_t>> blocking_;        // issue positions of blocking tasks
  std::vector<std::vector<std::int32_t>> lane_next_;  // per program with an issue order: the next task on its lane
  std::vector<std::int32_t> host_segment_;
  std::vector<Nanoseconds> host_base_;
  std::vector<std::vector<Nanoseconds>> host_bases_;  // recorded instances: each blocking task's end, in order
  std::vector<std::vector<std::int32_t>> host_waiting_;
  std::vector<std::array<Bytes, kNumMemoryKinds>> live_;
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  std::unordered_map<std::uint64_t, Rendezvous> rendezvous_;
  std::int64_t next_seq_ = 0;
  std::int64_t completed_ = 0;
  RunResult result_;
};

}  // namespace

RunResult run_engine(const WorkloadGraph& graph, const Instantiation& instances, const Durations& durations,
                     const RunOptions& options) {
  Simulation sim(graph, instances, durations, options);
  return sim.run();
}

}  // namespace orrery
