#include "models/error.h"

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

Error::Error(ErrorKind kind, std::string field, std::string value, std::string rule)
    : std::runtime_error(compose(kind, field, value, rule)),
      kind_(kind),
      field_(std::move(field)),
      value_(std::move(value)),
      rule_(std::move(rule)) {}

}  // namespace orrery
