#include "stack/virtual_driver.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace tempo {
namespace {

// Whether `fd` is readable within `ns` (0: just look).
bool readable(int fd, TimeNs ns) {
  pollfd p{fd, POLLIN, 0};
  const timespec ts{static_cast<time_t>(ns / kNsPerSec), static_cast<long>(ns % kNsPerSec)};
  return ppoll(&p, 1, &ts, nullptr) > 0;
}

}  // namespace

void VirtualDriver::watch(int fd, Callback deliver, std::function<bool()> busy) {
  watch_fd_ = fd;
  deliver_ = std::move(deliver);
  busy_ = std::move(busy);
}

TimeNs VirtualDriver::now() const {
  std::lock_guard lock(mu_);
  return clock_.now();
}

void VirtualDriver::call(const std::function<void()>& fn) {
  std::lock_guard lock(mu_);
  fn();
}

bool VirtualDriver::block_on_device_locked(TimeNs ns) {
  MonotonicClock real;
  const TimeNs start = real.now();
  const bool ready = readable(watch_fd_, ns);
  const TimeNs blocked = std::min(real.now() - start, ns);
  clock_.advance_to(clock_.now() + blocked);  // no event is due before now + ns
  if (ready) deliver_();
  return ready;
}

bool VirtualDriver::step_locked(TimeNs deadline) {
  if (watch_fd_ >= 0) {
    if (readable(watch_fd_, 0)) {
      deliver_();
      return true;
    }
    if (busy_()) {
      const TimeNs next = events_.empty() ? kNever : events_.next_time();
      const TimeNs until = std::min(next, deadline);
      // With nothing scheduled, wait for the device a second at a time.
      const TimeNs ns = until == kNever ? kNsPerSec : std::max<TimeNs>(until - clock_.now(), 0);
      if (ns > 0 && block_on_device_locked(ns)) return true;
      if (ns > 0 && until == kNever) return true;  // still busy: keep waiting
    }
  }
  if (events_.empty() || events_.next_time() > deadline) return false;
  events_.run_next();
  return true;
}

bool VirtualDriver::wait_until(const std::function<bool()>& done, TimeNs timeout) {
  std::lock_guard lock(mu_);
  const TimeNs deadline = saturating_deadline(clock_.now(), timeout);
  while (!done()) {
    if (!step_locked(deadline)) {
      // Nothing can happen before the deadline: the wait takes all of it.
      if (deadline != kNever) events_.run_until(deadline);
      return done();
    }
  }
  return true;
}

int VirtualDriver::advance(TimeNs ns) {
  if (ns < 0) return -EINVAL;
  std::lock_guard lock(mu_);
  const TimeNs to = saturating_deadline(clock_.now(), ns);
  while (step_locked(to)) {
  }
  // Up to the target (time itself stays finite when the target is the end of time).
  if (to != kNever) events_.run_until(to);
  return 0;
}

void VirtualDriver::run_all() {
  std::lock_guard lock(mu_);
  while (step_locked(kNever)) {
  }
}

}  // namespace tempo
