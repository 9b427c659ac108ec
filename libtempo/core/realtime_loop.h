// A single-threaded wall-clock loop: timed callbacks (the Scheduler interface) and file
// descriptors to watch (a device's completion eventfd). A real-device run of tempo-replay
// and the runtime's controller tick live on it, so no lock is needed between them.
#pragma once

#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/scheduler.h"

namespace tempo {

class RealtimeLoop final : public Scheduler {
 public:
  explicit RealtimeLoop(const Clock& clock) : clock_(clock) {}

  TimeNs now() const override { return clock_.now(); }
  uint64_t schedule_at(TimeNs at, Callback cb) override;
  void cancel(uint64_t id) override;
  // Calls `on_readable` from run() whenever `fd` polls readable.
  void watch(int fd, Callback on_readable);

  // Runs due callbacks and readable watchers until `done()` holds after a round. Sleeps in
  // ppoll() until the next timed callback or a watched fd, at most `max_wait` at a time.
  // Returns 0, or -errno if ppoll fails.
  int run(const std::function<bool()>& done, TimeNs max_wait = 100 * kNsPerMs);

  bool has_timers() const { return !pending_.empty(); }

 private:
  struct Entry {
    TimeNs at;
    uint64_t seq;
    friend bool operator>(const Entry& a, const Entry& b) {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  const Clock& clock_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::unordered_map<uint64_t, Callback> pending_;
  uint64_t next_seq_ = 0;
  std::vector<std::pair<int, Callback>> watched_;
};

}  // namespace tempo
