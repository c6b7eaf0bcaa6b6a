#include "calibrate/nccl_import.h"

#include <algorithm>

#include "models/error.h"

namespace orrery {

std::vector<CollectiveSample> collective_samples(const NcclTestsLog& log, int ranks, int nodes) {
  if (!log.kind) throw Error::invalid(log.file, "log", "names no collective nccl-tests knows (all_reduce_perf, ...)");
  const int r = ranks > 0 ? ranks : log.ranks;  // nccl-tests prints a Rank line per GPU, threads included
  const int n = nodes > 0 ? nodes : std::max(1, log.nodes);
  if (r <= 0) {
    throw Error::invalid(log.file, "log", "does not say how many ranks ran (no 'Rank N ... on HOST' lines); give --ranks");
  }
  std::vector<CollectiveSample> out;
  for (const NcclTestsRow& row : log.rows) {
    if (row.bytes <= 0 || row.time <= 0) continue;
    out.push_back({*log.kind, r, n, row.bytes, row.time, log.file});
  }
  return out;
}

void merge_collectives(GpuProfile& profile, const std::vector<CollectiveSample>& samples) {
  for (const CollectiveSample& s : samples) {
    auto& list = profile.collectives;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const CollectiveSample& o) {
                                return o.kind == s.kind && o.ranks == s.ranks && o.nodes == s.nodes && o.bytes == s.bytes;
                              }),
               list.end());
    list.push_back(s);
  }
}

}  // namespace orrery
