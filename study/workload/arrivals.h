// Request arrival processes: fixed interval, Poisson, or given timestamps (a trace's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/time.h"

namespace tempo {

enum class ArrivalKind : uint8_t {
  kFixedInterval,  // i x interval
  kPoisson,        // exponential gaps at `rate_per_s`, first arrival at 0
  kTimestamps,     // timestamps[i], as given (a trace)
};

struct ArrivalSpec {
  ArrivalKind kind = ArrivalKind::kFixedInterval;
  TimeNs interval = 500 * kNsPerMs;  // kFixedInterval
  double rate_per_s = 2.0;           // kPoisson
  uint64_t seed = 1;                 // kPoisson
  std::vector<TimeNs> timestamps;    // kTimestamps
};

// The latest arrival a run may have (about 146 years): a replay adds its durations to
// arrival times, and later ones would overflow them.
inline constexpr TimeNs kMaxArrivalNs = TimeNs{1} << 62;

// Arrival times of `n` requests. Returns 0, -EINVAL for a negative interval, a rate that is
// not finite and positive, or timestamps that are fewer than n, negative or decreasing, or
// -ERANGE for an arrival after kMaxArrivalNs.
int arrival_times(const ArrivalSpec& spec, size_t n, std::vector<TimeNs>* out);

// Parses "fixed", "poisson" or "trace" (for command lines); -EINVAL for anything else.
int parse_arrival_kind(std::string_view name, ArrivalKind* out);

}  // namespace tempo
