#include "sim/engine/engine.h"

#include "models/error.h"
#include "models/process_memory.h"
#include "sim/engine/event_queue.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
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

// What an event means, in the low two bits of Event::tag; the rest is the instance, or for a paced event the
// action's generation (Action::generation), and Event::id the task or the action.
enum EventKind : std::uint32_t {
  kEnd = 0,     // Event::id's task ends (a task of fixed duration)
  kIssued = 1,  // the host has issued task Event::id, whose predecessors had ended
  kPaced = 2,   // action Event::id's work may be done: it is if this is the action's latest event and time
};
constexpr std::uint32_t kTagPayload = 0x3FFF'FFFFu;  // the 30 bits above the kind

struct Arrival {
  std::int32_t instance;
  std::int32_t task;
};

// The members of one group's call of one issue order (Task::group_seq) that have arrived.
struct Rendezvous {
  std::int32_t seq = 0;
  std::vector<Arrival> arrived;
};

struct GroupState {
  std::int32_t size = 0;  // member instances
  std::vector<Rendezvous> open;
};

constexpr int kMaxModels = 2;  // the models resource_model.h names; raise it with the next one

// A running task whose speed resource models set (resource_model.h).
struct Action {
  std::int32_t instance = -1;
  std::int32_t task = -1;
  std::int32_t group = -1;     // the PacedGroup it ends with (-1: it ends on its own)
  double remaining = 0;        // nanoseconds of work left at full speed, as of `since`
  std::array<double, kMaxModels> factor{1, 1};  // time per unit of work is their product (stretch())
  Nanoseconds since = 0;
  Nanoseconds end = 0;         // when its work is done at the current speeds
  bool queued = false;         // its latest event is queued (false: starting, or done)
  // Counts the slot's queued events (mod 2^30), kept when the slot is reused: an event of another generation is
  // stale. (A stale event still queued when its slot has been queued 2^30 times since would be taken for current.)
  std::uint32_t generation = 0;

  double stretch() const { return factor[0] * factor[1]; }
};

// A rendezvous whose members are all paced: each does its work at its own speed, and all end with the last.
struct PacedGroup {
  std::vector<Arrival> members;
  int running = 0;  // members whose work is not done
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

// How a task with one demand mask meets the models: each enabled model's role bits, and whether any model paces it.
struct DemandPlan {
  std::array<std::uint8_t, kMaxModels> roles{};
  std::array<std::uint8_t, kMaxModels> paced{};  // roles & the model's paced_roles()
  bool any = false;
  bool is_paced = false;
};

// Errors: std::logic_error naming the first task whose stream, group kind or demand bit is outside the graph's tables.
void check_tables(const WorkloadGraph& g, const Instantiation& inst) {
  if (g.group_kinds.empty() || inst.group_kinds != static_cast<int>(g.group_kinds.size())) {
    throw std::logic_error(fmt::format("engine: the instantiation has {} group kinds, the graph declares {}",
                                       inst.group_kinds, g.group_kinds.size()));
  }
  if (g.demands.size() > static_cast<std::size_t>(kMaxDemands)) {
    throw std::logic_error(fmt::format("engine: the graph declares {} demands, at most {}", g.demands.size(), kMaxDemands));
  }
  for (std::size_t k = 0; k < g.streams.size(); ++k) {
    const StreamInfo& s = g.streams[k];
    if (s.lane < -1 || s.side > 1) {
      throw std::logic_error(fmt::format("engine: stream {} ({}) has lane {} and side {}; a lane is -1 or more, a side "
                                         "0 or 1", k, s.name, s.lane, s.side));
    }
  }
  for (std::size_t k = 0; k < g.group_kinds.size(); ++k) {
    const GroupKindInfo& kind = g.group_kinds[k];
    if (kind.pair >= static_cast<int>(g.group_kinds.size()) ||
        (kind.pair >= 0 && g.group_kinds[static_cast<std::size_t>(kind.pair)].pair != static_cast<int>(k))) {
      throw std::logic_error(fmt::format("engine: group kind {} ({}) pairs with {}, which does not pair back", k,
                                         kind.name, kind.pair));
    }
  }
  for (const DemandInfo& d : g.demands) resource_roles(d.model);  // std::invalid_argument for an unknown model
  if (inst.group_of.size() != inst.instances.size() * g.group_kinds.size()) {
    throw std::logic_error(fmt::format("engine: the instantiation has {} group entries for {} instances of {} kinds",
                                       inst.group_of.size(), inst.instances.size(), g.group_kinds.size()));
  }
  for (const std::int32_t id : inst.group_of) {
    if (id < -1 || id >= static_cast<std::int32_t>(inst.group_size.size())) {
      throw std::logic_error(fmt::format("engine: group id {} of {} groups", id, inst.group_size.size()));
    }
  }
  for (const Instance& in : inst.instances) {
    if (in.program < 0 || in.program >= static_cast<int>(g.programs.size())) {
      throw std::logic_error(fmt::format("engine: an instance of program {} of {}", in.program, g.programs.size()));
    }
  }
  const auto demand_limit = static_cast<unsigned>(1u << g.demands.size());
  for (const Program& p : g.programs) {
    if (!p.demands.empty() && p.demands.size() != p.tasks.size()) {
      throw std::logic_error(fmt::format("engine: program {} has {} demand masks for {} tasks", p.stage, p.demands.size(),
                                         p.tasks.size()));
    }
    for (std::size_t t = 0; t < p.tasks.size(); ++t) {
      const Task& task = p.tasks[t];
      const std::uint8_t d = p.demands.empty() ? 0 : p.demands[t];
      if (task.stream >= g.streams.size() || task.group >= g.group_kinds.size() || d >= demand_limit) {
        throw std::logic_error(fmt::format("engine: task {} of program {} has stream {}, group kind {}, demands {:#x}, "
                                           "beyond the graph's {} streams, {} group kinds and {} demands",
                                           t, p.stage, task.stream, task.group, d, g.streams.size(),
                                           g.group_kinds.size(), g.demands.size()));
      }
    }
  }
}

class Simulation final : private Pacing {
 public:
  Simulation(const WorkloadGraph& g, const Instantiation& inst, const Durations& d, const RunOptions& opt)
      : graph_(g), inst_(inst), durations_(d), memory_budget_(opt.memory_budget), observers_(opt.observers) {
    check_tables(g, inst);
    const std::size_t n = inst.instances.size();
    set_up_models(opt.resources, n);
    paced_stream_.assign(g.streams.size(), -1);
    std::int32_t paced_rows = 0;
    for (const Program& p : g.programs) {
      for (std::size_t t = 0; t < p.demands.size(); ++t) {
        std::int32_t& row = paced_stream_[p.tasks[t].stream];
        if (row < 0 && plans_[p.demands[t]].is_paced) row = paced_rows++;
      }
    }
    if (n > kTagPayload) {
      throw std::logic_error(fmt::format("engine: {} instances, at most {} (the event tag's 30 bits)", n, kTagPayload));
    }
    if (static_cast<double>(paced_rows) * static_cast<double>(n) >= 2e9) {
      throw std::logic_error("engine: too many paced streams x instances for 32-bit action ids");
    }
    actions_.resize(static_cast<std::size_t>(paced_rows) * n);
    // Several instances of one program (--expand-ranks, stragglers) meet the same times; one each rarely does.
    events_ = EventQueue(n > g.programs.size());

    // Pending counts are laid out task-major within each program ([task][instance of the program]): the ranks of
    // a symmetric job end the same task at about the same time, so consecutive events touch neighbouring counts
    // instead of one cache line per rank (instance-major, this decrement was 44% of an --expand-ranks run).
    std::vector<std::size_t> per_program(g.programs.size(), 0);
    slot_.resize(n);
    for (std::size_t i = 0; i < n; ++i) slot_[i] = per_program[static_cast<std::size_t>(inst.instances[i].program)]++;
    program_width_ = per_program;
    std::size_t total = 0;
    for (std::size_t p = 0; p < g.programs.size(); ++p) total += g.programs[p].tasks.size() * per_program[p];
    total_tasks_ = static_cast<std::int64_t>(total);
    initial_pending_.resize(g.programs.size());
    for (std::size_t p = 0; p < g.programs.size(); ++p) {
      initial_pending_[p].assign(g.programs[p].in_degree.begin(), g.programs[p].in_degree.end());
    }
    // Per-instance start delays (Instance::start_delay) and the demand bits of the network port
    // (Instance::network_slowdown), by the resource model's name.
    start_ns_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const Instance& in = inst.instances[i];
      if (!(in.start_delay >= 0) || !std::isfinite(in.start_delay) || !(in.compute_slowdown > 0) ||
          !std::isfinite(in.compute_slowdown) || !(in.network_slowdown > 0) || !std::isfinite(in.network_slowdown)) {
        throw std::logic_error(fmt::format("engine: instance {} has a slowdown that is not positive and finite or a "
                                           "start delay that is negative or not finite", i));
      }
      start_ns_[i] = to_nanos(in.start_delay);
    }
    for (std::size_t b = 0; b < g.demands.size(); ++b) {
      if (g.demands[b].model == "port_fair_share") network_bits_ = static_cast<std::uint8_t>(network_bits_ | (1u << b));
    }
    base_ns_.resize(g.programs.size());
    for (std::size_t p = 0; p < g.programs.size(); ++p) {
      for (Seconds s : d.op_seconds[p]) base_ns_[p].push_back(to_nanos(s));
    }
    result_.instances.resize(n);
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
      host_base_ = start_ns_;
      host_waiting_.resize(n);
      host_bases_.resize(n);
    }
    // Lanes matter only when some task runs on a second side of one; otherwise stream order already runs one task
    // per stream at a time, and the run skips the bookkeeping.
    for (const StreamInfo& s : g.streams) num_lanes_ = std::max(num_lanes_, s.lane + 1);
    for (const Program& p : g.programs) {
      lanes_on_ = lanes_on_ || std::any_of(p.tasks.begin(), p.tasks.end(), [&](const Task& t) {
                    return graph_.streams[t.stream].lane >= 0 && graph_.streams[t.stream].side != 0;
                  });
    }
    if (lanes_on_) lanes_.resize(n * static_cast<std::size_t>(num_lanes_));
    // A lane of a program with its own issue order is one CUDA stream: its tasks run in issue order, each after
    // the one issued before it on the lane (merged passes share one compute and one communication stream). That
    // order is an extra predecessor of each such task.
    lane_next_.resize(g.programs.size());
    for (std::size_t p = 0; lanes_on_ && p < g.programs.size(); ++p) {
      const Program& prog = g.programs[p];
      if (prog.issue_order.empty()) continue;
      lane_next_[p].assign(prog.tasks.size(), -1);
      std::vector<std::int32_t> last(static_cast<std::size_t>(num_lanes_), -1);
      for (std::int32_t t : prog.issue_order) {
        const int lane = graph_.streams[prog.tasks[static_cast<std::size_t>(t)].stream].lane;
        if (lane < 0) continue;
        std::int32_t& before = last[static_cast<std::size_t>(lane)];
        if (before >= 0) lane_next_[p][static_cast<std::size_t>(before)] = t;
        before = t;
      }
      for (std::int32_t next : lane_next_[p]) {
        if (next >= 0) ++initial_pending_[p][static_cast<std::size_t>(next)];
      }
    }
    // Only a task with two or more predecessors needs a count: one with a single predecessor is ready when that one
    // ends (most tasks: the previous task on their stream). That keeps 40% fewer counts at 16,384 ranks (405B).
    count_row_.resize(g.programs.size());
    program_base_.resize(g.programs.size());
    std::size_t counted = 0;
    for (std::size_t p = 0; p < g.programs.size(); ++p) {
      program_base_[p] = counted;
      std::int32_t rows_of_p = 0;
      count_row_[p].assign(initial_pending_[p].size(), -1);
      for (std::size_t t = 0; t < initial_pending_[p].size(); ++t) {
        if (initial_pending_[p][t] >= 2) count_row_[p][t] = rows_of_p++;
      }
      counted += static_cast<std::size_t>(rows_of_p) * program_width_[p];
    }
    pending_.resize(counted);
    for (std::size_t p = 0; p < g.programs.size(); ++p) {
      const std::size_t width = program_width_[p];
      for (std::size_t t = 0; t < initial_pending_[p].size(); ++t) {
        const std::int32_t row = count_row_[p][t];
        if (row < 0) continue;
        std::fill_n(pending_.begin() + static_cast<std::ptrdiff_t>(program_base_[p] + static_cast<std::size_t>(row) * width),
                    width, initial_pending_[p][t]);
      }
    }
    groups_.resize(inst.group_size.size());
    for (std::size_t k = 0; k < groups_.size(); ++k) groups_[k].size = inst.group_size[k];
    // The group ids of the kinds some task uses, by [kind][instance]: the ranks of a symmetric job meet their
    // groups of one kind at about the same time, so neighbouring entries serve them.
    kind_row_.assign(g.group_kinds.size(), -1);
    std::int32_t rows = 0;
    for (const Program& p : g.programs) {
      for (const Task& t : p.tasks) {
        if (t.is_rendezvous() && kind_row_[t.group] < 0) kind_row_[t.group] = rows++;
      }
    }
    group_of_.assign(static_cast<std::size_t>(rows) * n, -1);
    for (std::size_t k = 0; k < kind_row_.size(); ++k) {
      if (kind_row_[k] < 0) continue;
      for (std::size_t i = 0; i < n; ++i) {
        group_of_[static_cast<std::size_t>(kind_row_[k]) * n + i] = inst.group(i, static_cast<std::uint8_t>(k));
      }
    }
    const bool record_all = static_cast<std::int64_t>(total) <= opt.record_budget;
    std::vector<bool> stage_seen(g.programs.size(), false);
    hot_.resize(n);
    recorded_.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Instance& in = inst.instances[i];
      bool record = opt.record_timings &&
                    (record_all || !stage_seen[static_cast<std::size_t>(in.program)] || in.perturbed());
      stage_seen[static_cast<std::size_t>(in.program)] = true;
      InstanceRun& run = result_.instances[i];
      run.recorded = record;
      if (record) run.timings.resize(program(i).tasks.size());
      Hot& h = hot_[i];
      recorded_[i] = record;
      h.live = program(i).static_memory;
      for (Bytes b : h.live) h.total += b;
      note_memory(i, 0);
    }
  }

  RunResult run() {
    std::vector<std::vector<std::int32_t>> sources(graph_.programs.size());  // per program: tasks ready at 0
    for (std::size_t p = 0; p < graph_.programs.size(); ++p) {
      for (std::size_t t = 0; t < initial_pending_[p].size(); ++t) {
        if (initial_pending_[p][t] == 0) sources[p].push_back(static_cast<std::int32_t>(t));
      }
    }
    for (std::size_t i = 0; i < inst_.instances.size(); ++i) {
      for (std::int32_t t : sources[static_cast<std::size_t>(inst_.instances[i].program)]) {
        // A delayed instance's first tasks: its host issues them late (make_ready queues them), or without a host
        // timeline they arrive at the delay.
        if (host_on_ || start_ns_[i] == 0) {
          make_ready(static_cast<std::int32_t>(i), t, 0);
        } else {
          queue(start_ns_[i], kIssued, static_cast<std::int32_t>(i), t);
        }
      }
    }
    std::uint32_t polls = 0;
    while (!events_.empty()) {
      // The estimate before the run cannot see the queue and the rendezvous at their fullest: the resident size
      // can, every 65,536 events (a /proc read each, under 0.1% of the run).
      if ((++polls & 0xFFFFu) == 0) check_resident_memory(memory_budget_);
      const Event e = events_.pop();
      const auto instance = static_cast<std::int32_t>(e.tag >> 2);
      switch (e.tag & 3) {
        case kIssued: arrive(instance, e.id, e.time); break;
        case kPaced: paced_event(e); break;
        default:
          finish(instance, e.id, e.time);
          ++result_.events;
      }
      if (!observers_.empty() && stop_requested()) {
        result_.stopped = true;
        break;
      }
    }
    if (!result_.stopped && completed_ != total_tasks_) {
      throw std::logic_error(fmt::format("engine: {} of {} tasks never ran (deadlock in the workload graph); {}",
                                         total_tasks_ - completed_, total_tasks_,
                                         describe_stuck()));
    }
    for (std::size_t i = 0; i < hot_.size(); ++i) {
      result_.instances[i].end = hot_[i].end;
      result_.makespan = std::max(result_.makespan, hot_[i].end);
    }
    return std::move(result_);
  }

 private:
  // The enabled models, in RunOptions order, and for each of the 2^demands masks how a task meets them.
  void set_up_models(const std::vector<ResourceSetting>& settings, std::size_t instances) {
    if (settings.size() > static_cast<std::size_t>(kMaxModels)) {
      throw std::invalid_argument(fmt::format("engine: {} resource models, at most {}", settings.size(), kMaxModels));
    }
    std::vector<std::pair<int, std::uint8_t>> bit_role(graph_.demands.size(), {-1, 0});  // demand bit -> model, role
    for (std::size_t m = 0; m < settings.size(); ++m) {
      for (std::size_t k = 0; k < m; ++k) {
        if (settings[k].model == settings[m].model) {
          throw std::invalid_argument("engine: resource model \"" + settings[m].model + "\" enabled twice");
        }
      }
      models_.push_back(make_resource_model(settings[m], instances, static_cast<int>(m)));
      eager_[m] = models_.back()->eager();
      const std::vector<std::string>& roles = resource_roles(settings[m].model);
      for (std::size_t b = 0; b < graph_.demands.size(); ++b) {
        if (graph_.demands[b].model != settings[m].model) continue;
        const auto role = std::find(roles.begin(), roles.end(), graph_.demands[b].role);
        if (role == roles.end()) {
          throw std::logic_error("engine: the graph's demand " + std::to_string(b) + " names role \"" +
                                 graph_.demands[b].role + "\", which " + settings[m].model + " does not have");
        }
        bit_role[b] = {static_cast<int>(m), static_cast<std::uint8_t>(1u << (role - roles.begin()))};
      }
    }
    plans_.resize(std::size_t{1} << graph_.demands.size());
    for (std::size_t mask = 0; mask < plans_.size(); ++mask) {
      DemandPlan& plan = plans_[mask];
      for (std::size_t b = 0; b < bit_role.size(); ++b) {
        if (!(mask & (std::size_t{1} << b)) || bit_role[b].first < 0) continue;
        const auto m = static_cast<std::size_t>(bit_role[b].first);
        plan.roles[m] = static_cast<std::uint8_t>(plan.roles[m] | bit_role[b].second);
      }
      for (std::size_t m = 0; m < models_.size(); ++m) {
        plan.paced[m] = static_cast<std::uint8_t>(plan.roles[m] & models_[m]->paced_roles());
        plan.any = plan.any || plan.roles[m] != 0;
        plan.is_paced = plan.is_paced || plan.paced[m] != 0;
      }
    }
  }

  const DemandPlan& plan_of(std::size_t instance, std::int32_t task) const {
    const Program& p = program(instance);
    return plans_[p.demands.empty() || models_.empty() ? 0 : p.demands[static_cast<std::size_t>(task)]];
  }

  void queue(Nanoseconds time, EventKind kind, std::int32_t instance, std::int32_t id) {
    events_.push({time, (static_cast<std::uint32_t>(instance) << 2) | kind, id});
  }
  // Queues action `a`'s end; its earlier events become stale.
  void queue_action(Action& act, std::int32_t a) {
    act.generation = (act.generation + 1) & kTagPayload;
    act.queued = true;
    events_.push({act.end, (act.generation << 2) | kPaced, a});
  }

  // The rendezvous each instance is stuck at, for the deadlock message.
  std::string describe_stuck() const {
    std::string text;
    for (std::size_t group = 0; group < groups_.size() && text.size() <= 2000; ++group) {
      for (const Rendezvous& r : groups_[group].open) {
        for (const Arrival& a : r.arrived) {
          const Task& t = program(static_cast<std::size_t>(a.instance)).tasks[static_cast<std::size_t>(a.task)];
          text += fmt::format("[instance {} task {} ({}, group {}, seq {}, layer {}, mb {}) waits at group {}] ",
                              a.instance, a.task, t.label, graph_.group_kinds[t.group].name, t.group_seq, t.layer,
                              t.microbatch, group);
          if (text.size() > 2000) return text + "...";
        }
      }
    }
    for (const DeferredGroup& g : deferred_) {
      text += fmt::format("[group of {} members waits for lane {}] ", g.members.size(), g.lane);
      if (text.size() > 4000) return text + "...";
    }
    std::size_t host = 0;
    for (const std::vector<std::int32_t>& w : host_waiting_) host += w.size();
    if (host > 0) text += fmt::format("[{} tasks wait for their host] ", host);
    return text;
  }

  const Program& program(std::size_t instance) const {
    return graph_.programs[static_cast<std::size_t>(inst_.instances[instance].program)];
  }

  Nanoseconds duration(std::int32_t instance, std::int32_t task) const {
    const Instance& in = inst_.instances[static_cast<std::size_t>(instance)];
    const auto p = static_cast<std::size_t>(in.program);
    const Task& t = graph_.programs[p].tasks[static_cast<std::size_t>(task)];
    const auto op = static_cast<std::size_t>(t.op);
    if (in.compute_slowdown == 1.0 && in.network_slowdown == 1.0) return base_ns_[p][op];
    if (graph_.streams[t.stream].compute) {
      return in.compute_slowdown == 1.0 ? base_ns_[p][op] : to_nanos(durations_.op_seconds[p][op] * in.compute_slowdown);
    }
    const Program& prog = graph_.programs[p];
    const bool network = !prog.demands.empty() && (prog.demands[static_cast<std::size_t>(task)] & network_bits_) != 0;
    if (!network || in.network_slowdown == 1.0) return base_ns_[p][op];
    return to_nanos(durations_.op_seconds[p][op] * in.network_slowdown);
  }

  TaskTiming* timing(std::int32_t instance, std::int32_t task) {
    if (!recorded_[static_cast<std::size_t>(instance)]) return nullptr;
    return &result_.instances[static_cast<std::size_t>(instance)].timings[static_cast<std::size_t>(task)];
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
    const Nanoseconds base = segment == host_segment_[i] ? host_base_[i] : (segment > 0 ? bases[static_cast<std::size_t>(segment - 1)] : start_ns_[i]);
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
        queue(issued, kIssued, instance, task);
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
    const std::int32_t group = group_of_[static_cast<std::size_t>(kind_row_[t.group]) * inst_.instances.size() +
                                         static_cast<std::size_t>(instance)];
    if (group < 0) {
      throw std::logic_error(fmt::format("engine: instance {} has no group of kind {} for task {}", instance,
                                         graph_.group_kinds[t.group].name, task));
    }
    GroupState& state = groups_[static_cast<std::size_t>(group)];
    const std::int32_t members = state.size;
    if (members <= 1) {
      start_or_wait(instance, task, now);
      return;
    }
    // A group has few rendezvous open at once (its members' calls of one issue order, and perhaps the next), so a
    // short list per group finds it.
    std::vector<Rendezvous>& open = state.open;
    auto it = std::find_if(open.begin(), open.end(), [&](const Rendezvous& r) { return r.seq == t.group_seq; });
    if (it == open.end()) {
      open.emplace_back();
      it = std::prev(open.end());
      it->seq = t.group_seq;
      it->arrived.reserve(static_cast<std::size_t>(members));
    }
    it->arrived.push_back({instance, task});
    if (static_cast<std::int32_t>(it->arrived.size()) < members) return;
    std::vector<Arrival> arrived = std::move(it->arrived);
    open.erase(it);
    const int lane = lane_of(t.stream);
    if (lane >= 0 && !lane_free(arrived, lane)) {
      deferred_.push_back({std::move(arrived), lane, side_of(t.stream)});
    } else {
      start_group(arrived, now);
    }
  }

  // The lane of a task's stream (-1: none, or no lane has a second side in this run), and its side of it.
  int lane_of(std::uint8_t s) const { return lanes_on_ ? graph_.streams[s].lane : -1; }
  int side_of(std::uint8_t s) const { return graph_.streams[s].side; }
  Lane& lane(std::size_t instance, int l) { return lanes_[instance * static_cast<std::size_t>(num_lanes_) + static_cast<std::size_t>(l)]; }
  const Lane& lane(std::size_t instance, int l) const {
    return lanes_[instance * static_cast<std::size_t>(num_lanes_) + static_cast<std::size_t>(l)];
  }

  // Starts a task now, or queues it while its lane runs another.
  void start_or_wait(std::int32_t instance, std::int32_t task, Nanoseconds now) {
    const std::uint8_t stream = program(static_cast<std::size_t>(instance)).tasks[static_cast<std::size_t>(task)].stream;
    const int l = lane_of(stream);
    if (l >= 0) {
      Lane& ln = lane(static_cast<std::size_t>(instance), l);
      if (ln.busy) {
        std::vector<std::int32_t>& heap = ln.waiting[static_cast<std::size_t>(side_of(stream))];
        heap.push_back(task);
        std::push_heap(heap.begin(), heap.end(), std::greater<>{});
        return;
      }
    }
    start(instance, task, now, duration(instance, task));
  }

  bool lane_free(const std::vector<Arrival>& members, int l) const {
    return std::none_of(members.begin(), members.end(),
                        [&](const Arrival& a) { return lane(static_cast<std::size_t>(a.instance), l).busy; });
  }

  // All members start together and take as long as the slowest.
  void start_group(const std::vector<Arrival>& members, Nanoseconds now) {
    Nanoseconds d = 0;
    for (const Arrival& a : members) d = std::max(d, duration(a.instance, a.task));
    // Members paced apart (each by its own port's sharing) still end together, when the last has done its part.
    const bool together = std::all_of(members.begin(), members.end(), [&](const Arrival& a) {
      return plan_of(static_cast<std::size_t>(a.instance), a.task).is_paced;
    });
    std::int32_t id = -1;
    if (together) {
      id = static_cast<std::int32_t>(paced_groups_.size());
      if (free_groups_.empty()) {
        paced_groups_.emplace_back();
      } else {
        id = free_groups_.back();
        free_groups_.pop_back();
      }
      paced_groups_[static_cast<std::size_t>(id)] = {members, static_cast<int>(members.size())};
    }
    for (const Arrival& a : members) start(a.instance, a.task, now, d, id);
  }

  // The lane's task on `instance` ended: the other side's earliest issued waiting task starts if there is one
  // (the GPU, or the one communication stream, alternates between the merged passes as the framework interleaves
  // their layers), else the same side's; then deferred groups of this instance whose members are all free.
  void release_lane(std::int32_t instance, int l, int side, Nanoseconds now) {
    Lane& ln = lane(static_cast<std::size_t>(instance), l);
    ln.busy = false;
    for (int s : {1 - side, side}) {
      std::vector<std::int32_t>& heap = ln.waiting[static_cast<std::size_t>(s)];
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
        if (g.lane != l || g.side != s) continue;
        const bool member = std::any_of(g.members.begin(), g.members.end(),
                                        [&](const Arrival& a) { return a.instance == instance; });
        if (!member || !lane_free(g.members, l)) continue;
        const std::vector<Arrival> members = std::move(g.members);
        deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(k));
        start_group(members, now);
        return;
      }
    }
  }

  // Starts a task of `d` nanoseconds at full speed; `group` is its PacedGroup (-1: none).
  void start(std::int32_t instance, std::int32_t task, Nanoseconds now, Nanoseconds d, std::int32_t group = -1) {
    if (TaskTiming* t = timing(instance, task)) t->start = now;
    for (RunObserver* o : observers_) o->task_started(instance, task, now);
    const auto i = static_cast<std::size_t>(instance);
    const Task& t = program(i).tasks[static_cast<std::size_t>(task)];
    apply(i, t.at_start(), now);
    if (const int l = lane_of(t.stream); l >= 0) lane(i, l).busy = true;
    const DemandPlan& plan = plan_of(i, task);
    if (!plan.any) {
      queue(after(now, d), kEnd, instance, task);
      return;
    }
    std::int32_t a = -1;
    if (plan.is_paced) {
      a = action_of(t.stream, i);
      Action& act = actions_[static_cast<std::size_t>(a)];
      // A stream runs one task at a time (ProgramBuilder's FIFO edges): a slot still running means a graph built
      // without them.
      if (act.queued) throw std::logic_error("engine: two tasks of one stream run at once (no stream-order edge)");
      act = Action{.generation = act.generation};
      act.instance = instance;
      act.task = task;
      act.remaining = static_cast<double>(d);
      act.since = now;
      act.group = group;
    }
    for (std::size_t m = 0; m < models_.size(); ++m) {
      if (plan.roles[m]) models_[m]->started(*this, instance, plan.roles[m], a, now);
    }
    if (a < 0) {
      queue(after(now, d), kEnd, instance, task);
      return;
    }
    Action& act = actions_[static_cast<std::size_t>(a)];
    act.end = after(now, stretched(act.remaining, act.stretch()));
    queue_action(act, a);
  }

  // std::llround(ns * stretch) without the library call (4% of a 16,384-rank run): below 2^52 the integer part of a
  // non-negative x is exact and so is x less it, so rounding half away from zero is one comparison.
  static Nanoseconds stretched(double ns, double stretch) {
    const double x = ns * stretch;
    if (!(x >= 0 && x < 4.5e15)) return static_cast<Nanoseconds>(std::llround(x));
    const auto whole = static_cast<Nanoseconds>(x);
    return whole + (x - static_cast<double>(whole) >= 0.5 ? 1 : 0);
  }

  // Pacing: the model in `slot` changes action `a`'s factor. The work done since the last change is settled at the
  // old speed. An end earlier than the last one is queued now; a later one is queued now by an eager model
  // (ResourceModel::eager), else when the queued event surfaces (paced_event), which saves a push per slow-down.
  void set_factor(std::int32_t a, int slot, double factor, Nanoseconds now) override {
    if (!(factor >= 1.0) || !std::isfinite(factor)) throw std::logic_error("engine: a resource factor below 1");
    Action& act = actions_[static_cast<std::size_t>(a)];
    if (act.factor[static_cast<std::size_t>(slot)] == factor) return;
    act.remaining = std::max(0.0, act.remaining - static_cast<double>(now - act.since) / act.stretch());
    act.since = now;
    act.factor[static_cast<std::size_t>(slot)] = factor;
    if (!act.queued) return;  // starting: start() queues it
    const Nanoseconds before = act.end;
    act.end = after(now, stretched(act.remaining, act.stretch()));
    if (act.end < before || eager_[static_cast<std::size_t>(slot)]) queue_action(act, a);
  }

  // An action's event surfaced. It stands only while it is the action's latest; if the action slowed since, it is
  // re-queued at its new end. Otherwise its work is done: it gives its paced roles back, and it ends now, or, in a
  // paced group, with the group's last member, which ends them all.
  void paced_event(const Event& e) {
    Action& act = actions_[static_cast<std::size_t>(e.id)];
    if (!act.queued || act.generation != e.tag >> 2) return;
    if (act.end != e.time) {
      queue_action(act, e.id);
      return;
    }
    const std::int32_t instance = act.instance, task = act.task, group = act.group;
    act.queued = false;  // done: its events are stale, and the slot free for the stream's next task
    const DemandPlan& plan = plan_of(static_cast<std::size_t>(instance), task);
    for (std::size_t m = 0; m < models_.size(); ++m) {
      if (plan.paced[m]) models_[m]->ended(*this, instance, plan.paced[m], e.id, e.time);
    }
    if (group < 0) {
      finish(instance, task, e.time);
      ++result_.events;
      return;
    }
    PacedGroup& g = paced_groups_[static_cast<std::size_t>(group)];
    if (--g.running > 0) return;
    const std::vector<Arrival> members = std::move(g.members);
    g.members.clear();
    free_groups_.push_back(group);
    // RunResult::events counts the tasks that ended by their own event, so a group's members are not counted.
    for (const Arrival& m : members) finish(m.instance, m.task, e.time);
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

  void finish(std::int32_t instance, std::int32_t task, Nanoseconds now) {
    ++completed_;
    const auto i = static_cast<std::size_t>(instance);
    if (const DemandPlan& plan = plan_of(i, task); plan.any) {
      for (std::size_t m = 0; m < models_.size(); ++m) {
        const auto unpaced = static_cast<std::uint8_t>(plan.roles[m] & ~plan.paced[m]);
        if (unpaced) models_[m]->ended(*this, instance, unpaced, -1, now);
      }
    }
    if (TaskTiming* t = timing(instance, task)) t->end = now;
    for (RunObserver* o : observers_) o->task_ended(instance, task, now);
    const Program& p = program(i);
    apply(i, p.tasks[static_cast<std::size_t>(task)].at_end(), now);
    Hot& h = hot_[i];
    h.end = std::max(h.end, now);
    if (host_on_ && blocks_host(p, p.tasks[static_cast<std::size_t>(task)])) {
      // The host resumes: the tasks after this one are issued from now on.
      ++host_segment_[i];
      host_base_[i] = now;
      if (recorded_[i]) host_bases_[i].push_back(now);
      std::vector<std::int32_t> waiting = std::move(host_waiting_[i]);
      host_waiting_[i].clear();
      for (std::int32_t w : waiting) make_ready(instance, w, now);
    }
    // The task's lane stays busy while its successors become ready, so they join the waiting ones before the
    // lane picks its next task.
    const auto program_index = static_cast<std::size_t>(inst_.instances[i].program);
    const std::vector<std::int32_t>& rows = count_row_[program_index];
    auto [begin, end] = boost::out_edges(static_cast<std::uint32_t>(task), p.successors);
    for (auto e = begin; e != end; ++e) {
      const auto next = static_cast<std::int32_t>(boost::target(*e, p.successors));
      if (predecessor_done(i, rows[static_cast<std::size_t>(next)])) make_ready(instance, next, now);
    }
    if (const std::vector<std::int32_t>& next = lane_next_[program_index]; !next.empty()) {
      const std::int32_t after = next[static_cast<std::size_t>(task)];
      if (after >= 0 && predecessor_done(i, rows[static_cast<std::size_t>(after)])) make_ready(instance, after, now);
    }
    const std::uint8_t stream = p.tasks[static_cast<std::size_t>(task)].stream;
    if (const int l = lane_of(stream); l >= 0) release_lane(instance, l, side_of(stream), now);
  }

  void apply(std::size_t instance, const MemoryEffect& effect, Nanoseconds now) {
    if (effect.bytes == 0) return;
    Hot& h = hot_[instance];
    h.live[static_cast<std::size_t>(effect.kind)] += effect.bytes;
    h.total += effect.bytes;
    note_memory(instance, now);
  }

  void note_memory(std::size_t instance, Nanoseconds now) {
    Hot& h = hot_[instance];
    const Bytes total = h.total;
    for (RunObserver* o : observers_) o->memory_changed(static_cast<std::int32_t>(instance), now, total);
    if (total > h.peak) {
      h.peak = total;
      InstanceRun& r = result_.instances[instance];
      r.peak = total;
      r.at_peak = h.live;
    }
    if (recorded_[instance]) {
      InstanceRun& r = result_.instances[instance];
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
  std::int64_t memory_budget_ = 0;
  std::vector<RunObserver*> observers_;
  bool stop_requested() const {
    for (const RunObserver* o : observers_) {
      if (o->stop_requested()) return true;
    }
    return false;
  }
  std::vector<std::unique_ptr<ResourceModel>> models_;
  std::array<bool, kMaxModels> eager_{};  // per model: ResourceModel::eager()
  std::vector<DemandPlan> plans_;  // by demand mask
  // Actions by [paced stream][instance]: a stream runs one task at a time, so each has at most one action, and the
  // ranks of a symmetric job pace the same stream's tasks at about the same time, so their actions are neighbours
  // (a pool reused last-freed-first was 10-20% slower at 16,384 ranks).
  std::vector<Action> actions_;
  std::vector<std::int32_t> paced_stream_;  // per stream: its row of actions_, -1 if none of its tasks is paced
  std::int32_t action_of(std::uint8_t stream, std::size_t instance) const {
    return paced_stream_[stream] * static_cast<std::int32_t>(inst_.instances.size()) + static_cast<std::int32_t>(instance);
  }
  std::vector<PacedGroup> paced_groups_;
  std::vector<std::int32_t> free_groups_;  // paced_groups_ slots to reuse
  int num_lanes_ = 0;
  std::vector<Lane> lanes_;  // [instance * num_lanes_ + lane] (only when lanes_on_)
  std::vector<DeferredGroup> deferred_;
  bool lanes_on_ = false;  // some task runs on a lane's second side
  std::vector<std::size_t> slot_;          // per instance: its index among its program's instances
  std::vector<std::size_t> program_base_;  // per program: its first pending count
  std::vector<std::size_t> program_width_; // per program: its instances
  std::vector<std::vector<std::int32_t>> count_row_;  // per program and task: its row of counts, -1: one predecessor
  // One predecessor of a task (its count row `row`, -1 for a task with one predecessor) ended on `instance`:
  // whether it was the last.
  bool predecessor_done(std::size_t instance, std::int32_t row) {
    if (row < 0) return true;
    const auto p = static_cast<std::size_t>(inst_.instances[instance].program);
    return --pending_[program_base_[p] + static_cast<std::size_t>(row) * program_width_[p] + slot_[instance]] == 0;
  }
  std::vector<std::uint16_t> pending_;  // [program base + count row * width + slot]: predecessors not yet ended
  std::int64_t total_tasks_ = 0;        // tasks of all instances
  std::vector<std::vector<Nanoseconds>> base_ns_;
  std::vector<Nanoseconds> start_ns_;  // per instance: Instance::start_delay
  std::uint8_t network_bits_ = 0;      // the demand bits (WorkloadGraph::demands) of the network port
  // The host timeline (host_on_): per program, the cumulative issue time of its tasks and its blocking tasks in
  // issue order (Program::issue_order, else task order); per instance, the blocking tasks ended so far, when the
  // last ended, and the ready tasks whose host waits at a blocking task before them.
  bool host_on_ = false;
  std::vector<std::vector<Nanoseconds>> issue_prefix_;     // by issue position
  std::vector<std::vector<std::int32_t>> issue_position_;  // task -> issue position; empty: the task index
  std::vector<std::vector<std::int32_t>> blocking_;        // issue positions of blocking tasks
  std::vector<std::vector<std::int32_t>> lane_next_;  // per program with an issue order: the next task on its lane
  std::vector<std::int32_t> host_segment_;
  std::vector<Nanoseconds> host_base_;
  std::vector<std::vector<Nanoseconds>> host_bases_;  // recorded instances: each blocking task's end, in order
  std::vector<std::vector<std::int32_t>> host_waiting_;
  // What every event of an instance reads or writes, in one cache line (InstanceRun, with its vectors, is cold).
  struct alignas(64) Hot {
    std::array<Bytes, kNumMemoryKinds> live{};  // live bytes by kind
    Bytes total = 0;                            // their sum
    Bytes peak = 0;
    Nanoseconds end = 0;
  };
  std::vector<char> recorded_;  // per instance: whether its timings are kept (InstanceRun::recorded)
  std::vector<Hot> hot_;
  EventQueue events_;
  std::vector<GroupState> groups_;  // per group of the instantiation
  std::vector<std::int32_t> kind_row_;  // per group kind: its row of group_of_, -1 if no task uses it
  std::vector<std::int32_t> group_of_;  // [row][instance]: Instantiation::group
  std::vector<std::vector<std::uint16_t>> initial_pending_;  // per program and task: predecessors, lane order included
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
