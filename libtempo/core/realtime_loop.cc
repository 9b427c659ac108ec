#include "core/realtime_loop.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace tempo {

uint64_t RealtimeLoop::schedule_at(TimeNs at, Callback cb) {
  const uint64_t seq = next_seq_++;
  heap_.push(Entry{at, seq});
  pending_.emplace(seq, std::move(cb));
  return seq;
}

void RealtimeLoop::cancel(uint64_t id) { pending_.erase(id); }

void RealtimeLoop::watch(int fd, Callback on_readable) {
  watched_.emplace_back(fd, std::move(on_readable));
}

int RealtimeLoop::run(const std::function<bool()>& done, TimeNs max_wait) {
  std::vector<pollfd> fds;
  while (true) {
    // Every callback due by now, in time order (callbacks may schedule more).
    while (!heap_.empty()) {
      const Entry e = heap_.top();
      auto it = pending_.find(e.seq);
      if (it == pending_.end()) {
        heap_.pop();
        continue;
      }
      if (e.at > now()) break;
      heap_.pop();
      Callback cb = std::move(it->second);
      pending_.erase(it);
      cb();
    }
    if (done()) return 0;
    TimeNs wait = max_wait;
    if (!heap_.empty()) wait = std::clamp<TimeNs>(heap_.top().at - now(), 0, max_wait);
    fds.clear();
    for (const auto& [fd, cb] : watched_) fds.push_back(pollfd{fd, POLLIN, 0});
    const timespec ts{static_cast<time_t>(wait / kNsPerSec), static_cast<long>(wait % kNsPerSec)};
    const int n = ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (n < 0 && errno != EINTR) return -errno;
    for (size_t i = 0; n > 0 && i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) watched_[i].second();
  }
}

}  // namespace tempo
