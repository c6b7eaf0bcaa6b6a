#include "models/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "models/error.h"
#include "models/signal_cleanup.h"

namespace orrery {

namespace {

std::string reason(int error) { return std::error_code(error, std::generic_category()).message(); }

// The folder a path's file lives in ("." for a bare name).
std::filesystem::path folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

// The temporary name beside `path`: hidden, and unique per process (one writer per path at a time).
std::string temporary_name(const std::string& path) {
  const std::filesystem::path p(path);
  std::string name = ".";
  name.append(p.filename().string()).append(".").append(std::to_string(::getpid())).append(".tmp");
  return (folder_of(path) / name).string();
}

// Creates `name` exclusively (never through a link someone left there); a stale file of a killed process that had
// our process id is replaced. Returns the descriptor, or -1 with errno set.
int create_exclusive(const std::string& name) {
  int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EEXIST && ::unlink(name.c_str()) == 0) {
    fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  }
  return fd;
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  struct stat link {};
  const bool exists = ::lstat(path_.c_str(), &link) == 0;
  if (!exists && errno != ENOENT) fail("cannot be written", errno);
  if (exists && S_ISDIR(link.st_mode)) throw Error::io(path_, "is a folder, not a file");
  if (!exists || S_ISREG(link.st_mode)) {
    const std::string temporary = temporary_name(path_);
    fd_ = create_exclusive(temporary);
    if (fd_ >= 0) {
      writing_ = temporary;
      signal_registration_ = remove_on_signal(writing_);
      // The new file keeps the old one's permissions (a new one gets 0666 less the umask, as open gives it).
      if (exists) (void)::fchmod(fd_, link.st_mode & 07777);
      return;
    }
    const int error = errno;
    if (!exists) {
      if (error == ENOENT) throw Error::io(path_, "cannot be written: its folder " + folder_of(path_).string() + " does not exist");
      fail("cannot be written", error);
    }
    // An existing file in a folder we cannot create files in: written in place below.
  }
  in_place_ = true;
  writing_ = path_;
  struct stat target {};
  const bool regular = ::stat(path_.c_str(), &target) != 0 || S_ISREG(target.st_mode);
  // Devices and pipes are not truncated (/dev/stdout may be a terminal); a regular file behind a link is replaced.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | (regular ? O_CREAT | O_TRUNC : 0), 0666);
  if (fd_ < 0) fail("cannot be written", errno);
}

// Each path that removes the temporary file (or renames it away) ends its signal registration after the unlink:
// a signal in between only unlinks a name that is already gone.
OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !in_place_ && !writing_.empty()) ::unlink(writing_.c_str());
  forget_on_signal(signal_registration_);
}

void OutputFile::fail(const std::string& what, int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!in_place_ && !writing_.empty()) ::unlink(writing_.c_str());
  forget_on_signal(signal_registration_);
  signal_registration_ = -1;
  writing_.clear();
  throw Error::io(path_, what + ": " + reason(error));
}

void OutputFile::write(std::string_view bytes) {
  if (fd_ < 0) throw Error::io(path_, "cannot be written: the file is already closed");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot be written", n < 0 ? errno : EIO);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void OutputFile::commit() {
  if (fd_ < 0) throw Error::io(path_, "cannot be written: the file is already closed");
  struct stat st {};
  // fsync before the rename: otherwise a crash soon after could leave the new name on an empty file. Devices and
  // pipes have nothing to sync (EINVAL).
  if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd_) != 0) fail("cannot be written", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int error = errno;
    if (!in_place_) ::unlink(writing_.c_str());
    throw Error::io(path_, "cannot be written: " + reason(error));  // the destructor ends the registration
  }
  if (!in_place_ && ::rename(writing_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    ::unlink(writing_.c_str());
    throw Error::io(path_, "cannot be written: " + reason(error));
  }
  committed_ = true;
  forget_on_signal(signal_registration_);
  signal_registration_ = -1;
}

void write_file_whole(const std::string& path, std::string_view text) {
  OutputFile out(path);
  out.write(text);
  out.commit();
}

void check_output_path(const std::string& option, const std::string& path) {
  require(!path.empty(), option, "\"\"", "must name a file");
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) throw Error::invalid(option, path, "cannot be written: " + reason(errno));
  if (exists && S_ISDIR(st.st_mode)) throw Error::invalid(option, path, "is a folder; name a file to write");
  if (exists && !S_ISREG(st.st_mode)) {
    if (::access(path.c_str(), W_OK) != 0) throw Error::invalid(option, path, "cannot be written: " + reason(errno));
    return;
  }
  const std::filesystem::path folder = folder_of(path);
  struct stat dir {};
  if (::stat(folder.c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode)) {
    throw Error::invalid(option, path, "cannot be written: the folder " + folder.string() + " does not exist");
  }
  // The one sure test of a folder (read-only file systems, ACLs, root's rights): make the temporary file.
  const std::string probe = temporary_name(path);
  const int fd = create_exclusive(probe);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
    return;
  }
  const int error = errno;
  if (exists && ::access(path.c_str(), W_OK) == 0) return;  // written in place
  throw Error::invalid(option, path, "cannot be written in its folder " + folder.string() + ": " + reason(error));
}

namespace {

// What tells two paths apart as files (check_distinct_outputs).
struct FileIdentity {
  bool exists = false;
  bool special = false;  // a device or a pipe, which several outputs may share
  dev_t device = 0;
  ino_t inode = 0;
  std::string normal;  // where the path does not exist yet
};

FileIdentity identity_of(const std::string& path) {
  FileIdentity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.special = !S_ISREG(st.st_mode);
    id.device = st.st_dev;
    id.inode = st.st_ino;
    return id;
  }
  std::error_code ec;
  id.normal = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec).string();
  if (ec) id.normal = std::filesystem::absolute(path, ec).lexically_normal().string();
  return id;
}

bool same_file(const FileIdentity& a, const FileIdentity& b) {
  if (a.special || b.special || a.exists != b.exists) return false;
  return a.exists ? a.device == b.device && a.inode == b.inode : a.normal == b.normal;
}

}  // namespace

void check_distinct_outputs(const std::vector<PathOption>& outputs, const std::vector<PathOption>& inputs) {
  std::vector<FileIdentity> written;
  for (const PathOption& out : outputs) {
    FileIdentity none;
    none.special = true;  // an empty path: no output, like nothing
    written.push_back(out.path.empty() ? none : identity_of(out.path));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      require(!same_file(written[i], written[j]), outputs[i].option, outputs[i].path,
              "names the same file as " + outputs[j].option + " (" + outputs[j].path +
                  "): the second output would replace the first; give each its own file");
    }
    for (const PathOption& in : inputs) {
      // An input that does not exist cannot be replaced (and may be a preset's name, not a path).
      const FileIdentity read = in.path.empty() ? FileIdentity{} : identity_of(in.path);
      if (!read.exists) continue;
      require(!same_file(written[i], read), outputs[i].option, outputs[i].path,
              "names the same file as the input " + in.option + " (" + in.path +
                  "): the output would replace what it is made from");
    }
  }
}

}  // namespace orrery
