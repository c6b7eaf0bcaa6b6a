#include "models/signal_cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace orrery {

namespace {

constexpr int kSlots = 64;
constexpr std::size_t kPathBytes = 4096;

// A slot is free, being filled, or armed; the handler reads only armed ones. Lock-free atomics are the only shared
// state a signal handler may touch (async-signal-safe), with unlink and raise.
enum : int { kFree = 0, kFilling = 1, kArmed = 2 };
struct Slot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
};
static_assert(std::atomic<int>::is_always_lock_free);

Slot slots[kSlots];  // the one process-wide registry (see the header)
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_registered_files(int sig) {
  for (Slot& slot : slots) {
    if (slot.state.load() == kArmed) ::unlink(slot.path);
  }
  // SA_RESETHAND restored the default action on entry: the signal, blocked while this runs, ends the process once
  // the handler returns, with the status it would have had.
  ::raise(sig);
}

void install_handler() {
  for (int sig : kSignals) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0 || (current.sa_flags & SA_SIGINFO) != 0 ||
        current.sa_handler != SIG_DFL) {
      continue;  // ignored (nohup) or the program's own: not ours to replace
    }
    struct sigaction action {};
    action.sa_handler = remove_registered_files;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &action, nullptr);
  }
}

}  // namespace

int remove_on_signal(const std::string& path) {
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  if (path.size() >= kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(kArmed);
    return i;
  }
  return -1;
}

void forget_on_signal(int registration) {
  if (registration >= 0 && registration < kSlots) slots[registration].state.store(kFree);
}

}  // namespace orrery
