#include "placement/link.h"

#include <algorithm>
#include <cmath>

namespace tempo::placement {

TimeNs Link::duration(uint64_t bytes) const {
  if (bytes != memo_bytes_ || bytes == 0) {
    memo_bytes_ = bytes;
    memo_duration_ =
        spec_.latency_ns +
        static_cast<TimeNs>(std::ceil(static_cast<double>(bytes) * 1e9 / spec_.bytes_per_sec));
  }
  return memo_duration_;
}

TimeNs Link::schedule(uint64_t bytes, TimeNs start) {
  const TimeNs d = duration(bytes);
  busy_time_ += d;
  bytes_ += bytes;
  ++transfers_;
  return start + d;
}

TimeNs Link::transfer(uint64_t bytes, TimeNs ready) {
  const TimeNs end = schedule(bytes, std::max(ready, busy_until_));
  busy_until_ = end;
  committed_until_ = end;
  speculative_.clear();  // everything queued before it now runs before it
  return end;
}

TimeNs Link::transfer_speculative(uint64_t bytes, TimeNs ready, uint64_t tag) {
  const TimeNs start = std::max(ready, busy_until_);
  const TimeNs end = schedule(bytes, start);
  busy_until_ = end;
  if (demand_priority_) speculative_.push_back({tag, start, end});
  return end;
}

TimeNs Link::transfer_demand(uint64_t bytes, TimeNs ready, std::vector<MovedTransfer>* moved) {
  if (!demand_priority_) return transfer(bytes, ready);
  // Speculative transfers that start before this one could are past overtaking; on a tie
  // the demand transfer goes first.
  TimeNs start = std::max(ready, committed_until_);
  while (!speculative_.empty() && speculative_.front().start < start) {
    committed_until_ = std::max(committed_until_, speculative_.front().end);
    start = std::max(ready, committed_until_);
    speculative_.pop_front();
  }
  const TimeNs end = schedule(bytes, start);
  committed_until_ = end;
  TimeNs cur = end;
  for (Pending& p : speculative_) {
    const TimeNs new_start = std::max(p.start, cur);
    if (new_start != p.start) {
      const TimeNs new_end = p.end + (new_start - p.start);
      moved->push_back({p.tag, p.end, new_end});
      p.start = new_start;
      p.end = new_end;
    }
    cur = p.end;
  }
  busy_until_ = std::max(busy_until_, cur);
  return end;
}

}  // namespace tempo::placement
