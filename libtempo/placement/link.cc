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

TimeNs Link::transfer(uint64_t bytes, TimeNs ready) {
  const TimeNs start = std::max(ready, busy_until_);
  const TimeNs d = duration(bytes);
  busy_until_ = start + d;
  busy_time_ += d;
  bytes_ += bytes;
  ++transfers_;
  return busy_until_;
}

}  // namespace tempo::placement
