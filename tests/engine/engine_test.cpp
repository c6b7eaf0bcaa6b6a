// The event engine on hand-built graphs: dependencies, stream order, lanes, rendezvous, resources and memory. The
// graphs declare a vocabulary of their own (streams, group kinds, demands), none of the lowering's: the engine runs
// whatever the graph declares.
#include <catch2/catch.hpp>

#include <queue>
#include <random>

#include "sim/engine/engine.h"
#include "sim/engine/event_queue.h"

using namespace orrery;

namespace {

// Streams: two lanes of two sides (a GPU and a communication engine), and four executors of their own.
enum TestStream : std::uint8_t { kGpu, kComm, kGpuB, kCommB, kSend, kRecv, kNetA, kNetB, kTestStreams };
// Group kinds: 0 is no rendezvous.
enum TestGroup : std::uint8_t { kSolo, kTeam, kOtherTeam, kTestGroups };
// Demand bits, declared in this order below.
constexpr std::uint8_t kOnSms = 1, kTakesSms = 2, kPortOut = 4, kPortIn = 8;

// GPU work runs on SMs; everything else takes some; a transfer whose group spans domains uses the port (the send
// and receive executors one direction each).
std::uint8_t test_demands(const Task& t, const Op& op) {
  if (t.stream == kGpu || t.stream == kGpuB) return kOnSms;
  std::uint8_t d = kTakesSms;
  if (const auto* c = std::get_if<CollectiveOp>(&op); c && c->placement.domains > 1) {
    d |= t.stream == kSend ? kPortOut : t.stream == kRecv ? kPortIn : kPortOut | kPortIn;
  }
  return d;
}

ProgramBuilder builder(int stage) { return ProgramBuilder(stage, &test_demands); }

// A graph of `programs` with the test vocabulary.
WorkloadGraph graph_of(std::vector<Program> programs) {
  WorkloadGraph g;
  g.programs = std::move(programs);
  g.streams = {{"gpu", 0, 0, true},  {"comm", 1, 0, false},  {"gpu_b", 0, 1, true}, {"comm_b", 1, 1, false},
               {"send", -1, 0, false}, {"recv", -1, 0, false}, {"net_a", -1, 0, false}, {"net_b", -1, 0, false}};
  g.group_kinds = {{"solo", "", false, -1, false}, {"team", "tp", false, -1, false}, {"other", "ep", false, -1, false}};
  g.demands = {{"sm_contention", "compute"}, {"sm_contention", "contender"}, {"port_fair_share", "send"},
               {"port_fair_share", "receive"}};
  return g;
}

RunOptions with_sm_contention(double slowdown) {
  RunOptions o;
  o.resources = {{"sm_contention", slowdown}};
  return o;
}

RunOptions with_port_sharing() {
  RunOptions o;
  o.resources = {{"port_fair_share", 0.0}};
  return o;
}

Task compute(const char* label) {
  Task t;
  t.kind = TaskKind::kGemm;
  t.stream = kGpu;
  t.label = label;
  return t;
}

Task collective(std::uint8_t group) {
  Task t;
  t.kind = TaskKind::kCollective;
  t.stream = kComm;
  t.group = group;
  t.label = "all_reduce";
  return t;
}

// Ops with distinct shapes so each gets its own duration.
GemmShape shape(std::int64_t id) { return GemmShape{id, 1, 1, 1, DType::kBf16}; }
CollectiveOp comm() { return CollectiveOp{CollectiveKind::kAllReduce, 1 << 20, {}}; }

// Appends two backward-pass tasks b1, b2 (durations of shapes 3 and 4) on the GPU lane's second side.
void add_twin_pair(ProgramBuilder& b) {
  Task b1 = compute("b1"), b2 = compute("b2");
  b1.stream = b2.stream = kGpuB;
  b.add(b1, shape(3));
  b.add(b2, shape(4));
}

// One instance of program 0; `group` (if any) is a one-member group.
Instantiation one_instance(std::uint8_t group = kSolo) {
  Instantiation inst;
  inst.instances = {{0, 0, 1, 1.0}};
  inst.group_kinds = kTestGroups;
  inst.group_of.assign(kTestGroups, -1);
  if (group != kSolo) {
    inst.group_of[group] = 0;
    inst.group_size = {1};
  }
  return inst;
}

// Two instances `a` and `b` ({program, representative rank, ranks, compute slowdown}) forming one group of `group`.
Instantiation pair_in_group(std::uint8_t group, Instance a, Instance b) {
  Instantiation inst;
  inst.instances = {a, b};
  inst.group_kinds = kTestGroups;
  inst.group_of.assign(2 * kTestGroups, -1);
  inst.group_of[0 * kTestGroups + group] = 0;
  inst.group_of[1 * kTestGroups + group] = 0;
  inst.group_size = {2};
  return inst;
}

}  // namespace

TEST_CASE("a rendezvous collective waits for its slowest member", "[sim][engine]") {
  // One program: compute (1 ms) -> all-reduce (0.5 ms) -> compute (1 ms). Two instances in one TP group, the
  // second with compute twice as slow: the collective starts at 2 ms on both, so the fast one idles 1 ms.
  ProgramBuilder b = builder(0);
  auto c1 = b.add(compute("before"), shape(1));
  auto ar = b.add(collective(kTeam), comm(), {c1});
  b.add(compute("after"), shape(2), {ar});
  const WorkloadGraph g = graph_of({b.finish()});
  Durations d{{{1e-3, 0.5e-3, 1e-3}}, {}};  // ops in interning order: shape(1), comm, shape(2)
  const Instantiation inst = pair_in_group(kTeam, {0, 0, 1, 1.0}, {0, 1, 1, 2.0});
  const RunResult r = run_engine(g, inst, d);
  REQUIRE(r.instances[0].recorded);
  const auto& fast = r.instances[0].timings;
  const auto& slow = r.instances[1].timings;
  CHECK(fast[1].ready == 1'000'000);   // arrived after its own 1 ms
  CHECK(fast[1].start == 2'000'000);   // but started with the slow member
  CHECK(slow[1].start == 2'000'000);
  CHECK(fast[1].end == 2'500'000);
  CHECK(fast[2].end == 3'500'000);     // 1 ms after the collective
  CHECK(slow[2].end == 4'500'000);     // 2 ms after it
  CHECK(r.makespan == 4'500'000);
}

TEST_CASE("stream order serialises tasks on one stream, and other streams overlap", "[sim][engine]") {
  ProgramBuilder b = builder(0);
  auto c1 = b.add(compute("a"), shape(1));
  Task comm_task = collective(kTeam);
  auto ar = b.add(comm_task, comm(), {c1});  // overlaps with b below
  b.add(compute("b"), shape(2));                  // only stream order on c1
  b.add(compute("c"), shape(3), {ar});            // waits for both
  const WorkloadGraph g = graph_of({b.finish()});
  Durations d{{{1e-3, 3e-3, 1e-3, 1e-3}}, {}};
  const Instantiation inst = one_instance(kTeam);
  const RunResult r = run_engine(g, inst, d);
  const auto& t = r.instances[0].timings;
  CHECK(t[2].start == 1'000'000);  // b after a, alongside the all-reduce
  CHECK(t[3].start == 4'000'000);  // c waits for the all-reduce (1 + 3 ms)
  CHECK(r.makespan == 5'000'000);
}

TEST_CASE("memory effects: allocations at start, frees at end, peak with its composition", "[sim][engine]") {
  ProgramBuilder b = builder(0);
  auto f = b.add(compute("forward"), shape(1));
  b.alloc_at_start(f, MemoryKind::kActivations, 100);
  auto w = b.add(compute("workspace"), shape(2));
  b.alloc_at_start(w, MemoryKind::kOther, 50);
  b.free_at_end(w, MemoryKind::kOther, 50);
  auto back = b.add(compute("backward"), shape(3));
  b.free_at_end(back, MemoryKind::kActivations, 100);
  b.set_static_memory(MemoryKind::kWeights, 1000);
  const WorkloadGraph g = graph_of({b.finish()});
  Durations d{{{1e-6, 1e-6, 1e-6}}, {}};
  const RunResult r = run_engine(g, one_instance(), d);
  CHECK(r.instances[0].peak == 1150);
  CHECK(r.instances[0].at_peak[static_cast<int>(MemoryKind::kWeights)] == 1000);
  CHECK(r.instances[0].at_peak[static_cast<int>(MemoryKind::kActivations)] == 100);
  CHECK(r.instances[0].at_peak[static_cast<int>(MemoryKind::kOther)] == 50);
  CHECK(r.instances[0].memory.back().live == 1000);
}

TEST_CASE("a dependency on a later task is refused (it would deadlock)", "[sim][engine]") {
  ProgramBuilder b = builder(0);
  auto a = b.add(compute("a"), shape(1));
  auto c = b.add(compute("c"), shape(2));
  CHECK_THROWS(b.depend(a, c));
}

TEST_CASE("two compute streams share the GPU: one compute task at a time, the earliest issued first", "[sim][engine]") {
  // Forward pass on kCompute: f1, then an all-to-all on kEp, then f2 that needs it. Backward pass on the twin
  // streams: b1 and b2, independent of the forward. By hand (ms): f1 0-1; the all-to-all 1-3 while b1 runs 1-2 and
  // b2 2-3 in the gap; f2 3-4. One compute stream would give f1, all-to-all, f2, b1, b2 = 6 ms.
  ProgramBuilder b = builder(0);
  const auto f1 = b.add(compute("f1"), shape(1));
  Task a2a = collective(kTeam);
  a2a.stream = kComm;
  const auto x = b.add(a2a, comm(), {f1});
  b.add(compute("f2"), shape(2), {x});
  add_twin_pair(b);
  const WorkloadGraph g = graph_of({b.finish()});
  Durations d{{{1e-3, 2e-3, 1e-3, 1e-3, 1e-3}}, {}};
  const Instantiation inst = one_instance(kTeam);
  const RunResult r = run_engine(g, inst, d);
  const auto& t = r.instances[0].timings;
  CHECK(t[0].start == 0);
  CHECK(t[3].start == 1'000'000);  // b1 waited for f1 although ready at 0: one compute task at a time
  CHECK(t[4].start == 2'000'000);
  CHECK(t[2].start == 3'000'000);  // f2 after the all-to-all
  CHECK(r.makespan == 4'000'000);
  // Under SM contention the same order holds; only the compute beside the all-to-all slows down.
  const RunOptions slowed = with_sm_contention(0.5);
  const RunResult s = run_engine(g, inst, d, slowed);
  CHECK(s.instances[0].timings[3].end == 2'500'000);  // b1: 1 ms of work at 1 / 1.5 speed
  CHECK(s.instances[0].timings[4].start == 2'500'000);
}

TEST_CASE("when the GPU frees with both compute streams waiting, the other stream's task runs", "[sim][engine]") {
  // f1 and f2 on kCompute, b1 and b2 on kComputeB, all ready from the start but for stream order. The GPU
  // alternates between the streams: f1 0-1, b1 1-2, f2 2-3, b2 3-4 ms (issue order alone would run f2 before b1).
  ProgramBuilder b = builder(0);
  b.add(compute("f1"), shape(1));
  b.add(compute("f2"), shape(2));
  add_twin_pair(b);
  const WorkloadGraph g = graph_of({b.finish()});
  Durations d{{{1e-3, 1e-3, 1e-3, 1e-3}}, {}};
  const RunResult r = run_engine(g, one_instance(), d);
  const auto& t = r.instances[0].timings;
  CHECK(t[0].start == 0);
  CHECK(t[2].start == 1'000'000);
  CHECK(t[1].start == 2'000'000);
  CHECK(t[3].start == 3'000'000);
}

TEST_CASE("a stream and its twin are one lane: a group waits until every member's lane is free", "[sim][engine]") {
  // Two ranks in one EP group, each issuing a forward all-to-all on kEp (2 ms) and a backward one on kEpB (1 ms),
  // both ready at once. One communication stream carries both: the second group starts when the first ends.
  ProgramBuilder b = builder(0);
  Task forward = collective(kTeam), backward = collective(kTeam);
  forward.stream = kComm;
  backward.stream = kCommB;
  b.add(forward, comm());
  b.add(backward, CollectiveOp{CollectiveKind::kAllToAll, 1 << 10, {}});
  const WorkloadGraph g = graph_of({b.finish()});
  Durations d{{{2e-3, 1e-3}}, {}};
  Instantiation inst;
  inst.instances = {{0, 0, 1, 1.0}, {0, 1, 1, 1.0}};
  inst.group_kinds = kTestGroups;
  inst.group_of.assign(2 * kTestGroups, -1);
  for (int i = 0; i < 2; ++i) inst.group_of[static_cast<std::size_t>(i * kTestGroups + kTeam)] = 0;
  inst.group_size = {2};
  const RunResult r = run_engine(g, inst, d);
  for (const InstanceRun& run : r.instances) {
    CHECK(run.timings[0].start == 0);
    CHECK(run.timings[1].start == 2'000'000);
  }
  CHECK(r.makespan == 3'000'000);
}

TEST_CASE("a group waits while one member's lane is busy and starts when it frees", "[sim][engine]") {
  // Rank 0 runs a 3 ms expert-TP collective of the merged backward (kEpB, a group of its own) when both ranks
  // reach their 1 ms EP all-to-all (kEp) at time 0: the all-to-all starts on both when rank 0's lane frees, 3-4 ms.
  Task busy = collective(kOtherTeam), a2a = collective(kTeam);
  busy.stream = kCommB;
  a2a.stream = kComm;
  ProgramBuilder first = builder(0), second = builder(1);
  first.add(busy, CollectiveOp{CollectiveKind::kAllGather, 1 << 10, {}});
  first.add(a2a, comm());
  second.add(a2a, comm());
  const WorkloadGraph g = graph_of({first.finish(), second.finish()});
  Durations d{{{3e-3, 1e-3}, {1e-3}}, {}};
  Instantiation inst;
  inst.instances = {{0, 0, 1, 1.0}, {1, 1, 1, 1.0}};
  inst.group_kinds = kTestGroups;
  inst.group_of.assign(2 * kTestGroups, -1);
  inst.group_of[kTeam] = 0;
  inst.group_of[kTestGroups + kTeam] = 0;
  inst.group_of[kOtherTeam] = 1;
  inst.group_size = {2, 1};
  const RunResult r = run_engine(g, inst, d);
  CHECK(r.instances[0].timings[1].start == 3'000'000);
  CHECK(r.instances[1].timings[0].start == 3'000'000);
  CHECK(r.makespan == 4'000'000);
}

TEST_CASE("transfers across NVLink domains share the rank's network port, per direction", "[sim][engine][network]") {
  // One rank, everything issued at 0 on its own stream. Collectives send and receive; a pipeline send only sends
  // and a receive only receives. Alone, each takes its duration; sharing a direction with n - 1 others, 1 / n speed.
  const auto crossing = [](CollectiveKind kind, Bytes bytes, int domains) {
    CollectiveOp op{kind, bytes, {}};
    op.placement.domains = domains;
    op.placement.size = 2 * domains;
    return op;
  };
  const auto transfer = [](std::uint8_t stream) {
    Task t;
    t.kind = stream == kNetA || stream == kNetB || stream == kComm ? TaskKind::kCollective
                                                                                          : TaskKind::kSendRecv;
    t.stream = stream;
    t.label = "transfer";
    return t;
  };
  ProgramBuilder b = builder(0);
  b.add(transfer(kNetA), crossing(CollectiveKind::kAllGather, 1, 2));           // 1 ms, network
  b.add(transfer(kNetB), crossing(CollectiveKind::kReduceScatter, 2, 2));  // 2 ms, network
  b.add(transfer(kComm), crossing(CollectiveKind::kAllReduce, 3, 1));            // 1 ms, inside the domain
  b.add(transfer(kRecv), crossing(CollectiveKind::kSendRecv, 4, 2));     // 3 ms, receives only
  const WorkloadGraph g = graph_of({b.finish()});
  const Durations d{{{1e-3, 2e-3, 1e-3, 3e-3}}, {}};
  const RunOptions shared = with_port_sharing();
  const RunResult r = run_engine(g, one_instance(), d, shared);
  const auto& t = r.instances[0].timings;
  // Receives: the two collectives and the receive (3 users) until the all-gather has done its 1 ms of work at 1/3
  // speed (3 ms); then 2 users: the reduce-scatter's remaining 1 ms and the receive's remaining 2 ms at 1/2 speed,
  // the reduce-scatter ending at 5 ms, the receive then having 1 ms left, alone.
  CHECK(t[0].end == 3'000'000);
  CHECK(t[1].end == 5'000'000);
  CHECK(t[2].end == 1'000'000);  // NVLink only: untouched
  CHECK(t[3].end == 6'000'000);
  // Without sharing each sees the whole port.
  const RunResult alone = run_engine(g, one_instance(), d);
  CHECK(alone.instances[0].timings[0].end == 1'000'000);
  CHECK(alone.instances[0].timings[1].end == 2'000'000);
  CHECK(alone.instances[0].timings[3].end == 3'000'000);

  // A send and a receive use opposite directions and do not slow each other.
  ProgramBuilder duplex = builder(0);
  duplex.add(transfer(kSend), crossing(CollectiveKind::kSendRecv, 5, 2));
  duplex.add(transfer(kRecv), crossing(CollectiveKind::kSendRecv, 6, 2));
  const WorkloadGraph g2 = graph_of({duplex.finish()});
  const RunResult both = run_engine(g2, one_instance(), Durations{{{1e-3, 1e-3}}, {}}, shared);
  CHECK(both.instances[0].timings[0].end == 1'000'000);
  CHECK(both.instances[0].timings[1].end == 1'000'000);
}

TEST_CASE("a transfer over several ranks ends with its slowest member's port", "[sim][engine][network]") {
  // Two instances of one program in a DP group: a 1 ms all-gather across NVLink domains, then 1 ms of compute. Only
  // instance 0 also reduce-scatters (a straggling extra transfer, from a second program) across domains, so its port
  // runs the all-gather at half speed: 2 ms. The group ends together at 2 ms, and instance 1's compute waits.
  CollectiveOp gather{CollectiveKind::kAllGather, 1, {}};
  gather.placement.domains = 2;
  CollectiveOp scatter{CollectiveKind::kReduceScatter, 2, {}};
  scatter.placement.domains = 2;
  Task ag;
  ag.kind = TaskKind::kCollective;
  ag.stream = kNetA;
  ag.group = kTeam;
  ag.label = "all_gather";
  Task rs = ag;
  rs.stream = kNetB;
  rs.group = kSolo;
  rs.label = "reduce_scatter";
  ProgramBuilder plain = builder(0), busy = builder(1);
  auto g0 = plain.add(ag, gather);
  plain.add(compute("after"), shape(1), {g0});
  auto g1 = busy.add(ag, gather);
  busy.add(compute("after"), shape(1), {g1});
  busy.add(rs, scatter);
  const WorkloadGraph g = graph_of({plain.finish(), busy.finish()});
  const Durations d{{{1e-3, 1e-3}, {1e-3, 1e-3, 1e-3}}, {}};
  const Instantiation inst = pair_in_group(kTeam, {0, 0, 1, 1.0}, {1, 1, 1, 1.0});
  const RunOptions shared = with_port_sharing();
  const RunResult r = run_engine(g, inst, d, shared);
  CHECK(r.instances[1].timings[0].end == 2'000'000);  // the busy port: half speed while the reduce-scatter runs
  CHECK(r.instances[0].timings[0].end == 2'000'000);  // the quiet one waits for it
  CHECK(r.instances[0].timings[1].start == 2'000'000);
  CHECK(r.instances[1].timings[2].end == 2'000'000);  // the reduce-scatter shared the port the whole time
}

TEST_CASE("two transfers sharing a port each get half its rate", "[sim][engine][network]") {
  // Two 2 ms all-gathers across NVLink domains on one rank, issued together on two executors: each does its 2 ms
  // of work at half the port's rate, so both end at 4 ms; a third, inside the domain, is untouched at 2 ms.
  CollectiveOp crossing{CollectiveKind::kAllGather, 1, {}};
  crossing.placement.domains = 2;
  CollectiveOp inside{CollectiveKind::kAllGather, 3, {}};
  Task a = collective(kSolo), b = collective(kSolo), c = collective(kSolo);
  a.stream = kNetA;
  b.stream = kNetB;
  CollectiveOp crossing_too = crossing;
  crossing_too.bytes = 2;
  ProgramBuilder p = builder(0);
  p.add(a, crossing);
  p.add(b, crossing_too);
  p.add(c, inside);
  const WorkloadGraph g = graph_of({p.finish()});
  const Durations d{{{2e-3, 2e-3, 2e-3}}, {}};
  const RunResult r = run_engine(g, one_instance(), d, with_port_sharing());
  CHECK(r.instances[0].timings[0].end == 4'000'000);
  CHECK(r.instances[0].timings[1].end == 4'000'000);
  CHECK(r.instances[0].timings[2].end == 2'000'000);
  // The same graph with the model not enabled: the graph's demands are ignored and each sees the whole port.
  const RunResult alone = run_engine(g, one_instance(), d);
  CHECK(alone.instances[0].timings[0].end == 2'000'000);
  CHECK(alone.instances[0].timings[1].end == 2'000'000);
}

TEST_CASE("the engine refuses graphs that use what they did not declare, and unknown resource models", "[sim][engine]") {
  ProgramBuilder b = builder(0);
  Task t = compute("stray");
  t.stream = kTestStreams;  // no such stream in the table
  b.add(t, shape(1));
  const WorkloadGraph stray = graph_of({b.finish()});
  CHECK_THROWS_AS(run_engine(stray, one_instance(), Durations{{{1e-3}}, {}}), std::logic_error);

  ProgramBuilder ok = builder(0);
  ok.add(compute("fine"), shape(1));
  const WorkloadGraph g = graph_of({ok.finish()});
  Instantiation fewer = one_instance();
  fewer.group_kinds = 2;
  fewer.group_of.resize(2);
  CHECK_THROWS_AS(run_engine(g, fewer, Durations{{{1e-3}}, {}}), std::logic_error);
  RunOptions unknown;
  unknown.resources = {{"nvlink_share", 0.0}};
  CHECK_THROWS_WITH(run_engine(g, one_instance(), Durations{{{1e-3}}, {}}, unknown), Catch::Contains("nvlink_share"));
  RunOptions twice;
  twice.resources = {{"sm_contention", 0.1}, {"sm_contention", 0.2}};
  CHECK_THROWS_AS(run_engine(g, one_instance(), Durations{{{1e-3}}, {}}, twice), std::invalid_argument);
  WorkloadGraph bad_role = g;
  bad_role.demands[0].role = "borrower";
  CHECK_THROWS_WITH(run_engine(bad_role, one_instance(), Durations{{{1e-3}}, {}}, with_sm_contention(0.1)),
                    Catch::Contains("borrower"));
}

TEST_CASE("the event queue pops in the order of a binary heap on (time, push number)", "[sim][engine]") {
  // A second method: std::priority_queue on the same monotone stream of pushes. Each event's id is its push number,
  // which the heap orders ties by. Both forms of the queue: one entry per event, and runs of equal-time pushes;
  // `ties` is the chance that a push repeats the previous push's time, as a symmetric job's ranks do.
  for (const bool grouped : {false, true}) {
    for (const int ties : {0, 50, 95}) {
      CAPTURE(grouped, ties);
      std::mt19937_64 random(7);
      EventQueue queue(grouped);
      const auto later = [](const Event& a, const Event& b) { return a.time != b.time ? a.time > b.time : a.id > b.id; };
      std::priority_queue<Event, std::vector<Event>, decltype(later)> heap(later);
      Nanoseconds now = 0, previous = 0;
      std::int32_t pushed = 0;
      std::int64_t popped = 0;
      for (int step = 0; step < 200'000; ++step) {
        if (heap.empty() || random() % 3 != 0) {
          // Offsets from 0 (a tie with the current time) to 2^40 ns, skewed towards small ones.
          const Nanoseconds offset = random() % 4 == 0 ? 0 : static_cast<Nanoseconds>(random() >> (24 + random() % 40));
          const Nanoseconds time =
              static_cast<int>(random() % 100) < ties && previous >= now ? previous : now + offset;
          const Event e{time, static_cast<std::uint32_t>(step), pushed++};
          queue.push(e);
          heap.push(e);
          previous = time;
        } else {
          const Event a = queue.pop(), b = heap.top();
          heap.pop();
          REQUIRE(a.time == b.time);
          REQUIRE(a.id == b.id);
          REQUIRE(a.tag == b.tag);
          now = a.time;
          ++popped;
        }
        REQUIRE(queue.size() == heap.size());
      }
      while (!heap.empty()) {
        REQUIRE(queue.pop().id == heap.top().id);
        heap.pop();
      }
      CHECK(queue.empty());
      CHECK(popped > 50'000);
      CHECK_THROWS_AS(queue.push({now - 1, 0, pushed}), std::logic_error);
      CHECK(queue.empty());
      CHECK_THROWS_AS(queue.pop(), std::logic_error);
    }
  }
}

TEST_CASE("the grouped event queue refuses a push into the past at the time of a run it has read", "[sim][engine]") {
  // Run 9 is opened before run 5; once both are read the clock is at 9, and a push at 5 is in the past. Run 5 was
  // the last opened, so a queue that kept it open after reading it would take the push into it instead.
  EventQueue queue(true);
  queue.push({9, 0, 0});
  queue.push({5, 0, 1});
  CHECK(queue.pop().id == 1);
  queue.push({5, 0, 2});  // the run being read takes a push of its own time
  CHECK(queue.pop().id == 2);
  CHECK(queue.pop().id == 0);
  CHECK_THROWS_AS(queue.push({5, 0, 3}), std::logic_error);
  CHECK(queue.empty());
}

TEST_CASE("port sharing re-times transfers at once, so equal ends finish in start order", "[sim][engine][network]") {
  // Transfers A and B (100 ns each alone) cross the port from time 0, A started first: both end at 200 ns. The
  // port model re-queues A's later end when B starts (ResourceModel::eager), before B's own event, so at 200 ns A
  // finishes first: its successor C allocates 100 bytes before B frees the 100 it held, and the peak is 200 bytes.
  // Had A's end been re-queued only when its first one surfaced, B would finish first and the peak stay at 100.
  CollectiveOp crossing{CollectiveKind::kAllGather, 1, {}};
  crossing.placement.domains = 2;
  CollectiveOp other = crossing;
  other.bytes = 2;
  Task a = collective(kSolo), b = collective(kSolo);
  a.stream = kNetA;
  b.stream = kNetB;
  ProgramBuilder p = builder(0);
  const auto ta = p.add(a, crossing);
  const auto tb = p.add(b, other);
  const auto c = p.add(compute("after_a"), shape(1), {ta});
  p.alloc_at_start(c, MemoryKind::kOther, 100);
  p.free_at_end(tb, MemoryKind::kOther, 100);
  p.set_static_memory(MemoryKind::kOther, 100);
  const WorkloadGraph g = graph_of({p.finish()});
  const RunResult r = run_engine(g, one_instance(), Durations{{{100e-9, 100e-9, 0.0}}, {}}, with_port_sharing());
  REQUIRE(r.instances[0].timings[0].end == 200);
  REQUIRE(r.instances[0].timings[1].end == 200);
  CHECK(r.instances[0].peak == 200);
}

namespace {

// Counts what a live observer hears: each task's start and end, and the live bytes after each change.
struct Tally final : RunObserver {
  std::vector<Nanoseconds> starts, ends;
  std::vector<Bytes> live;
  void task_started(std::int32_t, std::int32_t, Nanoseconds at) override { starts.push_back(at); }
  void task_ended(std::int32_t, std::int32_t, Nanoseconds at) override { ends.push_back(at); }
  void memory_changed(std::int32_t, Nanoseconds, Bytes bytes) override { live.push_back(bytes); }
};

// Four 1 ms GPU tasks in a row; the second allocates 100 bytes when it starts, the fourth frees them when it ends.
WorkloadGraph four_in_a_row() {
  ProgramBuilder b = builder(0);
  b.add(compute("a"), shape(1));
  const auto second = b.add(compute("b"), shape(2));
  b.alloc_at_start(second, MemoryKind::kActivations, 100);
  b.add(compute("c"), shape(3));
  const auto fourth = b.add(compute("d"), shape(4));
  b.free_at_end(fourth, MemoryKind::kActivations, 100);
  return graph_of({b.finish()});
}

}  // namespace

TEST_CASE("a live observer hears every start, end and memory change, and changes nothing", "[sim][engine]") {
  const WorkloadGraph g = four_in_a_row();
  const Durations d{{{1e-3, 1e-3, 1e-3, 1e-3}}, {}};
  const RunResult plain = run_engine(g, one_instance(), d);
  Tally tally;
  RunOptions o;
  o.observers = {&tally};
  const RunResult watched = run_engine(g, one_instance(), d, o);
  CHECK(watched.makespan == plain.makespan);
  CHECK(watched.events == plain.events);
  CHECK_FALSE(watched.stopped);
  CHECK(tally.starts == std::vector<Nanoseconds>{0, 1'000'000, 2'000'000, 3'000'000});
  CHECK(tally.ends == std::vector<Nanoseconds>{1'000'000, 2'000'000, 3'000'000, 4'000'000});
  CHECK(tally.live == std::vector<Bytes>{0, 100, 0});  // the static memory at 0, then the allocation and the free
}

TEST_CASE("the search's cut-off stops a run at the first task end past its time or its memory", "[sim][engine]") {
  const WorkloadGraph g = four_in_a_row();
  const Durations d{{{1e-3, 1e-3, 1e-3, 1e-3}}, {}};
  const auto run_with = [&](RunCutoff& cutoff) {
    RunOptions o;
    o.observers = {&cutoff};
    return run_engine(g, one_instance(), d, o);
  };
  SECTION("time: the run stops at the first end past 2.5 ms, 3 ms, having run three tasks") {
    RunCutoff cutoff(2'500'000, 0);
    const RunResult r = run_with(cutoff);
    CHECK(r.stopped);
    CHECK(cutoff.time_passed());
    CHECK_FALSE(cutoff.memory_passed());
    CHECK(r.events == 3);
    CHECK(r.makespan == 3'000'000);
  }
  SECTION("a threshold the run only reaches does not stop it") {
    RunCutoff cutoff(4'000'000, 100);
    const RunResult r = run_with(cutoff);
    CHECK_FALSE(r.stopped);
    CHECK(r.makespan == 4'000'000);
  }
  SECTION("memory: 100 live bytes pass a 99-byte limit when the second task starts") {
    RunCutoff cutoff(0, 99);
    const RunResult r = run_with(cutoff);
    CHECK(r.stopped);
    CHECK(cutoff.memory_passed());
    CHECK(r.events <= 2);
  }
}
