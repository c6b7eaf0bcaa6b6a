#include "models/process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace orrery {

std::int64_t resident_bytes() {
  // A raw read instead of an ifstream: no allocation, so it is safe to call while memory runs short.
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  char* end = nullptr;
  std::strtoll(text, &end, 10);                         // total program size: skipped
  const long long pages = std::strtoll(end, nullptr, 10);  // resident
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

std::int64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

}  // namespace orrery
