#include "core/realtime_loop.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace tempo {

void RealtimeLoop::watch(int fd, Callback on_readable) {
  watched_.emplace_back(fd, std::move(on_readable));
}

int RealtimeLoop::run(const std::function<bool()>& done, TimeNs max_wait) {
  std::vector<pollfd> fds;
  while (true) {
    // Every callback due by now, in time order (callbacks may schedule more).
    TimeNs at = 0;
    Callback due;
    while (timers_.pop_due(now(), &at, &due)) due();
    if (done()) return 0;
    TimeNs wait = max_wait;
    if (!timers_.empty()) wait = std::clamp<TimeNs>(timers_.next_time() - now(), 0, max_wait);
    fds.clear();
    for (const auto& watch : watched_) fds.push_back(pollfd{watch.first, POLLIN, 0});
    const timespec ts{static_cast<time_t>(wait / kNsPerSec), static_cast<long>(wait % kNsPerSec)};
    const int n = ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (n < 0 && errno != EINTR) return -errno;
    for (size_t i = 0; n > 0 && i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) watched_[i].second();
  }
}

}  // namespace tempo
