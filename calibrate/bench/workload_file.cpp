#include "calibrate/bench/workload_file.h"

#include <algorithm>
#include <istream>
#include <sstream>
#include <stdexcept>

namespace orrery::bench {

namespace {

std::size_t arg_count(const std::string& op) {
  if (op == "gemm") return 5;
  if (op == "attention") return 9;
  if (op == "memory") return 2;
  return 0;
}

bool known_kind(const std::string& k) {
  return k == "weights" || k == "gradients" || k == "optimizer" || k == "activations" || k == "other";
}

}  // namespace

std::string format_workload(const WorkloadFile& w) {
  std::ostringstream out;
  out << "orrery-workload 1\nstatic";
  for (std::int64_t b : w.static_bytes) out << ' ' << b;
  out << '\n';
  for (const WorkloadTask& t : w.tasks) {
    out << "task " << t.id << ' ' << t.stream << ' ' << t.phase << ' ' << t.layer << ' ' << t.microbatch << ' '
        << t.start_kind << ' ' << t.start_bytes << ' ' << t.end_kind << ' ' << t.end_bytes << " deps " << t.deps.size();
    for (int d : t.deps) out << ' ' << d;
    out << ' ' << t.op;
    const std::size_t n = arg_count(t.op);
    for (std::size_t i = 0; i < n && i < t.args.size(); ++i) {
      out << ' ' << t.args[i];
      if (t.op == "gemm" && i == 3) out << ' ' << t.dtype;
    }
    if (t.op == "attention") out << ' ' << t.dtype;
    out << " | " << t.name << '\n';
  }
  return out.str();
}

WorkloadFile parse_workload(std::istream& in, const std::string& name) {
  WorkloadFile w;
  std::string line;
  int number = 0;
  const auto fail = [&](const std::string& why) { throw std::invalid_argument(name + ":" + std::to_string(number) + ": " + why); };
  bool header = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::string label;
    const std::size_t bar = line.find(" | ");
    if (bar != std::string::npos) {
      label = line.substr(bar + 3);
      line.erase(bar);
    }
    std::istringstream s(line);
    std::string entry;
    s >> entry;
    if (!header) {
      int version = 0;
      if (entry != "orrery-workload" || !(s >> version) || version != 1) fail("expected the header 'orrery-workload 1'");
      header = true;
      continue;
    }
    if (entry == "static") {
      for (std::int64_t& b : w.static_bytes) {
        if (!(s >> b) || b < 0) fail("static needs five non-negative byte counts");
      }
      continue;
    }
    if (entry != "task") fail("unknown entry '" + entry + "' (static or task)");
    WorkloadTask t;
    std::string deps_word;
    std::size_t ndeps = 0;
    if (!(s >> t.id >> t.stream >> t.phase >> t.layer >> t.microbatch >> t.start_kind >> t.start_bytes >> t.end_kind >>
          t.end_bytes >> deps_word >> ndeps) ||
        deps_word != "deps") {
      fail("a task line needs ID STREAM PHASE LAYER MICROBATCH START_KIND START_BYTES END_KIND END_BYTES deps N");
    }
    if (t.id != static_cast<int>(w.tasks.size())) fail("task id " + std::to_string(t.id) + " out of order");
    if (!known_kind(t.start_kind) || !known_kind(t.end_kind)) fail("unknown memory kind");
    if (t.start_bytes < 0 || t.end_bytes > 0) fail("START_BYTES must be >= 0 and END_BYTES <= 0");
    for (std::size_t i = 0; i < ndeps; ++i) {
      int d = -1;
      if (!(s >> d) || d < 0 || d >= t.id) fail("dependency " + std::to_string(d) + " is not an earlier task");
      t.deps.push_back(d);
    }
    if (!(s >> t.op) || (t.op != "gemm" && t.op != "attention" && t.op != "memory" && t.op != "sync" && t.op != "skip")) {
      fail("unknown op '" + t.op + "' (gemm, attention, memory, sync or skip)");
    }
    const std::size_t n = arg_count(t.op);
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t v = 0;
      if (!(s >> v) || v < 0) fail(t.op + " needs " + std::to_string(n) + " non-negative integers");
      t.args.push_back(v);
      if (t.op == "gemm" && i == 3 && !(s >> t.dtype)) fail("gemm needs a dtype after BATCH");
    }
    if (t.op == "attention" && !(s >> t.dtype)) fail("attention needs a dtype");
    if (t.op == "attention" &&
        (std::any_of(t.args.begin(), t.args.begin() + 7, [](std::int64_t v) { return v < 1; }) || t.args[1] % t.args[2])) {
      fail("attention sizes B H KVH Q KV DQK DV must be positive, and KVH must divide H");
    }
    std::string extra;
    if (s >> extra) fail("unexpected '" + extra + "'");
    t.name = label;
    w.tasks.push_back(std::move(t));
  }
  if (!header) fail("empty file (expected 'orrery-workload 1')");
  return w;
}

}  // namespace orrery::bench
