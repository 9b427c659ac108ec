// The `uring` device: real bytes. The SSD tier is an ObjectStore (a file or block device read
// with io_uring O_DIRECT); the fast tier is a DRAM arena or a Device-DAX mapping. Staging
// reads objects SSD -> fast tier with a bounded queue depth and request size, FIFO; the
// ordinary (demand) path reads through bounce buffers and caches what fits afterwards;
// unpinned resident objects are evicted by an EvictionPolicy.
//
// Threading: every public method is thread-safe. Observer callbacks and demand_read()'s
// `done` run only inside process_completions() (or wait()), one caller at a time, in the
// order the events happened; they may call back into the device. An event loop polls
// completion_fd() and calls process_completions() when it is readable.
//
// With a cluster tier (options.cluster) below the store, an object the store does not hold
// but the pool does is a hit: object_size() answers from the pool, stage() reads it from the
// pool straight into its fast-tier extents (ClusterTier::read_async), and completion_fd()
// is then an epoll descriptor over the ring's eventfd and the tier's, so that one loop
// drives both. The ordinary path reads only the local store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/cluster_tier.h"
#include "core/clock.h"
#include "device/device.h"
#include "fasttier/fast_tier.h"
#include "policy/eviction_policy.h"
#include "store/aligned_buffer.h"
#include "store/checksum.h"
#include "store/object_store.h"
#include "uring/io_ring.h"
#include "uring/uring_device_options.h"

namespace tempo {

// Counters beyond DeviceStats.
struct UringDeviceStats {
  uint64_t requests = 0;         // read requests completed
  uint64_t short_reads = 0;      // completions that moved fewer bytes than asked
  uint64_t read_errors = 0;      // completions with an error
  uint64_t checksum_errors = 0;  // staged or demand-read objects that failed verification
  bool registered_buffers = false;
  uint64_t pool_stages = 0;        // objects staged from the cluster tier
  uint64_t pool_stage_errors = 0;  // stages from the cluster tier that failed
  uint64_t kept_local = 0;         // of those staged, copies written to the store
  uint64_t keep_local_errors = 0;  // copies the store refused
};

class UringDevice final : public Device {
 public:
  // `store` and `clock` outlive the device. 0, or a negative errno with `error` saying why.
  static int create(ObjectStore& store, const UringDeviceOptions& options, const Clock& clock,
                    std::unique_ptr<UringDevice>* out, std::string* error);
  ~UringDevice() override;

  DeviceInfo info() const override;
  DeviceStats stats() const override;
  void set_observer(DeviceObserver* observer) override;
  int64_t object_size(ObjectKey key) const override;
  // The store's answers first, then the remembered pool sizes; the rest in one batch to
  // the pool (ClusterTier::stat_many).
  void object_sizes(std::span<const ObjectKey> keys, std::span<int64_t> sizes) const override;
  // kRemote for an object the local store does not hold (staged from the cluster tier);
  // the provider learns the pool's rate and latency from those stages' completions.
  Source stage_source(ObjectKey key) const override;
  Residency residency(ObjectKey key) const override;
  uint32_t pin_count(ObjectKey key) const override;
  // Also -ENOSPC when the fast tier cannot hold the object even after evicting every
  // unpinned object, and the store's error for a quarantined object (-EBADMSG, -EIO).
  int stage(ObjectKey key) override;
  int pin(ObjectKey key) override;
  int unpin(ObjectKey key) override;
  int demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) override;

  // Readable (an eventfd) when process_completions() has work.
  int completion_fd() const override { return poll_fd_ >= 0 ? poll_fd_ : event_fd_; }
  // Reaps I/O completions, finishes operations, issues queued reads, then delivers the
  // events to the observer and demand callbacks. Never blocks on I/O. Returns the number of
  // events delivered.
  int process_completions() override;
  // Waits up to `timeout` for completions, then processes them (for callers without a loop).
  int wait(TimeNs timeout);
  // True when no staging or demand read is outstanding and no event waits for delivery.
  bool idle() const override;

  // Retrieval: the fast-tier bytes of a resident object the caller holds a pin on, as
  // (pointer, length) extents in object order; they stay valid until the caller unpins.
  // -ENOENT unknown, -EAGAIN not resident, -EPERM not pinned.
  int resident_extents(ObjectKey key, std::vector<std::span<const std::byte>>* out) const override;
  // Places an object's bytes that the caller read from the store itself in the fast tier,
  // resident and unpinned, as the demand path does with what it read (evicting unpinned
  // objects to make room); they count as demand bytes. Checked against the catalog's
  // checksum when verify_checksums. 0, or -ENOENT (not in the store), -EINVAL (`bytes` is
  // not the object's size), -EEXIST (already resident or being staged), -ENOSPC, -EBADMSG
  // (`bytes` fail the catalog's checksum: nothing is placed, the store is left as it is),
  // or the store's error for a quarantined object.
  int admit(ObjectKey key, std::span<const std::byte> bytes);

  // Evicts every unpinned resident object (the paper's "reset the fast tier").
  void drop_unpinned();
  UringDeviceStats uring_stats() const;
  FastTierStats fast_tier_stats() const;
  const FastTierRegion& region() const { return fast_->region(); }
  // Test hook at the I/O layer (see IoRing): read errors and short reads.
  void set_fault_hook(IoFaultHook hook);

 private:
  struct Entry {
    uint64_t bytes = 0;
    Residency state = Residency::kAbsent;
    uint32_t pins = 0;
    std::vector<Extent> extents;  // fast-tier placement (staging or resident)
  };
  struct DemandGroup {
    uint32_t outstanding = 0;
    int status = 0;
    std::function<void(int)> done;
  };
  struct Op {
    enum class Kind : uint8_t { kStage, kDemand, kPool } kind = Kind::kStage;
    ObjectKey key = 0;
    ObjectInfo info;              // store lease, released when the op finishes
    std::vector<Extent> extents;  // kStage: destination in the fast tier
    AlignedBuffer bounce;         // kDemand: destination
    std::shared_ptr<DemandGroup> group;
    uint64_t issued = 0;  // bytes of the padded object handed to the ring so far
    uint64_t length = 0;  // padded object bytes
    uint32_t inflight = 0;
    int error = 0;
    TimeNs submitted = 0;
    // Verification in the completion path: each read's bytes are hashed right after it
    // completes (while the CPU still may hold them in cache), in object order; reads that
    // complete ahead of an earlier one wait in `arrived` (by position) for their turn.
    std::unique_ptr<Checksum64Stream> sum;  // null when not verifying
    uint64_t hashed = 0;                    // object bytes hashed so far
    std::map<uint64_t, std::span<const std::byte>> arrived;
    bool hash_queued = false;  // in hash_queue_
  };
  struct Event {
    enum class Kind : uint8_t { kStage, kResident, kEvicted, kDemandDone } kind;
    StageCompletion completion;
    ObjectKey key = 0;
    std::function<void(int)> done;
    int status = 0;
  };

  UringDevice(ObjectStore& store, const UringDeviceOptions& options, const Clock& clock);

  // The pool's size of `key` (remembered once known), or its error.
  int64_t pool_size(ObjectKey key) const;
  int stage_from_pool(ObjectKey key);
  // Holds a new staging entry with one pin (the caller's) on `extents`.
  void add_staging_locked(ObjectKey key, uint64_t bytes, std::vector<Extent> extents);
  // The object's bytes in the fast tier, in object order.
  std::vector<std::span<std::byte>> object_spans_locked(const Entry& e) const;
  void finish_pool_read_locked(const ClusterRead& r);
  // Waits for the cluster tier's reads into the fast tier to end (destruction).
  void drain_pool_reads();

  // All *_locked functions expect mu_ held.
  bool make_room_locked(uint64_t bytes);
  void evict_locked(ObjectKey key, Entry& e);
  void pump_locked();
  bool issue_one_locked(Op& op, uint64_t op_id);
  void on_completion_locked(const IoRequest& req, int res);
  // Hashes the op's arrived bytes that continue its in-order prefix.
  void hash_arrived_locked(Op& op);
  void finish_op_locked(uint64_t op_id);
  void finish_stage_locked(Op& op);
  // Makes a staged entry resident, or drops it on failure, and posts the completion.
  void settle_stage_locked(Entry& e, const StageCompletion& c);
  void finish_demand_locked(Op& op);
  // Copies the object's bytes into the fast tier as a resident, unpinned object when there
  // is room; false when there is not.
  bool cache_locked(ObjectKey key, const std::byte* bytes, uint64_t size);
  void post_locked(Event ev);
  void signal();
  std::byte* fast_ptr_locked(const std::vector<Extent>& extents, uint64_t pos,
                             uint64_t* contiguous) const;
  int buffer_index(const std::byte* p) const;

  ObjectStore& store_;
  const UringDeviceOptions options_;
  const Clock& clock_;
  int event_fd_ = -1;
  int poll_fd_ = -1;  // epoll over event_fd_ and the cluster tier's fd; -1 without a tier
  ClusterTier* const cluster_;
  std::unique_ptr<FastTier> fast_;

  mutable std::mutex mu_;
  // Declared after fast_: destroyed first, so in-flight reads finish before the arena goes.
  std::unique_ptr<IoRing> ring_;                  // guarded by mu_
  std::unique_ptr<EvictionPolicy> policy_;        // guarded by mu_
  std::unordered_map<ObjectKey, Entry> entries_;  // guarded by mu_
  std::map<uint64_t, Op> ops_;                    // by op id; guarded by mu_
  std::deque<uint64_t> stage_queue_;              // ops with reads left to issue, FIFO
  std::deque<uint64_t> demand_queue_;             // served before stage_queue_
  std::deque<IoRequest> retries_;                 // rest of short reads, issued first
  // Ops whose reads all completed, finished (and newly arrived bytes hashed) after the next
  // submission, so that checksum verification overlaps the reads in flight. Guarded by mu_.
  std::vector<uint64_t> finished_;
  std::vector<uint64_t> hash_queue_;  // ops with arrived bytes to hash; guarded by mu_
  std::vector<Event> events_;         // waiting for delivery; guarded by mu_
  mutable std::unordered_map<ObjectKey, uint64_t> pool_sizes_;  // guarded by mu_
  uint64_t pool_reads_ = 0;  // cluster reads in flight; guarded by mu_
  // Staged from the pool, to be written to the store (keep_local) outside mu_.
  std::vector<std::pair<ObjectKey, std::vector<std::byte>>> keep_;  // guarded by mu_
  uint64_t next_op_id_ = 1;
  DeviceStats stats_;          // guarded by mu_
  UringDeviceStats ustats_;    // guarded by mu_
  uint64_t buffer_chunk_ = 0;  // registered buffer size (0: none)

  std::mutex dispatch_mu_;              // one deliverer at a time, in order
  DeviceObserver* observer_ = nullptr;  // guarded by dispatch_mu_
};

}  // namespace tempo
