#include "tools/orrery/report_figures.h"

#include <fmt/format.h>

#include "tools/orrery/report_rows.h"
#include "tools/orrery/report_specs.h"

namespace orrery::cli {

using nlohmann::json;
using report::Column;
using report::Need;

namespace {

std::vector<std::string> column_keys(const std::vector<Column>& columns) {
  std::vector<std::string> keys;
  for (const Column& c : columns) keys.push_back(c.key);
  return keys;
}

// The figure from `rows`, or undrawn with the reason: `path` absent, or none of its items usable.
Figure make_figure(std::string id, std::string title, std::string caption, std::vector<std::string> columns,
                   const report::Rows& rows, std::string_view path, std::string_view when_absent) {
  Figure f;
  f.id = std::move(id);
  f.title = std::move(title);
  f.caption = std::move(caption);
  f.columns = std::move(columns);
  f.rows_left_out = rows.left_out;
  if (!rows.list_found) {
    f.missing = fmt::format("the report has no `{}`{}", path, when_absent);
  } else if (rows.rows.empty()) {
    f.missing = rows.left_out == 0
                    ? fmt::format("`{}` is empty", path)
                    : fmt::format("none of the {} entries of `{}` has the fields this figure needs as numbers",
                                  rows.left_out, path);
  } else {
    f.rows = rows.rows;
  }
  return f;
}

constexpr std::string_view kNoSweep = " (`orrery plan --num-gpus LIST` adds a sweep)";

std::string default_gpu(const json& plan) { return report::text(plan, "gpu").value_or("GPU"); }

// A figure of the sweep's points (`sweep`, one row per point, coloured by GPU), drawn by `spec`.
Figure sweep_figure(const json& plan, std::string id, std::string title, std::string caption,
                    const std::vector<Column>& columns, json (*spec)(const json&)) {
  Figure f = make_figure(std::move(id), std::move(title), std::move(caption), column_keys(columns),
                         report::list_rows(plan, "sweep", columns, default_gpu(plan)), "sweep", kNoSweep);
  if (f.missing.empty()) f.spec = spec(f.rows);
  return f;
}

Figure time_to_train(const json& plan) {
  return sweep_figure(plan, "time_to_train", "Time to train against GPU count",
                      "Days to train the token budget at each GPU count of the sweep: without failures (solid) and "
                      "with the goodput model's expected losses (dashed). Log-scale GPU axis.",
                      {{"num_gpus", Need::number}, {"gpu", Need::label}, {"time_to_train_s", Need::value},
                       {"effective_time_to_train_s", Need::value}},
                      report::time_to_train_spec);
}

Figure cost(const json& plan) {
  return sweep_figure(plan, "cost", "Cost against GPU count",
                      "Cost of the whole run in US dollars at each GPU count of the sweep (GPU-hours times the plan's "
                      "price per GPU-hour). Log-scale GPU axis.",
                      {{"num_gpus", Need::number}, {"gpu", Need::label}, {"cost_usd", Need::number},
                       {"gpu_hours", Need::extra}},
                      report::cost_spec);
}

Figure scaling(const json& plan) {
  return sweep_figure(plan, "scaling_efficiency", "Scaling efficiency against GPU count",
                      "Strong scaling (the same global batch on more GPUs; solid) and weak scaling (the batch grown "
                      "with the GPUs; dashed) efficiency relative to the sweep's smallest GPU count.",
                      {{"num_gpus", Need::number}, {"gpu", Need::label}, {"strong_scaling_efficiency", Need::value},
                       {"weak_scaling_efficiency", Need::value}},
                      report::scaling_spec);
}

Figure ettr_vs_gpus(const json& plan) {
  return sweep_figure(plan, "ettr_vs_gpus", "ETTR against GPU count",
                      "Effective training time ratio (productive time over wall-clock time under failures, "
                      "checkpoints and restarts) at each GPU count: more GPUs fail more often.",
                      {{"num_gpus", Need::number}, {"gpu", Need::label}, {"ettr", Need::number}},
                      report::ettr_vs_gpus_spec);
}

Figure ettr_vs_interval(const json& plan) {
  const std::vector<Column> columns{{"interval_s", Need::number}, {"ettr", Need::number}};
  Figure f = make_figure("ettr_vs_checkpoint_interval", "ETTR against checkpoint interval",
                         "ETTR at the plan's GPU count as the checkpoint interval varies: short intervals spend "
                         "time saving, long ones lose more work per failure. The dashed rule marks the interval "
                         "the plan uses.",
                         column_keys(columns),
                         report::list_rows(plan, "goodput.vs_checkpoint_interval", columns, ""),
                         "goodput.vs_checkpoint_interval", " (the goodput model writes it)");
  if (f.missing.empty()) {
    f.spec = report::ettr_vs_interval_spec(f.rows, report::number(plan, "goodput.checkpoint.interval_s"));
  }
  return f;
}

Figure breakdown(const json& report) {
  const std::vector<std::string> order{"compute",         "exposed_tp_comm", "exposed_cp_comm", "exposed_ep_comm",
                                       "exposed_pp_comm", "exposed_dp_comm", "bubble",          "optimizer",
                                       "host",            "other"};
  Figure f = make_figure("breakdown", "Where a step's time goes",
                         "The step's time on the critical pipeline stage, split into compute, communication not "
                         "hidden behind compute, pipeline bubble, optimizer and the rest; the parts sum to the "
                         "iteration time.",
                         {"category", "seconds"}, report::object_rows(report, "breakdown_s", order, "category", "seconds"),
                         "breakdown_s", "");
  if (f.missing.empty()) f.spec = report::breakdown_spec(f.rows);
  return f;
}

Figure memory(const json& report, std::string_view capacity_path) {
  const std::vector<Column> columns{{"stage", Need::number},      {"weights", Need::value},
                                    {"gradients", Need::value},   {"optimizer", Need::value},
                                    {"activations", Need::value}, {"other", Need::value},
                                    {"peak", Need::extra}};
  Figure f = make_figure("memory", "Memory per pipeline stage",
                         "Each pipeline stage's memory per GPU at its peak, by what holds it (bytes in the CSV, GiB "
                         "on the plot); the dashed rule is the GPU's memory.",
                         column_keys(columns), report::list_rows(report, "memory.per_stage", columns, ""),
                         "memory.per_stage", "");
  if (f.missing.empty()) f.spec = report::memory_spec(f.rows, report::number(report, capacity_path));
  return f;
}

Figure power_per_stage(const json& report) {
  const std::vector<Column> columns{{"stage", Need::number},        {"average_gpu_power_W", Need::number},
                                    {"compute_s", Need::extra},     {"memory_s", Need::extra},
                                    {"communication_s", Need::extra}, {"idle_s", Need::extra}};
  Figure f = make_figure("power_per_stage", "GPU power per pipeline stage",
                         "Average power of one GPU of each pipeline stage over the step, from the time it spends "
                         "computing, moving memory, communicating and idle (in the tooltip and the CSV).",
                         column_keys(columns), report::list_rows(report, "energy.per_stage", columns, ""),
                         "energy.per_stage", " (the energy model writes it)");
  if (f.missing.empty()) f.spec = report::power_per_stage_spec(f.rows);
  return f;
}

Figure power_by_state(const json& report) {
  Figure f = make_figure("power_by_state", "GPU power by state",
                         "The power the energy model gives a GPU in each state, between its idle power and its "
                         "board limit.",
                         {"state", "power_W"},
                         report::object_rows(report, "energy.power_by_state_W",
                                             {"compute", "memory", "communication", "idle"}, "state", "power_W"),
                         "energy.power_by_state_W", " (the energy model writes it)");
  if (f.missing.empty()) f.spec = report::power_by_state_spec(f.rows);
  return f;
}

}  // namespace

std::vector<Figure> plan_figures(const json& plan) {
  return {time_to_train(plan),  cost(plan),          scaling(plan),
          ettr_vs_gpus(plan),   ettr_vs_interval(plan), breakdown(plan),
          memory(plan, "gpu_memory_bytes"), power_per_stage(plan), power_by_state(plan)};
}

std::vector<Figure> predict_figures(const json& prediction) {
  return {breakdown(prediction), memory(prediction, "memory.capacity_bytes"), power_per_stage(prediction),
          power_by_state(prediction)};
}

namespace {

std::string csv_field(const json& value) {
  if (value.is_null()) return "";
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());
  if (value.is_number()) return value.dump();
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

}  // namespace

std::string figure_csv(const Figure& figure) {
  std::string out;
  for (std::size_t i = 0; i < figure.columns.size(); ++i) {
    out += (i ? "," : "") + csv_field(figure.columns[i]);
  }
  out += "\r\n";
  for (const json& row : figure.rows) {
    for (std::size_t i = 0; i < figure.columns.size(); ++i) {
      const auto it = row.find(figure.columns[i]);
      out += (i ? "," : "") + (it == row.end() ? std::string() : csv_field(*it));
    }
    out += "\r\n";
  }
  return out;
}

}  // namespace orrery::cli
