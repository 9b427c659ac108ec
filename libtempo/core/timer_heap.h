// Timed callbacks in time order, equal times in scheduling order, with cancellation: the
// shared core of the virtual-time EventQueue and the threaded driver's wall-clock loop.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "core/time.h"

namespace tempo {

class TimerHeap {
 public:
  using Callback = std::function<void()>;

  uint64_t add(TimeNs at, Callback cb);
  // A cancelled callback is never returned; unknown ids are ignored.
  void cancel(uint64_t id) { pending_.erase(id); }
  bool empty() const { return pending_.empty(); }
  // Time of the earliest live callback, kNever when there is none.
  TimeNs next_time() const;
  // Removes and returns the earliest live callback if it is due at `now`; else false.
  bool pop_due(TimeNs now, TimeNs* at, Callback* cb);

 private:
  struct Entry {
    TimeNs at;
    uint64_t seq;
    friend bool operator>(const Entry& a, const Entry& b) {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  void drop_cancelled() const;

  // Cancelled entries are dropped lazily, also from const lookups.
  mutable std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::unordered_map<uint64_t, Callback> pending_;  // by seq
  uint64_t next_seq_ = 0;
};

}  // namespace tempo
