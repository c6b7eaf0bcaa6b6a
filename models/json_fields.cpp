#include "models/json_fields.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "models/error.h"

namespace orrery {

using nlohmann::json;

std::string join_path(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return std::string(path) + "." + std::string(key);
}

std::string describe_json(const json& value) {
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

namespace {

// Unwraps {"value": X, "source": "..."} preset annotations.
const json& unwrap(const json& value) {
  if (value.is_object() && value.contains("value")) return value.at("value");
  return value;
}

}  // namespace

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

std::optional<std::int64_t> FieldReader::optional_int(std::string_view key, std::int64_t min_value) {
  const json* value = raw(key);
  if (!value) return std::nullopt;
  const json& v = unwrap(*value);
  std::int64_t result = 0;
  if (v.is_number_integer()) {
    result = v.get<std::int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
             std::fabs(v.get<double>()) < 9.0e15) {
    result = static_cast<std::int64_t>(v.get<double>());
  } else {
    throw Error::invalid(field(key), describe_json(v), "must be an integer");
  }
  if (result < min_value) {
    throw Error::invalid(field(key), std::to_string(result), "must be at least " + std::to_string(min_value));
  }
  return result;
}

std::int64_t FieldReader::require_int(std::string_view key, std::int64_t min_value) {
  auto value = optional_int(key, min_value);
  if (!value) throw Error::invalid(field(key), "missing", "is required");
  return *value;
}

std::int64_t FieldReader::int_or(std::string_view key, std::int64_t fallback, std::int64_t min_value) {
  return optional_int(key, min_value).value_or(fallback);
}

std::optional<double> FieldReader::optional_double(std::string_view key, bool positive) {
  const json* value = raw(key);
  if (!value) return std::nullopt;
  const json& v = unwrap(*value);
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    throw Error::invalid(field(key), describe_json(v), "must be a finite number");
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

std::optional<bool> FieldReader::optional_bool(std::string_view key) {
  const json* value = raw(key);
  if (!value) return std::nullopt;
  const json& v = unwrap(*value);
  if (!v.is_boolean()) throw Error::invalid(field(key), describe_json(v), "must be true or false");
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

void FieldReader::reject_unknown() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!read_.contains(it.key())) {
      throw Error::invalid(field(it.key()), describe_json(it.value()), "is not a known key here");
    }
  }
}

}  // namespace orrery
