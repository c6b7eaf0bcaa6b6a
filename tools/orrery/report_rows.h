#pragma once
// Reading a report figure's rows out of a finished plan's or prediction's JSON without trusting its shape
// (tools/orrery/report_figures.cpp): absent keys, wrong types, NaN and infinities leave a row or a figure out,
// never throw.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::cli::report {

/// The value at a '.'-separated path of object keys ("goodput.checkpoint.interval_s"), or nullptr when a step is
/// absent or not an object.
const nlohmann::json* find(const nlohmann::json& root, std::string_view path);

/// The finite number at `path`, or nothing.
std::optional<double> number(const nlohmann::json& root, std::string_view path);

/// The string at `path`, or nothing.
std::optional<std::string> text(const nlohmann::json& root, std::string_view path);

/// How a column of a list's rows is read.
enum class Need {
  number,  // a finite number the row cannot do without
  label,   // a string; absent or not a string: the table's default label
  value,   // a finite number that may be absent, but a row needs at least one of its `value` columns
  extra,   // a finite number that may be absent (shown when present)
};

struct Column {
  std::string key;
  Need need;
};

/// Rows read from a JSON list, and how many of its items were left out.
struct Rows {
  nlohmann::json rows = nlohmann::json::array();
  int left_out = 0;
  bool list_found = false;  // `path` named an array
};

/// The items of the array at `path`, each reduced to `columns` (Need says which a row must have); an item that is
/// not an object, or lacks what it needs, is left out and counted.
Rows list_rows(const nlohmann::json& root, std::string_view path, const std::vector<Column>& columns,
               const std::string& default_label);

/// The object at `path` as rows {key_column: name, value_column: number}, the names in `order` first (those
/// present), then any other finite-numbered keys in the object's (sorted) order; keys whose value is not a finite
/// number are counted as left out.
Rows object_rows(const nlohmann::json& root, std::string_view path, const std::vector<std::string>& order,
                 const std::string& key_column, const std::string& value_column);

}  // namespace orrery::cli::report
