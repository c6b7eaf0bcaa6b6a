// The resource models by name (sim/engine/resource_model.h).
#include <cmath>
#include <stdexcept>

#include "sim/engine/port_fair_share.h"
#include "sim/engine/sm_contention.h"

namespace orrery {

const std::vector<std::string>& resource_roles(const std::string& model) {
  static const std::vector<std::string> sm{"compute", "contender"}, port{"send", "receive"};
  if (model == "sm_contention") return sm;
  if (model == "port_fair_share") return port;
  throw std::invalid_argument("resource model \"" + model + "\" is not one of sm_contention, port_fair_share");
}

std::unique_ptr<ResourceModel> make_resource_model(const ResourceSetting& setting, std::size_t instances, int slot) {
  if (!std::isfinite(setting.parameter) || setting.parameter < 0) {
    throw std::invalid_argument("resource model \"" + setting.model + "\": parameter must be finite and >= 0");
  }
  if (setting.model == "sm_contention") return std::make_unique<SmContention>(setting.parameter, instances, slot);
  if (setting.model == "port_fair_share") return std::make_unique<PortFairShare>(instances, slot);
  resource_roles(setting.model);  // throws for the unknown name
  return nullptr;
}

}  // namespace orrery
