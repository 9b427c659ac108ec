// The `sim` device: a virtual-time model of a memory-semantic flash device. An SSD tier of
// registered objects; a fast tier of fixed capacity; a staging engine serving up to
// `staging_slots` operations FIFO, each paying `op_latency` and then sharing the aggregate
// `staging_rate`; demand (ordinary-path) reads share the same SSD bandwidth, each capped at
// `demand_rate`. Unpinned resident objects are evicted by a pluggable policy. Deterministic.
// An interference window, if set, scales the aggregate rate (device/interference.h).
// A remote source (SimRemote: a cluster pool) holds the objects added as kRemote, and those
// its catalogue lists (objects that appear while the device runs: what other hosts wrote
// through to a shared pool): its stages wait for their own slots, pay its latency and share
// its own rate, apart from the SSD's; demand reads of its objects pay its latency and share
// its rate too (each capped at `demand_rate`, as the SSD's). With `keep_local`, an object read from
// it is kept in the SSD tier: a later stage or demand read of it is local.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/scheduler.h"
#include "device/device.h"
#include "device/interference.h"
#include "policy/eviction_policy.h"

namespace tempo {

struct SimDeviceConfig {
  uint64_t capacity_bytes = 100ull << 30;
  double staging_rate_bps = 11.0 * (1ull << 30);
  uint32_t staging_slots = 8;
  TimeNs op_latency_ns = 100 * kNsPerUs;
  double demand_rate_bps = 2.0 * (1ull << 30);
  std::string eviction = "lru";
  friend bool operator==(const SimDeviceConfig&, const SimDeviceConfig&) = default;
};

// What a remote source holds beyond the objects added as kRemote; it may grow while the
// device runs.
class RemoteCatalogue {
 public:
  virtual ~RemoteCatalogue() = default;
  // The object's size, or -ENOENT while the source does not hold it.
  virtual int64_t size(ObjectKey key) const = 0;
};

// The remote source: `truth` is how it behaves, `reported` what remote_info() says (the
// provider's starting calibration, which it then learns away from).
struct SimRemote {
  RemoteInfo truth;
  RemoteInfo reported;
  const RemoteCatalogue* catalogue = nullptr;  // outlives the device
  bool keep_local = false;  // a completed read from the source leaves a copy in the SSD tier
};

class SimDevice final : public Device {
 public:
  // 0, or -EINVAL with `error` saying why: zero capacity, rates or slots, a negative
  // latency, an eviction policy the fast tier does not run, a remote source with zero slots,
  // a rate <= 0 or a latency < 0.
  static int validate(const SimDeviceConfig& config, const std::optional<SimRemote>& remote,
                      std::string* error);
  // A configuration validate() accepts: every caller checks first (a context's settings,
  // SimStack, the replay's stacks); one it refuses is a defect and aborts with the reason.
  SimDevice(Scheduler& events, SimDeviceConfig config,
            std::optional<SimRemote> remote = std::nullopt);
  ~SimDevice() override;

  // The SSD tier's contents (or the remote source's). -EEXIST if `key` is already held
  // (adding to the SSD tier an object only the remote source holds, at its size, is a copy
  // kept locally: 0), -EINVAL for zero bytes or kRemote without a remote source.
  int add_object(ObjectKey key, uint64_t bytes, Source source = Source::kLocal);
  // Whether the SSD tier holds `key` (not only the remote source).
  bool holds_locally(ObjectKey key) const;
  // Bytes read from the remote source: by completed stages, and by demand reads (counted
  // when issued).
  uint64_t remote_read_bytes() const { return remote_read_bytes_; }
  // Test hook: the next stage of `key` completes with `error` (negative errno).
  void inject_stage_error(ObjectKey key, int error);
  // Drops every unpinned resident object (the paper's "reset the fast tier").
  void drop_unpinned();
  // From now on the aggregate rate follows `window` (at most one; it replaces any earlier).
  // 0, or -EINVAL for a start < 0 or a factor outside (0, 1] (nothing changes then).
  int set_interference(const Interference& window);

  DeviceInfo info() const override;
  DeviceStats stats() const override { return stats_; }
  void set_observer(DeviceObserver* observer) override { observer_ = observer; }
  int64_t object_size(ObjectKey key) const override;
  Source stage_source(ObjectKey key) const override;
  RemoteInfo remote_info() const override { return remote_ ? remote_->reported : RemoteInfo{}; }
  Residency residency(ObjectKey key) const override;
  uint32_t pin_count(ObjectKey key) const override;
  int stage(ObjectKey key) override;
  int pin(ObjectKey key) override;
  int unpin(ObjectKey key) override;
  int demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) override;

  // Sum of the sizes of resident and staging objects, recomputed from scratch (tests).
  uint64_t recount_used_bytes() const;

 private:
  struct Entry {
    uint64_t bytes = 0;
    Residency state = Residency::kAbsent;
    uint32_t pins = 0;
    Source source = Source::kLocal;
  };
  struct Flow {
    enum class Kind { kStage, kDemand } kind;
    ObjectKey key = 0;              // kStage
    std::vector<ObjectKey> fill;    // kDemand: objects to cache once read
    std::function<void(int)> done;  // kDemand
    double remaining = 0;           // bytes
    double cap = 0;                 // bytes/s, 0 = uncapped
    double rate = 0;                // current share
    TimeNs submitted = 0;
    TimeNs data_start = 0;  // end of the latency phase
    Source source = Source::kLocal;
  };

  Entry* find(ObjectKey key);
  const Entry* find(ObjectKey key) const;
  // find(), or an entry for an object only the remote source's catalogue lists.
  Entry* find_or_fetch(ObjectKey key);
  // The remote source's object was read: counted, and kept locally if so configured.
  void read_remote(Entry& e);
  bool make_room(uint64_t bytes);
  void evict(ObjectKey key, Entry& e);
  void start_queued_stages();
  void advance();
  void reschedule();
  void on_timer();
  void finish_flow(Flow& f);

  Scheduler& events_;
  SimDeviceConfig config_;
  std::unique_ptr<EvictionPolicy> policy_;
  DeviceObserver* observer_ = nullptr;
  std::unordered_map<ObjectKey, Entry> objects_;
  std::unordered_map<ObjectKey, int> injected_errors_;
  std::deque<ObjectKey> stage_queue_[kSources];  // submitted, waiting for a slot
  std::unordered_map<ObjectKey, TimeNs> stage_submitted_;
  std::vector<Flow> flows_;  // in service (latency or data phase)
  uint32_t active_stages_[kSources] = {};
  std::optional<SimRemote> remote_;
  uint64_t used_bytes_ = 0;
  uint64_t remote_read_bytes_ = 0;
  TimeNs last_advance_ = 0;
  uint64_t timer_id_ = 0;
  bool timer_armed_ = false;
  Interference interference_;
  std::vector<uint64_t> window_timers_;  // the interference window's edges
  DeviceStats stats_;
};

}  // namespace tempo
