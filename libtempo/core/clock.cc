#include "core/clock.h"

#include <ctime>

namespace tempo {

bool VirtualClock::advance_to(TimeNs t) {
  if (t < now_) return false;
  now_ = t;
  return true;
}

TimeNs MonotonicClock::now() const {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<TimeNs>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

}  // namespace tempo
