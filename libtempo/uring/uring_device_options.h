// How the uring device is made (uring/uring_device.h); built from the settings by
// config/from_settings.h, which reads this header without liburing.
#pragma once

#include <cstdint>
#include <string>

#include "fasttier/region.h"

namespace tempo {

class ClusterTier;

struct UringDeviceOptions {
  FastTierOptions fast_tier;
  uint32_t queue_depth = 16;          // staging + demand requests in flight
  uint32_t request_bytes = 4u << 20;  // largest read request (a multiple of 4 KiB)
  // READ_FIXED into the registered fast tier. Registering pins, so faults in, the whole
  // arena; not tried past RLIMIT_MEMLOCK (unless root).
  bool register_buffers = true;
  bool verify_checksums = true;  // check each staged object against the catalog
  std::string eviction = "lru";
  double staging_rate_bps = 11.0 * (1ull << 30);  // reported by info(); calibrate with the bench
  double demand_rate_bps = 2.0 * (1ull << 30);
  ClusterTier* cluster = nullptr;  // outlives the device; null: the local store only
  bool keep_local = false;         // write what is staged from the pool to the store too
  friend bool operator==(const UringDeviceOptions&, const UringDeviceOptions&) = default;
};

}  // namespace tempo
