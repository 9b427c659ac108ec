#include "core/timer_heap.h"

namespace tempo {

uint64_t TimerHeap::add(TimeNs at, Callback cb) {
  const uint64_t seq = next_seq_++;
  heap_.push(Entry{at, seq});
  pending_.emplace(seq, std::move(cb));
  return seq;
}

void TimerHeap::drop_cancelled() const {
  while (!heap_.empty() && !pending_.contains(heap_.top().seq)) heap_.pop();
}

TimeNs TimerHeap::next_time() const {
  drop_cancelled();
  return heap_.empty() ? kNever : heap_.top().at;
}

bool TimerHeap::pop_due(TimeNs now, TimeNs* at, Callback* cb) {
  drop_cancelled();
  if (heap_.empty() || heap_.top().at > now) return false;
  const Entry e = heap_.top();
  heap_.pop();
  auto it = pending_.find(e.seq);
  *at = e.at;
  *cb = std::move(it->second);
  pending_.erase(it);
  return true;
}

}  // namespace tempo
