#pragma once
// The files `orrery validate` reads: the .json files under the folders given and the files given themselves, each
// once however many ways it is named.

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace orrery::cli {

struct ValidateInput {
  std::filesystem::path path;
  bool named = false;  // given on the command line itself (not found in a folder): meant as a record
};

/// The inputs of `paths` (files or folders, searched recursively for .json files), sorted by path. A file reached
/// twice (given twice, as a link, or also inside a given folder) is kept once, by its canonical path, with a note on
/// `notes`. Errors: Error::invalid naming a path that is neither a file nor a folder, or a folder that cannot be
/// listed.
std::vector<ValidateInput> validate_inputs(const std::vector<std::string>& paths, std::ostream& notes);

}  // namespace orrery::cli
