#pragma once
// The one error type of the library (ARCHITECTURE.md rule 8). The library throws it; `tools/` catches it once, prints
// what() and exits with status 2. `assert` is for our own bugs only.

#include <cstddef>
#include <stdexcept>
#include <string>

namespace orrery {

enum class ErrorKind {
  kInvalidInput,  // a field breaks a rule: message "FIELD (VALUE) RULE"
  kNotModelled,   // a valid request we do not simulate yet: message starts "not modelled yet:"
  kIo,            // a file could not be read or written
};

/// An input error that names the field, its value and the rule it breaks, e.g.
/// `Error::invalid("parallel.tp", "6", "must divide num_attention_heads (64)")` has what()
/// "parallel.tp (6) must divide num_attention_heads (64)". The parts are kept printable (printable_utf8 in
/// models/utf8.h): bytes that are not UTF-8 and control characters are written as escapes. The field and the
/// value, which quote the input, are cut to kQuoteLimit bytes (the rule to kRuleLimit) with a note of their length.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string field, std::string value, std::string rule);

  static Error invalid(std::string field, std::string value, std::string rule) {
    return {ErrorKind::kInvalidInput, std::move(field), std::move(value), std::move(rule)};
  }
  /// A feature outside what the simulator models today; what() starts with "not modelled yet:".
  static Error not_modelled(std::string field, std::string value, std::string what_is_missing) {
    return {ErrorKind::kNotModelled, std::move(field), std::move(value), std::move(what_is_missing)};
  }
  static Error io(std::string path, std::string rule) { return {ErrorKind::kIo, std::move(path), "", std::move(rule)}; }

  /// The same error found in `where` (a file: "scenario runs/a.json"): what() is "WHERE: " and the message.
  Error in(const std::string& where) const { return Error(*this, where); }

  static constexpr std::size_t kQuoteLimit = 200;
  static constexpr std::size_t kRuleLimit = 2000;

  ErrorKind kind() const { return kind_; }
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }
  const std::string& rule() const { return rule_; }

 private:
  struct Printable {};  // the parts are printable and clipped already
  Error(ErrorKind kind, std::string field, std::string value, std::string rule, Printable);
  Error(const Error& error, const std::string& where);

  ErrorKind kind_;
  std::string field_;
  std::string value_;
  std::string rule_;
};

/// Throws Error::invalid(field, value, rule) when `ok` is false.
inline void require(bool ok, const std::string& field, const std::string& value, const std::string& rule) {
  if (!ok) throw Error::invalid(field, value, rule);
}

}  // namespace orrery
