// The virtual driver: the stack's timed work on an EventQueue over a VirtualClock. Time
// moves only when a caller waits (wait_until, advance, run_all): runs are deterministic.
// Calls from several threads are serialised by one lock; events run under it.
#pragma once

#include <mutex>

#include "core/event_queue.h"
#include "stack/driver.h"

namespace tempo {

class VirtualDriver final : public Driver {
 public:
  explicit VirtualDriver(TimeNs start = 0) : clock_(start) {}

  const Clock& clock() const override { return clock_; }
  uint64_t schedule_at(TimeNs at, Callback cb) override {
    return events_.schedule_at(at, std::move(cb));
  }
  using Scheduler::schedule_after;
  void cancel(uint64_t id) override { events_.cancel(id); }
  void call(const std::function<void()>& fn) override;
  // Runs events one at a time until done() holds or the next event lies past the deadline;
  // then time stands at the deadline (with no event left and no deadline, where it is).
  bool wait_until(const std::function<bool()>& done, TimeNs timeout) override;
  void stop() override {}

  // Runs every event within `ns` from now, then leaves time there. -EINVAL if ns < 0.
  int advance(TimeNs ns);
  // Runs events until none is left.
  void run_all();
  // The event queue itself, for single-threaded owners (tests, replay) that drive it.
  EventQueue& events() { return events_; }

 private:
  std::recursive_mutex mu_;
  VirtualClock clock_;
  EventQueue events_{clock_};
};

}  // namespace tempo
