#include "tools/orrery/report_rows.h"

#include <algorithm>
#include <cmath>

namespace orrery::cli::report {

using nlohmann::json;

const json* find(const json& root, std::string_view path) {
  const json* at = &root;
  while (!path.empty()) {
    const std::size_t dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return at;
}

namespace {

std::optional<double> finite(const json& value) {
  if (!value.is_number()) return std::nullopt;
  const double x = value.get<double>();
  if (!std::isfinite(x)) return std::nullopt;
  return x;
}

// A JSON number keeps its integer form (num_gpus 4096, not 4096.0) so the CSV and the tooltips show it as given.
json copy_number(const json& value) {
  return value.is_number_float() ? json(value.get<double>()) : value;
}

}  // namespace

std::optional<double> number(const json& root, std::string_view path) {
  const json* at = find(root, path);
  return at ? finite(*at) : std::nullopt;
}

std::optional<std::string> text(const json& root, std::string_view path) {
  const json* at = find(root, path);
  if (!at || !at->is_string()) return std::nullopt;
  return at->get<std::string>();
}

Rows list_rows(const json& root, std::string_view path, const std::vector<Column>& columns,
               const std::string& default_label) {
  Rows out;
  const json* list = find(root, path);
  if (!list || !list->is_array()) return out;
  out.list_found = true;
  const bool needs_value = std::any_of(columns.begin(), columns.end(),
                                       [](const Column& c) { return c.need == Need::value; });
  for (const json& item : *list) {
    json row = json::object();
    bool keep = item.is_object();
    bool has_value = false;
    for (const Column& column : columns) {
      if (!keep) break;
      const auto it = item.find(column.key);
      const bool present = it != item.end();
      switch (column.need) {
        case Need::number:
          keep = present && finite(*it).has_value();
          if (keep) row[column.key] = copy_number(*it);
          break;
        case Need::label:
          row[column.key] = present && it->is_string() ? it->get<std::string>() : default_label;
          break;
        case Need::value:
        case Need::extra:
          if (present && finite(*it)) {
            row[column.key] = copy_number(*it);
            has_value = has_value || column.need == Need::value;
          }
          break;
      }
    }
    if (keep && (has_value || !needs_value)) {
      out.rows.push_back(std::move(row));
    } else {
      ++out.left_out;
    }
  }
  return out;
}

Rows object_rows(const json& root, std::string_view path, const std::vector<std::string>& order,
                 const std::string& key_column, const std::string& value_column) {
  Rows out;
  const json* object = find(root, path);
  if (!object || !object->is_object()) return out;
  out.list_found = true;
  std::vector<std::string> keys;
  for (const std::string& key : order) {
    if (object->contains(key)) keys.push_back(key);
  }
  for (const auto& [key, value] : object->items()) {
    if (std::find(order.begin(), order.end(), key) == order.end()) keys.push_back(key);
  }
  for (const std::string& key : keys) {
    const json& value = object->at(key);
    if (finite(value)) {
      out.rows.push_back({{key_column, key}, {value_column, copy_number(value)}});
    } else {
      ++out.left_out;
    }
  }
  return out;
}

}  // namespace orrery::cli::report
