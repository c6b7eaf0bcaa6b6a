#pragma once
// Units (ARCHITECTURE.md "Conventions"): inside the code every quantity is SI in a double (seconds, bytes, FLOPs,
// bytes/s, FLOP/s), except memory sizes, which are exact integer bytes, and the event clock, which counts integer
// nanoseconds so that event order and output are deterministic. Human units appear only in file keys and flags,
// with the unit in the name, and are converted here, once, when input is read.

#include <cmath>
#include <cstdint>

namespace orrery {

using Seconds = double;
using Flops = double;
using FlopsPerSecond = double;
using BytesPerSecond = double;
using Bytes = std::int64_t;       // memory sizes and message sizes, exact
using Nanoseconds = std::int64_t;  // the event clock

inline constexpr Bytes kKiB = 1024;
inline constexpr Bytes kMiB = 1024 * kKiB;
inline constexpr Bytes kGiB = 1024 * kMiB;

inline constexpr double kGiga = 1e9;
inline constexpr double kBillion = 1e9;  // parameter counts are quoted in billions
inline constexpr double kTera = 1e12;
inline constexpr double kMicro = 1e-6;
inline constexpr double kNanosPerSecond = 1e9;

// Conversions from the human units used in preset and scenario keys.
inline constexpr FlopsPerSecond from_tflops(double tflops) { return tflops * kTera; }
inline constexpr BytesPerSecond from_TB_s(double tb_s) { return tb_s * kTera; }
inline constexpr BytesPerSecond from_GB_s(double gb_s) { return gb_s * kGiga; }
inline constexpr BytesPerSecond from_Gbit_s(double gbit_s) { return gbit_s * kGiga / 8.0; }
inline constexpr Seconds from_us(double us) { return us * kMicro; }
inline Bytes from_GiB(double gib) { return static_cast<Bytes>(std::llround(gib * static_cast<double>(kGiB))); }
inline Bytes from_MiB(double mib) { return static_cast<Bytes>(std::llround(mib * static_cast<double>(kMiB))); }

inline constexpr double to_GiB(Bytes bytes) { return static_cast<double>(bytes) / static_cast<double>(kGiB); }
inline constexpr double to_tflops(FlopsPerSecond f) { return f / kTera; }
inline constexpr double to_GB_s(BytesPerSecond b) { return b / kGiga; }
inline constexpr double to_us(Seconds s) { return s / kMicro; }

/// Seconds to event-clock nanoseconds, rounded to nearest; the only place durations become integers.
inline Nanoseconds to_nanos(Seconds s) { return static_cast<Nanoseconds>(std::llround(s * kNanosPerSecond)); }
inline constexpr Seconds from_nanos(Nanoseconds ns) { return static_cast<double>(ns) / kNanosPerSecond; }

}  // namespace orrery
