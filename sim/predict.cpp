#include "sim/predict.h"

#include "sim/lowering.h"

namespace orrery {

DefaultCostModels::DefaultCostModels(const ClusterSpec& cluster, const CostParams& params)
    : compute(std::make_unique<RooflineComputeModel>(cluster.gpu, params.compute)),
      network(std::make_unique<NcclCollectiveModel>(cluster, params.network)) {}

Prediction predict(const Scenario& scenario, const PredictOptions& options) {
  const CostParams& params = options.params ? *options.params : default_cost_params();
  Prediction p;
  p.scenario = scenario;
  p.graph = lower(p.scenario, params.memory);
  p.instances = make_instances(p.scenario.parallel, p.scenario.stragglers, options.expansion);
  DefaultCostModels models(p.scenario.cluster, params);
  p.durations = price_graph(p.graph, models.models());
  RunOptions run = options.run;
  run.overlap_slowdown = params.compute.overlap_slowdown;
  p.run = run_engine(p.graph, p.instances, p.durations, run);
  p.report = analyze(p.scenario, p.graph, p.instances, p.run);
  return p;
}

}  // namespace orrery
