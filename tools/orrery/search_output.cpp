#include "tools/orrery/search_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <span>

#include "models/error.h"
#include "models/json_fields.h"

namespace orrery::cli {

using nlohmann::json;

namespace {

json record_json(const PlanRecord& r) {
  const Candidate& c = r.candidate;
  json j = {{"key", candidate_key(c)},
            {"tp", c.tp},
            {"pp", c.pp},
            {"dp", r.dp},
            {"cp", c.cp},
            {"ep", c.ep},
            {"etp", c.etp},
            {"vpp", c.vpp},
            {"micro_batch_size", c.micro_batch},
            {"sequence_parallel", c.tp > 1 && c.sequence_parallel},
            {"recompute", to_string(c.recompute)},
            {"zero_stage", c.zero_stage},
            {"schedule", to_string(c.schedule)},
            {"precision", r.precision},
            {"status", to_string(r.status)},
            {"lower_bound_s", r.lower_bound}};
  if (r.status == PlanStatus::kSimulated) {
    j["iteration_time_s"] = r.iteration_time;
    j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
    j["mfu"] = r.mfu;
    j["peak_memory_bytes"] = r.peak_memory;
    j["fits"] = r.fits;
    j["limiter"] = r.limiter;
    j["objective"] = r.objective;
  }
  if (!r.fp8_recipe.empty()) j["fp8_recipe"] = r.fp8_recipe;
  if (r.cut_off) j["cut_off"] = true;
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

template <class E>
E enum_of(const std::string& text, std::span<const std::pair<const char*, E>> names, const std::string& field) {
  for (const auto& [name, value] : names) {
    if (text == name) return value;
  }
  throw Error::invalid(field, text, "is not a known value");
}

PlanRecord record_from(const json& j, const std::string& path) {
  FieldReader in(j, path);
  PlanRecord r;
  Candidate& c = r.candidate;
  in.allow("key");
  c.tp = static_cast<int>(in.require_int("tp", 1));
  c.pp = static_cast<int>(in.require_int("pp", 1));
  r.dp = static_cast<int>(in.require_int("dp", 0));
  c.cp = static_cast<int>(in.require_int("cp", 1));
  c.ep = static_cast<int>(in.require_int("ep", 1));
  c.etp = static_cast<int>(in.require_int("etp", 1));
  c.vpp = static_cast<int>(in.require_int("vpp", 1));
  c.micro_batch = static_cast<int>(in.require_int("micro_batch_size", 1));
  c.recompute = enum_of<Recompute>(in.require_string("recompute"), kRecomputeNames, in.field("recompute"));
  c.zero_stage = static_cast<int>(in.require_int("zero_stage", 0, 3));
  c.schedule = enum_of<Schedule>(in.require_string("schedule"), kScheduleNames, in.field("schedule"));
  r.precision = in.require_string("precision");
  r.cut_off = in.bool_or("cut_off", false);
  c.fp8 = r.precision == "fp8";
  r.fp8_recipe = in.optional_string("fp8_recipe").value_or("");
  const bool sp = in.optional_bool("sequence_parallel").value_or(true);
  c.sequence_parallel = c.tp == 1 || sp;  // normalised as enumerated candidates are
  static constexpr std::pair<const char*, PlanStatus> kStatusNames[] = {
      {"invalid", PlanStatus::kInvalid}, {"pruned_memory", PlanStatus::kPrunedMemory},
      {"pruned_bound", PlanStatus::kPrunedBound}, {"simulated", PlanStatus::kSimulated}};
  r.status = enum_of<PlanStatus>(in.require_string("status"), kStatusNames, in.field("status"));
  r.lower_bound = in.double_or("lower_bound_s", 0.0);
  r.reason = in.optional_string("reason").value_or("");
  if (r.status == PlanStatus::kSimulated) {
    r.iteration_time = in.require_double("iteration_time_s", true);
    r.tokens_per_s_per_gpu = in.require_double("tokens_per_s_per_gpu");
    r.mfu = in.require_double("mfu");
    r.peak_memory = static_cast<Bytes>(in.require_double("peak_memory_bytes"));
    r.fits = in.optional_bool("fits").value_or(false);
    r.limiter = in.require_string("limiter");
    r.objective = in.require_double("objective");
  }
  in.reject_unknown();
  return r;
}

}  // namespace

json search_json(const SearchResult& result) {
  json plans = json::array();
  for (const PlanRecord& r : result.records) plans.push_back(record_json(r));
  json ranking = json::array();
  for (std::size_t i : result.ranking) ranking.push_back(candidate_key(result.records[i].candidate));
  return {{"num_gpus", result.num_gpus},
          {"search", result.identity},
          {"shard", {{"index", result.shard_index}, {"count", result.shard_count}}},
          {"counts",
           {{"enumerated", result.enumerated},
            {"invalid", result.invalid},
            {"pruned_memory", result.pruned_memory},
            {"pruned_bound", result.pruned_bound},
            {"simulated", result.simulated},
            {"cut_off", static_cast<std::size_t>(std::count_if(result.records.begin(), result.records.end(),
                                                                [](const PlanRecord& r) { return r.cut_off; }))}}},
          {"plans", plans},
          {"ranking", ranking}};
}

namespace {

// A CSV field in double quotes, its own double quotes doubled (RFC 4180), for the free-text reasons.
std::string csv_quoted(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

void write_search_csv(std::ostream& out, const SearchResult& result) {
  out << "key,tp,pp,dp,cp,ep,etp,vpp,micro_batch_size,sequence_parallel,recompute,zero_stage,schedule,precision,"
         "fp8_recipe,status,lower_bound_s,iteration_time_s,tokens_per_s_per_gpu,mfu,peak_memory_gib,fits,limiter,objective,"
         "reason\n";
  for (const PlanRecord& r : result.records) {
    const Candidate& c = r.candidate;
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g}", candidate_key(c), c.tp, c.pp, r.dp,
                       c.cp, c.ep, c.etp, c.vpp, c.micro_batch, c.tp > 1 && c.sequence_parallel ? "true" : "false",
                       to_string(c.recompute), c.zero_stage, to_string(c.schedule), r.precision, r.fp8_recipe,
                       to_string(r.status), r.lower_bound);
    if (r.status == PlanStatus::kSimulated) {
      out << fmt::format(",{:.6g},{:.6g},{:.6g},{:.4f},{},{},{:.6g},", r.iteration_time, r.tokens_per_s_per_gpu, r.mfu,
                         static_cast<double>(r.peak_memory) / (1 << 30), r.fits ? "true" : "false", r.limiter,
                         r.objective);
    } else {
      out << ",,,,,,,,";
    }
    out << csv_quoted(r.reason) << "\n";
  }
}

void print_top_plans(std::ostream& out, const SearchResult& result, int top, SearchObjective objective) {
  out << fmt::format("best plans on {} GPUs ({})\n", result.num_gpus,
                     objective == SearchObjective::kTime ? "by iteration time" : "by cost per token");
  out << fmt::format("  {}\n", result.identity);
  out << fmt::format("  {:>4}  {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>3}  {:<9} {:>4}  {:<9} {:<4}  {:>9}  {:>9}  {:>6}  {:>8}  {}",
                     "rank", "TP", "PP", "DP", "CP", "EP", "VPP", "MB", "recompute", "ZeRO", "sched", "prec",
                     "iter (s)", "tok/s/GPU", "MFU", "mem GiB", "limited by")
      << (objective == SearchObjective::kCostPerToken ? "  $ per million tokens\n" : "\n");
  int rank = 0;
  for (std::size_t i : result.ranking) {
    if (rank >= top) break;
    const PlanRecord& r = result.records[i];
    const Candidate& c = r.candidate;
    out << fmt::format("  {:>4}  {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>3}  {:<9} {:>4}  {:<9} {:<4}  {:>9.3f}  {:>9.0f}  {:>5.1f}%  {:>8.1f}  {}{}\n",
                       ++rank, c.tp, c.pp, r.dp, c.cp, c.ep, c.vpp, c.micro_batch, to_string(c.recompute),
                       c.zero_stage, to_string(c.schedule), r.precision, r.iteration_time,
                       r.tokens_per_s_per_gpu, 100 * r.mfu, static_cast<double>(r.peak_memory) / (1 << 30), r.limiter,
                       objective == SearchObjective::kCostPerToken ? fmt::format("  ${:.4f}", r.objective) : "");
  }
  if (rank == 0) {
    out << (result.enumerated == result.invalid
                ? "  no valid plan: every candidate breaks a rule (see --csv/--json for each reason)\n"
                : "  no simulated plan fits in memory\n");
  }
  std::size_t too_big = 0, cut_off = 0;
  for (const PlanRecord& r : result.records) {
    too_big += r.status == PlanStatus::kSimulated && !r.fits ? 1 : 0;
    cut_off += r.cut_off ? 1 : 0;
  }
  out << fmt::format("\nplans: {} enumerated, {} invalid, {} pruned by memory, {} pruned by the time bound, "
                     "{} simulated ({} of them do not fit); {} of the pruned were cut off while simulated\n",
                     result.enumerated, result.invalid, result.pruned_memory, result.pruned_bound, result.simulated,
                     too_big, cut_off);
}

namespace {

// 13608 -> "13,608".
std::string grouped(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string rate_text(double per_s) { return per_s >= 10 ? fmt::format("{:.0f}", per_s) : fmt::format("{:.1f}", per_s); }

// 45 -> "45 s", 273 -> "4m33s", 7300 -> "2h01m".
std::string duration_text(double s) {
  const long t = std::lround(s);
  if (t < 100) return fmt::format("{} s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, t / 60 % 60);
}

}  // namespace

void SearchProgress::start() {
  started_ = Clock::now();
  updated_ = false;
  first_settled_ = last_settled_ = drawn_ = 0;
}

void SearchProgress::update(std::size_t settled, std::size_t total) {
  const Clock::time_point now = Clock::now();
  constexpr std::size_t kWidth = 40;
  const std::size_t filled = total > 0 ? std::min(kWidth, kWidth * settled / total) : kWidth;
  std::string line = fmt::format("[{}{}] {}/{}", std::string(filled, '#'), std::string(kWidth - filled, ' '),
                                 grouped(settled), grouped(total));
  // The first block's count includes the candidates settled before any simulation (invalid, over memory), so the
  // rate is measured from the first update on.
  if (!updated_) {
    first_ = now;
    first_settled_ = settled;
    updated_ = true;
  } else if (const double seconds = std::chrono::duration<double>(now - first_).count(); seconds > 0) {
    const double rate = static_cast<double>(settled - first_settled_) / seconds;
    line += fmt::format("  {} plans/s", rate_text(rate));
    if (rate > 0 && settled < total) {
      line += fmt::format("  at most {} left", duration_text(static_cast<double>(total - settled) / rate));
    }
  }
  last_settled_ = settled;
  // Spaces over what is left of a longer previous line.
  out_ << '\r' << line << std::string(drawn_ > line.size() ? drawn_ - line.size() : 0, ' ') << std::flush;
  drawn_ = line.size();
}

void SearchProgress::finish(const SearchResult& r) {
  const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  std::string line = fmt::format("{}simulated {} of {} candidates in {:.1f} s, {} plans/s ({} invalid, {} pruned by "
                                 "memory, {} by the time bound",
                                 r.shard_count > 1 ? fmt::format("shard {}/{}: ", r.shard_index, r.shard_count) : "",
                                 grouped(r.simulated), grouped(r.enumerated), seconds,
                                 rate_text(seconds > 0 ? static_cast<double>(r.simulated) / seconds : 0),
                                 grouped(r.invalid), grouped(r.pruned_memory), grouped(r.pruned_bound));
  // The bound pruned the candidates the bar had not reached when no remaining bound could beat the top plans.
  if (updated_ && last_settled_ < r.enumerated) line += fmt::format(", the last {} at once", grouped(r.enumerated - last_settled_));
  line += ")";
  out_ << (drawn_ > 0 ? "\r" : "") << line << std::string(drawn_ > line.size() ? drawn_ - line.size() : 0, ' ') << "\n"
       << std::flush;
  drawn_ = 0;
}

SearchResult read_search_json(const json& doc, const std::string& path) {
  FieldReader in(doc, path);
  in.allow("counts");
  in.allow("ranking");
  SearchResult r;
  r.num_gpus = static_cast<int>(in.require_int("num_gpus", 1));
  r.identity = in.require_string("search");
  if (const nlohmann::json* shard = in.raw("shard")) {
    FieldReader sh(*shard, path + ".shard");
    r.shard_count = static_cast<int>(sh.require_int("count", 1, 1 << 20));
    r.shard_index = static_cast<int>(sh.require_int("index", 0, r.shard_count - 1));
    sh.reject_unknown();
  }
  const json* plans = in.raw("plans");
  if (!plans || !plans->is_array()) throw Error::invalid(path + ".plans", "missing", "must be a list of plans");
  for (std::size_t i = 0; i < plans->size(); ++i) r.records.push_back(record_from((*plans)[i], fmt::format("{}.plans[{}]", path, i)));
  in.reject_unknown();
  count_statuses(r);
  r.ranking = rank_records(r.records);
  return r;
}

SearchResult merge_searches(const std::vector<SearchResult>& shards) {
  SearchResult out;
  if (shards.empty()) return out;
  const SearchResult& first = shards.front();
  out.num_gpus = first.num_gpus;
  out.identity = first.identity;
  std::vector<int> seen(static_cast<std::size_t>(first.shard_count), 0);
  for (const SearchResult& s : shards) {
    require(s.identity == first.identity, "search", s.identity,
            fmt::format("differs from the first shard's ({}): merge the shards of one search", first.identity));
    require(s.shard_count == first.shard_count, "shard.count", std::to_string(s.shard_count),
            fmt::format("differs from the first shard's ({})", first.shard_count));
    require(++seen[static_cast<std::size_t>(s.shard_index)] == 1, "shard.index", std::to_string(s.shard_index),
            fmt::format("appears twice among the files (shard {}/{})", s.shard_index, s.shard_count));
    out.records.insert(out.records.end(), s.records.begin(), s.records.end());
  }
  for (int i = 0; i < first.shard_count; ++i) {
    require(seen[static_cast<std::size_t>(i)] == 1, "shard.index", std::to_string(i),
            fmt::format("is missing: the merge needs all {} shards", first.shard_count));
  }
  // Enumeration order is the key order within a shard; sort the union by key for a stable file.
  std::stable_sort(out.records.begin(), out.records.end(), [](const PlanRecord& a, const PlanRecord& b) {
    return candidate_key(a.candidate) < candidate_key(b.candidate);
  });
  count_statuses(out);
  out.ranking = rank_records(out.records);
  return out;
}

}  // namespace orrery::cli
