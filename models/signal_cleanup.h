#pragma once
// Temporary files removed when a signal ends the process. OutputFile writes beside its target under a hidden name
// and renames when done; SIGINT (Ctrl-C), SIGTERM (kill, a job scheduler) or SIGHUP (a closed terminal) would leave
// that file behind. A handler unlinks the files registered here, then lets the signal end the process as it would
// have (same exit status). The registry is process-wide by necessity: a signal handler can reach nothing else
// (the house rule against mutable process-wide state has this one exception). Signals the program ignores (nohup)
// or handles itself are left alone.

#include <string>

namespace orrery {

/// Registers `path` to be unlinked should one of those signals end the process; the first call installs the
/// handler. Returns the registration, or -1 when none could be made (64 files open at once, or a path of 4 KiB or
/// more): the file is then left behind by a signal, as before. Thread-safe.
int remove_on_signal(const std::string& path);

/// Ends a registration (the file was renamed or removed); -1 is ignored. Thread-safe.
void forget_on_signal(int registration);

}  // namespace orrery
