#include "calibrate/fit_record.h"

#include <fmt/format.h>

#include <cmath>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/text_file.h"
#include "models/output_file.h"

namespace orrery {

namespace {

double rounded(double v) { return std::round(v * 1e4) / 1e4; }

}  // namespace

std::string fitted_digest(const std::vector<std::pair<std::string, double>>& values) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& [name, value] : values) {
    for (char c : fmt::format("{}={:.4f};", name, rounded(value))) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
  }
  return fmt::format("{:016x}", h);
}

std::string section_digest(const nlohmann::ordered_json& section) {
  std::vector<std::pair<std::string, double>> values;
  for (const auto& name : section.at("fit").at("parameters")) {
    const auto& entry = section.at(name.get<std::string>());
    values.emplace_back(name.get<std::string>(), (entry.is_object() ? entry.at("value") : entry).get<double>());
  }
  return fitted_digest(values);
}

void write_fitted_values(const std::string& file, const std::string& section,
                         const std::vector<std::pair<std::string, double>>& values, const std::string& note,
                         const std::string& command) {
  // Checked by the strict parser (every JSON input's one door), then read again keeping the key order to rewrite.
  const std::string text = read_text_file(file, "--write");
  parse_json_text(text, "--write " + file);
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text);
  auto& target = doc.at("cost_model").at(0).at(section);
  std::vector<std::string> names;
  for (const auto& [key, value] : values) {
    target[key] = {{"value", rounded(value)}, {"source", note}};
    names.push_back(key);
  }
  target["fit"] = {{"command", command}, {"parameters", names}, {"digest", fitted_digest(values)}};
  write_file_whole(file, doc.dump(2) + "\n");
}

}  // namespace orrery
