#pragma once
// Comparison of a prediction with a published measurement (the scenario's `expect`), in the source's own FLOP
// convention (scenarios/validation/README.md):
// - megatron-sc21: SC21's hardware FLOPs 96 B s l h^2 (1 + s/6h + V/16lh) for TFLOP/s with full recompute;
//   Korthikanti's MFU 72 B s l h^2 (1 + s/6h + V/12lh); HFU adds what the recompute policy recomputes (full:
//   the SC21 count; selective: 12 B s^2 h l, which reproduces the published HFU columns of Korthikanti et al.).
// - full-attention: model FLOPs of the actual architecture with the full score matrix (NeMo <= 24.07).
// - causal-halved: the same with the score matrix halved (Megatron-Bridge 25.09+).
// Peaks are the dense datasheet values of the GEMM precision (the FP8 peak for FP8 runs).

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/predict.h"

namespace orrery {

struct FigureComparison {
  std::string figure;  // expect key, e.g. "iteration_time_s"
  double predicted = 0;
  double published = 0;
  double error_pct = 0;  // 100 (predicted - published) / published
};

/// The parts of a predicted step an error can lie in (`validate --explain`): compute (the compute and optimizer
/// time of the critical stage), host (the GPU waiting for its host to issue), communication (every exposed
/// transfer), bubble (waiting for other pipeline stages).
enum class ErrorPart : std::uint8_t { kCompute, kHost, kCommunication, kBubble };
inline constexpr int kNumErrorParts = 4;
const char* to_string(ErrorPart part);

/// Relative uncertainty (one standard deviation) of each part's predicted seconds, in ErrorPart order, with its
/// source in validation.cpp.
extern const double kPartUncertainty[kNumErrorParts];

/// How a record's iteration-time error divides over the parts of its prediction: each part's seconds, and the
/// error it most probably carries. With independent errors of standard deviation u_p x seconds_p, the most probable
/// split of the total error E = predicted - measured (least squares under the constraint that they sum to E) gives
/// part p the share sigma_p^2 / sum sigma_q^2 of E. The dominant part is the one with the largest sigma_p (the same
/// for either sign of E). Time outside the four parts (idle, offload copies) is left out.
struct ErrorAttribution {
  std::array<Seconds, kNumErrorParts> seconds{};   // the part's predicted seconds on the critical stage
  std::array<Seconds, kNumErrorParts> allotted{};  // its most probable share of the error (sums to E)
  ErrorPart dominant = ErrorPart::kCompute;
  Seconds error = 0;  // predicted - measured
};
/// Errors: none; a breakdown of zero seconds allots everything to compute.
ErrorAttribution attribute_error(const Breakdown& breakdown, Seconds predicted, Seconds measured);

struct RecordResult {
  std::string name;
  std::string file;
  std::string prefix;          // source prefix, e.g. "sc21-t1"
  bool simulated = false;      // false: the scenario failed (not modelled yet, or invalid)
  bool not_modelled = false;   // the failure was a "not modelled yet" refusal
  std::string error;
  std::vector<FigureComparison> figures;
  std::optional<double> iteration_error_pct;
  std::optional<ErrorAttribution> attribution;  // with an iteration time compared
};

/// FLOPs per iteration (whole job) as the convention counts them: {"tflops" basis, "mfu" basis, "hfu" basis}.
struct ConventionFlops {
  double tflops = 0, mfu = 0, hfu = 0;
};
/// Errors: none (an unknown convention counts as full-attention).
ConventionFlops convention_flops(const Job& job, const std::string& convention);

/// Compares a finished prediction with the scenario's expectations; every figure and error is finite. Errors:
/// Error::invalid naming expect.FIGURE when a comparison would not be.
RecordResult compare_with_expectations(const Prediction& prediction, const std::string& file);

/// The source prefix of a record name: the known multi-part prefixes ("sc21-t1", "sc21-t2", "mlm-readme-2020",
/// "mbridge-25.09", "mbridge-25.11"), otherwise the part before the first '-'.
std::string source_prefix(const std::string& name);

struct ValidationSummary {
  int records = 0;             // with an iteration time compared
  int failed = 0;              // scenarios that did not simulate
  double mape = 0;             // mean absolute percentage error of iteration time
  std::string worst;           // record with the largest absolute error
  double worst_error_pct = 0;  // its signed error
  std::map<std::string, std::pair<double, int>> by_prefix;  // prefix -> (MAPE, count)
};

ValidationSummary summarize(const std::vector<RecordResult>& results);



}  // namespace orrery
