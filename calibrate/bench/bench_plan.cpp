#include "calibrate/bench/bench_plan.h"

#include <algorithm>
#include <istream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace orrery::bench {

namespace {

constexpr std::int64_t kMaxSize = std::int64_t{1} << 40;  // 1 TiB: no single benchmark is larger

class LineReader {
 public:
  LineReader(const std::string& line, std::string where) : in_(line), where_(std::move(where)) {}

  std::string word(const char* what) {
    std::string w;
    if (!(in_ >> w)) fail(std::string("missing ") + what);
    return w;
  }

  /// The next word, which must be one of `names`; otherwise "WHAT 'word' must be a, b or c".
  std::string choice(const std::string& what, std::initializer_list<const char*> names) {
    const std::string w = word(what.c_str());
    if (std::any_of(names.begin(), names.end(), [&](const char* n) { return w == n; })) return w;
    const std::vector<const char*> v(names);
    std::string rule;
    for (std::size_t i = 0; i < v.size(); ++i) rule += std::string(i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
    fail(what + " '" + w + "' must be " + rule);
  }

  std::int64_t size(const char* what) {
    const std::string w = word(what);
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(w, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != w.size() || v < 1 || v > kMaxSize) {
      fail(std::string(what) + " '" + w + "' must be a whole number in 1..2^40");
    }
    return v;
  }

  void end() {
    std::string extra;
    if (in_ >> extra) fail("unexpected '" + extra + "' at the end of the line");
  }

  [[noreturn]] void fail(const std::string& why) const { throw std::invalid_argument(where_ + ": " + why); }

 private:
  std::istringstream in_;
  std::string where_;
};

}  // namespace

BenchPlan parse_bench_plan(std::istream& in, const std::string& name) {
  BenchPlan plan;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    LineReader r(line, name + ":" + std::to_string(number));
    std::istringstream probe(line);
    std::string entry;
    if (!(probe >> entry)) continue;
    r.word("entry");
    if (entry == "gemm") {
      PlanGemm g;
      g.m = r.size("M");
      g.n = r.size("N");
      g.k = r.size("K");
      g.dtype = r.choice("dtype", {"bf16", "fp16", "tf32", "fp8"});
      plan.gemm.push_back(g);
    } else if (entry == "memory") {
      PlanMemory m;
      m.kind = r.choice("memory kind", {"copy", "elementwise", "reduction"});
      m.bytes = r.size("bytes");
      plan.memory.push_back(m);
    } else if (entry == "collective") {
      PlanCollective c;
      c.op = r.choice("collective", {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"});
      c.bytes = r.size("bytes");
      plan.collectives.push_back(c);
    } else if (entry == "attention") {
      PlanAttention a;
      a.batch = r.size("B");
      a.heads = r.size("H");
      a.kv_heads = r.size("KVH");
      if (a.heads % a.kv_heads) r.fail("KVH " + std::to_string(a.kv_heads) + " must divide H " + std::to_string(a.heads));
      a.seq = r.size("S");
      a.head_dim = r.size("D");
      a.causal = r.choice("mask", {"causal", "full"}) == "causal";
      a.dtype = r.choice("attention dtype", {"bf16", "fp16"});
      plan.attention.push_back(a);
    } else if (entry == "launch") {
      plan.launch = true;
    } else {
      r.fail("unknown entry '" + entry + "' (gemm, memory, collective, attention or launch)");
    }
    r.end();
  }
  return plan;
}

std::string format_bench_plan(const BenchPlan& plan) {
  std::ostringstream out;
  for (const PlanGemm& g : plan.gemm) out << "gemm " << g.m << ' ' << g.n << ' ' << g.k << ' ' << g.dtype << '\n';
  for (const PlanMemory& m : plan.memory) out << "memory " << m.kind << ' ' << m.bytes << '\n';
  for (const PlanCollective& c : plan.collectives) out << "collective " << c.op << ' ' << c.bytes << '\n';
  for (const PlanAttention& a : plan.attention) {
    out << "attention " << a.batch << ' ' << a.heads << ' ' << a.kv_heads << ' ' << a.seq << ' ' << a.head_dim << ' '
        << (a.causal ? "causal" : "full") << ' ' << a.dtype << '\n';
  }
  if (plan.launch) out << "launch\n";
  return out.str();
}

}  // namespace orrery::bench
