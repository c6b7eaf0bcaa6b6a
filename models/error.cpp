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

// The parts are made printable first: a value may quote bytes of a file name or a flag that are not UTF-8, or a NUL
// that would cut what() short, and messages go into JSON reports.
Error::Error(ErrorKind kind, std::string field, std::string value, std::string rule)
    : std::runtime_error(compose(kind, printable_utf8(field), printable_utf8(value), printable_utf8(rule))),
      kind_(kind),
      field_(printable_utf8(field)),
      value_(printable_utf8(value)),
      rule_(printable_utf8(rule)) {}

}  // namespace orrery
