// Time in TempoKV: signed 64-bit nanoseconds on one clock interface.
#pragma once

#include <cstdint>
#include <limits>

namespace tempo {

// Nanoseconds, either a point on a Clock or a duration.
using TimeNs = int64_t;

inline constexpr TimeNs kNsPerUs = 1'000;
inline constexpr TimeNs kNsPerMs = 1'000'000;
inline constexpr TimeNs kNsPerSec = 1'000'000'000;
inline constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

inline constexpr double ns_to_sec(TimeNs ns) { return static_cast<double>(ns) / 1e9; }
inline constexpr TimeNs sec_to_ns(double s) { return static_cast<TimeNs>(s * 1e9); }
// std::llround of a finite |ns| < 2^63, without its libm call (the TTU projections' hottest
// line): exact, since ns minus its truncation is exact.
inline constexpr TimeNs round_ns(double ns) {
  const auto whole = static_cast<TimeNs>(ns);
  const double fraction = ns - static_cast<double>(whole);
  return whole + (fraction >= 0.5 ? 1 : 0) - (fraction <= -0.5 ? 1 : 0);
}

}  // namespace tempo
