#pragma once
// A data file compiled into the binary by cmake/EmbedJson.cmake (presets), so `orrery` needs no data folder.

#include <span>
#include <string_view>

namespace orrery {

struct EmbeddedFile {
  std::string_view name;  // file name without folder and extension, e.g. "llama3-70b"
  std::string_view text;  // the file's text
};

}  // namespace orrery
