#pragma once
// Reader of real nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,
// sendrecv_perf): the rows of sizes with their time and bus bandwidth. It accepts the formats seen in the wild:
// with or without the `root` column, launcher prefixes on each line ("0: ", "[1,0]<stdout>:"), NCCL INFO lines
// interleaved, and `#wrong` written as 0, N/A or 0e+00. Each row ends with the out-of-place and in-place groups
// (time, algbw, busbw, #wrong); the reader takes the out-of-place one.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hardware/collective_cost.h"

namespace orrery {

struct NcclTestsRow {
  Bytes bytes = 0;
  Seconds time = 0;                 // out-of-place, per call
  BytesPerSecond bus_bandwidth = 0;  // out-of-place busbw as printed
};

struct NcclTestsLog {
  std::string file;
  std::optional<CollectiveKind> kind;  // from the test's name in the file or its file name
  int ranks = 0;                       // from the "Rank N ... on HOST" lines (0 if absent)
  int nodes = 0;                       // distinct hosts among those lines (0 if absent)
  int gpus_per_process = 1;            // "nGpus N" of the header: one thread driving N GPUs
  std::vector<NcclTestsRow> rows;      // in file order
};

/// Parses nccl-tests output text. `name` (a file name) helps recognise the collective.
/// Errors: Error::invalid naming the file when no result row is found.
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& name);

/// Reads and parses a log file. Errors: Error::io when it cannot be read; those of parse_nccl_tests_log.
NcclTestsLog read_nccl_tests_log(const std::filesystem::path& file);

}  // namespace orrery
