// The device interface: a fast tier in front of an SSD tier, with a staging engine, pins
// and an ordinary (demand) read path. Implementations: sim (virtual time), uring (real
// files + io_uring), kmod (/dev/tempoN). The provider and controller run unchanged on each.
//
// Threading: a device calls its observer from the context that drives it (the EventQueue
// for sim, the runtime's event loop for real devices), never concurrently with itself.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/object.h"
#include "core/time.h"

namespace tempo {

enum class Residency : uint8_t {
  kAbsent,    // only on the SSD tier
  kStaging,   // a stage operation is bringing it in (space already held)
  kResident,  // in the fast tier
};

// Where staging reads an object from: the host's own SSD tier, or a cluster pool below it
// (cluster/cluster_tier.h). Each has its own bandwidth; the provider projects each apart.
enum class Source : uint8_t { kLocal, kRemote };
inline constexpr size_t kSources = 2;

// The remote source as calibrated before any completion: concurrent requests, aggregate
// rate, and the per-request latency before a request's bytes flow.
struct RemoteInfo {
  uint32_t slots = 16;
  double rate_bps = 1.0 * (1ull << 30);
  TimeNs latency_ns = kNsPerMs;
};

struct DeviceInfo {
  std::string kind;             // "sim", "uring", "kmod"
  uint64_t capacity_bytes = 0;  // fast-tier size
  uint32_t staging_slots = 1;   // concurrent staging operations
  double staging_rate_bps = 0;  // calibrated aggregate staging rate, bytes/s
  double demand_rate_bps = 0;   // calibrated ordinary-path rate, bytes/s
};

struct DeviceStats {
  uint64_t resident_bytes = 0;  // fast-tier bytes in use (resident + staging)
  uint64_t pinned_bytes = 0;    // bytes of objects with pin count > 0
  uint64_t pins = 0;            // sum of pin counts
  uint64_t staged_ops = 0;
  uint64_t staged_bytes = 0;
  uint64_t stage_errors = 0;
  uint64_t demand_reads = 0;
  uint64_t demand_bytes = 0;  // bytes the ordinary path read from SSD
  uint64_t evictions = 0;
  uint64_t evicted_bytes = 0;
};

struct StageCompletion {
  ObjectKey key = 0;
  uint64_t bytes = 0;
  int status = 0;  // 0, or a negative errno (the object is then not resident)
  TimeNs submitted = 0;
  TimeNs completed = 0;
};

class DeviceObserver {
 public:
  virtual ~DeviceObserver() = default;
  virtual void on_stage_complete(const StageCompletion& c) = 0;
  // An unpinned object entered the fast tier outside staging (ordinary-path fill).
  virtual void on_resident(ObjectKey key) = 0;
  // An unpinned object left the fast tier.
  virtual void on_evicted(ObjectKey key) = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceInfo info() const = 0;
  virtual DeviceStats stats() const = 0;
  virtual void set_observer(DeviceObserver* observer) = 0;

  // Size of an object held by the SSD tier; -ENOENT if the tier does not hold it.
  virtual int64_t object_size(ObjectKey key) const = 0;
  // object_size() of every key into `sizes` (as long as `keys`); a device whose lookups
  // wait (a cluster pool) asks for the batch at once, bounded by one wait, not one per key.
  virtual void object_sizes(std::span<const ObjectKey> keys, std::span<int64_t> sizes) const {
    for (size_t i = 0; i < keys.size(); ++i) sizes[i] = object_size(keys[i]);
  }
  virtual Residency residency(ObjectKey key) const = 0;
  virtual uint32_t pin_count(ObjectKey key) const = 0;

  // Makes `key` resident and takes one pin on it for the caller, asynchronously: space is
  // held from submission, the completion reaches the observer. Issue order is FIFO.
  // -ENOENT unknown object, -EBUSY already resident or staging (pin or wait instead).
  virtual int stage(ObjectKey key) = 0;
  // Where stage(key) would read the object from now.
  virtual Source stage_source(ObjectKey key) const {
    (void)key;
    return Source::kLocal;
  }
  // The remote source's calibration (meaningful where stage_source can say kRemote).
  virtual RemoteInfo remote_info() const { return {}; }
  // Takes one pin on a resident object: -ENOENT unknown, -EAGAIN not resident.
  virtual int pin(ObjectKey key) = 0;
  // Drops one pin: -ENOENT unknown, -EINVAL not pinned. At zero the object is evictable.
  virtual int unpin(ObjectKey key) = 0;

  // The ordinary path: reads `keys` as the caller touches them, fetching non-resident data
  // from SSD at the demand rate (contending with staging). `done(status)` runs once all
  // are read. Non-resident objects are cached unpinned afterwards when space allows.
  virtual int demand_read(std::span<const ObjectKey> keys, std::function<void(int)> done) = 0;

  // Real devices complete asynchronously: an event loop waits for completion_fd() to be
  // readable and calls process_completions(), which delivers the events to the observer
  // and demand callbacks; it returns how many it delivered. The sim device schedules its
  // completions on its EventQueue instead (-1, 0).
  virtual int completion_fd() const { return -1; }
  virtual int process_completions() { return 0; }
  // Real devices: true when no completion is still to come (nothing outstanding, nothing
  // waiting for delivery); a virtual-time driver blocks on completion_fd() only while false.
  virtual bool idle() const { return true; }
  // Retrieval: the fast-tier bytes of a pinned resident object as (pointer, length)
  // extents in object order, valid until the pin is dropped. -ENOTSUP where the fast tier
  // is not addressable (sim), -ENOENT unknown, -EAGAIN not resident, -EPERM not pinned.
  virtual int resident_extents(ObjectKey key, std::vector<std::span<const std::byte>>* out) const {
    (void)key;
    (void)out;
    return -ENOTSUP;
  }
};

}  // namespace tempo
