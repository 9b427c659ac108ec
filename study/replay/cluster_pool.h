// A replay across hosts with a cluster tier, in virtual time (Documentation/cluster.md,
// "Replay across hosts"). Each host has its own sim device, fast tier and budget; one pool
// below them holds what any host saved. The pool is each host's sim device's remote source
// (SimRemote, device/sim_device.h): its own slots, per-read latency and rate, apart from the
// SSD's, a copy of what a host reads from it kept in that host's store. ClusterPool is the
// pool's catalogue the devices share: which objects it holds, and from when. A host's put
// writes through to it and is visible to the other hosts after `latency + bytes / rate`.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "core/object.h"
#include "core/scheduler.h"
#include "device/sim_device.h"

namespace tempo {

struct ClusterModel {
  bool enabled = false;
  double rate_bps = 2.5 * double(1ull << 30);  // each host's link to the pool
  TimeNs latency = kNsPerMs;                   // per read and per write-through
  uint32_t slots = 16;                         // each host's reads in flight
};

// A host's remote source on `pool`: the model's slots, latency and rate (reported as they
// are), a copy of what it reads kept in its store.
SimRemote pool_source(const ClusterModel& model, const RemoteCatalogue& pool);

class ClusterPool final : public RemoteCatalogue {
 public:
  ClusterPool(Scheduler& scheduler, const ClusterModel& model)
      : scheduler_(scheduler), model_(model) {}
  // Before the run: the pool holds `o` already.
  void preload(const KvObject& o) { objects_.emplace(o.key, o.bytes); }
  // A host saved `o` now: it is in the pool once the write-through ends (if it was not).
  void write_through(const KvObject& o);
  int64_t size(ObjectKey key) const override;
  uint64_t written_bytes() const { return written_bytes_; }

 private:
  Scheduler& scheduler_;
  ClusterModel model_;
  std::unordered_map<ObjectKey, uint64_t> objects_;
  std::unordered_set<ObjectKey> writing_;
  uint64_t written_bytes_ = 0;
};

}  // namespace tempo
