#pragma once
// The subcommands of `orrery`. Each registers itself on the CLI11 app and runs after parsing; the library's
// orrery::Error propagates to main(), which prints it and exits 2.

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <string>

#include "models/units.h"

namespace orrery::cli {

/// `orrery predict [SCENARIO] [flags]`.
/// A CLI11 check for file options: an empty string would otherwise read as "not given" and be ignored silently.
inline const CLI::Validator& non_empty_file() {
  static const CLI::Validator check([](std::string& v) { return v.empty() ? std::string("must name a file") : std::string(); },
                                    "FILE");
  return check;
}

/// A CLI11 check that a value is not empty ("--tp ''"), which CLI11 would otherwise leave unset without a word.
inline const CLI::Validator& non_empty() {
  static const CLI::Validator check([](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); },
                                    "", "not empty");
  return check;
}

/// A CLI11 check that an integer option's text is a whole number from `lo` to `hi` (`note` says what the numbers
/// mean). CLI11 alone turns a number past 64 bits into the largest one without a word (99999999999999999999 read as
/// 9223372036854775807), and the check sees the text as given.
inline CLI::Validator whole_number(std::int64_t lo, std::int64_t hi, const std::string& note = "") {
  return CLI::Validator(
      [=](std::string& text) {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc() && end == text.data() + text.size() && v >= lo && v <= hi) return std::string();
        return text + " must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + note;
      },
      "INT");
}

void add_predict_command(CLI::App& app);
/// `orrery plan SCENARIO [--tokens N | --steps N] [--num-gpus LIST] ...`: capacity planning.
void add_plan_command(CLI::App& app);
/// `orrery list [models|gpus|clusters]`.
void add_list_command(CLI::App& app);
/// `orrery validate PATH... [--json] [--max-mape PCT] [--max-error PCT] [--explain NAME]`; sets `exit_code` to 1
/// when a bar is missed, and to 2 when records were given but none could be read and simulated.
void add_validate_command(CLI::App& app, int& exit_code);
/// `orrery collective --cluster C --num-gpus N --op OP --bytes B` or `--log NCCL_TESTS_OUTPUT`.
void add_collective_command(CLI::App& app);
/// `orrery fit collectives|records ...`: the documented global fits of the cost-model parameters.
void add_fit_command(CLI::App& app, int& exit_code);

/// `orrery calibrate import-nccl-tests LOG... --out PROFILE`.
void add_calibrate_command(CLI::App& app);

/// `orrery compare --kineto TRACE SCENARIO`: a real step's profiler trace against the prediction.
void add_compare_command(CLI::App& app);
/// `orrery search ...` and `orrery search merge FILE...`.
void add_search_command(CLI::App& app);

/// "64M", "1G", "1048576" -> bytes. Errors: Error::invalid naming `field`.
Bytes parse_bytes(const std::string& text, const std::string& field);

}  // namespace orrery::cli
