// What runs a Stack: the Scheduler its timed work (controller tick, sim device, an engine's
// own timers) goes to, plus the two things a caller outside the stack needs: run code with
// the stack to itself, and wait until something about it holds. Two drivers:
//   VirtualDriver  (virtual_driver.h): an EventQueue on a VirtualClock; waiting runs
//                  virtual time forward. Tests, replay, studies; bit-for-bit repeatable.
//   ThreadedDriver (threaded_driver.h): one event-loop thread on the monotonic clock;
//                  every call is posted to it, so one thread changes the stack's state.
#pragma once

#include <functional>

#include "core/clock.h"
#include "core/scheduler.h"

namespace tempo {

// a + b for a point in time and a non-negative duration, kNever instead of overflowing.
inline TimeNs saturating_deadline(TimeNs now, TimeNs timeout) {
  return timeout >= kNever - now ? kNever : now + timeout;
}

class Driver : public Scheduler {
 public:
  virtual const Clock& clock() const = 0;
  TimeNs now() const override { return clock().now(); }
  // Runs `fn` where the stack's state may change (the loop thread, or under the virtual
  // driver's lock) and returns when it ran. From inside the driver (a callback) it runs at
  // once.
  virtual void call(const std::function<void()>& fn) = 0;
  // Waits until `done()` holds, evaluated like call(), for at most `timeout` of the
  // driver's time (virtual time runs forward meanwhile). True when it held. From inside
  // the driver nothing can change while waiting: it answers done() at once.
  virtual bool wait_until(const std::function<bool()>& done, TimeNs timeout) = 0;
  // Stops running anything (the threaded driver joins its thread); calls after it run at
  // once on the caller's thread. Owners stop the driver before destroying what it runs.
  virtual void stop() = 0;
};

}  // namespace tempo
