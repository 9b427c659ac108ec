// The virtual driver: the stack's timed work on an EventQueue over a VirtualClock. Time
// moves only when a caller waits (wait_until, advance, run_all): with the sim device, runs
// are deterministic. Calls from several threads are serialised by one lock; events run
// under it, on the caller's thread.
//
// Over a real device (watch()): its completions are delivered while a caller waits, and
// I/O takes the time it really takes. A wait with the device busy blocks on its completion
// fd until the next event is due (virtual time), moving the clock by the real time it
// blocked; with the device idle it jumps to the next event at once.
#pragma once

#include <functional>
#include <mutex>

#include "core/event_queue.h"
#include "stack/driver.h"

namespace tempo {

class VirtualDriver final : public Driver {
 public:
  explicit VirtualDriver(TimeNs start = 0) : clock_(start) {}

  // The device's completion fd: `deliver` processes its completions, `busy` says whether
  // any are still to come. Before the driver is used.
  void watch(int fd, Callback deliver, std::function<bool()> busy);

  const Clock& clock() const override { return clock_; }
  TimeNs now() const override;
  uint64_t schedule_at(TimeNs at, Callback cb) override {
    return events_.schedule_at(at, std::move(cb));
  }
  using Scheduler::schedule_after;
  void cancel(uint64_t id) override { events_.cancel(id); }
  void call(const std::function<void()>& fn) override;
  // Runs events (and the watched device's completions) one at a time until done() holds
  // or nothing can happen before the deadline; then time stands at the deadline (with
  // nothing left to happen and no deadline, where it is).
  bool wait_until(const std::function<bool()>& done, TimeNs timeout) override;
  void stop() override {}

  // Runs every event within `ns` from now, then leaves time there. -EINVAL if ns < 0.
  int advance(TimeNs ns);
  // Runs events (and device completions) until none is left.
  void run_all();
  // The event queue itself, for single-threaded owners (tests, replay) that drive it.
  EventQueue& events() { return events_; }

 private:
  // One step towards `deadline`: delivers the device's completions, or runs the next event,
  // or blocks on the busy device until the next event. False when nothing can happen
  // before the deadline.
  bool step_locked(TimeNs deadline);
  // Blocks up to `ns` of real time on the watched fd; moves the clock by the time blocked.
  bool block_on_device_locked(TimeNs ns);

  mutable std::recursive_mutex mu_;
  VirtualClock clock_;
  EventQueue events_{clock_};
  int watch_fd_ = -1;
  Callback deliver_;
  std::function<bool()> busy_;
};

}  // namespace tempo
