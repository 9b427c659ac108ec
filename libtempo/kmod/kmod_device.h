// The `kmod` device: /dev/tempoN from tempo.ko. The kernel owns residency, staging and
// pins; this class keeps the placement table (object key -> extent-aligned range of the
// device's logical space) and turns Device calls into ioctls on one file descriptor, which
// owns every pin taken through it (closing it, or a crash, drops them all).
//
//   stage(key)   = TEMPO_IOC_STAGE with TEMPO_STAGE_F_PIN over the object's range
//   pin / unpin  = TEMPO_IOC_PIN / TEMPO_IOC_UNPIN;  residency / pin_count = TEMPO_IOC_QUERY
//   demand_read  = loads through a read-only mmap of the device (the fault path), on a
//                  worker thread
//
// Threading: every public method is thread-safe. Observer callbacks and demand_read()'s
// `done` run only inside process_completions(), one caller at a time; they may call back into
// the device. An event loop waits for completion_fd() to be readable, then calls
// process_completions().
//
// Evictions: the fd subscribes to the kernel's eviction notices (TEMPO_IOC_SET_EVENTS), so
// every unpinned extent that leaves the fast tier, whoever evicted it, reaches the observer
// as on_evicted(key) of the object holding it, in the order of the kernel's records. A
// RESET record, or LOST (the kernel's notice queue overflowed), re-queries every object and
// reports each one no longer fully resident. The provider's residency classes, and so its
// TTRs, follow the kernel without asking it on every pass; residency() itself still asks.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/time.h"
#include "device/device.h"

struct tempo_completion;

namespace tempo {

class Clock;

struct KmodDeviceOptions {
  std::string path = "/dev/tempo0";
  // Completions are stamped on this clock: submitted when stage() ran, completed after the
  // kernel's measured duration, so they line up with the stack's clock on either driver.
  // nullptr: the kernel's CLOCK_MONOTONIC stamps (what MonotonicClock reads).
  const Clock* clock = nullptr;
  uint32_t staging_slots = 8;  // reported by info() for the provider's TTR projection
  double staging_rate_bps = 11.0 * (1ull << 30);  // reported by info(); calibrate on the host
  double demand_rate_bps = 2.0 * (1ull << 30);
  friend bool operator==(const KmodDeviceOptions&, const KmodDeviceOptions&) = default;
};

// What GET_INFO says about the device.
struct KmodGeometry {
  uint64_t size = 0;  // logical bytes
  uint64_t fast_bytes = 0;
  uint64_t extent_bytes = 0;
  uint64_t pin_limit_bytes = 0;
  bool dax = false;  // the fast tier is a Device-DAX range
};

class KmodDevice final : public Device {
 public:
  // Opens the device node, subscribes to eviction notices and maps its logical range. 0, or
  // a negative errno (-ENOENT no such node, -EACCES not allowed, -ENOTTY not a tempo
  // device, -EINVAL a module without eviction notices) with `error` saying why.
  static int open(const KmodDeviceOptions& options, std::unique_ptr<KmodDevice>* out,
                  std::string* error);
  // Waits for demand reads in flight, then closes the fd: the kernel drops its pins.
  ~KmodDevice() override;
  KmodDevice(const KmodDevice&) = delete;
  KmodDevice& operator=(const KmodDevice&) = delete;

  const KmodGeometry& geometry() const { return geo_; }
  // The read-only mapping of the whole logical range (geometry().size bytes) that
  // resident_extents() points into.
  const std::byte* mapping() const { return map_; }
  // A new read-only open file of the same device (through /proc/self/fd, so the same
  // inode), for another process to map: pins belong to the file that took them, so nothing
  // done through it touches this device's pins or records. The fd, or -errno.
  int open_reader() const;

  // Places `key` at [offset, offset + bytes) of the logical range. offset must be a
  // multiple of the extent size (objects never share an extent). -EINVAL misaligned offset
  // or zero bytes, -ERANGE beyond the device, -EEXIST key known, -EBUSY overlaps an object.
  int register_object(ObjectKey key, uint64_t offset, uint64_t bytes);
  // Places `key` at the first extent after every registered object; its offset in *offset.
  int add_object(ObjectKey key, uint64_t bytes, uint64_t* offset = nullptr);
  // -ENOENT unknown, -EBUSY staging or pinned through this device.
  int unregister_object(ObjectKey key);

  DeviceInfo info() const override;
  DeviceStats stats() const override;
  void set_observer(DeviceObserver* observer) override;
  int64_t object_size(ObjectKey key) const override;
  Residency residency(ObjectKey key) const override;
  // Pins this device's fd holds on the object.
  uint32_t pin_count(ObjectKey key) const override;
  // Also the kernel's -ENOSPC (no evictable room), -EDQUOT (pin limit), -E2BIG (larger
  // than the fast tier).
  int stage(ObjectKey key) override;
  // Also -EDQUOT past the kernel's pin limit.
  int pin(ObjectKey key) override;
  int unpin(ObjectKey key) override;
  int demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) override;
  // The object's bytes in the device mapping while this fd pins it: -ENOENT unknown,
  // -EAGAIN not resident, -EPERM resident but not pinned through this device.
  int resident_extents(ObjectKey key, std::vector<std::span<const std::byte>>* out) const override;

  // Readable (an epoll fd over the device fd and an eventfd) when process_completions() has
  // something to deliver.
  int completion_fd() const override { return epoll_fd_; }
  // Reads the kernel's records (stage completions, eviction notices) and finished demand
  // reads and delivers them, in the kernel's order. Never blocks. The number of events
  // delivered, or a negative errno (-EPROTO a malformed record).
  int process_completions() override;
  // Waits up to `timeout` for completion_fd(), then process_completions().
  int wait(TimeNs timeout);
  // True when no stage or demand read is outstanding.
  bool idle() const override;

  // The object's bytes in the device mapping (valid while the caller holds a pin; reading
  // an unpinned object goes through the fault path). -ENOENT unknown.
  int object_data(ObjectKey key, std::span<const std::byte>* out) const;
  // Drops every unpinned resident extent (TEMPO_IOC_RESET).
  int reset();

 private:
  struct Placement {
    uint64_t offset = 0;
    uint64_t bytes = 0;
    uint64_t length = 0;  // bytes rounded up to the page size: the ioctl range
  };
  struct DemandJob {
    std::vector<ObjectKey> keys;
    std::function<void(int)> done;
  };
  struct DemandDone {
    std::vector<ObjectKey> filled;  // objects now resident that were not before
    std::function<void(int)> done;
    int status = 0;
  };

  struct InFlight {
    ObjectKey key = 0;
    TimeNs submitted = 0;  // on options_.clock, when there is one
  };
  // What one process_completions() delivers, in order: a stage completion, or the key of
  // an object that left the fast tier.
  struct Event {
    bool evicted = false;
    StageCompletion stage;  // stage.key alone when evicted
  };

  struct Query {
    uint64_t resident = 0;  // bytes of the range in resident extents
    uint32_t own_pins = 0;  // smallest pin count this fd holds over its extents
  };

  KmodDevice() = default;
  const Placement* find_locked(ObjectKey key) const;
  int query_locked(const Placement& p, Query* q) const;
  int range_call_locked(unsigned long cmd, const Placement& p) const;
  // One record of the kernel's stream, turned into events.
  void record_locked(const struct tempo_completion& c, std::vector<Event>* events);
  // Every object not fully resident (and not staging through us) as an eviction event.
  void resync_locked(std::vector<Event>* events) const;
  void demand_worker();

  KmodDeviceOptions options_;
  KmodGeometry geo_;
  int fd_ = -1;
  int event_fd_ = -1;
  int epoll_fd_ = -1;
  const std::byte* map_ = nullptr;
  size_t record_bytes_ = 0;  // the module's record size (tempo_info.record_bytes)

  mutable std::mutex mu_;  // guards everything below
  DeviceObserver* observer_ = nullptr;
  std::unordered_map<ObjectKey, Placement> objects_;
  std::map<uint64_t, ObjectKey> by_offset_;           // placement start -> key
  std::unordered_map<uint64_t, InFlight> in_flight_;  // stage ticket -> key
  std::unordered_map<ObjectKey, uint64_t> staging_;   // key -> ticket
  uint64_t next_ticket_ = 1;
  DeviceStats counters_;  // this handle's staging and demand counters
  std::deque<DemandJob> demand_queue_;
  std::deque<DemandDone> demand_done_;
  uint32_t demand_running_ = 0;
  bool stopping_ = false;
  std::condition_variable demand_cv_;
  std::thread worker_;
  std::mutex deliver_mu_;  // one process_completions() at a time
};

}  // namespace tempo
