// A replay across hosts with a cluster tier, in virtual time (Documentation/cluster.md,
// "Replay across hosts"). Each host has its own sim device, fast tier and budget; one pool
// below them holds what any host saved:
//   ClusterPool: which objects the pool holds, and from when. A host's put writes through
//                to it and is visible to the other hosts after `latency + bytes / rate`.
//   PoolLink:    a host's link to the pool: reads pay `latency` each, then share `rate`
//                equally (processor sharing, as the sim device serves its staging).
//   PoolDevice:  a host's device as its stack sees it: the sim device, plus the pool. An
//                object the local SSD tier lacks and the pool holds is a hit; staging it
//                reads it from the pool into the local store (a copy is kept there), then
//                stages it into the fast tier as any local object; the completion reports
//                the whole time from the stage call, so the provider's learned rate sees it.
//                The ordinary path fetches pool objects the same way before its demand read.
// The two-step staging (pool, then local SSD to fast tier) stands in for the sim device's
// own remote source until it has one: the pool read is the larger part at cluster rates.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/object.h"
#include "core/scheduler.h"
#include "device/sim_device.h"

namespace tempo {

struct ClusterModel {
  bool enabled = false;
  double rate_bps = 2.5 * double(1ull << 30);  // each host's link to the pool
  TimeNs latency = kNsPerMs;                   // per read and per write-through
};

class ClusterPool {
 public:
  ClusterPool(Scheduler& scheduler, const ClusterModel& model)
      : scheduler_(scheduler), model_(model) {}
  // Before the run: the pool holds `o` already.
  void preload(const KvObject& o) { objects_.emplace(o.key, o.bytes); }
  // A host saved `o` now: it is in the pool once the write-through ends (if it was not).
  void write_through(const KvObject& o);
  // Its size, or -ENOENT while the pool does not hold it.
  int64_t size(ObjectKey key) const;
  uint64_t written_bytes() const { return written_bytes_; }

 private:
  Scheduler& scheduler_;
  ClusterModel model_;
  std::unordered_map<ObjectKey, uint64_t> objects_;
  std::unordered_set<ObjectKey> writing_;
  uint64_t written_bytes_ = 0;
};

class PoolLink {
 public:
  PoolLink(Scheduler& scheduler, const ClusterModel& model)
      : scheduler_(scheduler), model_(model) {}
  ~PoolLink();
  PoolLink(const PoolLink&) = delete;
  PoolLink& operator=(const PoolLink&) = delete;
  // Reads `bytes` from the pool; `done` runs when they are in.
  void read(uint64_t bytes, std::function<void()> done);

 private:
  struct Flow {
    double remaining = 0;
    TimeNs data_start = 0;
    std::function<void()> done;
  };
  void advance();
  void reschedule();
  void on_timer();

  Scheduler& scheduler_;
  ClusterModel model_;
  std::vector<Flow> flows_;
  TimeNs last_ = 0;
  uint64_t timer_ = 0;
  bool armed_ = false;
};

struct PoolStats {
  uint64_t reads = 0;  // objects read from the pool into the local store
  uint64_t read_bytes = 0;
};

class PoolDevice final : public Device, private DeviceObserver {
 public:
  // `local`, `pool` and `scheduler` outlive the device.
  PoolDevice(Scheduler& scheduler, SimDevice& local, const ClusterPool& pool,
             const ClusterModel& model);

  DeviceInfo info() const override { return local_.info(); }
  DeviceStats stats() const override { return local_.stats(); }
  void set_observer(DeviceObserver* observer) override { observer_ = observer; }
  int64_t object_size(ObjectKey key) const override;
  Residency residency(ObjectKey key) const override;
  uint32_t pin_count(ObjectKey key) const override { return local_.pin_count(key); }
  int stage(ObjectKey key) override;
  int pin(ObjectKey key) override { return local_.pin(key); }
  int unpin(ObjectKey key) override { return local_.unpin(key); }
  int demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) override;

  // True when the local SSD tier holds `key` (not only the pool).
  bool local(ObjectKey key) const { return local_.object_size(key) >= 0; }
  PoolStats pool_stats() const { return pool_stats_; }

 private:
  // Reads `key` from the pool into the local store, then runs `then`.
  void fetch(ObjectKey key, std::function<void()> then);
  void on_stage_complete(const StageCompletion& c) override;
  void on_resident(ObjectKey key) override;
  void on_evicted(ObjectKey key) override;

  Scheduler& scheduler_;
  SimDevice& local_;
  const ClusterPool& pool_;
  PoolLink link_;
  DeviceObserver* observer_ = nullptr;
  std::unordered_map<ObjectKey, TimeNs> fetching_;  // stage() of a pool object: since when
  std::unordered_map<ObjectKey, TimeNs> staged_from_pool_;
  PoolStats pool_stats_;
};

}  // namespace tempo
