#pragma once
// One parameter group (sim/lower/param_groups.h lists how they are made): on its own so that LoweringContext can
// keep the groups of each layer without including the lowering of them.

#include <cstdint>

namespace orrery {

struct ParamGroup {
  int chunk = 0;
  int layer = -1;          // -1: embedding or head
  const char* name = "";   // module label, as the lowering records it
  std::int64_t elements = 0;
  bool expert = false;     // routed-expert weights: sharded over EP x ETP, reduced over the expert-DP group
};

}  // namespace orrery
