// One clock interface: virtual time for the sim device (deterministic runs), monotonic
// wall time for real devices.
#pragma once

#include "core/time.h"

namespace tempo {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeNs now() const = 0;
};

// Time that moves only when told to; a simulated run is repeatable bit for bit.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(TimeNs start = 0) : now_(start) {}
  TimeNs now() const override { return now_; }
  // Moves time forward; never backwards (returns false and leaves time as it is).
  bool advance_to(TimeNs t);

 private:
  TimeNs now_;
};

// CLOCK_MONOTONIC, in nanoseconds.
class MonotonicClock final : public Clock {
 public:
  TimeNs now() const override;
};

}  // namespace tempo
