#include "models/error.h"

#include "models/utf8.h"

namespace orrery {
namespace {

std::string compose(ErrorKind kind, const std::string& field, const std::string& value, const std::string& rule) {
  std::string head = field;
  if (!value.empty()) head += " (" + value + ")";
  switch (kind) {
    case ErrorKind::kNotModelled:
      return "not modelled yet: " + head + " " + rule;
    case ErrorKind::kIo:
      return head + ": " + rule;
    case ErrorKind::kInvalidInput:
      break;
  }
  return head + " " + rule;
}

}  // namespace

// The parts are made printable first: a value may quote bytes of a file name or a flag that are not UTF-8, a NUL
// that would cut what() short or an escape sequence a terminal would run, and messages go into JSON reports. What
// quotes the input is cut first (at a UTF-8 boundary, so the cut makes no invalid byte).
Error::Error(ErrorKind kind, std::string field, std::string value, std::string rule)
    : Error(kind, printable_utf8(clipped_utf8(field, kQuoteLimit), false),
            printable_utf8(clipped_utf8(value, kQuoteLimit), false), printable_utf8(clipped_utf8(rule, kRuleLimit)),
            Printable{}) {}

Error::Error(ErrorKind kind, std::string field, std::string value, std::string rule, Printable)
    : std::runtime_error(compose(kind, field, value, rule)),
      kind_(kind),
      field_(std::move(field)),
      value_(std::move(value)),
      rule_(std::move(rule)) {}

Error::Error(const Error& error, const std::string& where)
    : std::runtime_error(printable_utf8(clipped_utf8(where, kQuoteLimit), false) + ": " + error.what()),
      kind_(error.kind_),
      field_(error.field_),
      value_(error.value_),
      rule_(error.rule_) {}

}  // namespace orrery
