// Where timed work is scheduled: a stack's driver (stack/driver.h), virtual-time (an
// EventQueue) or the threaded driver's wall-clock loop. Components that only schedule (the
// controller's periodic tick, the sim device, tempo-replay's engine) take this interface and
// run on either.
#pragma once

#include <cstdint>
#include <functional>

#include "core/time.h"

namespace tempo {

class Scheduler {
 public:
  using Callback = std::function<void()>;
  virtual ~Scheduler() = default;
  virtual TimeNs now() const = 0;
  // Runs `cb` at time `at` (at least now); returns an id for cancel().
  virtual uint64_t schedule_at(TimeNs at, Callback cb) = 0;
  uint64_t schedule_after(TimeNs delay, Callback cb) {
    return schedule_at(now() + delay, std::move(cb));
  }
  // A cancelled callback never runs; unknown or finished ids are ignored.
  virtual void cancel(uint64_t id) = 0;
};

}  // namespace tempo
