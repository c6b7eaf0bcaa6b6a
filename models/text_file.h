#pragma once
// Reading an input file whole, with errors that say what went wrong: a path that does not exist, one that cannot
// be looked at (a loop of symbolic links, no permission), one that is not a regular file (a device or a FIFO would
// be read forever or block), and an error while reading (EIO), which must not pass as a short file.

#include <filesystem>
#include <string>

namespace orrery {

/// Checks that `path` names a regular file. Errors: Error::invalid(field, path, rule), the rule "does not exist",
/// "cannot be read: REASON" (the operating system's reason, e.g. "Too many levels of symbolic links") or "is not a
/// regular file".
void require_regular_file(const std::filesystem::path& path, const std::string& field);

/// The file's bytes. Errors: those of require_regular_file, and Error::invalid(field, path, "cannot be opened:
/// REASON" or "cannot be read: REASON") when opening or reading fails part-way.
std::string read_text_file(const std::filesystem::path& path, const std::string& field);

}  // namespace orrery
