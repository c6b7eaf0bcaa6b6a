#pragma once
// Strict reading of one JSON object (ARCHITECTURE.md rule 7): every parse_* function reads its object through a
// FieldReader, which converts values with errors that name the full field path, and rejects keys nobody read
// (typos must not pass silently, ARCHITECTURE.md "Scenario file").

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <climits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "models/physical_bounds.h"

namespace orrery {

/// Reads fields of one JSON object. `path` is the object's dotted path used in errors ("parallel", "cluster.gpu").
/// Numbers may be written plainly or, in preset files, as {"value": X, "source": "..."}; both read the same.
/// Errors: Error::invalid naming "path.key" when the value has the wrong type or breaks the stated range.
class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string path);

  bool has(std::string_view key) const;
  /// Marks a key as known without reading it (documentation-only keys such as "source").
  void allow(std::string_view key);
  /// The raw value, or nullptr when absent (marks the key as known).
  const nlohmann::json* raw(std::string_view key);

  /// Integers must lie in [min_value, max_value]; the default maximum keeps them inside a 32-bit int.
  std::optional<std::int64_t> optional_int(std::string_view key, std::int64_t min_value = INT32_MIN,
                                           std::int64_t max_value = INT32_MAX);
  std::int64_t require_int(std::string_view key, std::int64_t min_value = INT32_MIN, std::int64_t max_value = INT32_MAX);
  std::int64_t int_or(std::string_view key, std::int64_t fallback, std::int64_t min_value = INT32_MIN,
                      std::int64_t max_value = INT32_MAX);

  /// Doubles must be finite; `positive` additionally requires > 0.
  std::optional<double> optional_double(std::string_view key, bool positive = false);
  double require_double(std::string_view key, bool positive = false);
  double double_or(std::string_view key, double fallback, bool positive = false);
  /// Doubles that must be finite and lie in a physical range (models/physical_bounds.h); the error quotes the
  /// range, its unit and its reason.
  std::optional<double> optional_double(std::string_view key, const bounds::Range& range);
  double require_double(std::string_view key, const bounds::Range& range);
  double double_or(std::string_view key, double fallback, const bounds::Range& range);

  std::optional<bool> optional_bool(std::string_view key);
  bool bool_or(std::string_view key, bool fallback);

  std::optional<std::string> optional_string(std::string_view key);
  std::string require_string(std::string_view key);

  /// Throws Error::invalid for the first key (in sorted order) that no getter read or allowed.
  void reject_unknown() const;
  /// Keys of the object that no getter read or allowed, sorted.
  std::vector<std::string> unread_keys() const;

  /// Every key a getter read or allowed so far, given or not (the keys this reader's parser knows).
  const std::set<std::string, std::less<>>& read_keys() const { return read_; }

  std::string field(std::string_view key) const;
  const std::string& path() const { return path_; }

 private:
  const nlohmann::json& object_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

/// "tp" at path "parallel" is "parallel.tp"; at the empty path it is "tp".
std::string join_path(std::string_view path, std::string_view key);

/// Short text of a JSON value for error messages (strings unquoted, long or deep values cut).
std::string describe_json(const nlohmann::json& value);

/// Parses JSON text strictly, in time linear in its length (models/json_text.cpp). Errors: Error::invalid naming
/// `what` (a file or field) and, where known, the byte offset and the field, for malformed JSON, text that is not
/// UTF-8, numbers out of range, a key repeated in one object (the last would silently win), a NUL character in a
/// key or string, and nesting deeper than limits::kJsonDepth.
nlohmann::json parse_json_text(const std::string& text, const std::string& what);

/// Reads (read_text_file, models/text_file.h) and parses a JSON file with parse_json_text. Errors: Error::invalid
/// naming `field` and the path when the path is missing, not a regular file or unreadable, and the errors of
/// parse_json_text.
nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& field);

}  // namespace orrery
