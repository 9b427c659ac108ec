#include "core/event_queue.h"

#include <algorithm>

namespace tempo {

uint64_t EventQueue::schedule_at(TimeNs at, Callback cb) {
  const uint64_t seq = next_seq_++;
  heap_.push(Entry{std::max(at, now()), seq});
  pending_.emplace(seq, std::move(cb));
  return seq;
}

void EventQueue::cancel(uint64_t id) { pending_.erase(id); }

void EventQueue::drop_cancelled_top() const {
  while (!heap_.empty() && !pending_.contains(heap_.top().seq)) heap_.pop();
}

TimeNs EventQueue::next_time() const {
  drop_cancelled_top();
  return heap_.empty() ? kNever : heap_.top().at;
}

bool EventQueue::run_next() {
  drop_cancelled_top();
  if (heap_.empty()) return false;
  const Entry e = heap_.top();
  heap_.pop();
  auto it = pending_.find(e.seq);
  Callback cb = std::move(it->second);
  pending_.erase(it);
  clock_.advance_to(e.at);
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
