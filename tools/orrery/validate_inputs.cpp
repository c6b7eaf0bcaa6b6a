#include "tools/orrery/validate_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "models/error.h"
#include "models/utf8.h"

namespace orrery::cli {

namespace fs = std::filesystem;

namespace {

// The .json files of a folder and its subfolders. One whose kind cannot be told (a loop of symbolic links) is kept,
// so that its record fails naming the reason; a subfolder that cannot be listed fails the command.
void add_folder(const std::string& folder, std::vector<ValidateInput>& inputs) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code kind;
    const bool regular = it->is_regular_file(kind);
    if ((regular || kind) && it->path().extension() == ".json") inputs.push_back({it->path(), false});
  }
  if (ec) throw Error::invalid("validate", folder, "cannot be read: " + ec.message());
}

// One file's identity: its canonical path, or, where there is none (a loop of links), its absolute path.
fs::path identity(const fs::path& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  return ec ? fs::absolute(path, ec).lexically_normal() : canonical;
}

}  // namespace

std::vector<ValidateInput> validate_inputs(const std::vector<std::string>& paths, std::ostream& notes) {
  std::vector<ValidateInput> found;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(fs::status(p, ec))) {
      add_folder(p, found);
    } else if (fs::exists(fs::symlink_status(p, ec))) {
      found.push_back({p, true});  // read as a record, whose error says what is wrong with it
    } else {
      throw Error::invalid("validate", p, "is neither a scenario file nor a folder");
    }
  }
  // Counted twice, a record would weigh twice in the MAPE and the per-source figures.
  std::vector<ValidateInput> inputs;
  std::map<fs::path, std::size_t> seen;  // identity -> index in inputs
  for (ValidateInput& in : found) {
    const auto [it, fresh] = seen.emplace(identity(in.path), inputs.size());
    if (fresh) {
      inputs.push_back(std::move(in));
      continue;
    }
    ValidateInput& first = inputs[it->second];
    const std::string again = printable_utf8(in.path.string(), false);
    std::string how = "is the same file as " + printable_utf8(first.path.string(), false);
    if (in.path == first.path) how = in.named && first.named ? "is given twice" : "is given and lies in a given folder";
    notes << fmt::format("note: validate: {} {}; it is validated once\n", again, how);
    first.named = first.named || in.named;
  }
  std::sort(inputs.begin(), inputs.end(), [](const ValidateInput& x, const ValidateInput& y) { return x.path < y.path; });
  return inputs;
}

}  // namespace orrery::cli
