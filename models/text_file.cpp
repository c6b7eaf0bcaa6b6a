#include "models/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "models/error.h"

namespace orrery {

namespace {

std::string reason(int error) { return std::error_code(error, std::generic_category()).message(); }

// Closes the descriptor on every path out of read_text_file.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void require_regular_file(const std::filesystem::path& path, const std::string& field) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    // ENOTDIR: a component of the path is a file ("a.json/b.json"), which does not exist either.
    if (error == ENOENT || error == ENOTDIR) throw Error::invalid(field, path.string(), "does not exist");
    throw Error::invalid(field, path.string(), "cannot be read: " + reason(error));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error::invalid(field, path.string(), S_ISDIR(st.st_mode) ? "is not a regular file (it is a folder)"
                                                                   : "is not a regular file");
  }
}

std::string read_text_file(const std::filesystem::path& path, const std::string& field) {
  require_regular_file(path, field);
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) throw Error::invalid(field, path.string(), "cannot be opened: " + reason(errno));
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    // A stream reader would stop here as at the end of the file, and the parser would call the text malformed.
    if (n < 0) throw Error::invalid(field, path.string(), "cannot be read: " + reason(errno));
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace orrery
