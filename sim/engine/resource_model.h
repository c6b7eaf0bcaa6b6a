#pragma once
// Shared resources (ARCHITECTURE.md "The workload graph and the engine"). A task that demands a resource model's
// resource (Program::demands, WorkloadGraph::demands) tells the model when it starts and ends; a task in a role the
// model paces runs as an action: an amount of work (nanoseconds at full speed) done at a rate the models set while it
// runs. Its time per unit of work (its stretch) is the product of one factor per pacing model, so each model only
// ever sets its own factor; the engine settles the work done so far and re-times the action's end.
//
// Models, by name (RunOptions::resources enables them; a graph's demands on a model that is not enabled are ignored):
//   "sm_contention"   roles "compute", "contender". A compute action runs at 1 / (1 + parameter) of its speed while
//                     any contender (a communication kernel, which takes SMs) runs on the same instance.
//                     sim/engine/sm_contention.cpp.
//   "port_fair_share" roles "send", "receive". Each direction of an instance's network port is split evenly among
//                     the actions using it: one runs at 1 / n of its speed while n use its busiest direction.
//                     sim/engine/port_fair_share.cpp.
// A new contention model (NVLink, PCIe, a host thread) is one new file and two lines in resource_models.cpp: its
// roles in resource_roles() and its construction in make_resource_model().

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/units.h"

namespace orrery {

/// The engine as a resource model sees it: the running actions whose speeds it sets.
class Pacing {
 public:
  /// Sets the model's factor (its `slot`) of the stretch of running action `action` from `now` on (1: full speed,
  /// 2: half). Errors: std::logic_error for a factor below 1 or not finite.
  virtual void set_factor(std::int32_t action, int slot, double factor, Nanoseconds now) = 0;

 protected:
  ~Pacing() = default;
};

/// One resource model. Roles are bits of the model's own role list (resource_roles()); `instance` indexes
/// Instantiation::instances.
class ResourceModel {
 public:
  virtual ~ResourceModel() = default;
  /// The role bits whose tasks run as actions paced by this model.
  virtual std::uint8_t paced_roles() const = 0;
  /// Whether an action it slows is re-queued at its later end at once (true), or when its earlier end surfaces
  /// (false, one push fewer per slow-down). The times are the same either way; only the order of events that fall
  /// on one nanosecond differs, which the golden reports fix, so each model keeps the order it was written with.
  virtual bool eager() const { return false; }
  /// A task with `roles` started at `now`; `action` is its action if any model paces it, else -1.
  virtual void started(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action,
                       Nanoseconds now) = 0;
  /// The task gave `roles` back: its paced roles when its work is done, the others when the task ends.
  virtual void ended(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action,
                     Nanoseconds now) = 0;
};

/// A resource model to enable, by name, with its parameter (sm_contention: the overlap slowdown; port_fair_share:
/// none).
struct ResourceSetting {
  std::string model;
  double parameter = 0.0;
};

/// The role names of `model`, in bit order. Errors: std::invalid_argument for an unknown model.
const std::vector<std::string>& resource_roles(const std::string& model);

/// The model `setting` names, for `instances` instances, owning factor `slot` of every action's stretch.
/// Errors: std::invalid_argument for an unknown model or a parameter it refuses (negative or not finite).
std::unique_ptr<ResourceModel> make_resource_model(const ResourceSetting& setting, std::size_t instances, int slot);

}  // namespace orrery
