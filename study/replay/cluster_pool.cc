#include "cluster_pool.h"

#include <cerrno>
#include <cmath>

namespace tempo {

SimRemote pool_source(const ClusterModel& model, const RemoteCatalogue& pool) {
  const RemoteInfo link{model.slots, model.rate_bps, model.latency};
  return SimRemote{link, link, &pool, true};
}

void ClusterPool::write_through(const KvObject& o) {
  if (objects_.contains(o.key) || !writing_.insert(o.key).second) return;
  written_bytes_ += o.bytes;
  const auto transfer =
      static_cast<TimeNs>(std::ceil(double(o.bytes) / model_.rate_bps * double(kNsPerSec)));
  scheduler_.schedule_after(model_.latency + transfer, [this, o] {
    writing_.erase(o.key);
    objects_.emplace(o.key, o.bytes);
  });
}

int64_t ClusterPool::size(ObjectKey key) const {
  auto it = objects_.find(key);
  return it == objects_.end() ? -ENOENT : static_cast<int64_t>(it->second);
}

}  // namespace tempo
