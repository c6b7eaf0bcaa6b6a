#pragma once
// A benchmark case in a forked child of its own, so that its peak resident memory (getrusage ru_maxrss) is its own
// and a failure ends only the case (tools/bench/*_bench.cpp).

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>

namespace orrery::bench {

/// Runs `measure` in a forked child and returns the line it returns (at most 511 bytes), or "" when the child
/// failed: an exception is printed to stderr after `name` and the child exits 2.
template <class Measure>
std::string in_child(const std::string& name, Measure&& measure) {
  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0) return "";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fd[0]);
    try {
      const std::string line = measure();
      if (::write(pipe_fd[1], line.data(), line.size()) < 0) std::_Exit(3);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
      std::_Exit(2);
    }
    std::_Exit(0);
  }
  ::close(pipe_fd[1]);
  char text[512] = {};
  const ssize_t n = ::read(pipe_fd[0], text, sizeof text - 1);
  ::close(pipe_fd[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace orrery::bench
