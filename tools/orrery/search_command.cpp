// `orrery search`: the plan search on one machine, or one shard of it (`--shard I/N`, for Slurm job arrays), and
// `orrery search merge` to join shards.
#include <fmt/format.h>

#include <cmath>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <sstream>

#include "hardware/gpu_profile.h"
#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "models/physical_bounds.h"
#include "models/output_file.h"
#include "sim/job/job.h"
#include "sim/option_table.h"
#include "sim/search/plan_search.h"
#include "tools/orrery/commands.h"
#include "tools/orrery/scenario_flags.h"
#include "tools/orrery/search_output.h"

#ifdef ORRERY_WITH_MPI
#include <mpi.h>
#endif

namespace orrery::cli {

namespace {

struct SearchArgs {
  std::string scenario_file, model, cluster, precision;
  std::optional<int> num_gpus;
  std::optional<std::int64_t> seq_length, global_batch_size;
  // Lists set when given: an empty one is an error, not the defaults.
  std::optional<std::string> tp, pp, cp, ep, etp, vpp, micro_batch, recompute, zero_stage, schedule;
  std::string fp8 = "auto";
  std::optional<std::string> fp8_recipe;  // set when --fp8-recipe is given (an empty value is an error)
  std::optional<int> max_tp;              // unset: the NVLink domain
  std::string objective = "time";
  double gpu_hour_price = 0, target_tokens_per_s = 0, memory_margin = 0.05;
  std::optional<double> memory_cap_gib;  // unset: all of each GPU's memory
  int top = 10, threads = 0;
  bool no_prune = false, quiet = false, mpi = false;
  std::string shard, csv_file, json_file, profile;
};

struct MergeArgs {
  std::vector<std::string> files;
  int top = 10;
  std::string csv_file, json_file;
};

// The items of a comma-separated list, spaces dropped. An empty list ("") or item ("1,,2") is refused: the one
// searched the defaults, the other fewer values than written, both without a word.
std::vector<std::string> split(const std::string& text, const std::string& field) {
  std::vector<std::string> out;
  std::string item;
  for (char ch : text + ",") {
    if (ch == ',') {
      require(!item.empty(), field, "\"" + text + "\"",
              out.empty() && text.find_first_not_of(' ') == std::string::npos
                  ? "must list at least one value"
                  : "has an empty item (two commas in a row, or one at an end)");
      out.push_back(item);
      item.clear();
    } else if (ch != ' ') {
      item += ch;
    }
  }
  return out;
}

int parse_int(const std::string& text, const std::string& field, int lo = 0, int hi = 1 << 20) {
  try {
    std::size_t used = 0;
    const long v = std::stol(text, &used);
    if (used == text.size() && v >= lo && v <= hi) return static_cast<int>(v);
  } catch (const std::exception&) {
  }
  throw Error::invalid(field, text, fmt::format("must be an integer from {} to {}", lo, hi));
}

// "1,2,4" (fixed values) or "2..8" (the defaults within the range), "" for the defaults; values from `least`
// to `most`.
std::vector<int> int_list(const std::optional<std::string>& given, const std::string& field,
                          const std::vector<int>& defaults, int least = 1, int most = 1 << 20) {
  if (!given) return {};
  const std::string& text = *given;
  if (const auto dots = text.find(".."); dots != std::string::npos) {
    const auto bound = [&](const std::string& t) {
      require(!t.empty(), field, text, "must be a range LOW..HIGH");
      return parse_int(t, field, least, most);
    };
    const int lo = bound(text.substr(0, dots)), hi = bound(text.substr(dots + 2));
    require(lo <= hi, field, text, "must be a range LOW..HIGH with LOW <= HIGH");
    std::vector<int> out;
    for (int v : defaults) {
      if (v >= lo && v <= hi) out.push_back(v);
    }
    if (defaults.empty()) {
      for (int v = lo; v <= hi; ++v) out.push_back(v);
    }
    require(!out.empty(), field, text, "leaves no value to search");
    return out;
  }
  std::vector<int> out;
  for (const std::string& item : split(text, field)) out.push_back(parse_int(item, field, least, most));
  return out;
}

template <class E>
std::vector<E> enum_list(const std::optional<std::string>& given, const std::string& field,
                         std::span<const std::pair<const char*, E>> names) {
  std::vector<E> out;
  if (!given) return out;
  for (const std::string& item : split(*given, field)) {
    bool found = false;
    for (const auto& [name, value] : names) {
      if (item == name) {
        out.push_back(value);
        found = true;
      }
    }
    if (!found) {
      std::string known;
      for (const auto& [name, value] : names) known += (known.empty() ? "" : ", ") + std::string(name);
      throw Error::invalid(field, item, "must be one of: " + known);
    }
  }
  return out;
}

// The search's base: the scenario file's settings (`file`, the file resolved whole; null without one) or the flags.
// Read without the plan's rules (read_scenario) and resolved without a plan (resolve_base): the file's plan is the
// template each candidate's starts from, its settings that the search does not choose (overlap switches, CP and MoE
// communication types, split accounting) kept, and each candidate is checked with them.
JobBase base_job(const SearchArgs& a, const Job* file) {
  nlohmann::json doc = nlohmann::json::object();
  std::filesystem::path base = std::filesystem::current_path();
  if (!a.scenario_file.empty()) {
    doc = read_json_file(a.scenario_file, "scenario");
    base = std::filesystem::path(a.scenario_file).parent_path();
    doc.erase("expect");
  }
  if (!a.model.empty()) doc["model"] = model_flag_value(a.model);
  if (!a.cluster.empty()) doc["cluster"] = cluster_flag_value(a.cluster);
  if (!doc.contains("model")) throw Error::invalid("--model", "missing", "is required (or a scenario file)");
  if (!doc.contains("cluster")) doc["cluster"] = nlohmann::json{{"preset", "dgx-h100"}};
  // The GPU count to search: --num-gpus, else the scenario's (given or derived from its plan).
  if (a.num_gpus) {
    require(*a.num_gpus >= 1 && *a.num_gpus <= limits::kGpus, "--num-gpus", std::to_string(*a.num_gpus),
            fmt::format("must be from 1 to {} (limits::kGpus, the most GPUs of one job)", limits::kGpus));
  }
  int gpus = a.num_gpus.value_or(0);
  std::vector<int> own_layout;
  if (file) {
    if (gpus == 0) gpus = file->num_gpus();
    const ParallelPlan& fp = file->plan();
    if (fp.accounted_slots() == 0 && (!fp.pipeline_layout.empty() || fp.decoder_first_pipeline_num_layers ||
                                      fp.decoder_last_pipeline_num_layers)) {
      own_layout = file->layout().layers;
    }
  }
  if (gpus == 0) throw Error::invalid("--num-gpus", "missing", "is required (or a scenario file)");
  auto& t = doc["training"];
  if (!t.is_object()) t = nlohmann::json::object();
  if (a.seq_length) t["seq_length"] = *a.seq_length;
  if (a.global_batch_size) t["global_batch_size"] = *a.global_batch_size;
  if (!a.precision.empty()) t["precision"] = a.precision;
  if (!a.precision.empty() && a.precision != "fp8") {
    // FP8 is the search's own dimension: a non-FP8 base cannot carry the FP8 settings (the file's recipe still
    // serves the FP8 candidates, below).
    t.erase("fp8_recipe");
    t.erase("fp8_format");
  }
  if (!t.contains("global_batch_size")) throw Error::invalid("--global-batch-size", "missing", "is required");
  Scenario s = read_scenario(doc, base);
  s.cluster.num_gpus = gpus;
  // The scenario's own split (an explicit layout, or the first/last-stage counts resolved), for the candidates with
  // its number of virtual stages (candidate_job); not when it was made for another model (--model).
  s.parallel.pipeline_layout = own_layout;
  if (std::accumulate(own_layout.begin(), own_layout.end(), 0) != s.model.num_layers) s.parallel.pipeline_layout.clear();
  // The FP8 candidates' recipe: --fp8-recipe, else the file's FP8 recipe, else the default (delayed).
  if (file && file->training().precision == Precision::kFp8) s.training.fp8_recipe = file->training().fp8_recipe;
  if (a.fp8_recipe) {
    require(!a.fp8_recipe->empty(), "--fp8-recipe", "", "takes one of delayed, tensorwise, blockwise, mxfp8");
    const std::vector<Fp8Recipe> recipes = enum_list<Fp8Recipe>(a.fp8_recipe, "--fp8-recipe", kFp8RecipeNames);
    require(recipes.size() == 1, "--fp8-recipe", *a.fp8_recipe, "takes one of delayed, tensorwise, blockwise, mxfp8");
    s.training.fp8_recipe = recipes.front();
  }
  return resolve_base(s);
}

// The scenario file's own plan as a candidate (for "where does the plan I run rank?").
Candidate given_candidate(const Scenario& s) {
  const ParallelPlan& p = s.parallel;
  return {p.tp, p.pp, p.cp, p.ep, p.etp, p.vpp, static_cast<int>(s.training.micro_batch_size), p.zero_stage,
          s.training.recompute, p.schedule, s.training.precision == Precision::kFp8, p.sequence_parallel || p.tp == 1};
}


SearchSpace user_space(const SearchArgs& a, const Scenario& base) {
  const SearchSpace defaults = default_space(base);
  SearchSpace s;
  s.tp = int_list(a.tp, "--tp", defaults.tp);
  s.pp = int_list(a.pp, "--pp", defaults.pp);
  s.cp = int_list(a.cp, "--cp", defaults.cp);
  s.ep = int_list(a.ep, "--ep", defaults.ep);
  s.etp = int_list(a.etp, "--etp", defaults.etp);
  s.vpp = int_list(a.vpp, "--vpp", {});
  // Values no candidate could use are errors, not silently empty searches.
  const int layers = base.model.num_layers;
  for (int pp : s.pp) {
    require(pp <= layers, "--pp", std::to_string(pp),
            fmt::format("must be at most the model's {} layers (each pipeline stage needs one)", layers));
  }
  for (int v : s.vpp) {
    const bool usable = v == 1 || std::any_of(s.pp.begin(), s.pp.end(), [&](int pp) { return pp > 1 && pp * v <= layers; });
    require(usable, "--vpp", std::to_string(v),
            fmt::format("needs a --pp value above 1 whose product with it is at most the model's {} layers", layers));
  }
  s.micro_batch = int_list(a.micro_batch, "--micro-batch-size", defaults.micro_batch);
  s.zero_stage = int_list(a.zero_stage, "--zero-stage", defaults.zero_stage, 0, 3);
  s.recompute = enum_list<Recompute>(a.recompute, "--recompute", kRecomputeNames);
  s.schedule = enum_list<Schedule>(a.schedule, "--schedule", kScheduleNames);
  if (a.fp8 == "off") {
    s.fp8 = {false};
  } else if (a.fp8 == "on") {
    require(base.cluster.gpu.peak_fp8 > 0, "--fp8", "on", "needs a GPU with FP8 tensor cores (" + base.cluster.gpu.name + " has none)");
    s.fp8 = {true};
  } else if (a.fp8 == "both") {
    s.fp8 = {false, true};
  } else {
    require(a.fp8 == "auto", "--fp8", a.fp8, "must be off, on, both or auto (both where the GPU has FP8)");
  }
  s.max_tp = a.max_tp.value_or(0);
  const SearchSpace space = default_space(base, s);
  if (a.fp8_recipe) {
    const bool fp8_candidates = std::find(space.fp8.begin(), space.fp8.end(), true) != space.fp8.end();
    require(base.cluster.gpu.peak_fp8 > 0, "--fp8-recipe", *a.fp8_recipe,
            "needs a GPU with FP8 tensor cores (" + base.cluster.gpu.name + " has none)");
    require(fp8_candidates, "--fp8-recipe", *a.fp8_recipe, "needs FP8 candidates (--fp8 on, both or auto; here --fp8 " + a.fp8 + ")");
    try {
      base.cluster.gpu.fp8_scaling_fraction(fp8_scaling(base.training.fp8_recipe));
    } catch (const Error& e) {
      throw Error::invalid("--fp8-recipe", *a.fp8_recipe, e.rule());
    }
  }
  return space;
}

SearchOptions search_options(const SearchArgs& a) {
  SearchOptions o;
  if (a.objective == "cost") {
    o.objective = SearchObjective::kCostPerToken;
  } else {
    require(a.objective == "time" || a.objective == "gpus", "--objective", a.objective, "must be time, cost or gpus");
  }
  require(std::isfinite(a.gpu_hour_price) && a.gpu_hour_price >= 0, "--gpu-hour-price", fmt::format("{}", a.gpu_hour_price),
          "must be a finite, non-negative price");
  // As validate -j: more threads than that only cost memory, and 100,000 of them abort.
  require(a.threads >= 0 && a.threads <= 1024, "--threads", std::to_string(a.threads),
          "must be from 1 to 1024 (0: all cores)");
  if (a.max_tp) {
    require(*a.max_tp >= 1 && *a.max_tp <= limits::kGpus, "--max-tp", std::to_string(*a.max_tp),
            fmt::format("must be from 1 to {} (leave it out for the NVLink domain size)", limits::kGpus));
  }
  o.gpu_hour_price = a.gpu_hour_price;
  o.memory_margin = a.memory_margin;
  if (a.memory_cap_gib) {
    const bounds::Range& hbm = bounds::kHbmCapacityGiB;
    // At least one MiB: a cap that rounds to 0 bytes would read as no cap.
    require(*a.memory_cap_gib >= 1.0 / 1024 && *a.memory_cap_gib <= hbm.max, "--memory-cap", fmt::format("{}", *a.memory_cap_gib),
            fmt::format("must be a GiB figure from 1/1024 (1 MiB) to {} (the HBM bound; leave it out to use all of each "
                        "GPU's memory)", hbm.max));
    o.memory_cap = from_GiB(*a.memory_cap_gib);
  }
  o.top_k = a.top;
  o.threads = a.threads;
  o.prune = !a.no_prune;
  if (!a.shard.empty()) {
    const auto slash = a.shard.find('/');
    require(slash != std::string::npos, "--shard", a.shard, "must be I/N (shard I of N, from 0)");
    o.shard_index = parse_int(a.shard.substr(0, slash), "--shard");
    o.shard_count = parse_int(a.shard.substr(slash + 1), "--shard");
  }
  return o;
}

// The progress bar on stderr when it is a terminal and --quiet is not given (null otherwise); each search calls its
// start() before and its finish() after.
std::shared_ptr<SearchProgress> attach_progress(const SearchArgs& a, SearchOptions& o) {
  if (a.quiet || !isatty(STDERR_FILENO)) return nullptr;
  auto progress = std::make_shared<SearchProgress>(std::cerr);
  o.progress = [progress](std::size_t done, std::size_t total) { progress->update(done, total); };
  return progress;
}

// run_search with its progress bar, if any, started before and finished after.
SearchResult run_search_shown(const JobBase& base, const SearchSpace& space, int gpus, const SearchOptions& o,
                              SearchProgress* progress) {
  if (progress) progress->start();
  SearchResult r = run_search(base, space, gpus, o);
  if (progress) progress->finish(r);
  return r;
}

// Before the search: a path that cannot be written is refused (exit 2) before hours of work, not after, as are
// outputs that would replace each other or an input.
void check_outputs(const std::string& csv_file, const std::string& json_file, const std::vector<PathOption>& inputs) {
  if (!csv_file.empty()) check_output_path("--csv", csv_file);
  if (!json_file.empty()) check_output_path("--json", json_file);
  check_distinct_outputs({{"--csv", csv_file}, {"--json", json_file}}, inputs);
}

// Each file is written whole or not at all (OutputFile).
void write_outputs(const SearchResult& r, const std::string& csv_file, const std::string& json_file) {
  if (!csv_file.empty()) {
    std::ostringstream csv;
    write_search_csv(csv, r);
    write_file_whole(csv_file, csv.str());
  }
  if (!json_file.empty()) write_file_whole(json_file, search_json(r).dump() + "\n");
}

// Under mpirun: rank r of n searches shard r/n, rank 0 gathers the shards' JSON, merges and reports.
void run_mpi_search(const SearchArgs& a, const JobBase& base, const SearchSpace& space, SearchOptions options,
                    SearchProgress* progress) {
#ifdef ORRERY_WITH_MPI
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  options.shard_index = rank;
  options.shard_count = size;
  if (rank != 0) {
    options.progress = nullptr;
    progress = nullptr;
  }
  const auto started = std::chrono::steady_clock::now();
  const std::string mine = search_json(run_search_shown(base, space, base.scenario().cluster.num_gpus, options, progress)).dump();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[static_cast<std::size_t>(r)] = total;
      total += lengths[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank != 0) return;
  std::vector<SearchResult> shards;
  for (int r = 0; r < size; ++r) {
    const std::string text = all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                                        static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]));
    const std::string what = fmt::format("MPI rank {}", r);
    shards.push_back(read_search_json(parse_json_text(text, what), what));
  }
  const SearchResult merged = merge_searches(shards);
  write_outputs(merged, a.csv_file, a.json_file);
  print_top_plans(std::cout, merged, a.top, options.objective);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << fmt::format("search time {:.1f} s on {} MPI ranks\n", seconds, size);
#else
  (void)a, (void)base, (void)space, (void)options, (void)progress;
  throw Error::invalid("--mpi", "given", "needs an orrery built with MPI (install libopenmpi-dev and rebuild)");
#endif
}

// Where the scenario file's own plan ranks, and what the best plan gains over it.
void report_given(std::ostream& out, const SearchResult& r, const Candidate& given) {
  const std::string key = candidate_key(given);
  std::size_t rank = 0;
  for (std::size_t i = 0; i < r.ranking.size(); ++i) {
    if (candidate_key(r.records[r.ranking[i]].candidate) == key) rank = i + 1;
  }
  if (rank == 0) {
    std::string why = "was not simulated";
    for (const PlanRecord& rec : r.records) {
      if (candidate_key(rec.candidate) != key) continue;
      why = rec.status == PlanStatus::kSimulated ? "does not fit in memory" : to_string(rec.status);
      if (rec.status == PlanStatus::kPrunedBound) why = "was pruned: its lower bound cannot reach the top plans";
      if (rec.status == PlanStatus::kInvalid) why = "is invalid: " + rec.reason;
    }
    out << fmt::format("the scenario's plan ({}) {}\n", key, why);
    return;
  }
  const PlanRecord& best = r.records[r.ranking.front()];
  const PlanRecord& mine = r.records[r.ranking[rank - 1]];
  if (rank == 1) {
    out << fmt::format("the scenario's plan ({}) ranks 1 of {} fitting plans ({:.3f} s): it is the best\n", key,
                       r.ranking.size(), mine.iteration_time);
    return;
  }
  out << fmt::format("the scenario's plan ({}) ranks {} of {} fitting plans ({:.3f} s); the best ({}) is {:.1f}% "
                     "faster ({:.3f} s)\n",
                     key, rank, r.ranking.size(), mine.iteration_time, candidate_key(best.candidate),
                     100 * (mine.iteration_time / best.iteration_time - 1), best.iteration_time);
}

void run_search_command(const SearchArgs& a) {
  check_outputs(a.csv_file, a.json_file, {{"scenario", a.scenario_file}, {"--profile", a.profile}, {"--model", a.model}});
  std::optional<Job> file;
  if (!a.scenario_file.empty()) file = resolve(load_scenario(a.scenario_file));
  const JobBase job_base = base_job(a, file ? &*file : nullptr);
  const Scenario& base = job_base.scenario();
  SearchSpace space = user_space(a, base);
  std::optional<Candidate> given;
  if (file) {
    // The file's plan joins the space (and is never pruned away: it is ranked whenever it fits).
    given = given_candidate(file->scenario());
    if (std::find(space.extra.begin(), space.extra.end(), *given) == space.extra.end()) space.extra.push_back(*given);
  }
  SearchOptions options = search_options(a);
  const std::shared_ptr<SearchProgress> progress = attach_progress(a, options);
  const CostParams params = cost_params_with_profile(a.profile);
  options.params = &params;
  SearchOptions ranked = options;
  ranked.rank_exactly = given;
  if (a.mpi) {
    require(a.objective != "gpus" && a.shard.empty(), "--mpi", "given",
            "shards the search itself: not with --shard or --objective gpus");
    run_mpi_search(a, job_base, space, options, progress.get());
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  SearchResult result;
  if (a.objective == "gpus") {
    // The fewest GPUs (whole nodes, doubling) whose best plan reaches the target throughput.
    require(a.target_tokens_per_s > 0 && std::isfinite(a.target_tokens_per_s), "--target-tokens-per-s",
            fmt::format("{}", a.target_tokens_per_s), "must be a finite, positive throughput for --objective gpus");
    const int most = base.cluster.num_gpus;
    const double tokens = static_cast<double>(base.training.global_batch_size * base.training.seq_length);
    bool reached = false;
    for (int n = base.cluster.gpus_per_node; !reached; n = std::min(most, n * 2)) {
      result = run_search_shown(job_base, space, n, options, progress.get());
      if (!result.ranking.empty()) {
        const double throughput = tokens / result.records[result.ranking.front()].iteration_time;
        std::cout << fmt::format("{:6} GPUs: best {:.0f} tokens/s\n", n, throughput);
        reached = throughput >= a.target_tokens_per_s;
      } else {
        std::cout << fmt::format("{:6} GPUs: no plan fits\n", n);
      }
      if (n == most) break;
    }
    std::cout << (reached ? fmt::format("fewest GPUs reaching {:.0f} tokens/s: {}\n\n", a.target_tokens_per_s, result.num_gpus)
                          : fmt::format("no GPU count up to {} reaches {:.0f} tokens/s\n\n", most, a.target_tokens_per_s));
  } else {
    result = run_search_shown(job_base, space, base.cluster.num_gpus, ranked, progress.get());
  }
  if (given) report_given(std::cout, result, *given);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  write_outputs(result, a.csv_file, a.json_file);
  print_top_plans(std::cout, result, a.top, options.objective);
  std::cout << fmt::format("search time {:.1f} s: {:.0f} candidates/s, {:.1f} simulations/s\n", seconds,
                           static_cast<double>(result.enumerated) / seconds,
                           static_cast<double>(result.simulated) / seconds);
}

void run_merge(const MergeArgs& a) {
  std::vector<PathOption> inputs;
  for (const std::string& f : a.files) inputs.push_back({"files", f});
  check_outputs(a.csv_file, a.json_file, inputs);
  std::vector<SearchResult> shards;
  for (const std::string& f : a.files) shards.push_back(read_search_json(read_json_file(f, "search output"), f));
  const SearchResult merged = merge_searches(shards);
  write_outputs(merged, a.csv_file, a.json_file);
  print_top_plans(std::cout, merged, a.top, SearchObjective::kTime);
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  CLI::App* cmd = app.add_subcommand("search", "search the parallel plans of a model on a cluster for the best one");
  cmd->add_option("scenario", a->scenario_file, "scenario JSON whose model, cluster and training to search around")
      ->check(non_empty_file());
  cmd->add_option("--model", a->model, "model preset name or path to a Hugging Face config.json")->check(non_empty());
  cmd->add_option("--cluster", a->cluster, "cluster preset name (default dgx-h100) or path to a cluster JSON object")
      ->check(non_empty());
  cmd->add_option("--num-gpus", a->num_gpus, "GPUs (for --objective gpus: the most to consider)");
  cmd->add_option("--seq-length,--seq-len", a->seq_length, "sequence length")->check(whole_number(1, limits::kSequence));
  cmd->add_option("--global-batch-size", a->global_batch_size, "global batch size in sequences")
      ->check(whole_number(1, limits::kGlobalBatch));
  cmd->add_option("--precision", a->precision, "bf16 (default), fp16 or fp32; FP8 is a search dimension (--fp8)")
      ->check(non_empty());
  // The searched dimensions are the option table's rows marked `search` (sim/option_table.h), under the same
  // names as predict's flags; each takes a list of values or a range.
  const std::map<std::string_view, std::pair<std::optional<std::string>*, const char*>> dimensions = {
      {"tp", {&a->tp, "1,2,4,8"}},
      {"pp", {&a->pp, "1,2,4,8,16"}},
      {"cp", {&a->cp, "1,2,4"}},
      {"ep", {&a->ep, "divisors of the expert count, or 1"}},
      {"etp", {&a->etp, "1"}},
      {"vpp", {&a->vpp, "1 and every divisor of the layers per stage, rounded up"}},
      {"micro_batch_size", {&a->micro_batch, "1,2,4"}},
      {"recompute", {&a->recompute, "none,selective,full"}},
      {"zero_stage", {&a->zero_stage, "0,1,3"}},
      {"schedule", {&a->schedule, "1f1b"}},
  };
  std::size_t searched = 0;
  for (const OptionSpec& o : scenario_options()) {
    if (!o.search) continue;
    const auto it = dimensions.find(o.key);
    if (it == dimensions.end()) {
      throw std::logic_error(fmt::format("the option table marks {}.{} as searched, which orrery search lacks", o.section, o.key));
    }
    ++searched;
    const std::string what = o.choices.empty() ? "a list 1,2,4 or a range 2..8" : fmt::format("a list of {}", o.choices);
    cmd->add_option(cli_names(o), *it->second.first,
                    fmt::format("{} values to search: {} (default {})", o.key, what, it->second.second));
  }
  if (searched != dimensions.size()) throw std::logic_error("orrery search has a dimension the option table does not mark");
  cmd->add_option("--fp8", a->fp8, "FP8: off, on, both, or auto (both where the GPU has FP8; default)");
  cmd->add_option("--fp8-recipe", a->fp8_recipe,
                  "FP8 candidates' scaling: delayed, tensorwise, blockwise or mxfp8 (default: the scenario's, or delayed)");
  cmd->add_option("--max-tp", a->max_tp, "largest TP (default: the NVLink domain size)");
  cmd->add_option("--objective", a->objective, "time (default), cost (needs --gpu-hour-price) or gpus (needs --target-tokens-per-s)");
  cmd->add_option("--gpu-hour-price", a->gpu_hour_price, "$ per GPU-hour for --objective cost");
  cmd->add_option("--target-tokens-per-s", a->target_tokens_per_s, "throughput the fewest GPUs must reach (--objective gpus)");
  cmd->add_option("--memory-margin", a->memory_margin, "fraction of GPU memory to keep free (default 0.05)");
  cmd->add_option("--memory-cap", a->memory_cap_gib, "use at most this many GiB of each GPU (default: all of it)");
  cmd->add_option("--top", a->top, "plans to print (default 10)");
  cmd->add_option("--threads", a->threads, "worker threads (default: all cores)");
  cmd->add_flag("--no-prune", a->no_prune, "simulate every candidate that passes the memory bound (exhaustive)");
  cmd->add_flag("--quiet", a->quiet, "no progress bar");
  cmd->add_option("--shard", a->shard, "evaluate shard I of N (I/N, from 0), e.g. as a Slurm array task")->check(non_empty());
  cmd->add_flag("--mpi", a->mpi, "under mpirun: each rank searches one shard; rank 0 merges and reports");
  cmd->add_option("--profile", a->profile, "price ops from a measured GPU profile (calibrate/) where it covers them")->check(non_empty_file());
  cmd->add_option("--csv", a->csv_file, "write every candidate as CSV")->check(non_empty_file());
  cmd->add_option("--json", a->json_file, "write every candidate as JSON (input of `orrery search merge`)")
      ->check(non_empty_file());
  cmd->callback([a, cmd] {
    if (cmd->get_subcommands().empty()) run_search_command(*a);
  });

  auto m = std::make_shared<MergeArgs>();
  CLI::App* merge = cmd->add_subcommand("merge", "join the JSON outputs of the shards of one search");
  merge->add_option("files", m->files, "JSON files written by `orrery search --shard I/N --json FILE`")->required();
  merge->add_option("--top", m->top, "plans to print (default 10)");
  merge->add_option("--csv", m->csv_file, "write the merged candidates as CSV")->check(non_empty_file());
  merge->add_option("--json", m->json_file, "write the merged candidates as JSON")->check(non_empty_file());
  merge->callback([m] { run_merge(*m); });
}

}  // namespace orrery::cli
