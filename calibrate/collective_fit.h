#pragma once
// The network efficiencies of the collective cost model, fitted once to real nccl-tests logs (ARCHITECTURE.md "Cost
// models": every parameter is physical or fitted once, globally). A manifest (tests/data/nccl-tests-logs/manifest.json)
// names each log's cluster preset and group shape.

#include <filesystem>
#include <string>
#include <vector>

#include "calibrate/nccl_tests_log.h"
#include "hardware/cluster_spec.h"
#include "hardware/cost_params.h"

namespace orrery {

/// One nccl-tests row as the fit reads it: the measured bus bandwidth of one collective on one cluster. Not the
/// profile's timed collective (hardware/gpu_profile.h `CollectiveSample`): two types of one name were an ODR
/// violation that AddressSanitizer caught as a heap-buffer-overflow in load_collective_samples.
struct BusBandwidthSample {
  std::string log;
  ClusterSpec cluster;
  CollectiveOp op;            // kind, bytes, placement of the measured group
  BytesPerSecond measured = 0;  // nccl-tests busbw
  // Per-call launch cost of the benchmark itself when one thread drives several GPUs (nccl-tests -g N): each
  // call launches N kernels one after another. Read off the log: the time of its smallest non-empty message
  // minus NCCL's LL latency for it (tuning.cc), which a multi-process run does not pay.
  Seconds harness_overhead = 0;
};

/// The benchmark's own per-call launch cost in `log` (BusBandwidthSample::harness_overhead): 0 unless one process
/// drives several GPUs.
Seconds harness_overhead(const NcclTestsLog& log, const ClusterSpec& cluster, CollectiveKind kind,
                         const GroupPlacement& placement);

/// Every row of every log the manifest lists, with at least `min_bytes`, or `min_bytes_single_node` for a log whose
/// group stays inside one NVLink domain (a negative value: `min_bytes` for those too). The documented fit takes
/// every row from 1K on both (cost_model.json's `fit` entry): the model prices NCCL's protocols and channel counts
/// by size, so mid-size rows are no longer left to the large-message efficiencies alone.
/// Errors: Error::invalid / Error::io for an unreadable manifest or log, or an unknown preset.
std::vector<BusBandwidthSample> load_collective_samples(const std::filesystem::path& manifest, Bytes min_bytes,
                                                      Bytes min_bytes_single_node = -1);

/// Predicted bus bandwidth of a sample under `params`.
BytesPerSecond predicted_bus_bandwidth(const BusBandwidthSample& sample, const NetworkParams& params);

/// Fits nvlink, nvls and NIC efficiencies and the pipeline fill (NetworkParams) to the samples (least squares on
/// log(predicted / measured) bus bandwidth, weighed by 1/0.15 inside a node and 1/0.25 across nodes), starting
/// from `start`.
NetworkParams fit_network_params(const std::vector<BusBandwidthSample>& samples, const NetworkParams& start);

/// Bus-bandwidth errors of one size band, inside one node or across nodes: 100 x (predicted / measured - 1).
struct BandError {
  const char* band = "";     // "1K-64K", "64K-8M", "8M-64M", ">=64M"
  bool multi_node = false;
  int rows = 0;
  double mean_abs_percent = 0;
  double mean_percent = 0;   // signed: negative means predicted below measured
  double worst_percent = 0;  // the largest in magnitude, with its sign
};

/// Errors of `params` over the samples in the bands 1K-64K, 64K-8M, 8M-64M and >= 64M (sizes below 1K are left
/// out), single node first; a band with no row is reported with rows = 0.
std::vector<BandError> band_errors(const std::vector<BusBandwidthSample>& samples, const NetworkParams& params);

}  // namespace orrery
