#pragma once
// Files written whole or not at all. Every file orrery writes goes through OutputFile, so that a full disk, an I/O
// error or a killed process never leaves a truncated file that reads as complete, and an interrupted write keeps
// the old file at that path intact. It lives here, at the bottom of the dependency order, because calibrate/ writes
// files as well as tools/.

#include <string>
#include <string_view>
#include <vector>

namespace orrery {

/// A file being written. For a path that is a regular file or does not exist yet, the bytes go to a temporary file
/// in the same folder, named ".NAME.PID.tmp", which commit() flushes to disk, closes and renames over NAME: the
/// path then holds either its old contents or the whole new file. A path that is not a regular file (/dev/full,
/// /dev/stdout, a pipe), a symbolic link (written through, so it keeps pointing where it does) or a file in a folder
/// where no temporary file can be made is written in place, with every write and the close still checked.
/// Errors (constructor, write, commit): Error::io naming the path and the operating system's reason; after one, the
/// temporary file is gone and the target untouched (in place: as far as the writes got). SIGINT, SIGTERM or SIGHUP
/// mid-write remove the temporary file too (models/signal_cleanup.h); SIGKILL cannot, and the next writer of that
/// process id replaces it.
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~OutputFile();

  /// Writes all of `bytes` (unbuffered: callers pass large chunks).
  void write(std::string_view bytes);
  /// Completes the file: flush to disk, close, rename over the target.
  void commit();

  const std::string& path() const { return path_; }
  /// The file the bytes go to: the temporary file, or the path itself when written in place.
  const std::string& writing_to() const { return writing_; }

 private:
  std::string path_;
  std::string writing_;  // temporary file, or path_ when in place
  int fd_ = -1;
  bool in_place_ = false;
  bool committed_ = false;
  int signal_registration_ = -1;  // remove_on_signal's, while the temporary file exists

  [[noreturn]] void fail(const std::string& what, int error);
};

/// Writes `text` to `path` whole (OutputFile). Errors: Error::io naming the path and the reason.
void write_file_whole(const std::string& path, std::string_view text);

/// A path given to a command and the option that names it ("--trace"; "scenario" for a positional input).
struct PathOption {
  std::string option;
  std::string path;
};

/// Refuses, before the work, two outputs that name one file (the second would replace the first) and an output that
/// names one of the command's inputs (it would replace what it is made from). One file is one device and inode where
/// the paths exist (links and "a/../b" included) and one normalised absolute path where they do not; special files
/// (/dev/null, /dev/stdout) may be named twice; empty paths and inputs that do not exist are skipped. Errors:
/// Error::invalid naming both options.
void check_distinct_outputs(const std::vector<PathOption>& outputs, const std::vector<PathOption>& inputs = {});

/// Checks, before long work starts, that `path` can be written as OutputFile writes it: it is not a folder, its
/// folder exists, and a file can be made there (or the path itself is writable). Creates and removes a probe file.
/// Errors: Error::invalid naming `option` and the path (bad input: exit 2).
void check_output_path(const std::string& option, const std::string& path);

}  // namespace orrery
