#include "policies/predicted_reuse.h"

namespace tempo {

void PredictedReusePolicy::add(BlockId id, uint64_t /*bytes*/, TimeNs /*now*/) {
  if (score_.contains(id)) return;
  const uint64_t s = ++tick_;
  score_.emplace(id, s);
  by_score_.emplace(s, id);
  ++stats_.adds;
}

bool PredictedReusePolicy::erase(BlockId id) {
  auto it = score_.find(id);
  if (it == score_.end()) return false;
  by_score_.erase(it->second);
  score_.erase(it);
  ++stats_.removes;
  return true;
}

void PredictedReusePolicy::remove(BlockId id) { erase(id); }

void PredictedReusePolicy::evict(BlockId id) {
  if (erase(id)) ++stats_.evictions;
}

void PredictedReusePolicy::record_access(BlockId id, TimeNs /*now*/) {
  auto it = score_.find(id);
  if (it == score_.end()) return;
  by_score_.erase(it->second);
  it->second = ++tick_;
  by_score_.emplace(it->second, id);
  ++stats_.accesses;
}

std::optional<BlockId> PredictedReusePolicy::pick_victim() {
  if (by_score_.empty()) return std::nullopt;
  ++stats_.victims;
  return by_score_.begin()->second;
}

}  // namespace tempo
