#pragma once
// How much memory this process holds and the machine has, for the memory budget of a run (sim/memory_budget.h).
// Linux only (/proc and sysconf); elsewhere both read as unknown (0) and the budget falls back to its stated
// default and the run to its up-front estimate.

#include <cstdint>

namespace orrery {

/// Resident set size of this process now, in bytes (/proc/self/statm, field 2, times the page size); 0 when it
/// cannot be read. About 5 us: the engine calls it once per 65,536 events.
std::int64_t resident_bytes();

/// Physical memory of the machine, in bytes (sysconf _SC_PHYS_PAGES x _SC_PAGESIZE); 0 when unknown.
std::int64_t physical_memory_bytes();

}  // namespace orrery
