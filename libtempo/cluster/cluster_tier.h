// The cluster tier: an object store shared by every host, below each host's local store.
// A local miss that the pool holds is still a hit: staging reads it straight into a
// fast-tier extent. One small interface so that another backend (Mooncake Store, Redis)
// can be added without touching the controller; RadosTier (rados_tier.h) is the first.
//
// Threading: put_async/read_async/stat/remove may be called from any thread; completions
// of reads are queued and announced on completion_fd() (readable while any is queued) and
// taken with reap() by the one thread that drives the caller (the Stack's event loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/object.h"
#include "core/time.h"

namespace tempo {

struct ClusterRead {
  uint64_t tag = 0;  // the caller's tag from read_async
  ObjectKey key = 0;
  int64_t status = 0;  // bytes read (== the object's size), or a negative errno
  TimeNs submitted = 0;
  TimeNs completed = 0;
};

struct ClusterTierStats {
  uint64_t puts = 0;  // write-throughs completed successfully
  uint64_t put_bytes = 0;
  uint64_t put_errors = 0;        // failed attempts (a put kept for retry counts each)
  uint64_t put_retries = 0;       // puts issued again once the pool answered
  uint64_t put_drops = 0;         // failed puts given up: the retry queue was full
  uint64_t puts_queued = 0;       // gauge: failed puts waiting for the pool ...
  uint64_t put_queued_bytes = 0;  // ... and their bytes
  uint64_t puts_in_flight = 0;    // gauge
  uint64_t reads = 0;             // reads completed successfully (checksum verified)
  uint64_t read_bytes = 0;
  uint64_t read_errors = 0;      // including checksum mismatches
  uint64_t reads_in_flight = 0;  // gauge
};

class ClusterTier {
 public:
  virtual ~ClusterTier() = default;
  // "rados:POOL" and the like, for logs and tempoctl.
  virtual std::string describe() const = 0;

  // Writes `data` through to the pool under `key` without waiting: the bytes are copied,
  // the call returns 0 at once (or -EINVAL for empty data). Failures are counted in
  // stats().put_errors; flush() waits for every put issued before it.
  virtual int put_async(ObjectKey key, std::span<const std::byte> data) = 0;
  // 0 when every earlier put completed successfully, the first put error since the last
  // flush, or -ETIMEDOUT after `timeout` (puts keep running).
  virtual int flush(TimeNs timeout) = 0;

  // Size of `key` in the pool, -ENOENT, or an errno when the pool cannot answer in time
  // (-ETIMEDOUT, -ENOTCONN): bounded by the tier's operation timeout.
  virtual int64_t stat(ObjectKey key) = 0;
  // stat() of every key into `sizes` (as long as `keys`). RadosTier asks for them all at
  // once: the batch waits one operation timeout at most, not one per key.
  virtual void stat_many(std::span<const ObjectKey> keys, std::span<int64_t> sizes) {
    for (size_t i = 0; i < keys.size(); ++i) sizes[i] = stat(keys[i]);
  }
  // Reads the whole object into `out`, pieces filled in order (their sizes must add up to
  // the object's size: fast-tier extents), without waiting; the data is checksum-verified
  // before the completion says so. 0 or -EINVAL (no bytes to read into). The pieces must
  // stay valid until the completion is reaped.
  virtual int read_async(ObjectKey key, std::span<const std::span<std::byte>> out,
                         uint64_t tag) = 0;
  // One contiguous buffer.
  int read_async(ObjectKey key, std::span<std::byte> out, uint64_t tag) {
    const std::span<std::byte> one[] = {out};
    return read_async(key, one, tag);
  }
  virtual int completion_fd() const = 0;
  // Appends every queued completion to `out`; returns how many.
  virtual size_t reap(std::vector<ClusterRead>* out) = 0;

  // Deletes `key` from the pool: 0, -ENOENT or an errno.
  virtual int remove(ObjectKey key) = 0;
  virtual ClusterTierStats stats() const = 0;
};

}  // namespace tempo
