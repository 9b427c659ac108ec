#include "instance/sim_instance.h"

#include <cerrno>

namespace tempo {

SimInstance::SimInstance(const SimRuntimeConfig& config) : rt_(config) {
  attach(rt_.controller, rt_.provider, rt_.device, rt_.clock);
}

int SimInstance::sim_add_objects(std::span<const KvObject> objects) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < objects.size(); ++i) {
    if (objects[i].bytes == 0) return -EINVAL;
    if (rt_.device.object_size(objects[i].key) >= 0) return -EEXIST;
    for (size_t j = 0; j < i; ++j)
      if (objects[j].key == objects[i].key) return -EEXIST;
  }
  for (const KvObject& o : objects) rt_.device.add_object(o.key, o.bytes);
  return 0;
}

int SimInstance::sim_advance(TimeNs ns) {
  if (ns < 0) return -EINVAL;
  std::lock_guard lock(mu_);
  if (ns > kMaxTimeNs - rt_.clock.now()) return -EOVERFLOW;
  rt_.events.run_until(rt_.clock.now() + ns);
  notify();
  return 0;
}

bool SimInstance::advance_locked(std::unique_lock<std::mutex>&, TimeNs deadline) {
  // One event at a time, so the waiter sees the first instant its claim is decided.
  if (rt_.events.empty() || rt_.events.next_time() > deadline) {
    rt_.events.run_until(deadline);
    return false;
  }
  rt_.events.run_next();
  return true;
}

}  // namespace tempo
