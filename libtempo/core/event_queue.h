// Discrete-event scheduler on a VirtualClock: the sim device and tempo-replay schedule
// their future work here; events at equal times run in the order they were scheduled.
#pragma once

#include <cstdint>

#include "core/clock.h"
#include "core/scheduler.h"
#include "core/timer_heap.h"

namespace tempo {

class EventQueue final : public Scheduler {
 public:
  explicit EventQueue(VirtualClock& clock) : clock_(clock) {}

  VirtualClock& clock() { return clock_; }
  TimeNs now() const override { return clock_.now(); }

  // Runs `cb` at time `at` (at least now). Returns an id usable with cancel().
  uint64_t schedule_at(TimeNs at, Callback cb) override;
  using Scheduler::schedule_after;
  // Cancelled events are skipped when their time comes.
  void cancel(uint64_t id) override { timers_.cancel(id); }

  bool empty() const { return timers_.empty(); }
  TimeNs next_time() const { return timers_.next_time(); }
  // Runs the earliest event (advancing the clock to it). False when there is none.
  bool run_next();
  // Runs every event at or before `t`, then leaves the clock at `t`.
  void run_until(TimeNs t);
  // Runs until no event is left or `limit` events ran; returns how many ran.
  uint64_t run_all(uint64_t limit = UINT64_MAX);

 private:
  VirtualClock& clock_;
  TimerHeap timers_;
};

}  // namespace tempo
