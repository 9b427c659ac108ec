#include "fasttier/fast_tier.h"

namespace tempo {

FastTier::FastTier(std::unique_ptr<FastTierRegion> region)
    : region_(std::move(region)), alloc_(region_->size(), kFastTierUnit) {}

int FastTier::create(const FastTierOptions& options, std::unique_ptr<FastTier>* out,
                     std::string* error) {
  std::unique_ptr<FastTierRegion> region;
  int ret = FastTierRegion::create(options, &region, error);
  if (ret < 0) return ret;
  out->reset(new FastTier(std::move(region)));
  return 0;
}

int FastTier::allocate(uint64_t bytes, std::vector<Extent>* out) {
  int ret = alloc_.allocate_extents(bytes, out);
  if (ret < 0) return ret;
  ++objects_;
  object_bytes_ += bytes;
  return 0;
}

void FastTier::release(uint64_t bytes, std::span<const Extent> extents) {
  for (const Extent& e : extents) alloc_.release(e.offset, e.len);
  --objects_;
  object_bytes_ -= bytes;
}

FastTierStats FastTier::stats() const {
  FastTierStats s;
  s.space = alloc_.stats();
  s.objects = objects_;
  s.object_extents = s.space.allocations;
  s.slack_bytes = s.space.used_bytes - object_bytes_;
  return s;
}

}  // namespace tempo
