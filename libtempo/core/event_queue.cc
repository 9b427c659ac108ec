#include "core/event_queue.h"

#include <algorithm>

namespace tempo {

uint64_t EventQueue::schedule_at(TimeNs at, Callback cb) {
  return timers_.add(std::max(at, now()), std::move(cb));
}

bool EventQueue::run_next() {
  TimeNs at = 0;
  Callback cb;
  if (!timers_.pop_due(kNever, &at, &cb)) return false;
  clock_.advance_to(at);
  cb();
  return true;
}

void EventQueue::run_until(TimeNs t) {
  while (next_time() <= t) run_next();
  clock_.advance_to(t);
}

uint64_t EventQueue::run_all(uint64_t limit) {
  uint64_t n = 0;
  while (n < limit && run_next()) ++n;
  return n;
}

}  // namespace tempo
