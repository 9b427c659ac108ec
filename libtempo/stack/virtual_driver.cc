#include "stack/virtual_driver.h"

#include <cerrno>

namespace tempo {

void VirtualDriver::call(const std::function<void()>& fn) {
  std::lock_guard lock(mu_);
  fn();
}

bool VirtualDriver::wait_until(const std::function<bool()>& done, TimeNs timeout) {
  std::lock_guard lock(mu_);
  const TimeNs deadline = saturating_deadline(clock_.now(), timeout);
  while (!done()) {
    if (events_.empty() || events_.next_time() > deadline) {
      // Nothing can happen before the deadline: the wait takes all of it.
      if (deadline != kNever) events_.run_until(deadline);
      return done();
    }
    events_.run_next();
  }
  return true;
}

int VirtualDriver::advance(TimeNs ns) {
  if (ns < 0) return -EINVAL;
  std::lock_guard lock(mu_);
  const TimeNs to = saturating_deadline(clock_.now(), ns);
  if (to == kNever) {
    events_.run_all();  // as far as anything is scheduled; time itself stays finite
    return 0;
  }
  events_.run_until(to);
  return 0;
}

void VirtualDriver::run_all() {
  std::lock_guard lock(mu_);
  events_.run_all();
}

}  // namespace tempo
