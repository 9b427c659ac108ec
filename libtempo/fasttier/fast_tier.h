// The fast tier: a region of memory and the allocator that places objects in it. An object
// gets one extent when one fits, else a few (ExtentAllocator::allocate_extents), so holes
// never cost an eviction. Not thread-safe: the device locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fasttier/extent_allocator.h"
#include "fasttier/region.h"

namespace tempo {

// 4 KiB: the O_DIRECT alignment of staging reads into the fast tier.
inline constexpr uint64_t kFastTierUnit = 4096;

struct FastTierStats {
  FragmentationStats space;
  uint64_t objects = 0;         // live object placements
  uint64_t object_extents = 0;  // their extents (== objects when every one is whole)
  uint64_t slack_bytes = 0;     // rounding to kFastTierUnit inside live placements
};

class FastTier {
 public:
  static int create(const FastTierOptions& options, std::unique_ptr<FastTier>* out,
                    std::string* error);

  const FastTierRegion& region() const { return *region_; }
  uint64_t capacity() const { return alloc_.capacity(); }
  uint64_t free_bytes() const { return alloc_.free_bytes(); }
  uint64_t footprint(uint64_t bytes) const { return alloc_.round_up(bytes); }

  // Places `bytes` bytes: 0 or -ENOSPC (only when free_bytes() < footprint(bytes)).
  int allocate(uint64_t bytes, std::vector<Extent>* out);
  void release(uint64_t bytes, std::span<const Extent> extents);
  std::byte* at(uint64_t offset) const { return region_->base() + offset; }
  FastTierStats stats() const;

 private:
  explicit FastTier(std::unique_ptr<FastTierRegion> region);

  std::unique_ptr<FastTierRegion> region_;
  ExtentAllocator alloc_;
  uint64_t objects_ = 0;
  uint64_t object_bytes_ = 0;
};

}  // namespace tempo
