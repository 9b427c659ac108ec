// Interference on the sim device: a background reader that takes part of the SSD bandwidth
// for a window of time, so that the staging rate a policy sees changes during a run. During
// [start, end) the device's aggregate rate (staging and demand reads alike) is `rate_factor`
// times its configured rate; outside it, the configured rate.
#pragma once

#include <string>
#include <string_view>

#include "core/time.h"

namespace tempo {

struct Interference {
  TimeNs start = 0;
  TimeNs end = 0;  // start == end: none
  double rate_factor = 1.0;

  bool active() const { return end > start; }
  // The factor at `now`.
  double factor_at(TimeNs now) const {
    return active() && now >= start && now < end ? rate_factor : 1.0;
  }
};

// "START:END:FACTOR" with durations as tempo's settings take them ("5s:15s:0.5"). Returns 0,
// or -EINVAL with *error: a malformed field, start negative, end not after start, or a
// factor outside (0, 1].
int parse_interference(std::string_view text, Interference* out, std::string* error);

}  // namespace tempo
