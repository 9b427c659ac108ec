// A single-threaded wall-clock loop: timed callbacks (the Scheduler interface) and file
// descriptors to watch (a device's completion eventfd). A real-device run of tempo-replay
// and the runtime's controller tick live on it, so no lock is needed between them.
#pragma once

#include <functional>
#include <vector>

#include "core/clock.h"
#include "core/scheduler.h"
#include "core/timer_heap.h"

namespace tempo {

class RealtimeLoop final : public Scheduler {
 public:
  explicit RealtimeLoop(const Clock& clock) : clock_(clock) {}

  TimeNs now() const override { return clock_.now(); }
  uint64_t schedule_at(TimeNs at, Callback cb) override { return timers_.add(at, std::move(cb)); }
  void cancel(uint64_t id) override { timers_.cancel(id); }
  // Calls `on_readable` from run() whenever `fd` polls readable.
  void watch(int fd, Callback on_readable);

  // Runs due callbacks and readable watchers until `done()` holds after a round. Sleeps in
  // ppoll() until the next timed callback or a watched fd, at most `max_wait` at a time.
  // Returns 0, or -errno if ppoll fails.
  int run(const std::function<bool()>& done, TimeNs max_wait = 100 * kNsPerMs);

  bool has_timers() const { return !timers_.empty(); }

 private:
  const Clock& clock_;
  TimerHeap timers_;
  std::vector<std::pair<int, Callback>> watched_;
};

}  // namespace tempo
