// The dax-l1 baseline (study code, not in libtempo.so): LMCache's Device-DAX L1 over
// memory-semantic flash, emulated beside the uring device. A read goes through the fast
// tier as a load would: an object the device holds resident is copied out of it; otherwise
// every granule the read touches that was not fetched before is read from the SSD tier
// synchronously (pread on the store's data file, no device lock held) before the copy goes
// on, as a load waits for the device to fetch the page it faulted on. Once every granule of
// an object has been fetched, the object is handed to the device (UringDevice::admit): it
// is resident, unpinned and evictable, and later reads hit. Partly fetched objects are held
// here, in host memory, until then.
//
// Not thread-safe: one caller (the replay's loop thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/object.h"
#include "store/aligned_buffer.h"
#include "store/object_store.h"
#include "uring/uring_device.h"

namespace tempo {

struct DaxL1Stats {
  uint64_t granule_fetches = 0;  // granules read from the SSD tier
  uint64_t bytes_fetched = 0;    // their bytes
  uint64_t hits = 0;             // reads served from a resident object
  uint64_t read_errors = 0;      // granule reads that failed
};

class DaxL1Reader {
 public:
  // `store` and `device` (which reads `store`) outlive the reader. `granule_bytes`, the
  // fetch unit on a miss, is a positive multiple of 4 KiB.
  DaxL1Reader(ObjectStore& store, UringDevice& device, uint64_t granule_bytes = 4096);

  // Reads [offset, offset + dst.size()) of `key`. The bytes read, or -ENOENT, -EINVAL
  // (range outside the object), -EAGAIN (being staged), -ENOMEM, an I/O error, or what
  // UringDevice::admit() refused with (-ENOSPC, -EBADMSG).
  int64_t read(ObjectKey key, uint64_t offset, std::span<std::byte> dst);
  // Forgets the partly fetched objects (the fast tier was reset).
  void reset() { partial_.clear(); }
  DaxL1Stats stats() const { return stats_; }

 private:
  struct Partial {
    uint64_t size = 0;          // the object's bytes when first touched
    AlignedBuffer bytes;        // the object, padded to whole granules
    std::vector<bool> fetched;  // by granule
    uint64_t missing = 0;       // granules not fetched yet
  };
  int64_t read_resident(ObjectKey key, uint64_t offset, std::span<std::byte> dst);
  int fetch_granules(const ObjectInfo& info, Partial& p, uint64_t offset, uint64_t len);

  ObjectStore& store_;
  UringDevice& device_;
  const uint64_t granule_;
  std::unordered_map<ObjectKey, Partial> partial_;
  DaxL1Stats stats_;
};

}  // namespace tempo
