#include "sim/pipeline_layout.h"

#include <fmt/format.h>

#include <numeric>

#include "models/error.h"

namespace orrery {

namespace {

constexpr const char* kSplitKeys =
    "decoder_first_pipeline_num_layers / decoder_last_pipeline_num_layers, "
    "account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split, or pipeline_layout";
constexpr const char* kDualPipeVSplitKeys =
    "account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split, or pipeline_layout";

// How the message names the virtual stages.
std::string path_stages_text(const ParallelPlan& p) {
  if (p.schedule == Schedule::kDualPipeV) return fmt::format("2 x pp = 2 x {} = {} (dualpipev)", p.pp, 2 * p.pp);
  return fmt::format("pp x vpp = {} x {} = {}", p.pp, p.vpp, p.pp * p.vpp);
}

std::vector<int> from_explicit_layout(const ModelSpec& m, const ParallelPlan& p) {
  const int n = virtual_stage_count(p);
  require(static_cast<int>(p.pipeline_layout.size()) == n, "parallel.pipeline_layout",
          std::to_string(p.pipeline_layout.size()) + " entries",
          fmt::format("must have one entry per virtual stage: {}", path_stages_text(p)));
  int sum = std::accumulate(p.pipeline_layout.begin(), p.pipeline_layout.end(), 0);
  require(sum == m.num_layers, "parallel.pipeline_layout", fmt::format("sum {}", sum),
          fmt::format("must add up to num_hidden_layers ({})", m.num_layers));
  return p.pipeline_layout;
}

std::vector<int> from_accounting(const ModelSpec& m, const ParallelPlan& p) {
  const int n = virtual_stage_count(p);
  const int extra = p.accounted_slots();
  const int slots = m.num_layers + extra;
  require(slots % n == 0, "parallel.pp", std::to_string(p.pp),
          fmt::format("gives {} virtual stages, which must divide num_hidden_layers ({}) plus the {} layer(s) the "
                      "embedding/loss account for ({})",
                      path_stages_text(p), m.num_layers, extra, slots));
  std::vector<int> layers(static_cast<std::size_t>(n), slots / n);
  if (p.account_for_embedding_in_pipeline_split) layers.front() -= 1;
  if (p.account_for_loss_in_pipeline_split) layers.back() -= 1;
  return layers;
}

// The first/last-stage keys given, as errors name them: the one given, or both.
std::string first_last_field(const ParallelPlan& p) {
  if (!p.decoder_first_pipeline_num_layers) return "parallel.decoder_last_pipeline_num_layers";
  if (!p.decoder_last_pipeline_num_layers) return "parallel.decoder_first_pipeline_num_layers";
  return "parallel.decoder_first_pipeline_num_layers and decoder_last_pipeline_num_layers";
}

std::string first_last_value(const ParallelPlan& p) {
  std::string text;
  for (const auto& n : {p.decoder_first_pipeline_num_layers, p.decoder_last_pipeline_num_layers}) {
    if (n) text += (text.empty() ? "" : ", ") + std::to_string(*n);
  }
  return text;
}

std::vector<int> from_first_last(const ModelSpec& m, const ParallelPlan& p) {
  require(p.pp >= 2, first_last_field(p), first_last_value(p), "needs pp >= 2");
  // DualPipeV's first rank holds both the first and the last virtual stage: Megatron's first/last-stage counts
  // have no meaning there.
  if (p.schedule == Schedule::kDualPipeV) {
    const bool first = p.decoder_first_pipeline_num_layers.has_value();
    throw Error::invalid(first ? "parallel.decoder_first_pipeline_num_layers" : "parallel.decoder_last_pipeline_num_layers",
                         std::to_string(first ? *p.decoder_first_pipeline_num_layers : *p.decoder_last_pipeline_num_layers),
                         "is not defined for dualpipev; give parallel.pipeline_layout, one entry per virtual stage "
                         "(2 x pp)");
  }
  std::vector<int> per_stage(static_cast<std::size_t>(p.pp), -1);
  int fixed = 0, open = p.pp;
  if (p.decoder_first_pipeline_num_layers) {
    per_stage.front() = *p.decoder_first_pipeline_num_layers;
    fixed += per_stage.front();
    --open;
  }
  if (p.decoder_last_pipeline_num_layers) {
    per_stage.back() = *p.decoder_last_pipeline_num_layers;
    fixed += per_stage.back();
    --open;
  }
  const int rest = m.num_layers - fixed;
  require(rest >= 0 && (open == 0 ? rest == 0 : rest % open == 0), first_last_field(p),
          first_last_value(p) + (open == p.pp - 2 ? ": " + std::to_string(fixed) + " layers on the first and last stages" : ""),
          fmt::format("leaves {} of num_hidden_layers ({}) for {} other stage(s), which must divide evenly", rest,
                      m.num_layers, open));
  for (int& n : per_stage) {
    if (n < 0) n = rest / open;
  }
  std::vector<int> layers(static_cast<std::size_t>(p.pp * p.vpp));
  for (int s = 0; s < p.pp; ++s) {
    const int n = per_stage[static_cast<std::size_t>(s)];
    require(n % p.vpp == 0, "parallel.vpp", std::to_string(p.vpp),
            fmt::format("must divide the {} layers of pipeline stage {} (uneven split)", n, s));
    for (int c = 0; c < p.vpp; ++c) layers[static_cast<std::size_t>(c * p.pp + s)] = n / p.vpp;
  }
  return layers;
}

}  // namespace

int virtual_stage_count(const ParallelPlan& p) {
  return p.schedule == Schedule::kDualPipeV ? 2 * p.pp : p.pp * p.vpp;
}

int PipelineLayout::layers_on_stage(int stage) const {
  int n = 0;
  for (int c = 0; c < vpp; ++c) n += layers_in(stage, c);
  return n;
}

PipelineLayout make_pipeline_layout(const ModelSpec& m, const ParallelPlan& p) {
  PipelineLayout out;
  out.pp = p.pp;
  out.vpp = is_dualpipe(p.schedule) ? 2 : p.vpp;
  out.mirrored = p.schedule == Schedule::kDualPipe;
  out.v_shape = p.schedule == Schedule::kDualPipeV;
  const bool first_last = p.decoder_first_pipeline_num_layers || p.decoder_last_pipeline_num_layers;
  const bool accounting = p.accounted_slots() > 0;
  const bool explicit_layout = !p.pipeline_layout.empty();
  require(int(first_last) + int(accounting) + int(explicit_layout) <= 1, "parallel.pipeline_layout", "combined",
          std::string("split keys cannot be combined; use one of ") + kSplitKeys);
  if (explicit_layout) {
    out.layers = from_explicit_layout(m, p);
  } else if (accounting) {
    out.layers = from_accounting(m, p);
  } else if (first_last) {
    out.layers = from_first_last(m, p);
  } else {
    const int n = virtual_stage_count(p);
    require(m.num_layers % n == 0, "parallel.pp", std::to_string(p.pp),
            fmt::format("gives {} virtual stages, which must divide num_hidden_layers ({}); for an uneven split set {}",
                        path_stages_text(p), m.num_layers,
                        p.schedule == Schedule::kDualPipeV ? kDualPipeVSplitKeys : kSplitKeys));
    out.layers.assign(static_cast<std::size_t>(n), m.num_layers / n);
  }
  out.first_layer.resize(out.layers.size());
  int next = 0;
  for (std::size_t v = 0; v < out.layers.size(); ++v) {
    out.first_layer[v] = next;
    next += out.layers[v];
  }
  return out;
}

}  // namespace orrery
