#include "models/json_fields.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

#include "models/error.h"
#include "models/text_file.h"

namespace orrery {

using nlohmann::json;

std::string join_path(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return std::string(path) + "." + std::string(key);
}

namespace {

// Writes at most `budget` characters of `value`, three levels deep: deeply nested input must not recurse far.
void describe(const json& value, int depth, std::string& out, std::size_t budget) {
  if (out.size() > budget) return;
  if (value.is_array() || value.is_object()) {
    const bool array = value.is_array();
    if (depth >= 3) {
      out += array ? "[...]" : "{...}";
      return;
    }
    out += array ? '[' : '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() <= budget; ++it) {
      if (!first) out += ", ";
      first = false;
      if (!array) out += json(it.key()).dump() + ": ";
      describe(*it, depth + 1, out, budget);
    }
    out += array ? ']' : '}';
    return;
  }
  out += value.is_string() && depth == 0 ? value.get<std::string>() : value.dump();
}

}  // namespace

std::string describe_json(const json& value) {
  std::string text;
  describe(value, 0, text, 60);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

namespace {

// A value of the wrong type, strings in quotes: `(7.0) must be a finite number` would read as a contradiction.
std::string describe_mistyped(const json& value) {
  return describe_json(value.is_string() ? json(value.dump()) : value);
}

// Unwraps {"value": X, "source": "..."} preset annotations; any other key beside them is an error.
const json& unwrap(const json& value, const std::string& field) {
  if (!value.is_object() || !value.contains("value")) return value;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it.key() != "value" && it.key() != "source") {
      throw Error::invalid(field + "." + it.key(), describe_json(it.value()), "is not a known key here (value, source)");
    }
  }
  return value.at("value");
}

}  // namespace

json read_json_file(const std::filesystem::path& path, const std::string& field) {
  return parse_json_text(read_text_file(path, field), field + " " + path.string());
}

FieldReader::FieldReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) {
    throw Error::invalid(path_.empty() ? "scenario" : path_, describe_json(object_), "must be a JSON object");
  }
}

std::string FieldReader::field(std::string_view key) const { return join_path(path_, key); }

bool FieldReader::has(std::string_view key) const {
  auto it = object_.find(std::string(key));
  return it != object_.end() && !it->is_null();
}

void FieldReader::allow(std::string_view key) { read_.emplace(key); }

const json* FieldReader::raw(std::string_view key) {
  read_.emplace(key);
  auto it = object_.find(std::string(key));
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::int64_t> FieldReader::optional_int(std::string_view key, std::int64_t min_value,
                                                      std::int64_t max_value) {
  const json* value = raw(key);
  if (!value) return std::nullopt;
  const json& v = unwrap(*value, field(key));
  std::int64_t result = 0;
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    throw Error::invalid(field(key), describe_json(v), "must be at most " + std::to_string(max_value));
  } else if (v.is_number_integer()) {
    result = v.get<std::int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
             std::fabs(v.get<double>()) < 9.0e15) {
    result = static_cast<std::int64_t>(v.get<double>());
  } else {
    throw Error::invalid(field(key), describe_mistyped(v), "must be an integer");
  }
  if (result < min_value) {
    throw Error::invalid(field(key), std::to_string(result), "must be at least " + std::to_string(min_value));
  }
  if (result > max_value) {
    throw Error::invalid(field(key), std::to_string(result), "must be at most " + std::to_string(max_value));
  }
  return result;
}

std::int64_t FieldReader::require_int(std::string_view key, std::int64_t min_value, std::int64_t max_value) {
  auto value = optional_int(key, min_value, max_value);
  if (!value) throw Error::invalid(field(key), "missing", "is required");
  return *value;
}

std::int64_t FieldReader::int_or(std::string_view key, std::int64_t fallback, std::int64_t min_value,
                                 std::int64_t max_value) {
  return optional_int(key, min_value, max_value).value_or(fallback);
}

std::optional<double> FieldReader::optional_double(std::string_view key, bool positive) {
  const json* value = raw(key);
  if (!value) return std::nullopt;
  const json& v = unwrap(*value, field(key));
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    throw Error::invalid(field(key), describe_mistyped(v), "must be a finite number");
  }
  double result = v.get<double>();
  if (positive && !(result > 0.0)) throw Error::invalid(field(key), describe_json(v), "must be greater than 0");
  return result;
}

double FieldReader::require_double(std::string_view key, bool positive) {
  auto value = optional_double(key, positive);
  if (!value) throw Error::invalid(field(key), "missing", "is required");
  return *value;
}

double FieldReader::double_or(std::string_view key, double fallback, bool positive) {
  return optional_double(key, positive).value_or(fallback);
}

std::optional<double> FieldReader::optional_double(std::string_view key, const bounds::Range& range) {
  const std::optional<double> value = optional_double(key, false);
  if (value && !(*value >= range.min && *value <= range.max)) {
    throw Error::invalid(field(key), fmt::format("{}", *value),
                         fmt::format("must lie in [{}, {}]{}{} ({})", range.min, range.max, *range.unit ? " " : "",
                                     range.unit, range.why));
  }
  return value;
}

double FieldReader::require_double(std::string_view key, const bounds::Range& range) {
  auto value = optional_double(key, range);
  if (!value) throw Error::invalid(field(key), "missing", "is required");
  return *value;
}

double FieldReader::double_or(std::string_view key, double fallback, const bounds::Range& range) {
  return optional_double(key, range).value_or(fallback);
}

std::optional<bool> FieldReader::optional_bool(std::string_view key) {
  const json* value = raw(key);
  if (!value) return std::nullopt;
  const json& v = unwrap(*value, field(key));
  if (!v.is_boolean()) throw Error::invalid(field(key), describe_mistyped(v), "must be true or false");
  return v.get<bool>();
}

bool FieldReader::bool_or(std::string_view key, bool fallback) { return optional_bool(key).value_or(fallback); }

std::optional<std::string> FieldReader::optional_string(std::string_view key) {
  const json* value = raw(key);
  if (!value) return std::nullopt;
  if (!value->is_string()) throw Error::invalid(field(key), describe_json(*value), "must be a string");
  return value->get<std::string>();
}

std::string FieldReader::require_string(std::string_view key) {
  auto value = optional_string(key);
  if (!value) throw Error::invalid(field(key), "missing", "is required");
  return *value;
}

std::vector<std::string> FieldReader::unread_keys() const {
  std::vector<std::string> out;
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!read_.contains(it.key())) out.push_back(it.key());
  }
  return out;
}

void FieldReader::reject_unknown() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!read_.contains(it.key())) {
      throw Error::invalid(field(it.key()), describe_json(it.value()), "is not a known key here");
    }
  }
}

}  // namespace orrery
