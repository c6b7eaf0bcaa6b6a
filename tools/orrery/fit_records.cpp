#include "tools/orrery/fit_records.h"

#include "models/error.h"

namespace orrery::cli {

int fit_records(const std::vector<std::string>&, const std::vector<std::string>&, const std::string&) {
  throw Error::not_modelled("fit records", "", "is being built");
}

}  // namespace orrery::cli
