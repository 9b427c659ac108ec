#include "policy/lru.h"

namespace tempo {

void LruPolicy::add(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/) {
  if (index_.contains(id)) return;
  order_.push_front(id);
  index_.emplace(id, order_.begin());
  ++stats_.adds;
}

bool LruPolicy::erase(BlockId id) {
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  order_.erase(it->second);
  index_.erase(it);
  ++stats_.removes;
  return true;
}

void LruPolicy::remove(BlockId id) { erase(id); }

void LruPolicy::evict(BlockId id) {
  if (erase(id)) ++stats_.evictions;
}

void LruPolicy::record_access(BlockId id, TimeNs /*now*/) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  order_.splice(order_.begin(), order_, it->second);
  ++stats_.accesses;
}

std::optional<BlockId> LruPolicy::pick_victim() {
  if (order_.empty()) return std::nullopt;
  ++stats_.victims;
  return order_.back();
}

}  // namespace tempo
